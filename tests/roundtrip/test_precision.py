"""Integers with reduced precision and the N-bit filter through the server (issue 15): the
type JSON keeps ``precision``/``offset``, clients read and write the integers, stored chunks are
HDF5's own N-bit bytes (h5py reads them with ``read_direct_chunk``/``write_direct_chunk``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import pytest
import requests
from h5py import h5d, h5p, h5s, h5t

from h5lake.client.rest import Settings
from tests.conftest import Backing, RawStore, raw_of
from tests.roundtrip.conftest import RoundTrip
from tests.support.chunks import stored_chunk
from tests.support.server import Server

TYPE = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE", "precision": 16, "offset": 5}


@pytest.fixture
def stored(server: Server, backing: Backing) -> RawStore:
    return raw_of(server, backing)


def _hdf5_file(path: Path, values: np.ndarray, chunks: tuple[int, ...]) -> None:
    tid = h5t.STD_I32LE.copy()
    tid.set_precision(16)
    tid.set_offset(5)
    with h5py.File(path, "w") as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
        dset = h5d.create(f.id, b"d", tid, h5s.create_simple(values.shape), dcpl=dcpl)
        dset.write(h5s.ALL, h5s.ALL, values, mtype=h5t.STD_I32LE)


def test_server_stores_hdf5_nbit_chunks(settings: Settings, new_domain: Callable[[str], str], stored: RawStore, tmp_path: Path) -> None:
    domain = new_domain("nbit")
    s = requests.Session()
    s.auth = (settings.username, settings.password)
    url = settings.endpoint
    assert s.put(f"{url}/", params={"domain": domain}).status_code == 201
    body = {"type": TYPE, "shape": [8, 6], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [4, 3]}, "filters": [{"class": "H5Z_FILTER_NBIT", "id": 5}]}}
    r = s.post(f"{url}/datasets", params={"domain": domain}, json=body)
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    doc = s.get(f"{url}/datasets/{did}", params={"domain": domain}).json()
    assert doc["type"] == TYPE
    assert [f["name"] for f in doc["creationProperties"]["filters"]] == ["nbit"]
    values = (np.arange(48, dtype="<i4").reshape(8, 6) - 24) * 1300
    r = s.put(f"{url}/datasets/{did}/value", params={"domain": domain}, json={"value": values.tolist()})
    assert r.status_code == 200, r.text
    assert s.get(f"{url}/datasets/{did}/value", params={"domain": domain}).json()["value"] == values.tolist()
    # a value outside 16 signed bits cannot be stored
    r = s.put(f"{url}/datasets/{did}/value", params={"domain": domain, "select": "[0:1,0:1]"}, json={"value": [[40000]]})
    assert r.status_code == 400 and "16-bit" in r.text, r.text
    # HDF5's chunks for the same values are the server's stored chunks, and the reverse
    _hdf5_file(tmp_path / "h.h5", values, (4, 3))
    with h5py.File(tmp_path / "h.h5", "r+") as f:
        d = f["d"]
        for index in ((0, 0), (1, 1), (0, 1)):
            offset = (index[0] * 4, index[1] * 3)
            chunk = stored_chunk(stored, did, index)
            assert chunk is not None
            assert d.id.read_direct_chunk(offset)[1] == chunk
            d.id.write_direct_chunk(offset, chunk)
        np.testing.assert_array_equal(d[...], values)
    root = s.get(f"{url}/", params={"domain": domain}).json()["root"]
    assert s.put(f"{url}/groups/{root}/links/d", params={"domain": domain}, json={"id": did}).status_code == 201
    with h5pyd.File(domain, "r", endpoint=url, username=settings.username, password=settings.password) as f:
        assert f["d"].dtype == np.dtype("<i4")
        np.testing.assert_array_equal(f["d"][2:6, 1:4], values[2:6, 1:4])


def test_loaded_nbit_domain_reads_as_integers(round_trip: Callable[[str], RoundTrip], settings: Settings, stored: RawStore) -> None:
    result = round_trip("nbit_precision")
    with h5py.File(result.source, "r") as src, h5pyd.File(result.domain, "r", endpoint=settings.endpoint, username=settings.username, password=settings.password) as out:
        for name in ("nbit_i32", "nbit_u16be_gzip", "twelve_bits", "u8_three_bits", "i64_40_bits", "nbit_fill", "nbit_compound"):
            np.testing.assert_array_equal(out[name][...], src[name][...], err_msg=name)
        assert out["nbit_i32"].dtype == np.dtype("<i4")
        np.testing.assert_array_equal(out.attrs["reduced"], [1, -1, 32767])
        # the loaded chunks are the file's chunks, byte for byte
        d = src["nbit_i32"]
        did = out["nbit_i32"].id.id
        for i in range(d.id.get_num_chunks()):
            offset = d.id.get_chunk_info(i).chunk_offset
            index = (offset[0] // 10, offset[1] // 25)
            assert stored_chunk(stored, did, index) == d.id.read_direct_chunk(offset)[1]
    with h5py.File(result.exported, "r") as f:
        tid = f["nbit_i32"].id.get_type()
        assert (tid.get_precision(), tid.get_offset()) == (16, 5)
        assert f["nbit_i32"].id.get_create_plist().get_filter(0)[0] == h5py.h5z.FILTER_NBIT


def test_loaded_scaleoffset_chunks_are_the_files(round_trip: Callable[[str], RoundTrip], settings: Settings, stored: RawStore) -> None:
    """Loading copies values through HDF5; the server encodes them again with scale-offset and
    gets the file's chunk bytes back, and the export is HDF5's file (h5diff in test_roundtrip)."""
    result = round_trip("scaleoffset_kinds")
    with h5py.File(result.source, "r") as src, h5pyd.File(result.domain, "r", endpoint=settings.endpoint, username=settings.username, password=settings.password) as out:
        for name in ("u2_be", "i8", "i4_fixed", "i4_fill", "f4_be", "f8_fill"):
            d = src[name]
            np.testing.assert_array_equal(out[name][...], d[...], err_msg=name)
            did = out[name].id.id
            for i in range(d.id.get_num_chunks()):
                offset = d.id.get_chunk_info(i).chunk_offset
                assert stored_chunk(stored, did, (offset[0] // d.chunks[0],)) == d.id.read_direct_chunk(offset)[1], name
