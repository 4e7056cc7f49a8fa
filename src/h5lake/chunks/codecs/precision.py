"""Integers with reduced precision or a bit offset: values to HDF5's element bytes and back.

An HDF5 integer type may use fewer bits than its size (``H5Tset_precision``) starting at a bit
offset (``H5Tset_offset``); the bits outside are padding (zero). h5lake keeps such a type as the
integer of the same size with ``precision`` and ``offset`` (``model.types.reduced_precision``):
clients read and write the integers themselves, while a stored chunk holds HDF5's element bytes
(the value shifted to its offset), so that a chunk is what HDF5 stores and the N-bit filter
(``chunks.codecs.nbit``) sees what it sees in HDF5. Conversions copy; the input is not changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.types import BIT_OFFSET, PRECISION, TypeClass, TypeJson, reduced_precision


def to_stored(arr: np.ndarray, t: TypeJson) -> np.ndarray:
    """Integer values to HDF5's element bytes (same dtype). A value outside the type's
    precision is refused (``InvalidInput``), as it could not be stored."""
    out = np.array(arr, copy=True)
    _walk(out, t, True)
    return out


def from_stored(arr: np.ndarray, t: TypeJson) -> np.ndarray:
    """HDF5's element bytes to integer values (same dtype), sign-extended for signed types."""
    out = np.array(arr, copy=True)
    _walk(out, t, False)
    return out


def _walk(arr: np.ndarray, t: TypeJson, storing: bool) -> None:
    if not reduced_precision(t):
        return
    cls = t["class"]
    if cls == TypeClass.INTEGER:
        _convert(arr, int(t[PRECISION]), int(t[BIT_OFFSET]), storing)
    elif cls == TypeClass.ENUM:
        _walk(arr, t["base"], storing)
    elif cls == TypeClass.ARRAY:
        _walk(arr, t["base"], storing)  # numpy keeps an array member as extra dims of its base
    elif cls == TypeClass.COMPOUND:
        for field in t["fields"]:
            _walk(arr[field["name"]], field["type"], storing)


def _convert(arr: np.ndarray, precision: int, offset: int, storing: bool) -> None:
    dt = arr.dtype
    bits = 8 * dt.itemsize
    unsigned: Any = dt.newbyteorder("=").str.replace("i", "u")  # same size, native order
    signed = dt.kind == "i"
    native = arr.astype(dt.newbyteorder("="))
    u = native.view(unsigned)
    mask = np.array((1 << precision) - 1, dtype=unsigned)
    shift = np.array(offset, dtype=unsigned)
    if storing:
        field = u & mask
        if not np.array_equal(_extend(field, precision, bits, signed, unsigned).view(native.dtype), native):
            kind = "signed" if signed else "unsigned"
            raise InvalidInput(f"a value does not fit the {precision}-bit {kind} integer this dataset stores")
        result = field << shift
    else:
        result = _extend((u >> shift) & mask, precision, bits, signed, unsigned)
    arr[...] = result.view(native.dtype).astype(dt)


def _extend(field: np.ndarray, precision: int, bits: int, signed: bool, unsigned: Any) -> np.ndarray:
    """Sign-extend ``precision``-bit fields (unsigned array) to the full width."""
    if not signed or precision == bits:
        return field
    up = np.array(bits - precision, dtype=unsigned)
    return ((field << up).view(unsigned.replace("u", "i")) >> up.astype(unsigned.replace("u", "i"))).view(unsigned)
