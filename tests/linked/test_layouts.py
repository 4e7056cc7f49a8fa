"""The three linked layouts over plain HTTP, read back against h5py reading the same file."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest

from tests.conftest import Client
from tests.linked.helpers import create_linked, post_dataset, read

RNG = np.random.default_rng(7)


def _new_file(folder: Path) -> Path:
    return folder / f"{uuid.uuid4().hex[:10]}.h5"


FILTERS: dict[str, dict[str, Any]] = {
    "none": {},
    "gzip": {"compression": "gzip", "compression_opts": 4},
    "gzip+shuffle+fletcher32": {"compression": "gzip", "shuffle": True, "fletcher32": True},
    "lzf": {"compression": "lzf"},
    "szip": {"compression": "szip"},
    "blosc-lz4": dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE)),
    "blosc-zstd": dict(hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE)),
    "bitshuffle-lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
    "lz4": dict(hdf5plugin.LZ4()),
    "zstd": dict(hdf5plugin.Zstd()),
}


@pytest.mark.parametrize("name", FILTERS)
@pytest.mark.parametrize("inline", [True, False], ids=["CHUNKED_REF", "INDIRECT"])
def test_chunked_filters_match_h5py(lc: Client, sources: Path, name: str, inline: bool) -> None:
    path = _new_file(sources)
    data = (RNG.standard_normal((300, 70)) * 100).astype("<f4")
    if name == "szip":
        data = data.astype("<i4")  # szip in h5py wants integers or floats; ints give real compression
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(64, 32), **FILTERS[name])
    with h5py.File(path) as f:
        did = create_linked(lc, f["x"], str(path), inline_chunks=1000 if inline else 0)
        layout = lc.get(f"/datasets/{did}").json()["creationProperties"]["layout"]
        assert layout["class"] == ("H5D_CHUNKED_REF" if inline else "H5D_CHUNKED_REF_INDIRECT")
        expect = f["x"][...]
    assert np.array_equal(read(lc, did, expect.dtype, expect.shape), expect)
    assert np.array_equal(read(lc, did, expect.dtype, (5, 9), "[250:255,60:69]"), expect[250:255, 60:69])
    assert np.array_equal(read(lc, did, expect.dtype, (30, 8), "[3:300:10,1:70:9]"), expect[3:300:10, 1:70:9])


@pytest.mark.parametrize(
    "dtype", ["<f4", ">f8", "<i2", ">u4", "S7", "bool", [("a", "<i4"), ("b", ">f8"), ("c", "S3")]], ids=str
)
def test_contiguous_types(lc: Client, sources: Path, dtype: Any) -> None:
    path = _new_file(sources)
    dt = np.dtype(dtype)
    raw = RNG.integers(0, 250, size=(123, 17, 5) if dt.names is None else (123,), dtype=np.uint8)
    data = np.empty(raw.shape, dtype=dt)
    if dt.names:
        data["a"], data["b"], data["c"] = raw, raw * 0.5, [b"x%d" % (v % 10) for v in raw]
    elif dt.kind == "S":
        data[...] = np.char.mod(b"v%d", raw.astype(int))  # type: ignore[arg-type]
    else:
        data[...] = raw.astype(dt)
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=data)
    with h5py.File(path) as f:
        did = create_linked(lc, f["c"], "file://" + str(path))
        expect = f["c"][...]
    doc = lc.get(f"/datasets/{did}").json()
    assert doc["creationProperties"]["layout"]["class"] == "H5D_CONTIGUOUS_REF"
    assert doc["creationProperties"]["layout"]["dims"][1:] == list(expect.shape[1:])
    assert np.array_equal(read(lc, did, expect.dtype, expect.shape), expect)
    sel = "[100:101]" if expect.ndim == 1 else "[100:101,3:4,0:5]"
    part = expect[100:101] if expect.ndim == 1 else expect[100:101, 3:4, 0:5]
    assert np.array_equal(read(lc, did, expect.dtype, part.shape, sel), part)


def test_contiguous_virtual_chunks_and_points(lc: Client, sources: Path) -> None:
    """Given dims cut the contiguous data into virtual chunks; the last one is short."""
    path = _new_file(sources)
    data = np.arange(1000 * 13, dtype="<i8").reshape(1000, 13)
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=data)
        offset, size = f["c"].id.get_offset(), f["c"].id.get_storage_size()
    lay = {"class": "H5D_CONTIGUOUS_REF", "file_uri": str(path), "offset": offset, "size": size, "dims": [77, 13]}
    r = post_dataset(lc, {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": [1000, 13], "creationProperties": {"layout": lay}})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    assert np.array_equal(read(lc, did, data.dtype, data.shape), data)
    assert np.array_equal(read(lc, did, data.dtype, (3, 2), "[990:1000:4,[0,12]]"), data[990:1000:4][:, [0, 12]])
    pts = np.array([[0, 0], [999, 12], [500, 7], [923, 3]], dtype="<u8")
    r = lc.post(f"/datasets/{did}/value", data=pts.tobytes(), headers={"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"})
    assert r.status_code == 200, r.text
    assert np.frombuffer(r.content, "<i8").tolist() == [data[tuple(p)] for p in pts.tolist()]
    bad = dict(lay, dims=[77, 12])
    r = post_dataset(lc, {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": [1000, 13], "creationProperties": {"layout": bad}})
    assert r.status_code == 400


def test_missing_chunks_read_as_fill(lc: Client, sources: Path) -> None:
    path = _new_file(sources)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(100, 100), chunks=(10, 10), dtype="<f8", fillvalue=-7.5, compression="gzip")
        d[0:10, 0:10] = 1.0
        d[55:65, 95:100] = 2.0
    with h5py.File(path) as f:
        expect = f["x"][...]
        for inline in (True, False):
            did = create_linked(lc, f["x"], str(path), base_props={"fillValue": -7.5}, inline_chunks=1000 if inline else 0)
            assert np.array_equal(read(lc, did, expect.dtype, expect.shape), expect)
    lay = {"class": "H5D_CHUNKED_REF", "file_uri": str(path), "dims": [10, 10], "chunks": {"0_0": [0, 0]}}
    r = post_dataset(lc, {"type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}, "shape": [100, 100], "creationProperties": {"layout": lay, "fillValue": 3.0}})
    assert r.status_code == 201, r.text
    assert (read(lc, r.json()["id"], np.dtype("<f8"), (100, 100)) == 3.0).all()


def test_huge_uncompressed_chunk_reads_only_touched_bytes(lc: Client, sources: Path) -> None:
    """One row of a 64 MiB uncompressed chunk: the server answers from a few KiB of file.

    Checked by truncating nothing but corrupting the bytes outside the row: only the row must
    be read, so the corruption stays invisible (a whole-chunk read would still be right here,
    so the row's bytes are also checked against h5py).
    """
    path = _new_file(sources)
    data = np.arange(4096 * 4096, dtype="<f4").reshape(4096, 4096)
    with h5py.File(path, "w") as f:
        f.create_dataset("big", data=data, chunks=(4096, 4096))
    with h5py.File(path) as f:
        did = create_linked(lc, f["big"], str(path))
    row = read(lc, did, np.dtype("<f4"), (1, 4096), "[1234:1235,:]")
    assert np.array_equal(row[0], data[1234])
    col = read(lc, did, np.dtype("<f4"), (4096, 1), "[:,17:18]")
    assert np.array_equal(col[:, 0], data[:, 17])
