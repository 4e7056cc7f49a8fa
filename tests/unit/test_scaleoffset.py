"""The scale-offset filter (chunks/codecs/scaleoffset.py) against HDF5: every chunk h5py writes decodes
here to h5py's values, our encoding of those values is HDF5's chunk byte for byte, and h5py
reads chunks we encode (``write_direct_chunk``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from h5lake.chunks.codecs.scaleoffset import ScaleOffsetLayout, cd_values_for
from h5lake.chunks.filters import FilterPipeline, from_h5py_dcpl
from h5lake.errors import DataCorruption

RNG = np.random.default_rng(3)

CASES: dict[str, tuple[np.ndarray, tuple[int, ...], dict[str, Any]]] = {
    "i4": ((np.arange(2000, dtype="<i4").reshape(40, 50) % 97) - 30, (10, 25), {"scaleoffset": 0}),
    "u2 BE": (RNG.integers(0, 5000, 300).astype(">u2"), (50,), {"scaleoffset": 0}),
    "i8 wide": (RNG.integers(-(1 << 40), 1 << 40, 100).astype("<i8"), (20,), {"scaleoffset": 0}),
    "u1": (RNG.integers(0, 200, 64).astype("u1"), (16,), {"scaleoffset": 0}),
    "i2 every bit": (RNG.integers(-32768, 32767, 100).astype("<i2"), (20,), {"scaleoffset": 0}),
    "i4 eight bits": (RNG.integers(0, 100, 100).astype("<i4"), (20,), {"scaleoffset": 8}),
    "constant": (np.full(40, 7, "<i4"), (20,), {"scaleoffset": 0}),
    "i4 fill": (np.where(RNG.random(100) < 0.3, -1, RNG.integers(0, 1000, 100)).astype("<i4"), (20,), {"scaleoffset": 0, "fillvalue": -1}),
    "f8 three digits": (np.linspace(0, 1, 2000).reshape(40, 50), (10, 25), {"scaleoffset": 3}),
    "f4 two digits": (RNG.standard_normal(400).astype("<f4"), (100,), {"scaleoffset": 2}),
    "f4 BE": (RNG.standard_normal(400).astype(">f4") * 100, (100,), {"scaleoffset": 1}),
    "f8 fill": (np.where(RNG.random(200) < 0.2, -999.0, RNG.random(200) * 10), (50,), {"scaleoffset": 2, "fillvalue": -999.0}),
}


def _file(path: Path, name: str) -> None:
    data, chunks, kw = CASES[name]
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=chunks, **kw)


def _full_chunks(d: h5py.Dataset) -> list[tuple[int, ...]]:
    offsets = [tuple(d.id.get_chunk_info(i).chunk_offset) for i in range(d.id.get_num_chunks())]
    return [o for o in offsets if all(a + c <= n for a, c, n in zip(o, d.chunks, d.shape, strict=True))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_chunks_match_hdf5_both_ways(name: str, tmp_path: Path) -> None:
    _file(tmp_path / "a.h5", name)
    with h5py.File(tmp_path / "a.h5", "r") as f:
        d = f["d"]
        pipeline = FilterPipeline.from_json(from_h5py_dcpl(d), d.dtype, d.chunks)
        for offset in _full_chunks(d):
            box = tuple(slice(o, o + c) for o, c in zip(offset, d.chunks, strict=True))
            values = np.ascontiguousarray(d[box])
            stored = d.id.read_direct_chunk(offset)[1]
            assert np.array_equal(np.frombuffer(pipeline.decode(stored), d.dtype).reshape(d.chunks), values)
            assert pipeline.encode(values.tobytes()) == stored


@pytest.mark.parametrize("name", ["i4", "u2 BE", "f4 two digits", "i4 fill"])
def test_h5py_reads_chunks_encoded_here(name: str, tmp_path: Path) -> None:
    _file(tmp_path / "a.h5", name)
    with h5py.File(tmp_path / "a.h5", "r+") as f:
        d = f["d"]
        pipeline = FilterPipeline.from_json(from_h5py_dcpl(d), d.dtype, d.chunks)
        offset = _full_chunks(d)[0]
        box = tuple(slice(o, o + c) for o, c in zip(offset, d.chunks, strict=True))
        new = np.ascontiguousarray(d[box][::-1] if d.ndim == 1 else d[box][::-1, ::-1])
        d.id.write_direct_chunk(offset, pipeline.encode(new.tobytes()))
    with h5py.File(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][box], new)


def test_parameters_for_a_new_dataset_are_hdf5s(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "a.h5", "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((20,))
        dcpl.set_scaleoffset(h5py.h5z.SO_INT, 0)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_IFSET)
        d = h5py.h5d.create(f.id, b"d", h5py.h5t.STD_I32BE, h5py.h5s.create_simple((40,)), dcpl=dcpl)
        given = list(d.get_create_plist().get_filter(0)[2])
    ours = cd_values_for(2, 0, {"class": "H5T_INTEGER", "base": "H5T_STD_I32BE"}, 20)
    assert list(ours[:7]) == given[:7]


def test_a_cut_chunk_is_corrupt() -> None:
    layout = ScaleOffsetLayout(cd_values_for(2, 0, {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}, 100))
    stored = layout.encode(np.arange(100, dtype="<i4").tobytes())
    assert np.frombuffer(layout.decode(stored, 400), "<i4").tolist() == list(range(100))
    with pytest.raises(DataCorruption):
        layout.decode(stored[:30], 400)


def test_a_client_dataset_by_name_encodes_as_hdf5_does(tmp_path: Path) -> None:
    """``{"name": "scaleoffset", "scaleType": ..., "scaleOffset": n}`` on a new dataset: chunks
    h5py reads back (HDF5 computes the same parameters for a dataset without a fill value)."""
    values = (np.arange(40, dtype="<i4") * 3) - 50
    pipeline = FilterPipeline.from_json(
        [{"name": "scaleoffset", "scaleType": "H5Z_SO_INT", "scaleOffset": 0}], np.dtype("<i4"), (20,), type_json={"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    )
    assert pipeline.to_json()[0]["scaleType"] == "H5Z_SO_INT"
    floats = FilterPipeline.from_json(
        [{"name": "scaleoffset", "scaleType": "H5Z_SO_FLOAT_DSCALE", "scaleOffset": 2}], np.dtype("<f8"), (20,), type_json={"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
    )
    with h5py.File(tmp_path / "a.h5", "w") as f:
        d = f.create_dataset("d", shape=(40,), dtype="<i4", chunks=(20,), scaleoffset=0)
        e = f.create_dataset("e", shape=(20,), dtype="<f8", chunks=(20,), scaleoffset=2)
        for i in range(2):
            d.id.write_direct_chunk((20 * i,), pipeline.encode(values[20 * i : 20 * i + 20].tobytes()))
        e.id.write_direct_chunk((0,), floats.encode(np.linspace(0, 1, 20).tobytes()))
    with h5py.File(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][...], values)
        np.testing.assert_allclose(f["e"][...], np.round(np.linspace(0, 1, 20), 2), atol=1e-12)
