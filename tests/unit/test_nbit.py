"""The N-bit filter (chunks/codecs/nbit.py) and reduced-precision integers (chunks/codecs/precision.py)
against HDF5 itself: chunks h5py writes decode here, chunks encoded here are HDF5's bytes and
read back through h5py (``write_direct_chunk``), and the cd_values match HDF5's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from h5py import h5d, h5p, h5s, h5t

from h5lake.chunks.codecs.nbit import cd_values_for
from h5lake.chunks.codecs.precision import from_stored, to_stored
from h5lake.chunks.dataset import ChunkCodec
from h5lake.chunks.filters import FilterPipeline, from_h5py_dcpl
from h5lake.client.h5types import type_id, type_json
from h5lake.errors import InvalidInput

RNG = np.random.default_rng(5)


def _reduced(base: Any, precision: int, offset: int = 0) -> Any:
    tid = base.copy()
    tid.set_precision(precision)
    tid.set_offset(offset)
    return tid


def _compound() -> tuple[Any, Any, np.ndarray]:
    ctype = h5t.create(h5t.COMPOUND, 16)
    ctype.insert(b"a", 0, _reduced(h5t.STD_I16LE, 9, 2))
    ctype.insert(b"s", 2, h5t.C_S1.copy())
    ctype.insert(b"b", 8, _reduced(h5t.STD_U32BE, 20, 4))
    values = np.zeros(21, dtype=[("a", "<i2"), ("s", "S1"), ("b", ">u4")])
    values["a"] = RNG.integers(-256, 256, 21)
    values["s"] = b"q"
    values["b"] = RNG.integers(0, 1 << 20, 21)
    mtype = h5t.create(h5t.COMPOUND, values.dtype.itemsize)
    mtype.insert(b"a", 0, h5t.STD_I16LE)
    mtype.insert(b"s", 2, h5t.C_S1.copy())
    mtype.insert(b"b", 3, h5t.STD_U32BE)
    return ctype, mtype, values


def _cases() -> dict[str, tuple[Any, Any, np.ndarray, tuple[int, ...]]]:
    ctype, cmtype, cvalues = _compound()
    return {
        "i32 16 bits at 5": (_reduced(h5t.STD_I32LE, 16, 5), h5t.STD_I32LE, RNG.integers(-(1 << 15), 1 << 15, (12, 10)).astype("<i4"), (5, 4)),
        "u16 BE 11 bits at 3": (_reduced(h5t.STD_U16BE, 11, 3), h5t.STD_U16BE, RNG.integers(0, 1 << 11, 37).astype(">u2"), (8,)),
        "u8 3 bits at 4": (_reduced(h5t.STD_U8LE, 3, 4), h5t.STD_U8LE, np.arange(19, dtype="u1") % 8, (6,)),
        "i64 BE 40 bits at 20": (_reduced(h5t.STD_I64BE, 40, 20), h5t.STD_I64BE, RNG.integers(-(1 << 39), 1 << 39, 30).astype(">i8"), (7,)),
        "i32 full precision": (h5t.STD_I32LE.copy(), h5t.STD_I32LE, RNG.integers(-1000, 1000, 20).astype("<i4"), (6,)),
        "compound": (ctype, cmtype, cvalues, (7,)),
    }


CASES = _cases()


def _nbit_file(path: Path, tid: Any, mtype: Any, values: np.ndarray, chunks: tuple[int, ...]) -> None:
    with h5py.File(path, "w") as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
        dset = h5d.create(f.id, b"d", tid, h5s.create_simple(values.shape), dcpl=dcpl)
        dset.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(values), mtype=mtype)


def _chunk_values(d: h5py.Dataset, offset: tuple[int, ...], chunks: tuple[int, ...], mtype: Any) -> np.ndarray:
    """The chunk at ``offset`` as h5py reads it, padded with zeros past the dataset's edge."""
    box = tuple(slice(o, min(o + c, n)) for o, c, n in zip(offset, chunks, d.shape, strict=True))
    out = np.zeros(chunks, dtype=d.dtype)
    out[tuple(slice(0, b.stop - b.start) for b in box)] = d[box]
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_chunks_are_hdf5s_bytes(name: str, tmp_path: Path) -> None:
    """Every chunk h5py wrote equals our encoding of its values; ours decode to the values."""
    tid, mtype, values, chunks = CASES[name]
    _nbit_file(tmp_path / "a.h5", tid, mtype, values, chunks)
    with h5py.File(tmp_path / "a.h5", "r") as f:
        d = f["d"]
        t = type_json(d.id.get_type())
        filters = from_h5py_dcpl(d)
        hdf5_cd = tuple(filters[0]["parameters"])
        assert cd_values_for(t, int(np.prod(chunks))) == hdf5_cd
        given = ChunkCodec.for_dataset(t, chunks, filters)  # the file's cd_values
        computed = ChunkCodec.for_dataset(t, chunks, [{"name": "nbit"}])  # worked out from the type
        for i in range(d.id.get_num_chunks()):
            info = d.id.get_chunk_info(i)
            _, stored = d.id.read_direct_chunk(info.chunk_offset)
            expected = _chunk_values(d, info.chunk_offset, chunks, mtype)
            for codec in (given, computed):
                decoded = codec.decode(stored)
                np.testing.assert_array_equal(decoded, expected)
                if not tuple(hdf5_cd)[1]:  # HDF5 fills unused edge elements from its own buffer
                    edge = any(o + c > n for o, c, n in zip(info.chunk_offset, chunks, d.shape, strict=True))
                    if not edge:
                        assert bytes(codec.encode(expected)) == stored


@pytest.mark.parametrize("name", sorted(CASES))
def test_h5py_reads_chunks_encoded_here(name: str, tmp_path: Path) -> None:
    tid, mtype, values, chunks = CASES[name]
    _nbit_file(tmp_path / "a.h5", tid, mtype, values, chunks)  # the dataset, its values replaced below
    with h5py.File(tmp_path / "a.h5", "r") as f:
        t = type_json(f["d"].id.get_type())
    codec = ChunkCodec.for_dataset(t, chunks, [{"name": "nbit"}])
    new = np.ascontiguousarray(values[::-1]) if values.ndim == 1 else np.ascontiguousarray(values[::-1, ::-1])
    with h5py.File(tmp_path / "a.h5", "r+") as f:
        d = f["d"]
        grid = [range(0, n, c) for n, c in zip(d.shape, chunks, strict=True)]
        for offset in np.stack(np.meshgrid(*grid, indexing="ij"), -1).reshape(-1, len(chunks)):
            off = tuple(int(o) for o in offset)
            box = tuple(slice(o, min(o + c, n)) for o, c, n in zip(off, chunks, d.shape, strict=True))
            chunk = np.zeros(chunks, dtype=new.dtype)
            chunk[tuple(slice(0, b.stop - b.start) for b in box)] = new[box]
            d.id.write_direct_chunk(off, bytes(codec.encode(chunk)))
    with h5py.File(tmp_path / "a.h5", "r") as f:
        got = np.empty(values.shape, dtype=values.dtype)
        f["d"].id.read(h5s.ALL, h5s.ALL, got, mtype=mtype)
    np.testing.assert_array_equal(got, new)


def test_precision_values_are_the_integers() -> None:
    t = {"class": "H5T_INTEGER", "base": "H5T_STD_I32BE", "precision": 16, "offset": 5}
    values = np.array([-32768, -1, 0, 1, 32767], ">i4")
    stored = to_stored(values, t)
    assert stored.view(">u4").tolist() == [0x8000 << 5, 0xFFFF << 5, 0, 1 << 5, 0x7FFF << 5]
    np.testing.assert_array_equal(from_stored(stored, t), values)
    with pytest.raises(InvalidInput, match="16-bit signed"):
        to_stored(np.array([40000], ">i4"), t)


def test_type_json_round_trips_precision() -> None:
    for tid in (_reduced(h5t.STD_I32LE, 16, 5), _reduced(h5t.STD_U8BE, 1, 7), _compound()[0]):
        t = type_json(tid)
        assert type_id(t).equal(tid), t
    assert type_json(_reduced(h5t.STD_I16LE, 12)) == {"class": "H5T_INTEGER", "base": "H5T_STD_I16LE", "precision": 12, "offset": 0}
    padded = _reduced(h5t.STD_I16LE, 12)
    padded.set_pad(h5t.PAD_ONE, h5t.PAD_ZERO)
    assert type_json(padded)["class"] == "H5T_OPAQUE"  # padding that is not zero: carried whole


def test_pipeline_refuses_parameters_that_do_not_fit() -> None:
    with pytest.raises(InvalidInput, match="elements"):
        FilterPipeline.from_json([{"name": "nbit", "parameters": [8, 0, 10, 1, 4, 0, 16, 5]}], 4, (5,))
    with pytest.raises(InvalidInput, match="2-byte"):
        FilterPipeline.from_json([{"name": "nbit", "parameters": [8, 0, 5, 1, 2, 0, 9, 2]}], 4, (5,))
