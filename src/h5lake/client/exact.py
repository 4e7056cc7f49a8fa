"""Whether Python keys and values convert exactly to a map's numpy types (docs/maps.md).

numpy converts silently where a map must not: ``np.asarray([1.5], dtype="i8")`` is ``[1]``, so
``m[1.5] = v`` would overwrite key 1. `convert` refuses what does not convert exactly and says
which item and why: a non-integer or out-of-range number for an integer type, a string for a
number, a number for a string, a string longer than a fixed length, a float that overflows. For
keys a floating-point number must be representable exactly too (``0.1`` is no float32 key: it
would be another key); values may round to their type's precision, as h5py writes them.

Numeric arrays (and lists numpy reads as such) are checked in numpy's loops; anything else item
by item, about a microsecond each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

import numpy as np

NUMERIC = "biuf"


class Inexact(ValueError):
    """Item ``index`` of a batch does not convert exactly: ``reason`` says why."""

    def __init__(self, index: int, item: Any, reason: str) -> None:
        super().__init__(f"item {index}: {reason}")
        self.index, self.item, self.reason = index, item, reason


def sentence(subject: str, e: Inexact) -> str:
    """``subject`` (the key or value, named) and why it is refused, as one sentence."""
    lead = _brief(e.item) + " "
    return f"{subject} {e.reason[len(lead):]}" if e.reason.startswith(lead) else f"{subject}: {e.reason}"


def describe(dt: np.dtype[Any]) -> str:
    """A dtype as a person reads it (``object`` says nothing about a variable-length type)."""
    meta: dict[str, Any] = dict(dt.metadata or {})
    vlen = meta.get("vlen")
    if vlen is str or vlen is bytes:
        return "variable-length string"
    if vlen is not None:
        return f"variable-length sequence of {describe(np.dtype(vlen))}"
    if meta.get("enum"):
        return f"enumeration {sorted(meta['enum'])} of {dt.name}"
    return str(dt)


def convert(items: Iterable[Any], dt: np.dtype[Any], *, rounding: bool) -> np.ndarray[Any, Any]:
    """``items`` as a 1-D array of ``dt``; `Inexact` for the first that does not convert
    exactly (``rounding``: floating-point values may round to ``dt``'s precision)."""
    if isinstance(items, np.ndarray) and items.dtype == dt and items.ndim == 1:
        return items
    seq = items if isinstance(items, np.ndarray) else list(items)
    if dt.kind in NUMERIC and dt.metadata is None:
        arr = _numeric(seq)
        if arr is not None:
            return _checked_numeric(seq, arr, dt, rounding)
    for i, item in enumerate(seq):
        reason = problem(item, dt, rounding=rounding)
        if reason is not None:
            raise Inexact(i, item, reason)
    if dt.kind == "O":
        out = np.empty(len(seq), dtype=dt)
        for i, item in enumerate(seq):
            out[i] = item
        return out
    return np.asarray([_plain(x) for x in seq], dtype=dt)


def _plain(item: Any) -> Any:
    """What numpy builds an element from: a record's fields by position."""
    if isinstance(item, dict):
        return tuple(item.values())
    return item


def _numeric(seq: Any) -> np.ndarray[Any, Any] | None:
    """``seq`` as a 1-D numeric array, or None when numpy does not read it as one."""
    try:
        arr = seq if isinstance(seq, np.ndarray) else np.asarray(seq)
    except (ValueError, OverflowError, TypeError):
        return None
    return arr if arr.ndim == 1 and arr.dtype.kind in NUMERIC else None


def _checked_numeric(seq: Any, arr: np.ndarray[Any, Any], dt: np.dtype[Any], rounding: bool) -> np.ndarray[Any, Any]:
    with np.errstate(all="ignore"):
        out = arr.astype(dt)
        if rounding and dt.kind == "f" and arr.dtype.kind in NUMERIC:
            bad = np.isinf(out) & ~np.isinf(arr.astype(np.float64))
        else:
            back = out.astype(arr.dtype)
            bad = back != arr
            if arr.dtype.kind == "f":
                bad &= ~(np.isnan(arr) & np.isnan(back))
            if dt.kind in "iu" and arr.dtype.kind in "iu" and len(arr):  # a wrap can cast back losslessly
                info = np.iinfo(dt)
                if int(arr.min()) < info.min or int(arr.max()) > info.max:
                    bad = np.array([not info.min <= x <= info.max for x in arr.tolist()])
    if bad.any():
        i = int(np.argmax(bad))
        item = seq[i]
        raise Inexact(i, item, problem(item, dt, rounding=rounding) or f"{item!r} does not convert exactly to {describe(dt)}")
    return out


def problem(item: Any, dt: np.dtype[Any], *, rounding: bool) -> str | None:
    """Why ``item`` does not convert exactly to an element of ``dt``; None when it does."""
    meta: dict[str, Any] = dict(dt.metadata or {})
    if dt.names is not None and dt.fields is not None:
        return _record(item, dt, rounding)
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        if np.shape(item) != shape:
            return f"{_brief(item)} is not an array of shape {list(shape)}"
        for x in np.asarray(item, dtype=object).reshape(-1):
            reason = problem(x, base, rounding=rounding)
            if reason is not None:
                return reason
        return None
    vlen = meta.get("vlen")
    if vlen is str or vlen is bytes:
        return _string(item, None)
    if vlen is not None:
        if isinstance(item, str | bytes) or not isinstance(item, list | tuple | np.ndarray) or np.ndim(item) != 1:
            return f"{_brief(item)} is not a sequence"
        for x in item:
            reason = problem(x, np.dtype(vlen), rounding=rounding)
            if reason is not None:
                return reason
        return None
    if "ref" in meta:
        return None  # references are the server's to check
    kind = dt.kind
    if kind == "S":
        return _string(item, dt.itemsize)
    if kind == "U":
        return None if isinstance(item, str) and len(item) <= dt.itemsize // 4 else f"{_brief(item)} is not a string of at most {dt.itemsize // 4} characters"
    if kind == "b":
        return None if isinstance(item, bool | np.bool_) or (_is_int(item) and int(item) in (0, 1)) else f"{_brief(item)} is not a boolean"
    if kind in "iu":
        return _integer(item, dt, meta.get("enum"))
    if kind in "fc":
        return _floating(item, dt, rounding)
    if kind == "V":
        return None if isinstance(item, np.void) or (isinstance(item, bytes) and len(item) == dt.itemsize) else f"{_brief(item)} is not {dt.itemsize} bytes"
    return None


def _record(item: Any, dt: np.dtype[Any], rounding: bool) -> str | None:
    names = dt.names or ()
    if isinstance(item, np.void) and item.dtype.names:
        item = item.item()
    if isinstance(item, dict):
        if sorted(item) != sorted(names):
            return f"{_brief(item)} does not have the fields {list(names)}"
        item = tuple(item[n] for n in names)
    if not isinstance(item, tuple | list) or len(item) != len(names):
        return f"{_brief(item)} is not a record of {len(names)} fields"
    for name, x in zip(names, item, strict=True):
        assert dt.fields is not None
        reason = problem(x, dt.fields[name][0], rounding=rounding)
        if reason is not None:
            return f"field {name}: {reason}"
    return None


def _string(item: Any, length: int | None) -> str | None:
    if isinstance(item, bytes):
        try:
            item.decode("utf-8")
        except UnicodeDecodeError:
            return f"{_brief(item)} is not UTF-8"
        data = item
    elif isinstance(item, str):
        data = item.encode("utf-8")
    else:
        return f"{_brief(item)} is not a string"
    if length is not None and (len(data) > length or data.endswith(b"\0")):
        return f"{_brief(item)} is not a string of at most {length} bytes (without trailing NULs)"
    return None


def _is_int(item: Any) -> bool:
    return isinstance(item, int | np.integer)


def _integer(item: Any, dt: np.dtype[Any], enum: dict[str, int] | None) -> str | None:
    if isinstance(item, float | np.floating) and math.isfinite(item) and float(item).is_integer():
        item = int(item)
    if not _is_int(item):
        return f"{_brief(item)} is not an integer"
    info = np.iinfo(dt)
    if not info.min <= int(item) <= info.max:
        return f"{int(item)} is out of range for {dt}"
    if enum and int(item) not in enum.values():
        return f"{int(item)} is not a value of the enumeration {sorted(enum)}"
    return None


def _floating(item: Any, dt: np.dtype[Any], rounding: bool) -> str | None:
    if isinstance(item, str | bytes) or not isinstance(item, int | float | complex | np.number | np.bool_):
        return f"{_brief(item)} is not a number"
    if dt.kind == "f" and isinstance(item, complex | np.complexfloating):
        return f"{_brief(item)} is not a real number"
    with np.errstate(all="ignore"):
        try:
            out = dt.type(item)
        except OverflowError:
            return f"{_brief(item)} is out of range for {dt}"
    given_inf = isinstance(item, float | complex | np.inexact) and bool(np.isinf(item))
    if np.isinf(out) and not given_inf:
        return f"{_brief(item)} is out of range for {dt}"
    if rounding or np.isnan(out) or given_inf:
        return None
    same = int(out.real) == int(cast(Any, item)) if _is_int(item) else complex(out) == complex(item)  # not numpy's weak compare
    return None if same else f"{_brief(item)} is not exactly a {dt} (it would be {out.item()!r})"


def _brief(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."
