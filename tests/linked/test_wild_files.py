"""Other libraries' files (tests/support/corpus_wild.py: netCDF4, h5netcdf, PyTables, pandas,
Keras-style and NeXus files, h5py's dense attribute storage, szip, arrays of compounds...) both
loaded (``h5lake load``) and served in place (``load --link``), each read back through h5pyd 1.0
and compared with h5py (tests/support/remote_compare.py), then exported (``h5lake export``) and
compared with the source object by object (tests/roundtrip/compare.py).

Exporting a linked domain wrote every linked chunked dataset as a contiguous one: its chunk
shape and filters were lost, and a dataset with an unlimited dimension (every netCDF record
variable, every PyTables EArray, pandas' tables) could not be created at all ("extendible
contiguous non-external dataset not allowed").
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import h5py
import h5pyd
import hdf5plugin
import numpy as np
import pytest

from h5lake.client import load_link as linking
from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings
from tests.conftest import Client
from tests.roundtrip.compare import compare_files
from tests.roundtrip.corpus import build
from tests.support.corpus_wild import WILD
from tests.support.remote_compare import compare

# What the export changes and HDF5 does not count as a change, per file (docs/fidelity.md):
EXPORT_EQUIVALENT = {
    # PyTables' blosc filter records 6 cd_values for its default compressor; export writes the
    # 7th (blosclz, code 0) that the filter assumes when it is absent
    "pytables_features": ("/earray: filters differs ([(32001, 1, (2, 2, 8, 65536, 1, 2))] vs [(32001, 1, (2, 2, 8, 65536, 1, 2, 0))])",),
    # netCDF-C leaves its memory's bytes in a compound's padding byte; h5lake's wire is packed,
    # so export writes zero there (the members' values are the same)
    "netcdf4_usertypes": ("/records: values differs",),
}
# netCDF-C's blosc filter records 0, 0 as the filter's and blosc's format versions; the plugin
# HDF5 runs on export (hdf5plugin's) writes its own, 2 and 2, in those first two cd_values
BLOSC_VERSIONS = re.compile(r"/blosc_\w+: filters differs \(\[\(32001, 1, \(0, 0, (.*)\)\)\] vs \[\(32001, 1, \(2, 2, \1\)\)\]\)")


def _equivalent(name: str, diff: str) -> bool:
    if name == "netcdf4_plugins" and BLOSC_VERSIONS.fullmatch(diff):
        return True
    return any(diff.startswith(known) for known in EXPORT_EQUIVALENT.get(name, ()))


def _settings(lc: Client) -> Settings:
    user, password = lc.session.auth  # type: ignore[misc]
    return Settings(lc.endpoint, user, password)


@pytest.mark.parametrize("mode", ["load", "link"])
@pytest.mark.parametrize("name", sorted(WILD))
def test_wild_file_reads_back_and_exports(name: str, mode: str, lc: Client, sources: Path, tmp_path: Path) -> None:
    folder = sources / uuid.uuid4().hex[:10]
    folder.mkdir()
    path = folder / f"{name}.h5"
    WILD[name](path)
    settings = _settings(lc)
    domain = f"/home/test_user1/{uuid.uuid4().hex[:10]}-{name}.h5"
    client = RestClient(settings, domain)
    step = linking.Linker(str(path.resolve())) if mode == "link" else None
    load_file(path, client, link_step=step, workers=4)

    result = compare(str(path), domain, endpoint=settings.endpoint, username=settings.username, password=settings.password)
    assert result.diffs == [], "\n".join(result.diffs)
    assert result.objects > 1

    target = tmp_path / f"{name}-export.h5"
    export_domain(client, target, workers=4)
    diffs = [d for d in compare_files(str(path), str(target)) if not _equivalent(name, d)]
    assert diffs == [], "\n".join(diffs)


@pytest.mark.parametrize("mode", ["load", "link"])
def test_filters_outside_h5json_open_in_h5pyd(mode: str, lc: Client, sources: Path) -> None:
    """PyTables' LZO (305) and blosc2 (32026) were answered as ``H5Z_FILTER_LZO`` and
    ``H5Z_FILTER_BLOSC2``, class names h5json does not know: h5pyd 1.0 raised KeyError for
    ``dset.compression`` and hsget could not copy such a file. They are plugin filters to HSDS
    and h5pyd: ``H5Z_FILTER_USER`` with their id."""
    folder = sources / uuid.uuid4().hex[:10]
    folder.mkdir()
    path = build("lzo_pytables", folder)
    with h5py.File(path, "a") as f:
        f.create_dataset("blosc2", data=np.arange(400, dtype="<i4"), chunks=(100,), **hdf5plugin.Blosc2())
    settings = _settings(lc)
    domain = f"/home/test_user1/{uuid.uuid4().hex[:10]}-filters.h5"
    load_file(path, RestClient(settings, domain), link_step=linking.Linker(str(path.resolve())) if mode == "link" else None, workers=4)
    with h5pyd.File(domain, "r", endpoint=settings.endpoint, username=settings.username, password=settings.password) as f:
        for name, fid in (("table", 305), ("carray", 305), ("blosc2", 32026)):
            d = f[name]
            found = [flt for flt in d.id.filters if flt["id"] == fid]
            assert [flt["class"] for flt in found] == ["H5Z_FILTER_USER"], d.id.filters
            assert d.compression is None  # a plugin filter to h5pyd: not one of its compressors
            assert d.shuffle in (True, False)
        np.testing.assert_array_equal(f["blosc2"][:], np.arange(400, dtype="<i4"))


@pytest.mark.parametrize("mode", ["load", "link"])
def test_scaleoffset_of_a_file_reads_in_h5pyd(mode: str, lc: Client, sources: Path) -> None:
    """A file's scale-offset filter was answered with its ``parameters`` only, so h5pyd's
    ``dset.scaleoffset`` read 0 for every dataset (h5py: the file's factor, e.g. 3 decimal
    digits); its JSON now also says ``scaleType`` and ``scaleOffset``."""
    folder = sources / uuid.uuid4().hex[:10]
    folder.mkdir()
    path = build("scaleoffset_kinds", folder)
    settings = _settings(lc)
    domain = f"/home/test_user1/{uuid.uuid4().hex[:10]}-so.h5"
    load_file(path, RestClient(settings, domain), link_step=linking.Linker(str(path.resolve())) if mode == "link" else None, workers=4)
    with h5py.File(path, "r") as src, h5pyd.File(domain, "r", endpoint=settings.endpoint, username=settings.username, password=settings.password) as f:
        factors = {name: src[name].scaleoffset for name in src if src[name].scaleoffset is not None}
        assert len(set(factors.values())) > 1, factors  # the file has several factors to tell apart
        assert {name: f[name].scaleoffset for name in factors} == factors
