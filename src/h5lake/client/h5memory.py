"""Variable-length values between HDF5's memory layout and the wire format, converting nothing.

Why: h5py reads and writes variable-length data through numpy dtypes, and numpy cannot say what
HDF5 can about the fixed-size values inside them: a fixed string in a vlen or in a compound with
a variable member becomes a null-*padded* numpy string, so HDF5 converts it on the way. Writing
"66" back into a 2-byte null-*terminated* string (as PyTables' ``VLArray`` of ``StringAtom``
holds it) then keeps "6", the terminator taking the last byte; space padding is stripped and
bytes after a NUL dropped. Here the memory type is built from the file's own types instead
(:func:`memory_type`): every fixed-size part is the file's exact type, so HDF5 copies its
bytes, and the variable parts are HDF5's C forms, which this module builds and walks itself:

- a variable-length string is a ``char *`` to a NUL-terminated string;
- a vlen is an ``hvl_t``: ``size_t`` element count, then a pointer to the packed elements;
- a compound with a variable member is laid out packed here (HDF5 converts to the file's
  offsets); an array is its elements in C order.

Types holding references are not handled here (their memory form is HDF5's reference, made by
h5py); the caller keeps them on h5py's path. Only this module touches raw pointers.
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import Any

import numpy as np
import orjson
from h5py import h5a, h5s, h5t

from h5lake.client import h5native
from h5lake.client.h5types import type_id
from h5lake.model.types import TypeClass, TypeJson, array_dims, is_variable, to_dtype, type_class, wire_dtype

TypeID = Any

_POINTER = struct.Struct("=Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "=I")
_HVL = struct.Struct("=QQ" if ctypes.sizeof(ctypes.c_size_t) == 8 else "=II")
_COUNT = struct.Struct("<I")
COUNT = _COUNT  # the length before each variable-length element on the wire


_MEMORY_TYPES: dict[bytes, TypeID] = {}
MEMORY_TYPE_ENTRIES = 1024  # memory types remembered (more: the cache starts again)


def memory_type(t: TypeJson) -> TypeID:
    """The HDF5 memory type for values of ``t`` (no references) that converts no fixed-size
    part. Remembered by the type's JSON text: every attribute of a file's few types reuses one
    (the type returned is shared: callers must not change it)."""
    key = orjson.dumps(t)
    found = _MEMORY_TYPES.get(key)
    if found is None:
        if len(_MEMORY_TYPES) >= MEMORY_TYPE_ENTRIES:
            _MEMORY_TYPES.clear()
        found = _MEMORY_TYPES[key] = _memory_type(t)
    return found


def _memory_type(t: TypeJson) -> TypeID:
    if not is_variable(t):
        return type_id(t)
    match type_class(t):
        case TypeClass.STRING:
            return type_id(t)  # variable length: char *, with the file's padding and charset
        case TypeClass.VLEN:
            return h5t.vlen_create(memory_type(t["base"]))
        case TypeClass.ARRAY:
            return h5t.array_create(memory_type(t["base"]), tuple(t["dims"]))
        case TypeClass.COMPOUND:
            members = [(f["name"].encode("utf-8", "surrogateescape"), memory_type(f["type"])) for f in t["fields"]]
            tid = h5t.create(h5t.COMPOUND, sum(m.get_size() for _, m in members))
            offset = 0
            for name, member in members:
                tid.insert(name, offset, member)
                offset += member.get_size()
            return tid
    raise AssertionError(f"unexpected variable type {t['class']}")


def _fixed_sizes(t: TypeJson) -> tuple[int, int, np.dtype[Any], np.dtype[Any]]:
    """(memory size, wire size, memory dtype, wire dtype) of a fixed-size type, array dims folded."""
    dims, leaf = array_dims(t)
    memory, wire = to_dtype(leaf), wire_dtype(leaf)
    n = math.prod(dims)
    return memory.itemsize * n, wire.itemsize * n, memory, wire


class Writer:
    """Wire bytes to a memory image HDF5 reads; keeps every buffer it points into alive until
    the writer is dropped (after the HDF5 write)."""

    def __init__(self, t: TypeJson) -> None:
        self.t = t
        self._keep: list[Any] = []

    def image(self, data: bytes | memoryview, count: int) -> np.ndarray:
        out = bytearray()
        view = memoryview(data)
        pos = 0
        for _ in range(count):
            pos = self._put(self.t, view, pos, out)
        if pos != len(view):
            raise ValueError(f"expected {pos} bytes of variable-length values, got {len(view)}")
        return np.frombuffer(bytes(out), dtype=np.uint8).copy()

    def _pin(self, raw: bytes) -> int:
        buf = ctypes.create_string_buffer(raw, len(raw) + 1)  # NUL-terminated, for strings
        self._keep.append(buf)
        return ctypes.addressof(buf)

    def _put(self, t: TypeJson, wire: memoryview, pos: int, out: bytearray) -> int:
        if not is_variable(t):
            _, wsize, memory, wdt = _fixed_sizes(t)
            raw = bytes(wire[pos : pos + wsize])
            if len(raw) != wsize:
                raise ValueError("variable-length values end early")
            out += raw if memory == wdt else np.frombuffer(raw, dtype=wdt).astype(memory).tobytes()
            return pos + wsize
        match type_class(t):
            case TypeClass.STRING:
                (n,) = _COUNT.unpack_from(wire, pos)
                out += _POINTER.pack(self._pin(bytes(wire[pos + 4 : pos + 4 + n])))
                return pos + 4 + n
            case TypeClass.VLEN:
                (n,) = _COUNT.unpack_from(wire, pos)
                body, end = wire[pos + 4 : pos + 4 + n], pos + 4 + n
                base = t["base"]
                if not is_variable(base):
                    size = _fixed_sizes(base)[1]
                    count = n // size
                    sub = bytearray()
                    for i in range(count):
                        self._put(base, body, i * size, sub)
                else:
                    sub, p, count = bytearray(), 0, 0
                    while p < n:
                        p = self._put(base, body, p, sub)
                        count += 1
                out += _HVL.pack(count, self._pin(bytes(sub)) if count else 0)
                return end
            case TypeClass.ARRAY:
                dims, leaf = array_dims(t)
                for _ in range(math.prod(dims)):
                    pos = self._put(leaf, wire, pos, out)
                return pos
            case TypeClass.COMPOUND:
                for f in t["fields"]:
                    pos = self._put(f["type"], wire, pos, out)
                return pos
        raise AssertionError(f"unexpected variable type {t['class']}")


def _memory_size(t: TypeJson) -> int:
    return int(memory_type(t).get_size())


def to_wire(image: np.ndarray, t: TypeJson, count: int) -> bytes:
    """The wire bytes of ``count`` elements in a memory image HDF5 filled (pointers followed)."""
    out = bytearray()
    view = memoryview(image.data).cast("B")
    size = _memory_size(t)
    sizes: dict[int, int] = {}
    for i in range(count):
        _get(t, view, i * size, out, sizes)
    return bytes(out)


def _get(t: TypeJson, mem: memoryview, pos: int, out: bytearray, sizes: dict[int, int]) -> int:
    if not is_variable(t):
        msize, _, memory, wdt = _fixed_sizes(t)
        raw = bytes(mem[pos : pos + msize])
        out += raw if memory == wdt else np.frombuffer(raw, dtype=memory).astype(wdt).tobytes()
        return pos + msize
    match type_class(t):
        case TypeClass.STRING:
            (ptr,) = _POINTER.unpack_from(mem, pos)
            raw = ctypes.string_at(ptr) if ptr else b""
            out += _COUNT.pack(len(raw)) + raw
            return pos + _POINTER.size
        case TypeClass.VLEN:
            count, ptr = _HVL.unpack_from(mem, pos)
            base = t["base"]
            key = id(base)
            if key not in sizes:
                sizes[key] = _memory_size(base)
            body = bytearray()
            if count and ptr:
                inner = memoryview(ctypes.string_at(ptr, count * sizes[key]))
                p = 0
                for _ in range(count):
                    p = _get(base, inner, p, body, sizes)
            out += _COUNT.pack(len(body)) + body
            return pos + _HVL.size
        case TypeClass.ARRAY:
            dims, leaf = array_dims(t)
            for _ in range(math.prod(dims)):
                pos = _get(leaf, mem, pos, out, sizes)
            return pos
        case TypeClass.COMPOUND:
            for f in t["fields"]:
                pos = _get(f["type"], mem, pos, out, sizes)
            return pos
    raise AssertionError(f"unexpected variable type {t['class']}")


def read(obj: Any, t: TypeJson, count: int, mspace: Any = None, fspace: Any = None) -> bytes:
    """The wire bytes of ``count`` elements read from a dataset (with its spaces) or attribute."""
    mtype = memory_type(t)
    image = np.zeros(count * mtype.get_size(), dtype=np.uint8)
    if not count:
        return b""
    if isinstance(obj, h5a.AttrID):
        obj.read(image, mtype=mtype)
    else:
        obj.read(mspace, fspace, image, mtype=mtype)
    try:
        return to_wire(image, t, count)
    finally:
        h5native.reclaim(mtype, h5s.create_simple((count,)), image.ctypes.data)


def write(obj: Any, t: TypeJson, data: bytes, count: int, mspace: Any = None, fspace: Any = None) -> None:
    """Write ``count`` elements of wire bytes to a dataset (with its spaces) or attribute."""
    if not count:
        return
    writer = Writer(t)
    image = writer.image(data, count)
    mtype = memory_type(t)
    if isinstance(obj, h5a.AttrID):
        obj.write(image, mtype=mtype)
    else:
        obj.write(mspace, fspace, image, mtype=mtype)


def write_string(obj: Any, t: TypeJson, raw: bytes) -> None:
    """Write one variable-length string (``t``, scalar) holding ``raw`` to an attribute: what
    `write` does for one element, without going through its wire bytes."""
    buf = ctypes.create_string_buffer(raw, len(raw) + 1)  # NUL-terminated; alive until written
    image = np.frombuffer(_POINTER.pack(ctypes.addressof(buf)), dtype=np.uint8).copy()
    obj.write(image, mtype=memory_type(t))
