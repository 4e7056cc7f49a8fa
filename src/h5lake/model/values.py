"""Values of a type: JSON values and binary bodies to numpy arrays and back.

The JSON forms are those h5pyd 1.0 sends and reads (API-NOTES §4): a scalar is a bare value and
an array nested lists; a compound element is a list of its fields (a dict keyed by field name is
accepted too); an enum is its int (a member name is accepted too) and a bool ``true``/``false``;
an H5T_ARRAY element is a nested list and a vlen a list; an object reference is its id, bare
(``g-...``) or prefixed (``groups/g-...``), kept as sent, with ``""`` or null for a null
reference; a region reference is h5json's object (``{"id", "select_type", "selection"}``,
:mod:`regionrefs`) where its blob is h5lake's, else its opaque blob (the binary element, see
:mod:`vlen`) in base64, null for a null reference; an opaque element is base64 (``""`` when all zero, as h5json writes it); integers are
exact, uint64 included. A float that is not finite is written as ``"NaN"``, ``"Infinity"`` or
``"-Infinity"`` (the form documents keep: strict JSON has no such numbers); REST answers carry
them as HSDS does, bare or null (:mod:`h5lake.api.nonfinite`, :func:`map_non_finite`). Both
the strings and Python's non-finite floats are read.

The binary form is API-NOTES §5: fixed-size types travel packed in C order in the type's own
byte order and go through ``numpy.frombuffer``/``tobytes`` only; variable-length types use the
length-prefixed format of :mod:`h5lake.model.vlen`.

In memory an array of ``shape`` elements of ``t`` has dtype ``to_dtype(t)``, except that for an
H5T_ARRAY type numpy folds the array dims into the shape (``shape + dims``, dtype of the base;
see :func:`h5lake.model.types.array_dims`). All functions take a type from
:func:`h5lake.model.typecheck.validate_type` and raise :class:`InvalidInput` for values that do not
fit it.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model import regionrefs, vlen
from h5lake.model.fromjson import shape_of
from h5lake.model.types import (
    NUMERIC_CLASSES,
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

Writer = Callable[[Any], Any]
"""Turns one stored element into its JSON value."""


def array_to_json(arr: np.ndarray[Any, Any], t: TypeJson) -> Any:
    """The JSON value of an array of elements of ``t``: nested lists, or a bare value for a
    0-d array. The inverse of :func:`json_to_array`; see the module docstring for the forms.
    """
    dims, elem = array_dims(t)
    arr = np.asarray(arr)
    _check_dims(arr, dims)
    cls = type_class(elem)
    if cls in NUMERIC_CLASSES:
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


def _write_region_ref(x: Any) -> dict[str, Any] | str | None:
    if x is None or (isinstance(x, int) and x == 0) or x == b"":
        return None  # the null reference
    if isinstance(x, bytes | bytearray | memoryview | np.bytes_):
        return regionrefs.json_of_blob(bytes(x))
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


def bytes_to_array(
    data: bytes | bytearray | memoryview, t: TypeJson, shape: Sequence[int]
) -> np.ndarray[Any, Any]:
    """The array of ``shape`` elements of ``t`` in a binary body (API-NOTES §5).

    For a fixed-size type this is a zero-copy view of ``data`` (read-only if ``data`` is), unless
    the type has compound offsets and must be unpacked. Raises :class:`InvalidInput` when the
    byte count does not match (``expected N bytes, got M``) or a variable-length body is
    malformed.
    """
    full = shape_of(shape)
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


def array_to_buffer(arr: np.ndarray[Any, Any], t: TypeJson) -> bytes | memoryview:
    """``array_to_bytes``, but a view of ``arr``'s own memory (no copy) when ``arr`` already is
    the packed wire form: a C-contiguous array of the type's wire dtype. The caller keeps
    ``arr`` unchanged while the view is in use."""
    dims, elem = array_dims(t)
    if not dims and not is_variable(elem) and arr.flags.c_contiguous and arr.dtype == wire_dtype(elem):
        return arr.reshape(-1).view(np.uint8).data
    return array_to_bytes(arr, t)


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


NON_FINITE = frozenset({"NaN", "Infinity", "-Infinity"})


def nan_to_null(value: Any, t: TypeJson, rank: int) -> Any:
    """A JSON value (as `array_to_json` gives it, ``rank`` dimensions deep) with every NaN and
    infinity of a float (also inside arrays and compound fields) as ``null``: HSDS's
    ``ignore_nan=1``, for readers whose JSON has no NaN."""
    return map_non_finite(value, t, rank, lambda _: None)


def map_non_finite(value: Any, t: TypeJson, rank: int, to: Callable[[str], Any]) -> Any:
    """A JSON value (as `array_to_json` gives it, ``rank`` dimensions deep) with every NaN and
    infinity of a float (``"NaN"``, ``"Infinity"``, ``"-Infinity"``, also inside arrays and
    compound fields) replaced by ``to(that string)``; strings of string types are left alone."""
    if rank > 0:
        return [map_non_finite(v, t, rank - 1, to) for v in value] if isinstance(value, list) else value
    cls = t.get("class") if isinstance(t, dict) else None
    if cls == "H5T_FLOAT" or (cls is None and isinstance(t, str) and t.startswith("H5T_IEEE_F")):
        return to(value) if isinstance(value, str) and value in NON_FINITE else value
    if cls == "H5T_ARRAY":
        return map_non_finite(value, t["base"], len(t.get("dims", [])), to)
    if cls == "H5T_COMPOUND" and isinstance(value, list):
        return [map_non_finite(v, f["type"], 0, to) for v, f in zip(value, t.get("fields", []))]
    return value


def has_float(t: TypeJson | str) -> bool:
    """Does a value of ``t`` hold floats that `map_non_finite` reaches (in arrays and compound
    fields too)?"""
    if isinstance(t, str):
        return t.startswith("H5T_IEEE_F")
    cls = t.get("class") if isinstance(t, dict) else None
    if cls == "H5T_FLOAT":
        return True
    if cls == "H5T_ARRAY":
        return has_float(t["base"])
    if cls == "H5T_COMPOUND":
        return any(has_float(f["type"]) for f in t.get("fields", []))
    return False
