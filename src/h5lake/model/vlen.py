"""Binary transfer of variable-length elements (API-NOTES §5), as h5pyd 1.0 reads and writes it.

The wire format, learned from the client (h5json ``array_util`` copyElement/readElement):

- A variable-length string, a region reference and a vlen are each a uint32 little-endian
  **byte** count followed by that many bytes. Strings are UTF-8; a region reference is an opaque
  blob kept as is; a vlen holds its base elements encoded back to back by these same rules, so a
  vlen of fixed values is simply their packed bytes.
- A compound with a variable member is its fields in order, each encoded by these rules, with
  no padding and no prefix of its own.
- An H5T_ARRAY of a variable base is its elements in C order, each encoded by these rules, with
  no prefix of its own.
- A fixed-size value nested in any of these is its packed bytes in its own byte order.
- h5pyd ends some compound bodies with zero padding it never meant to send; exactly that much
  is accepted (see ``_is_h5pyd_padding``). Forms h5pyd itself cannot encode (vlen of vlen, a
  compound of one variable field) follow the same rules.

Elements come and go in the in-memory form of :mod:`h5lake.model.values`: ``str`` (UTF-8) or
``bytes`` (ASCII) strings, ``bytes`` region references, 1-D ndarrays for vlens (with the base's
array dims appended), ndarrays of the dims for arrays, tuples or ``numpy.void`` for compounds.

Everything here loops in Python, element by element; fixed-size types never come here.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.types import (
    CharSet,
    TypeClass,
    TypeJson,
    array_dims,
    empty_array,
    is_variable,
    to_dtype,
    type_class,
    wire_dtype,
)

Encoder = Callable[[Any, bytearray], None]
"""Append the wire bytes of one element to the buffer."""
Decoder = Callable[[memoryview, int], tuple[Any, int]]
"""Read one element at an offset: ``(value, offset after it)``."""

_COUNT = struct.Struct("<I")
_MAX_COUNT = 2**32 - 1


def encode_array(arr: np.ndarray[Any, Any], t: TypeJson) -> bytes:
    """The wire bytes of every element of ``arr`` in C order; ``t`` is not an H5T_ARRAY (the
    caller folds array dims into the shape, see :func:`h5lake.model.types.array_dims`)."""
    encode = encoder(t)
    buf = bytearray()
    for element in arr.reshape(-1):
        encode(element, buf)
    return bytes(buf)


def decode_array(data: memoryview, t: TypeJson, count: int) -> np.ndarray[Any, Any]:
    """Read exactly ``count`` elements of ``t`` (not an H5T_ARRAY) filling all of ``data``."""
    least = count * min_size(t)
    if len(data) < least:  # refuse before allocating room for a shape the body cannot fill
        raise InvalidInput(f"expected at least {least} bytes for {count} elements, got {len(data)}")
    out = empty_array(t, (count,))
    decode = decoder(t)
    offset = 0
    for i in range(count):
        out[i], offset = decode(data, offset)
    if offset != len(data) and not _is_h5pyd_padding(data[offset:], t, count):
        raise InvalidInput(
            f"expected {offset} bytes for {count} variable-length elements, got {len(data)}"
        )
    return out


def _is_h5pyd_padding(rest: memoryview, t: TypeJson, count: int) -> bool:
    """Whether ``rest`` is the zero padding h5pyd 1.0 sends after a compound body.

    h5json's arrayToBytes sizes its buffer counting a 4-byte prefix for every compound field
    that is an array of variable-length strings or vlens, but writes none, so the body ends in
    4 zero bytes per such field per element. Accept exactly that, nothing looser.
    """
    return len(rest) == 4 * count * _unwritten_prefixes(t) and not any(rest)


def _unwritten_prefixes(t: TypeJson) -> int:
    if type_class(t) is not TypeClass.COMPOUND:
        return 0
    total = 0
    for f in t["fields"]:
        dims, leaf = array_dims(f["type"])
        if dims and is_variable(leaf) and type_class(leaf) is not TypeClass.COMPOUND:
            total += 1
        elif not dims:
            total += _unwritten_prefixes(f["type"])
    return total


def min_size(t: TypeJson) -> int:
    """The fewest wire bytes one element of ``t`` can take (a bare count for each vlen)."""
    if not is_variable(t):
        return wire_dtype(t).itemsize
    match type_class(t):
        case TypeClass.COMPOUND:
            return sum(min_size(f["type"]) for f in t["fields"])
        case TypeClass.ARRAY:
            dims, base = array_dims(t)
            return math.prod(dims) * min_size(base)
    return _COUNT.size


def encoder(t: TypeJson) -> Encoder:
    """An encoder for elements of ``t``, built once per type and used for every element."""
    if not is_variable(t):
        return _fixed_encoder(t)
    match type_class(t):
        case TypeClass.STRING | TypeClass.REFERENCE:
            return _encode_blob
        case TypeClass.VLEN:
            return _vlen_encoder(t["base"])
        case TypeClass.COMPOUND:
            return _compound_encoder([encoder(f["type"]) for f in t["fields"]])
        case TypeClass.ARRAY:
            dims, base = array_dims(t)
            return _sequence_encoder(encoder(base), math.prod(dims))
    raise AssertionError(f"unexpected variable type {t['class']}")


def decoder(t: TypeJson) -> Decoder:
    """A decoder for elements of ``t``, built once per type and used for every element."""
    if not is_variable(t):
        return _fixed_decoder(t)
    match type_class(t):
        case TypeClass.STRING:
            return _decode_str if t["charSet"] == CharSet.UTF8 else _decode_bytes
        case TypeClass.REFERENCE:
            return _decode_bytes
        case TypeClass.VLEN:
            return _vlen_decoder(t["base"])
        case TypeClass.COMPOUND:
            return _compound_decoder([decoder(f["type"]) for f in t["fields"]])
        case TypeClass.ARRAY:
            dims, base = array_dims(t)
            return _array_decoder(base, dims)
    raise AssertionError(f"unexpected variable type {t['class']}")


# --- encoders -------------------------------------------------------------------------------


def _put_count(n: int, buf: bytearray) -> None:
    if n > _MAX_COUNT:
        raise InvalidInput(f"variable-length element of {n} bytes exceeds the 4 GiB limit")
    buf += _COUNT.pack(n)


def _encode_blob(value: Any, buf: bytearray) -> None:
    if isinstance(value, str):
        raw = value.encode("utf-8", "surrogateescape")
    elif isinstance(value, bytes | bytearray | memoryview | np.bytes_):
        raw = bytes(value)
    elif value is None or (isinstance(value, int) and value == 0):
        raw = b""  # an element never written (numpy's zero for object arrays)
    else:
        raise InvalidInput(f"expected a string, got {type(value).__name__}")
    _put_count(len(raw), buf)
    buf += raw


def _fixed_encoder(t: TypeJson) -> Encoder:
    dims, base = array_dims(t)
    leaf = wire_dtype(base)
    nbytes = leaf.itemsize * math.prod(dims)

    def encode(value: Any, buf: bytearray) -> None:
        raw = _packed_bytes(value, leaf)
        if len(raw) != nbytes:
            raise InvalidInput(f"expected {nbytes} bytes for a {t['class']} value, got {len(raw)}")
        buf += raw

    return encode


def _packed_bytes(value: Any, leaf: np.dtype[Any]) -> bytes:
    try:
        return np.ascontiguousarray(value, dtype=leaf).tobytes()
    except (ValueError, TypeError, OverflowError) as e:
        raise InvalidInput(f"value does not fit {leaf}: {e}") from None


def _vlen_encoder(base: TypeJson) -> Encoder:
    _, leaf_type = array_dims(base)
    if not is_variable(base):
        leaf = wire_dtype(leaf_type)

        def encode_fixed(value: Any, buf: bytearray) -> None:
            if value is None or (isinstance(value, int) and value == 0):
                value = ()  # an element never written
            raw = _packed_bytes(value, leaf)
            _put_count(len(raw), buf)
            buf += raw

        return encode_fixed

    inner = encoder(leaf_type)

    def encode_variable(value: Any, buf: bytearray) -> None:
        body = bytearray()
        if value is not None and not (isinstance(value, int) and value == 0):
            for item in np.asarray(value).reshape(-1):
                inner(item, body)
        _put_count(len(body), buf)
        buf += body

    return encode_variable


def _compound_encoder(fields: list[Encoder]) -> Encoder:
    def encode(value: Any, buf: bytearray) -> None:
        if len(value) != len(fields):
            raise InvalidInput(f"expected {len(fields)} compound fields, got {len(value)}")
        for field, item in zip(fields, value, strict=True):
            field(item, buf)

    return encode


def _sequence_encoder(inner: Encoder, count: int) -> Encoder:
    def encode(value: Any, buf: bytearray) -> None:
        items = np.asarray(value).reshape(-1)
        if len(items) != count:
            raise InvalidInput(f"expected {count} array elements, got {len(items)}")
        for item in items:
            inner(item, buf)

    return encode


# --- decoders -------------------------------------------------------------------------------


def _take(data: memoryview, offset: int, n: int) -> memoryview:
    end = offset + n
    if end > len(data):
        raise InvalidInput(f"data ends early: needed {end} bytes, got {len(data)}")
    return data[offset:end]


def _read_counted(data: memoryview, offset: int) -> tuple[memoryview, int]:
    (n,) = _COUNT.unpack(_take(data, offset, 4))
    return _take(data, offset + 4, n), offset + 4 + n


def _decode_bytes(data: memoryview, offset: int) -> tuple[Any, int]:
    raw, offset = _read_counted(data, offset)
    return bytes(raw), offset


def _decode_str(data: memoryview, offset: int) -> tuple[Any, int]:
    raw, offset = _read_counted(data, offset)
    # HDF5 does not check the encoding; surrogateescape keeps bad bytes round-trippable
    return bytes(raw).decode("utf-8", "surrogateescape"), offset


def _wire_reader(t: TypeJson) -> Callable[[memoryview, int], np.ndarray[Any, Any]]:
    """Reads ``n`` packed fixed-size elements of ``t`` into an owned array of the memory dtype
    (shape ``(n, *dims)``); the dtypes are worked out once, not per element."""
    dims, leaf_type = array_dims(t)
    wire, memory = wire_dtype(leaf_type), to_dtype(leaf_type)
    same = memory == wire

    def read(raw: memoryview, n: int) -> np.ndarray[Any, Any]:
        arr = np.frombuffer(raw, dtype=memory if same else wire).reshape((n, *dims))
        return arr.copy() if same else arr.astype(memory)

    return read


def _fixed_decoder(t: TypeJson) -> Decoder:
    dims, leaf_type = array_dims(t)
    nbytes = wire_dtype(leaf_type).itemsize * math.prod(dims)
    read = _wire_reader(t)

    def decode(data: memoryview, offset: int) -> tuple[Any, int]:
        # one element: an ndarray of the dims, or a numpy scalar (np.bytes_ has no [()])
        return read(_take(data, offset, nbytes), 1)[0], offset + nbytes

    return decode


def _vlen_decoder(base: TypeJson) -> Decoder:
    dims, leaf_type = array_dims(base)
    if not is_variable(base):
        size = wire_dtype(leaf_type).itemsize * math.prod(dims)
        read = _wire_reader(base)

        def decode_fixed(data: memoryview, offset: int) -> tuple[Any, int]:
            raw, offset = _read_counted(data, offset)
            if len(raw) % size:
                raise InvalidInput(
                    f"vlen element of {len(raw)} bytes is not a whole number of {size}-byte values"
                )
            return read(raw, len(raw) // size), offset

        return decode_fixed

    inner = decoder(leaf_type)
    per_item = math.prod(dims)

    def decode_variable(data: memoryview, offset: int) -> tuple[Any, int]:
        raw, offset = _read_counted(data, offset)
        leaves, pos = [], 0
        while pos < len(raw):
            leaf, pos = inner(raw, pos)
            leaves.append(leaf)
        if len(leaves) % per_item:
            raise InvalidInput(
                f"vlen element holds {len(leaves)} values, not a whole number of {dims} arrays"
            )
        return _assemble(leaves, leaf_type, (len(leaves) // per_item, *dims)), offset

    return decode_variable


def _compound_decoder(fields: list[Decoder]) -> Decoder:
    def decode(data: memoryview, offset: int) -> tuple[Any, int]:
        values = []
        for field in fields:
            value, offset = field(data, offset)
            values.append(value)
        return tuple(values), offset

    return decode


def _array_decoder(leaf_type: TypeJson, dims: tuple[int, ...]) -> Decoder:
    inner = decoder(leaf_type)
    count = math.prod(dims)

    def decode(data: memoryview, offset: int) -> tuple[Any, int]:
        leaves = []
        for _ in range(count):
            leaf, offset = inner(data, offset)
            leaves.append(leaf)
        return _assemble(leaves, leaf_type, dims), offset

    return decode


def _assemble(leaves: list[Any], t: TypeJson, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    out = empty_array(t, shape)
    flat = out.reshape(-1)
    for i, leaf in enumerate(leaves):
        flat[i] = leaf
    return out
