"""JSON values to numpy arrays: :func:`json_to_array` reads the JSON forms h5pyd sends (described in
:mod:`h5lake.model.values`) for a normalized type, and :func:`fill_value_array` a dataset's fill value."""

from __future__ import annotations

import base64
import binascii
import itertools
import math
import reprlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model import regionrefs
from h5lake.model.ids import Collection, parse_id, strip_collection_prefix
from h5lake.model.types import (
    INT_BASES,
    NUMERIC_CLASSES,
    VARIABLE,
    CharSet,
    RefKind,
    TypeClass,
    TypeJson,
    array_dims,
    empty_array,
    is_bool,
    to_dtype,
    type_class,
)

Reader = Callable[[Any], Any]
"""Turns one JSON element into a value numpy can store in an element of the type."""

_NON_FINITE_IN = {
    "nan": math.nan,
    "infinity": math.inf,
    "+infinity": math.inf,
    "inf": math.inf,
    "+inf": math.inf,
    "-infinity": -math.inf,
    "-inf": -math.inf,
}


_INT_RANGES = {base: (int(np.iinfo(code).min), int(np.iinfo(code).max)) for base, code in INT_BASES.items()}


_REPR = reprlib.Repr()  # (keyword arguments only from Python 3.12)
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 2, 6, 6, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 40


def _brief(v: Any) -> str:
    """At most ~40 characters of ``v`` for a message, without making its whole repr first (a
    million-item list where a number belongs would be megabytes of text)."""
    return _REPR.repr(v)[:40]


def int_scalar(value: Any, t: TypeJson) -> int | None:
    """``value`` itself when it is a Python ``int`` in the range of the integer type ``t``: the
    JSON value ``json_to_array`` and ``array_to_json`` would give back for one scalar element,
    without numpy (a scalar integer attribute, the commonest kind); else ``None``."""
    if type(value) is not int or t.get("class") != TypeClass.INTEGER.value:
        return None
    bounds = _INT_RANGES.get(t.get("base", ""))
    if bounds is None or not bounds[0] <= value <= bounds[1]:
        return None
    return value


def shape_of(shape: Sequence[int]) -> tuple[int, ...]:
    if not all(isinstance(n, int | np.integer) and n >= 0 for n in shape):
        raise InvalidInput(f"invalid shape {shape!r}")
    return tuple(int(n) for n in shape)


def json_to_array(
    value: Any, t: TypeJson, shape: Sequence[int], *, broadcast: bool = False
) -> np.ndarray[Any, Any]:
    """The array of ``shape`` elements of ``t`` that the JSON ``value`` describes.

    ``shape == ()`` means one scalar element. With ``broadcast=True`` the value may also hold
    fewer dimensions, trailing ones of ``shape`` (down to a single element), and is repeated to
    fill it, numpy-style; the fullest reading that fits wins. Raises :class:`InvalidInput` for a
    value of the wrong nesting or count, an integer out of range, a string longer than a fixed
    length, or any element that is not of the type.
    """
    full = shape_of(shape)
    if not broadcast:
        return _from_json_or_flat(value, t, full)
    first_error: InvalidInput | None = None
    for rank in range(len(full), -1, -1):
        try:
            part = (_from_json_or_flat if rank == len(full) else _from_json)(value, t, full[len(full) - rank :])
        except InvalidInput as e:
            first_error = first_error or e
            continue
        dims, _ = array_dims(t)
        return part if rank == len(full) else np.broadcast_to(part, full + dims).copy()
    assert first_error is not None
    raise first_error


def _from_json_or_flat(value: Any, t: TypeJson, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """As :func:`_from_json`; a value of rank 2 or more may also come as one flat list of all its
    elements in C order, and a scalar of a number or string type as a list of one (HSDS takes
    both forms)."""
    try:
        return _from_json(value, t, shape)
    except InvalidInput:
        if shape == () and _single_item(value) and type_class(t) in (*NUMERIC_CLASSES, TypeClass.STRING):
            return _from_json(value[0], t, shape)  # a scalar as a list of one, as HSDS takes it
        count = math.prod(shape)
        if len(shape) < 2 or not isinstance(value, list) or len(value) != count:
            raise
    dims, _ = array_dims(t)
    return _from_json(value, t, (count,)).reshape(shape + dims)


def _single_item(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list | dict)


def _from_json(value: Any, t: TypeJson, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    dims, elem = array_dims(t)
    full = shape + dims
    if type_class(elem) in NUMERIC_CLASSES:
        fast = _numeric_fast(value, elem, full)
        if fast is not None:
            return fast
        leaves = _leaves(value, full)
        converted = _convert(leaves, _reader(elem), full)
        return np.array(converted, dtype=to_dtype(elem)).reshape(full)
    leaves = _leaves(value, full)
    out = empty_array(elem, full)
    flat = out.reshape(-1)
    for i, item in enumerate(_convert(leaves, _reader(elem), full)):
        flat[i] = item
    return out


def _leaves(value: Any, shape: tuple[int, ...]) -> list[Any]:
    """The elements of a nested-list value in C order, checking every level's length."""
    level = [value]
    for depth, n in enumerate(shape):
        below: list[Any] = []
        for v in level:
            if not isinstance(v, list | tuple) or len(v) != n:
                got = f"{len(v)} items" if isinstance(v, list | tuple) else _brief(v)
                raise InvalidInput(
                    f"value does not match shape {list(shape)}: expected a list of {n} at "
                    f"depth {depth}, got {got}"
                )
            below.extend(v)
        level = below
    return level


def _convert(leaves: list[Any], read: Reader, shape: tuple[int, ...]) -> list[Any]:
    try:
        return [read(v) for v in leaves]
    except InvalidInput as e:
        # find the failing element again to name it; errors are rare, so this is cheap overall
        for i, v in enumerate(leaves):
            try:
                read(v)
            except InvalidInput:
                index = [int(n) for n in np.unravel_index(i, shape)] if shape else []
                raise InvalidInput(f"value{index}: {e.message}") from None
        raise


def _numeric_fast(value: Any, t: TypeJson, shape: tuple[int, ...]) -> np.ndarray[Any, Any] | None:
    """Convert a well-formed numeric value in numpy's C loops, or None to take the slow,
    element-checking path (mixed, stringly or oddly nested values)."""
    if math.prod(shape) >= STRING_CHECK_COUNT and _holds_strings(value, len(shape)):
        return None
    try:
        arr = np.array(value)
    except (ValueError, TypeError, OverflowError):
        return None
    kind = arr.dtype.kind
    if arr.shape != shape or kind not in "biuf" or arr.size == 0:
        return None
    dtype = to_dtype(t)
    if type_class(t) is TypeClass.FLOAT:
        if kind == "b":
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            out = arr.astype(dtype)
        if np.isinf(out).any() and (np.isinf(out) & np.isfinite(arr)).any():
            raise InvalidInput(f"value out of range for {t['base']}")
        return out
    if is_bool(t):
        if kind == "b" or (kind in "iu" and bool(((arr == 0) | (arr == 1)).all())):
            return arr.astype(dtype)
        return None
    if kind not in "iu":
        return None  # floats may still be whole numbers, bools are refused: check each
    info = np.iinfo(dtype)
    if int(arr.min()) < info.min or int(arr.max()) > info.max:
        return None  # the slow path names the offending element
    return arr.astype(dtype)


STRING_CHECK_COUNT = 64 * 1024
"""From this many elements, a value is checked for strings ("NaN") before numpy reads it:
numpy would turn every number into text first, seconds of one call that holds the interpreter
(and every other request with it) for a large body."""


def _holds_strings(value: Any, depth: int) -> bool:
    """Whether the elements ``depth`` lists deep hold a string (tens of nanoseconds each)."""
    leaves = value
    try:
        for _ in range(depth - 1):
            leaves = itertools.chain.from_iterable(leaves)
        return str in set(map(type, leaves))
    except TypeError:
        return False  # not lists that deep: numpy's reading refuses it as well


def _reader(t: TypeJson) -> Reader:
    match type_class(t):
        case TypeClass.INTEGER | TypeClass.BITFIELD:
            return _int_reader(t, {})
        case TypeClass.ENUM:
            if is_bool(t):
                return _read_bool
            return _int_reader(t["base"], {m["name"]: m["value"] for m in t["members"]})
        case TypeClass.FLOAT:
            return _float_reader(t)
        case TypeClass.STRING:
            if t["length"] != VARIABLE:
                return _fixed_string_reader(t["length"])
            return _read_utf8 if t["charSet"] == CharSet.UTF8 else _read_ascii
        case TypeClass.REFERENCE:
            return _read_obj_ref if t["base"] == RefKind.OBJECT else _read_region_ref
        case TypeClass.OPAQUE:
            return _opaque_reader(t["size"])
        case TypeClass.COMPOUND:
            return _compound_reader(t)
        case TypeClass.ARRAY:
            return lambda v: _from_json(v, t, ())
        case TypeClass.VLEN:
            return _vlen_reader(t["base"])


def _int_reader(t: TypeJson, names: dict[str, int]) -> Reader:
    info = np.iinfo(to_dtype(t))
    lo, hi, base = int(info.min), int(info.max), t["base"]

    def read(v: Any) -> int:
        if isinstance(v, str) and v in names:
            return names[v]
        whole_float = isinstance(v, float | np.floating) and float(v).is_integer()
        if whole_float or isinstance(v, np.integer):
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool):
            raise InvalidInput(f"expected an integer, got {_brief(v)}")
        if not lo <= v <= hi:
            raise InvalidInput(f"{v} is out of range for {base}")
        return v

    return read


def _read_bool(v: Any) -> bool:
    if isinstance(v, bool | np.bool_) or (isinstance(v, int | np.integer) and v in (0, 1)):
        return bool(v)
    raise InvalidInput(f"expected true or false, got {_brief(v)}")


def _float_reader(t: TypeJson) -> Reader:
    scalar = to_dtype(t).type

    def read(v: Any) -> float:
        if isinstance(v, str):
            special = _NON_FINITE_IN.get(v.lower())
            if special is None:
                raise InvalidInput(f"expected a number, got {_brief(v)}")
            return special
        if not isinstance(v, int | float | np.integer | np.floating) or isinstance(v, bool):
            raise InvalidInput(f"expected a number, got {_brief(v)}")
        try:
            f = float(v)
            with np.errstate(over="ignore"):
                fits = math.isinf(f) or not math.isinf(float(scalar(f)))
        except OverflowError:
            fits = False
        if not fits:
            raise InvalidInput(f"{v} is out of range for {t['base']}")
        return f

    return read


def _fixed_string_reader(length: int) -> Reader:
    def read(v: Any) -> bytes:
        if not isinstance(v, str):
            raise InvalidInput(f"expected a string, got {_brief(v)}")
        raw = _utf8(v)
        if len(raw) > length:
            raise InvalidInput(f"string of {len(raw)} bytes is longer than the type's {length}")
        return raw

    return read


def _utf8(v: str) -> bytes:
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"string {_brief(v)} is not valid Unicode") from None


def _read_utf8(v: Any) -> str:
    if not isinstance(v, str):
        raise InvalidInput(f"expected a string, got {_brief(v)}")
    _utf8(v)
    return v


def _read_ascii(v: Any) -> bytes:
    if not isinstance(v, str):
        raise InvalidInput(f"expected a string, got {_brief(v)}")
    return _utf8(v)  # HDF5 does not enforce the ASCII character set; neither does h5py


def _read_obj_ref(v: Any) -> bytes:
    if v is None or v == "" or v == "None":
        return b""  # the null reference ("None": h5pyd 1.0's text for it in an attribute, which HSDS stores)
    if not isinstance(v, str):
        raise InvalidInput(f"expected an object id, got {_brief(v)}")
    bare = strip_collection_prefix(v)
    expected = Collection.from_path(v.split("/", 1)[0]) if bare != v else None
    parse_id(bare, expected)
    return v.encode("ascii")


def _read_region_ref(v: Any) -> bytes:
    if v is None or v == "":
        return b""  # the null reference
    if isinstance(v, dict):
        return regionrefs.blob_of_json(v)  # h5json's object form, as h5pyd 1.0 sends it
    if not isinstance(v, str):
        raise InvalidInput(f"expected a region reference object or base64 blob, got {_brief(v)}")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"region reference {_brief(v)} is not base64") from None


def _opaque_reader(size: int) -> Reader:
    def read(v: Any) -> bytes:
        if not isinstance(v, str):
            raise InvalidInput(f"expected a base64 string for an opaque value, got {_brief(v)}")
        try:
            raw = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput(f"opaque value {_brief(v)} is not base64") from None
        if len(raw) > size:
            raise InvalidInput(f"opaque value of {len(raw)} bytes is longer than {size}")
        return raw.ljust(size, b"\0")

    return read


def _compound_reader(t: TypeJson) -> Reader:
    names = [f["name"] for f in t["fields"]]
    readers = [_reader(f["type"]) for f in t["fields"]]

    def read(v: Any) -> tuple[Any, ...]:
        if isinstance(v, dict):
            if set(v) != set(names):
                raise InvalidInput(f"expected the fields {names}, got {sorted(v)}")
            v = [v[n] for n in names]
        elif len(names) == 1 and not isinstance(v, list | tuple):
            v = [v]  # one field: its bare value will do, as HSDS takes it (a write of one field)
        elif not isinstance(v, list | tuple) or len(v) != len(names):
            raise InvalidInput(f"expected a list of {len(names)} field values, got {v!r:.60}")
        items = []
        for name, read_field, item in zip(names, readers, v, strict=True):
            try:
                items.append(read_field(item))
            except InvalidInput as e:
                raise InvalidInput(f"field {name!r}: {e.message}") from None
        return tuple(items)

    return read


def _vlen_reader(base: TypeJson) -> Reader:
    def read(v: Any) -> np.ndarray[Any, Any]:
        if not isinstance(v, list | tuple):
            raise InvalidInput(f"expected a list for a vlen value, got {_brief(v)}")
        return _from_json(v, base, (len(v),))

    return read


EXACT_FILL = "fillValue_base64"
"""The creation property holding a fill value's packed bytes in base64, kept beside
``fillValue`` where its JSON form does not give them back (string bytes that are not UTF-8,
shown as U+FFFD; a NaN's payload): the chunk engine, the answers in base64 and the export use
them, and ``fillValue`` is then only shown (docs/api.md)."""


def fill_value_array(t: TypeJson, fill_json: Any = None) -> np.ndarray[Any, Any]:
    """One element of ``t`` holding the dataset fill value, as a 0-d array of ``to_dtype(t)``.

    ``fill_json`` is the ``fillValue`` of the creation properties, in the JSON value form of
    :func:`json_to_array`; None means the HDF5 default (see
    :func:`empty_array`). For an H5T_ARRAY type the result has the array's dims as its shape
    (numpy absorbs them, see :func:`array_dims`). Raises :class:`InvalidInput` if the fill
    value does not fit the type.
    """
    if fill_json is None:
        return empty_array(t, ())
    return json_to_array(fill_json, t, ())
