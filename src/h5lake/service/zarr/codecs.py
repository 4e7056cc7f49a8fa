"""A dataset's HDF5 filter pipeline as a Zarr v3 codec list (docs/zarr.md, "Codecs").

When every filter has a Zarr codec zarr-python 3.1 registers that reads HDF5's byte format
as it is, the chunk's stored bytes are served untouched under those codecs. Otherwise the
chunk is decoded here and served under the ``bytes`` codec alone.

``core`` asks for the codecs of the Zarr v3 core specification only (``bytes``, ``zstd``,
``blosc``): readers such as tensorstore have no ``numcodecs.*`` codec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from h5lake.chunks.codecs.base import ChunkFilter, FilterId
from h5lake.chunks.dataset import DatasetLayout
from h5lake.model.zarrtypes import Elements, ZarrForm


@dataclass(frozen=True, slots=True)
class CodecPlan:
    codecs: list[dict[str, Any]]
    as_stored: bool  # a chunk's stored bytes are its Zarr encoding
    filtered: bool = False  # the codecs after the first are the dataset's filters (applied here when not as_stored)


def _array_bytes(form: ZarrForm) -> dict[str, Any]:
    if form.elements is Elements.UTF8:
        return {"name": "vlen-utf8", "configuration": {}}
    if form.elements is Elements.BYTES:
        return {"name": "vlen-bytes", "configuration": {}}
    endian = form.endian
    return {"name": "bytes", "configuration": {"endian": endian}} if endian else {"name": "bytes"}


_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def _codec(f: ChunkFilter, core: bool) -> dict[str, Any] | None:
    """The Zarr codec reading ``f``'s HDF5 byte format as it is, if any."""
    fid = f.filter_id
    p: Any = f
    if fid is FilterId.ZSTD:  # one zstd frame
        return {"name": "zstd", "configuration": {"level": int(p.level), "checksum": False}}
    if fid is FilterId.BLOSC:  # a blosc 1 buffer, self-describing
        return {"name": "blosc", "configuration": {
            "cname": p.compressor.value, "clevel": int(p.level), "shuffle": _BLOSC_SHUFFLE[int(p.shuffle)],
            "typesize": int(p.typesize), "blocksize": 0}}
    if core:
        return None
    if fid is FilterId.DEFLATE:  # a zlib stream (RFC 1950), not gzip framing
        return {"name": "numcodecs.zlib", "configuration": {"level": int(p.level)}}
    if fid is FilterId.SHUFFLE:
        return {"name": "numcodecs.shuffle", "configuration": {"elementsize": int(p.elementsize)}}
    if fid is FilterId.FLETCHER32:  # HDF5's checksum, 4 bytes after the data
        return {"name": "numcodecs.fletcher32", "configuration": {}}
    return None


def plan(form: ZarrForm, layout: DatasetLayout, core: bool = False) -> CodecPlan:
    """The codecs a dataset's chunks are served under, and whether they are sent as stored.

    Elements whose stored form is not their Zarr form (variable-length ones, h5lake keeps in
    its own encoding; reduced precision; compounds with padding or big-endian fields) are
    decoded and encoded again with the same filters, which the Zarr codecs then name."""
    head = _array_bytes(form)
    mapped = [_codec(f, core) for f in layout.codec.pipeline.filters]
    if any(c is None for c in mapped):
        return CodecPlan([head], False)
    as_stored = form.elements is Elements.FIXED and form.as_stored and not layout.codec.reduced
    return CodecPlan([head, *(c for c in mapped if c is not None)], as_stored, bool(mapped))
