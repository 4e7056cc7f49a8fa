"""Values as the numbers h5py reads them, for the answers that follow h5py's view of a file (the
h5grove API and its statistics).

h5py reads two types h5lake keeps in other forms as numpy numbers: a compound of exactly two
floats of one type named ``r`` and ``i`` is numpy's complex, and the x86 extended float (kept
here as an opaque type with its ``hdf5Type``, docs/fidelity.md) is numpy's ``longdouble``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from h5lake.model.types import TypeClass, to_dtype

LONG_DOUBLE = np.dtype(np.longdouble)

#: HDF5's description of the x86 80-bit extended float in 16 bytes (H5T_NATIVE_LDOUBLE there)
_X86_EXTENDED = {"class": "H5T_FLOAT", "size": 16, "order": "LE", "precision": 80, "offset": 0,
                 "signPosition": 79, "exponent": {"position": 64, "size": 15, "bias": 16383},
                 "mantissa": {"position": 0, "size": 64, "norm": "H5T_NORM_NONE"}}


def complex_dtype(t: dict[str, Any]) -> np.dtype[Any] | None:
    """numpy's complex type for h5py's convention (a compound of exactly two floats of one type
    named ``r`` and ``i``, packed in that order), else None."""
    if TypeClass(t["class"]) is not TypeClass.COMPOUND or [f["name"] for f in t["fields"]] != ["r", "i"]:
        return None
    dtype = to_dtype(t)
    real, imag = dtype.fields["r"], dtype.fields["i"]  # type: ignore[index]
    if real[0] != imag[0] or real[0].kind != "f" or real[0].itemsize not in (4, 8):
        return None
    if (real[1], imag[1], dtype.itemsize) != (0, real[0].itemsize, 2 * real[0].itemsize):
        return None
    return np.dtype(f"{real[0].byteorder if real[0].byteorder in '<>' else '<'}c{dtype.itemsize}")


def is_long_double(t: dict[str, Any]) -> bool:
    """An opaque type carrying a float numpy reads as its ``longdouble`` on this machine (as
    h5py does): the x86 extended float, where numpy's longdouble is that float."""
    carried = t.get("hdf5Type")
    if TypeClass(t["class"]) is not TypeClass.OPAQUE or not isinstance(carried, dict):
        return False
    finfo = np.finfo(LONG_DOUBLE)
    return (LONG_DOUBLE.itemsize, finfo.nmant, finfo.nexp) == (16, 63, 15) and all(
        carried.get(k) == v for k, v in _X86_EXTENDED.items()
    )


def as_numbers(arr: np.ndarray, type_json: dict[str, Any]) -> np.ndarray:
    """The values as the numpy numbers h5py reads: complex for an ``r``/``i`` compound, the
    long double for its opaque carrier; other values as they are."""
    cplx = complex_dtype(type_json)
    if cplx is not None:
        out = np.empty(arr.shape, cplx)
        out.real, out.imag = arr["r"], arr["i"]
        return out
    if is_long_double(type_json):
        return np.ascontiguousarray(arr).view(LONG_DOUBLE).reshape(arr.shape)
    return arr
