"""Values of a type: JSON values and binary bodies to numpy arrays and back.

The JSON forms are those h5pyd 1.0 sends and reads (API-NOTES §4): a scalar is a bare value and
an array nested lists; a compound element is a list of its fields (a dict keyed by field name is
accepted too); an enum is its int (a member name is accepted too) and a bool ``true``/``false``;
an H5T_ARRAY element is a nested list and a vlen a list; an object reference is its id, bare
(``g-...``) or prefixed (``groups/g-...``), kept as sent, with ``""`` or null for a null
reference; a region reference is its opaque blob (the binary element, see :mod:`vlen`) in base64,
null for a null reference; an opaque element is base64 (``""`` when all zero, as h5json writes it); integers are
exact, uint64 included. A float that is not finite is written as ``"NaN"``, ``"Infinity"`` or
``"-Infinity"``: strict JSON has no such numbers, and h5pyd turns these strings back into
floats. Both the strings and Python's non-finite floats are read.

The binary form is API-NOTES §5: fixed-size types travel packed in C order in the type's own
byte order and go through ``numpy.frombuffer``/``tobytes`` only; variable-length types use the
length-prefixed format of :mod:`h5lake.model.vlen`.

In memory an array of ``shape`` elements of ``t`` has dtype ``to_dtype(t)``, except that for an
H5T_ARRAY type numpy folds the array dims into the shape (``shape + dims``, dtype of the base;
see :func:`h5lake.model.types.array_dims`). All functions take a type from
:func:`h5lake.model.types.validate_type` and raise :class:`InvalidInput` for values that do not
fit it.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model import vlen
from h5lake.model.ids import Collection, parse_id, strip_collection_prefix
from h5lake.model.types import (
    VARIABLE,
    CharSet,
    RefKind,
    TypeClass,
    TypeJson,
    array_dims,
    empty_array,
    is_bool,
    is_variable,
    to_dtype,
    type_class,
    wire_dtype,
)

Reader = Callable[[Any], Any]
"""Turns one JSON element into a value numpy can store in an element of the type."""
Writer = Callable[[Any], Any]
"""Turns one stored element into its JSON value."""

_NUMERIC = (TypeClass.INTEGER, TypeClass.FLOAT, TypeClass.BITFIELD, TypeClass.ENUM)
_NON_FINITE_IN = {
    "nan": math.nan,
    "infinity": math.inf,
    "+infinity": math.inf,
    "inf": math.inf,
    "+inf": math.inf,
    "-infinity": -math.inf,
    "-inf": -math.inf,
}


def _shape_of(shape: Sequence[int]) -> tuple[int, ...]:
    if not all(isinstance(n, int | np.integer) and n >= 0 for n in shape):
        raise InvalidInput(f"invalid shape {shape!r}")
    return tuple(int(n) for n in shape)


# --------------------------------------------------------------------------------------------
# JSON -> array


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
    full = _shape_of(shape)
    if not broadcast:
        return _from_json(value, t, full)
    first_error: InvalidInput | None = None
    for rank in range(len(full), -1, -1):
        try:
            part = _from_json(value, t, full[len(full) - rank :])
        except InvalidInput as e:
            first_error = first_error or e
            continue
        dims, _ = array_dims(t)
        return part if rank == len(full) else np.broadcast_to(part, full + dims).copy()
    assert first_error is not None
    raise first_error


def _from_json(value: Any, t: TypeJson, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    dims, elem = array_dims(t)
    full = shape + dims
    if type_class(elem) in _NUMERIC:
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
                got = f"{len(v)} items" if isinstance(v, list | tuple) else repr(v)[:40]
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
            raise InvalidInput(f"expected an integer, got {v!r:.40}")
        if not lo <= v <= hi:
            raise InvalidInput(f"{v} is out of range for {base}")
        return v

    return read


def _read_bool(v: Any) -> bool:
    if isinstance(v, bool | np.bool_) or (isinstance(v, int | np.integer) and v in (0, 1)):
        return bool(v)
    raise InvalidInput(f"expected true or false, got {v!r:.40}")


def _float_reader(t: TypeJson) -> Reader:
    scalar = to_dtype(t).type

    def read(v: Any) -> float:
        if isinstance(v, str):
            special = _NON_FINITE_IN.get(v.lower())
            if special is None:
                raise InvalidInput(f"expected a number, got {v!r:.40}")
            return special
        if not isinstance(v, int | float | np.integer | np.floating) or isinstance(v, bool):
            raise InvalidInput(f"expected a number, got {v!r:.40}")
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
            raise InvalidInput(f"expected a string, got {v!r:.40}")
        raw = _utf8(v)
        if len(raw) > length:
            raise InvalidInput(f"string of {len(raw)} bytes is longer than the type's {length}")
        return raw

    return read


def _utf8(v: str) -> bytes:
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"string {v!r:.40} is not valid Unicode") from None


def _read_utf8(v: Any) -> str:
    if not isinstance(v, str):
        raise InvalidInput(f"expected a string, got {v!r:.40}")
    _utf8(v)
    return v


def _read_ascii(v: Any) -> bytes:
    if not isinstance(v, str):
        raise InvalidInput(f"expected a string, got {v!r:.40}")
    return _utf8(v)  # HDF5 does not enforce the ASCII character set; neither does h5py


def _read_obj_ref(v: Any) -> bytes:
    if v is None or v == "":
        return b""  # the null reference
    if not isinstance(v, str):
        raise InvalidInput(f"expected an object id, got {v!r:.40}")
    bare = strip_collection_prefix(v)
    expected = Collection.from_path(v.split("/", 1)[0]) if bare != v else None
    parse_id(bare, expected)
    return v.encode("ascii")


def _read_region_ref(v: Any) -> bytes:
    if v is None or v == "":
        return b""  # the null reference
    if not isinstance(v, str):
        raise InvalidInput(f"expected a base64 string for a region reference, got {v!r:.40}")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"region reference {v!r:.40} is not base64") from None


def _opaque_reader(size: int) -> Reader:
    def read(v: Any) -> bytes:
        if not isinstance(v, str):
            raise InvalidInput(f"expected a base64 string for an opaque value, got {v!r:.40}")
        try:
            raw = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput(f"opaque value {v!r:.40} is not base64") from None
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
            raise InvalidInput(f"expected a list for a vlen value, got {v!r:.40}")
        return _from_json(v, base, (len(v),))

    return read


# --------------------------------------------------------------------------------------------
# array -> JSON


def array_to_json(arr: np.ndarray[Any, Any], t: TypeJson) -> Any:
    """The JSON value of an array of elements of ``t``: nested lists, or a bare value for a
    0-d array. The inverse of :func:`json_to_array`; see the module docstring for the forms.
    """
    dims, elem = array_dims(t)
    arr = np.asarray(arr)
    _check_dims(arr, dims)
    cls = type_class(elem)
    if cls in _NUMERIC:
        arr = arr.astype(to_dtype(elem), copy=False)
        if cls is TypeClass.FLOAT and not np.isfinite(arr).all():
            return _nest([_float_json(x) for x in arr.reshape(-1).tolist()], arr.shape)
        return arr.tolist()
    write = _writer(elem)
    return _nest([write(x) for x in arr.reshape(-1)], arr.shape)


def _check_dims(arr: np.ndarray[Any, Any], dims: tuple[int, ...]) -> None:
    if dims and arr.shape[arr.ndim - len(dims) :] != dims:
        raise InvalidInput(f"array of shape {arr.shape} does not end in the type's dims {dims}")


def _nest(flat: list[Any], shape: tuple[int, ...]) -> Any:
    """Nested lists of ``shape`` from a flat C-order list; the bare element for ``()``."""
    if not shape:
        return flat[0]
    for d in range(len(shape) - 1, 0, -1):
        n, count = shape[d], math.prod(shape[:d])
        flat = [flat[i * n : (i + 1) * n] for i in range(count)]
    return flat


def _float_json(x: float) -> float | str:
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _writer(t: TypeJson) -> Writer:
    match type_class(t):
        case TypeClass.INTEGER | TypeClass.BITFIELD:
            return int
        case TypeClass.ENUM:
            return bool if is_bool(t) else int
        case TypeClass.FLOAT:
            return lambda x: _float_json(float(x))
        case TypeClass.STRING:
            return _write_string
        case TypeClass.REFERENCE:
            return _write_obj_ref if t["base"] == RefKind.OBJECT else _write_region_ref
        case TypeClass.OPAQUE:
            return _write_opaque
        case TypeClass.COMPOUND:
            writers = [_writer(f["type"]) for f in t["fields"]]
            return lambda x: [w(item) for w, item in zip(writers, x, strict=True)]
        case TypeClass.ARRAY:
            return lambda x: array_to_json(np.asarray(x), t)
        case TypeClass.VLEN:
            base = t["base"]
            return lambda x: array_to_json(_vlen_element(x, base), base)


def _write_string(x: Any) -> str:
    if isinstance(x, str):
        try:
            x.encode("utf-8")
            return x
        except UnicodeEncodeError:  # undecodable bytes kept by surrogateescape
            x = x.encode("utf-8", "surrogateescape")
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    if x is None or x == 0:
        return ""  # an element never written
    raise InvalidInput(f"expected a string element, got {type(x).__name__}")


def _write_obj_ref(x: Any) -> str:
    return bytes(x).rstrip(b"\0").decode("ascii", "replace")


def _write_region_ref(x: Any) -> str | None:
    if x is None or (isinstance(x, int) and x == 0) or x == b"":
        return None  # the null reference
    if isinstance(x, bytes | bytearray | memoryview | np.bytes_):
        return base64.b64encode(bytes(x)).decode("ascii")
    raise InvalidInput(f"expected a region reference blob, got {type(x).__name__}")


def _write_opaque(x: Any) -> str:
    raw = bytes(x) if not isinstance(x, np.void) else x.tobytes()
    return base64.b64encode(raw).decode("ascii") if any(raw) else ""


def _vlen_element(x: Any, base: TypeJson) -> np.ndarray[Any, Any]:
    if isinstance(x, np.ndarray):
        return x
    if x is None or (isinstance(x, int) and x == 0):
        return empty_array(base, (0,))  # an element never written
    return np.asarray(x, dtype=to_dtype(array_dims(base)[1]))


# --------------------------------------------------------------------------------------------
# binary


def bytes_to_array(
    data: bytes | bytearray | memoryview, t: TypeJson, shape: Sequence[int]
) -> np.ndarray[Any, Any]:
    """The array of ``shape`` elements of ``t`` in a binary body (API-NOTES §5).

    For a fixed-size type this is a zero-copy view of ``data`` (read-only if ``data`` is), unless
    the type has compound offsets and must be unpacked. Raises :class:`InvalidInput` when the
    byte count does not match (``expected N bytes, got M``) or a variable-length body is
    malformed.
    """
    full = _shape_of(shape)
    dims, elem = array_dims(t)
    full += dims
    view = _byte_view(data)
    if is_variable(elem):
        return vlen.decode_array(view, elem, math.prod(full)).reshape(full)
    memory, wire = to_dtype(elem), wire_dtype(elem)
    expected = math.prod(full) * wire.itemsize
    if len(view) != expected:
        raise InvalidInput(f"expected {expected} bytes, got {len(view)}")
    if memory == wire:
        return np.frombuffer(view, dtype=memory).reshape(full)
    return np.frombuffer(view, dtype=wire).reshape(full).astype(memory)


def _byte_view(data: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(data)
    if view.format == "B" and view.ndim == 1:
        return view
    try:
        return view.cast("B")
    except TypeError:  # not C-contiguous
        return memoryview(view.tobytes())


def array_to_bytes(arr: np.ndarray[Any, Any], t: TypeJson) -> bytes:
    """The binary body for an array of elements of ``t``: packed C order in the type's byte
    order for fixed-size types, the format of :mod:`h5lake.model.vlen` otherwise.

    ``arr`` normally has dtype ``to_dtype(t)``; other dtypes are cast, and a complex array is
    accepted for a compound of two floats (h5py's convention for complex numbers).
    """
    dims, elem = array_dims(t)
    arr = np.asarray(arr)
    _check_dims(arr, dims)
    if is_variable(elem):
        return vlen.encode_array(arr, elem)
    wire = wire_dtype(elem)
    if arr.dtype == wire:
        return arr.tobytes()
    if arr.dtype.kind == "c" and wire.names is not None and len(wire.names) == 2:
        out = np.empty(arr.shape, dtype=wire)
        out[wire.names[0]], out[wire.names[1]] = arr.real, arr.imag
        return out.tobytes()
    try:
        return arr.astype(wire).tobytes()
    except (ValueError, TypeError, OverflowError) as e:
        raise InvalidInput(f"cannot store {arr.dtype} values as {elem['class']}: {e}") from None


# --- the size of a JSON reply, before it is made ------------------------------------------------

_JSON_INT_CHARS = {1: 5, 2: 7, 4: 12, 8: 22}  # digits, sign and ", " of the widest value
_JSON_MIN_OBJECT = 4


def json_size_estimate(arr: np.ndarray, budget: int) -> int:
    """About how many bytes of JSON text ``arr``'s values become (an upper bound for fixed-size
    types). Stops counting once past ``budget``: a reply that big is refused anyway, and
    counting variable-length elements one by one must not cost more than the refusal saves."""
    per_item = json_item_chars(arr.dtype)
    if per_item is not None:
        return arr.size * per_item
    if arr.size * _JSON_MIN_OBJECT > budget:
        return arr.size * _JSON_MIN_OBJECT
    total = 0
    for item in arr.reshape(-1):
        total += _json_object_chars(item)
        if total > budget:
            break
    return total


def json_item_chars(dt: np.dtype[Any]) -> int | None:
    """Characters per element of a fixed-size type, or None when it holds Python objects."""
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        inner = json_item_chars(base)
        return None if inner is None else inner * int(np.prod(shape)) + 2
    if dt.names is not None:
        total = 2
        for name in dt.names:
            inner = json_item_chars(dt.fields[name][0])  # type: ignore[index]
            if inner is None:
                return None
            total += inner
        return total
    if dt.kind == "O":
        return None
    if dt.kind in "iu":
        return _JSON_INT_CHARS.get(dt.itemsize, 42)
    if dt.kind == "b":
        return 7
    if dt.kind in "fc":
        return 26 * (2 if dt.kind == "c" else 1)
    return 4 * dt.itemsize + 4  # strings (escapes) and opaque bytes (base64 or lists)


def _json_object_chars(item: Any) -> int:
    if isinstance(item, bytes | str):
        return 2 * len(item) + 4
    if isinstance(item, np.ndarray):
        inner = json_item_chars(item.dtype)
        if inner is not None:
            return item.size * inner + 2
        return sum(_json_object_chars(x) for x in item.reshape(-1)) + 2
    if isinstance(item, np.void):
        names = item.dtype.names or ()
        return sum(_json_object_chars(item[name]) for name in names) + 2
    if isinstance(item, tuple):
        return sum(_json_object_chars(x) for x in item) + 2
    return 26


# --------------------------------------------------------------------------------------------
# JSON post-processing


NON_FINITE = frozenset({"NaN", "Infinity", "-Infinity"})


def nan_to_null(value: Any, t: TypeJson, rank: int) -> Any:
    """A JSON value (as `array_to_json` gives it, ``rank`` dimensions deep) with every NaN and
    infinity of a float (also inside arrays and compound fields) as ``null``: HSDS's
    ``ignore_nan=1``, for readers whose JSON has no NaN."""
    if rank > 0:
        return [nan_to_null(v, t, rank - 1) for v in value] if isinstance(value, list) else value
    cls = t.get("class") if isinstance(t, dict) else None
    if cls == "H5T_FLOAT" or (cls is None and isinstance(t, str) and t.startswith("H5T_IEEE_F")):
        return None if isinstance(value, str) and value in NON_FINITE else value
    if cls == "H5T_ARRAY":
        return nan_to_null(value, t["base"], len(t.get("dims", [])))
    if cls == "H5T_COMPOUND" and isinstance(value, list):
        return [nan_to_null(v, f["type"], 0) for v, f in zip(value, t.get("fields", []))]
    return value
