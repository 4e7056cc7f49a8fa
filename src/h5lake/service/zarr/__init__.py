"""The Zarr v3 bridge (docs/zarr.md): a domain's hierarchy served as a Zarr v3 store at
``/zarr{domain}``. `nodes` finds what a store key names and makes the ``zarr.json`` documents
(with the root's consolidated metadata), `codecs` maps HDF5 filter pipelines to Zarr codecs,
`chunks` reads and writes chunk keys through the chunk engine, `create` makes groups and arrays
from a ``zarr.json``."""
