"""The shortcuts of the load path give what the general path gives: type JSON and memory types
remembered by their key (client/h5types.py, client/h5memory.py), attribute values taken from
their bytes without the round trip through JSON (service/objects/attributes.py)."""

from __future__ import annotations

import base64
import struct
import threading
from typing import Any

import h5py
import numpy as np
import orjson
import pytest
from h5py import h5t

from h5lake.client import h5bulk, h5memory, h5types, h5values
from h5lake.client.loadplan import NullReferencesOnly
from h5lake.errors import InvalidInput
from h5lake.model.directjson import direct_json
from h5lake.model.fromjson import json_to_array
from h5lake.model.types import TypeJson
from h5lake.model.values import array_to_bytes, array_to_json, bytes_to_array
from h5lake.service.objects import attributes


def _types() -> list[Any]:
    fixed = h5t.C_S1.copy()
    fixed.set_size(10)
    nullpad = fixed.copy()
    nullpad.set_strpad(h5t.STR_NULLPAD)
    enum = h5t.py_create(h5py.enum_dtype({"a": 0, "b": 1}, basetype="i1"), logical=True)
    compound = h5t.py_create(np.dtype([("x", "<i4"), ("y", ">f8")]))
    return [
        h5t.STD_I32LE, h5t.STD_I32BE, h5t.STD_U8LE, h5t.IEEE_F64LE, h5t.IEEE_F32BE, fixed, nullpad,
        h5t.py_create(h5py.string_dtype("utf-8"), logical=True), h5t.py_create(h5py.string_dtype("ascii"), logical=True),
        enum, compound, h5t.py_create(h5py.vlen_dtype("<i2"), logical=True),
    ]


def test_remembered_type_json_is_each_types_own() -> None:
    """Types that differ only in byte order, padding or character set (one encoding each) get
    their own JSON: what was remembered for one is never given for another."""
    h5types._TYPE_CACHE.clear()
    fresh = [h5types.validate_type(h5types._raw_json(tid)) for tid in _types()]
    first = [h5types.type_json(tid) for tid in _types()]
    again = [h5types.type_json(tid) for tid in _types()]
    assert first == fresh and again == fresh
    assert len({str(t) for t in fresh}) == len(fresh)
    assert len(h5types._TYPE_CACHE) == len(fresh)


def test_remembered_memory_types_read_what_fresh_ones_read(tmp_path: Any) -> None:
    path = tmp_path / "v.h5"
    with h5py.File(path, "w") as f:
        f.attrs["s"] = "counts"
        f.attrs.create("v", [np.array([1, 2, 3], "<i2"), np.array([4], "<i2")], dtype=h5py.vlen_dtype("<i2"))
    with h5py.File(path, "r") as f:
        for name in ("s", "v", "s", "v"):
            aid = h5py.h5a.open(f.id, name.encode())
            t = h5types.type_json(aid.get_type())
            wire = h5memory.read(aid, t, 1 if name == "s" else 2)
            expected = _wire(t, f.attrs[name])
            assert wire == expected


def _wire(t: TypeJson, value: Any) -> bytes:
    if t["class"] == "H5T_STRING":
        raw = value.encode() if isinstance(value, str) else bytes(value)
        return struct.pack("<I", len(raw)) + raw
    out = b""
    for item in value:
        raw = np.asarray(item, "<i2").tobytes()
        out += struct.pack("<I", len(raw)) + raw
    return out


VLEN_ASCII: TypeJson = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}
VLEN_UTF8: TypeJson = {**VLEN_ASCII, "charSet": "H5T_CSET_UTF8"}
F64: TypeJson = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
F32BE: TypeJson = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32BE"}


def _counted(raw: bytes) -> bytes:
    return struct.pack("<I", len(raw)) + raw


def _general(t: TypeJson, dims: tuple[int, ...], raw: bytes) -> dict[str, Any]:
    """What the general path keeps: the JSON of the decoded bytes, and the bytes beside it when
    that JSON does not give them back."""
    value = array_to_json(bytes_to_array(raw, t, dims), t)
    out = {"value": value}
    try:
        exact = array_to_bytes(json_to_array(value, t, dims), t) == raw
    except InvalidInput:
        exact = False
    if not exact:
        out["value_base64"] = base64.b64encode(raw).decode()
    return out


@pytest.mark.parametrize(("t", "dims", "raw"), [
    (VLEN_ASCII, (), _counted(b"counts")),
    (VLEN_ASCII, (), _counted(b"")),
    (VLEN_ASCII, (), _counted(b"a\0b")),  # a NUL inside: the general path decides
    (VLEN_UTF8, (), _counted("µm".encode())),
    (VLEN_ASCII, (), _counted(b"\xff\xfe")),  # not UTF-8: kept as bytes too
    (VLEN_ASCII, (2,), _counted(b"ab") + _counted(b"c")),
    (F64, (), np.float64(0.1).tobytes()),
    (F64, (3,), np.array([-0.0, 1e308, 5e-324]).tobytes()),
    (F32BE, (2,), np.array([0.1, 3.4e38], ">f4").tobytes()),
    (F64, (2,), np.array([np.inf, 1.0]).tobytes()),
    (F64, (), struct.pack("<Q", 0x7FF8000000000123)),  # a NaN with a payload: its bytes kept
    (F64, (), np.float64(-0.0).tobytes()),
    (F64, (), np.float64(-np.inf).tobytes()),
    (F32BE, (), np.float32(0.1).astype(">f4").tobytes()),
    *[({"class": "H5T_INTEGER", "base": f"H5T_STD_{k}{o}"}, (), np.array(v, ("<" if o == "LE" else ">") + d).tobytes())
      for k, d, v in (("I8", "i1", -128), ("U8", "u1", 255), ("I16", "i2", -2), ("U16", "u2", 65535),
                      ("I32", "i4", -(2**31)), ("U32", "u4", 2**32 - 1), ("I64", "i8", -(2**63)), ("U64", "u8", 2**64 - 1))
      for o in ("LE", "BE")],
])
def test_attribute_shortcuts_keep_what_the_general_path_keeps(t: TypeJson, dims: tuple[int, ...], raw: bytes) -> None:
    body = {"type": t, "value_base64": base64.b64encode(raw).decode()}
    kept = attributes._parse_value({}, body, t, dims, False)
    assert orjson.dumps(kept, option=orjson.OPT_SORT_KEYS) == orjson.dumps(_general(t, dims, raw), option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize(("t", "raw"), [
    (F64, np.float64(0.1).tobytes()),
    (F32BE, np.float32(3.5).astype(">f4").tobytes()),
    ({"class": "H5T_INTEGER", "base": "H5T_STD_U64BE"}, np.array(2**64 - 1, ">u8").tobytes()),
    (VLEN_ASCII, _counted(b"counts")),
])
def test_scalar_numbers_and_ascii_strings_take_the_direct_way(t: TypeJson, raw: bytes) -> None:
    """The shortcut is taken (no numpy) for these, and gives the value the general path gives."""
    value = direct_json(raw, t, ())
    assert value is not None
    assert orjson.dumps(value) == orjson.dumps(_general(t, (), raw)["value"])
    assert direct_json(raw, t, (1,)) is None and direct_json(raw + b"\0", t, ()) is None


@pytest.mark.parametrize("dtype", ["<f8", ">f4", "<u2", np.dtype([("x", "<i4"), ("y", ">f8")]),
                                   np.dtype([("a", "<i2"), ("b", "<f4")], align=True), "S7"])
def test_values_read_into_kept_memory_are_what_the_general_path_reads(tmp_path: Any, dtype: Any) -> None:
    """``h5bulk.read_box`` (load's values, into the thread's kept buffer when memory and wire
    bytes agree) gives the bytes ``h5values.read_dataset`` gives, for whole and partial boxes."""
    path = tmp_path / "b.h5"
    data = np.zeros((37, 50), dtype=dtype)
    for i, name in enumerate(data.dtype.names or [None]):
        part = data if name is None else data[name]
        part[...] = (np.arange(37 * 50).reshape(37, 50) * (i + 3) % 100).astype(part.dtype)
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=data, chunks=(16, 20))
    refs = NullReferencesOnly()
    with h5py.File(path, "r") as f:
        dsid = f["d"].id
        tid = dsid.get_type()
        t = h5types.type_json(tid)
        for sel in (None, (slice(0, 16), slice(0, 50)), (slice(5, 37), slice(3, 41))):
            got = h5bulk.read_box(dsid, tid, t, sel, refs)
            assert bytes(got) == h5values.read_dataset(dsid, tid, t, sel, refs)
            assert isinstance(got, memoryview) == h5bulk.wire_is_memory(t)


def test_kept_read_memory_is_the_threads_own_and_used_again() -> None:
    """A thread's boxes share its one buffer (each is sent before the next is read); another
    thread's never do; a box over ``KEEP_BYTES`` is fresh memory."""
    first = h5bulk.scratch(1000)
    second = h5bulk.scratch(500)
    assert np.shares_memory(first, second)
    other: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: other.append(h5bulk.scratch(1000)))
    thread.start()
    thread.join()
    assert not np.shares_memory(other[0], first)
    assert not np.shares_memory(h5bulk.scratch(h5bulk.KEEP_BYTES + 1), first)


class _Counting:
    """A dataset id whose ``read_direct_chunk`` calls are counted."""

    def __init__(self, dsid: Any) -> None:
        self.dsid, self.direct = dsid, 0

    def read_direct_chunk(self, *args: Any, **kw: Any) -> Any:
        self.direct += 1
        return self.dsid.read_direct_chunk(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dsid, name)


@pytest.mark.parametrize(("name", "box", "direct"), [
    ("plain", (slice(16, 48), slice(0, 50)), 2),  # whole chunks one after another: their stored bytes
    ("plain", (slice(16, 48), slice(0, 40)), 0),  # narrower than a chunk
    ("plain", (slice(48, 70), slice(0, 50)), 0),  # the edge chunk (rows past the extent stored too)
    ("sparse", (slice(0, 32), slice(0, 50)), 2),  # the second chunk never written: read again, fill
    ("gzip", (slice(16, 48), slice(0, 50)), 0),  # stored compressed
    ("be", (slice(0, 32), slice(0, 50)), 2),  # big-endian in the file and on the wire
])
def test_boxes_of_whole_chunks_are_read_from_their_stored_bytes(tmp_path: Any, name: str, box: Any, direct: int) -> None:
    path = tmp_path / "c.h5"
    values = np.arange(70 * 50, dtype="<f8").reshape(70, 50) / 7
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=values, chunks=(16, 50))
        f.create_dataset("sparse", shape=(70, 50), dtype="<f8", chunks=(16, 50), fillvalue=-1.5)[0:16] = values[0:16]
        f.create_dataset("gzip", data=values, chunks=(16, 50), compression="gzip")
        f.create_dataset("be", data=values.astype(">i4"), chunks=(16, 50))
    with h5py.File(path, "r") as f:
        counting = _Counting(f[name].id)
        tid = counting.get_type()
        t = h5types.type_json(tid)
        got = h5bulk.read_box(counting, tid, t, box, NullReferencesOnly())
        assert bytes(got) == h5values.read_dataset(f[name].id, tid, t, box, NullReferencesOnly())
        assert counting.direct == direct
