"""HDF5 types, fill values and attributes in Zarr v3 metadata terms (docs/zarr.md). Pure.

A dataset is served to Zarr readers as an array whose data type is one zarr-python 3.1 has
registered. `zarr_form` says which, how a chunk's elements are laid out for the ``bytes`` codec
(or ``vlen-utf8``/``vlen-bytes`` for variable-length elements), and whether the bytes h5lake
keeps for a chunk already are that layout (then a chunk can be sent as stored, only its filters
mapped to codecs; `h5lake.model.zarrcodecs`). A type Zarr cannot hold raises `Unrepresentable`
with the reason, which the caller lists in the parent group's attributes.
"""

from __future__ import annotations

import base64
import enum
import math
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from h5lake.model.types import (
    FLOAT_BASES,
    INT_BASES,
    VARIABLE,
    CharSet,
    StrPad,
    TypeClass,
    TypeJson,
    is_bool,
    reduced_precision,
    to_dtype,
    type_class,
)

ATTR_PREFIX = "_h5lake_"
ENUM_ATTR = ATTR_PREFIX + "enum"  # an enum's member names -> values, on its array
OMITTED_ATTR = ATTR_PREFIX + "omitted"  # a group's members not served, with the reason
HIDDEN_ATTRIBUTES = frozenset({"DIMENSION_LIST", "REFERENCE_LIST"})
"""HDF5 dimension scale bookkeeping: references, given as ``dimension_names`` instead."""


class Unrepresentable(Exception):
    """A dataset (or a type) Zarr v3 with zarr-python's data types cannot hold; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Elements(enum.Enum):
    FIXED = "fixed"  # the ``bytes`` codec over a fixed-size dtype
    UTF8 = "utf8"  # ``vlen-utf8``: variable-length strings
    BYTES = "bytes"  # ``vlen-bytes``: variable-length byte strings


@dataclass(frozen=True, slots=True)
class ZarrForm:
    """How a dataset's elements look to a Zarr reader."""

    data_type: Any  # the zarr.json ``data_type``
    elements: Elements
    served: np.dtype[Any]  # the dtype of a served chunk's decoded elements (FIXED), byte order included
    as_stored: bool  # the bytes h5lake keeps for a chunk (before filters) are exactly the served ones
    attributes: dict[str, Any] = field(default_factory=dict)  # added to the array's attributes

    @property
    def endian(self) -> str | None:
        """The ``bytes`` codec's ``endian``: None for one-byte and byte-string types."""
        if self.elements is not Elements.FIXED or self.served.names is not None:
            return None
        order = self.served.byteorder
        if order == "|" or self.served.kind in "SVb":
            return None
        if order == "=":
            order = "<" if np.little_endian else ">"
        return "little" if order == "<" else "big"


_NUMERIC = {"i": "int", "u": "uint", "f": "float", "c": "complex"}


def _numeric_name(dt: np.dtype[Any]) -> str:
    return f"{_NUMERIC[dt.kind]}{dt.itemsize * 8}"


def zarr_form(t: TypeJson) -> ZarrForm:
    """The Zarr form of elements of HDF5 type ``t`` (normalized type JSON)."""
    cls = type_class(t)
    if cls in (TypeClass.INTEGER, TypeClass.FLOAT, TypeClass.BITFIELD):
        if reduced_precision(t):  # served as whole integers, decoded from the bits stored
            dt = to_dtype(t)
            return ZarrForm(_numeric_name(dt), Elements.FIXED, dt.newbyteorder("<"), False)
        bases = FLOAT_BASES if cls is TypeClass.FLOAT else INT_BASES
        base = t.get("base")
        if cls is TypeClass.BITFIELD:
            base = str(base).replace("_B", "_U")
        if base not in bases:
            raise Unrepresentable(f"HDF5 type {base} has no Zarr data type")
        dt = np.dtype(bases[base])
        return ZarrForm(_numeric_name(dt), Elements.FIXED, dt, True)
    if cls is TypeClass.ENUM:
        if is_bool(t):
            return ZarrForm("bool", Elements.FIXED, np.dtype("?"), True)
        inner = zarr_form(t["base"])
        members = {m["name"]: m["value"] for m in t["members"]}
        return ZarrForm(inner.data_type, inner.elements, inner.served, inner.as_stored, {ENUM_ATTR: members})
    if cls is TypeClass.STRING:
        if t["length"] == VARIABLE:
            if t.get("charSet") == CharSet.UTF8:
                return ZarrForm("string", Elements.UTF8, np.dtype("O"), False)
            return ZarrForm("variable_length_bytes", Elements.BYTES, np.dtype("O"), False)
        if t.get("strPad") == StrPad.SPACEPAD:
            raise Unrepresentable("space-padded fixed-length strings: HDF5 readers strip the padding, "
                                  "Zarr's null_terminated_bytes would keep it")
        n = int(t["length"])
        return ZarrForm({"name": "null_terminated_bytes", "configuration": {"length_bytes": n}}, Elements.FIXED,
                        np.dtype(f"S{n}"), True)
    if cls is TypeClass.OPAQUE:
        n = int(t["size"])
        return ZarrForm({"name": "raw_bytes", "configuration": {"length_bytes": n}}, Elements.FIXED, np.dtype(f"V{n}"), True)
    if cls is TypeClass.VLEN:
        base = t.get("base", {})
        if type_class(base) is TypeClass.INTEGER and base.get("base") in ("H5T_STD_U8LE", "H5T_STD_U8BE",
                                                                           "H5T_STD_I8LE", "H5T_STD_I8BE"):
            return ZarrForm("variable_length_bytes", Elements.BYTES, np.dtype("O"), False)
        raise Unrepresentable("variable-length sequences other than of bytes have no Zarr data type")
    if cls is TypeClass.COMPOUND:
        return _compound(t)
    if cls is TypeClass.REFERENCE:
        raise Unrepresentable("references have no Zarr data type")
    if cls is TypeClass.ARRAY:
        raise Unrepresentable("array element types have no Zarr data type")
    raise Unrepresentable(f"HDF5 type class {cls} has no Zarr data type")


def _compound(t: TypeJson) -> ZarrForm:
    fields = t["fields"]
    stored = to_dtype(t)
    names = [f["name"] for f in fields]
    if names == ["r", "i"] and all(type_class(f["type"]) is TypeClass.FLOAT for f in fields) and (
        fields[0]["type"]["base"] == fields[1]["type"]["base"]
    ):  # h5py's complex numbers
        part = np.dtype(FLOAT_BASES[fields[0]["type"]["base"]])
        if part.itemsize in (4, 8):
            served = np.dtype(f"{part.byteorder}c{part.itemsize * 2}")
            return ZarrForm(_numeric_name(served), Elements.FIXED, served, stored.itemsize == served.itemsize)
    out: list[list[Any]] = []
    formats: list[tuple[str, np.dtype[Any]]] = []
    for f in fields:
        inner = zarr_form(f["type"])
        if inner.elements is not Elements.FIXED or inner.served.names is not None:
            raise Unrepresentable(f"compound field {f['name']!r}: only fixed-size, non-compound fields have a Zarr form")
        out.append([f["name"], inner.data_type])
        formats.append((f["name"], inner.served.newbyteorder("<") if inner.served.kind in "iufcb" else inner.served))
    served = np.dtype(formats)
    # sent as stored when the stored layout is the served one (packed, little-endian fields)
    return ZarrForm({"name": "structured", "configuration": {"fields": out}}, Elements.FIXED, served, stored == served)


def to_served(arr: np.ndarray, form: ZarrForm) -> np.ndarray:
    """Fixed-size elements as the served dtype (h5py's complex compounds as complex numbers)."""
    dt = form.served
    if arr.dtype == dt:
        return arr
    if dt.kind == "c" and arr.dtype.names:
        out = np.empty(arr.shape, dtype=dt)
        out.real = arr[arr.dtype.names[0]]
        out.imag = arr[arr.dtype.names[1]]
        return out
    return arr.astype(dt)


# --- fill values ------------------------------------------------------------------------------


def _float_json(x: Any, dt: np.dtype[Any]) -> Any:
    v = float(x)
    if math.isfinite(v):
        return v
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    canonical = np.array(np.nan, dtype=dt.newbyteorder("=")).tobytes()
    raw = np.array(x, dtype=dt.newbyteorder("=")).tobytes()
    if raw == canonical:
        return "NaN"
    return "0x" + raw[::-1].hex() if np.little_endian else "0x" + raw.hex()  # the bits, most significant first


def fill_json(form: ZarrForm, fill: np.ndarray) -> Any:
    """The zarr.json ``fill_value`` for the dataset's fill element ``fill`` (0-d)."""
    if form.elements is Elements.UTF8:
        v = fill.item() if fill.shape == () else ""
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        return v if isinstance(v, str) else ""
    if form.elements is Elements.BYTES:
        v = fill.item() if fill.shape == () else b""
        return base64.b64encode(v if isinstance(v, bytes) else b"").decode()
    dt = form.served
    value = to_served(np.asarray(fill), form)
    if dt.kind == "S":  # as numpy (and zarr-python) gives it: trailing NULs dropped
        return base64.b64encode(value.tobytes().rstrip(b"\0")).decode()
    if dt.names is not None or dt.kind == "V":
        return base64.b64encode(value.tobytes()).decode()
    if dt.kind == "b":
        return bool(value)
    if dt.kind in "iu":
        return int(value)
    if dt.kind == "f":
        return _float_json(value, dt)
    if dt.kind == "c":
        part = np.dtype(f"{dt.byteorder}f{dt.itemsize // 2}")
        return [_float_json(value.real, part), _float_json(value.imag, part)]
    raise Unrepresentable(f"no fill value form for {dt}")


# --- attributes -------------------------------------------------------------------------------


def attribute_json(attr: dict[str, Any]) -> Any:
    """An HDF5 attribute's value as a Zarr attribute (docs/zarr.md, "Attributes").

    The stored JSON value (h5lake keeps floats that are not finite as ``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``, as Zarr does); a one-element one-dimensional value as its element, as
    netCDF readers give it; a value JSON cannot carry (bytes kept as ``value_base64``) as
    ``{"base64": ..., "hdf5_type": ...}``.
    """
    if "value_base64" in attr:
        return {"base64": attr["value_base64"], "hdf5_type": attr.get("type")}
    value = attr.get("value")
    shape = attr.get("shape") or {}
    dims = shape.get("dims") if isinstance(shape, dict) else None
    if isinstance(value, list) and dims is not None and list(dims) == [1] and len(value) == 1:
        return value[0]
    return value


def attributes_json(attrs: dict[str, Any]) -> dict[str, Any]:
    return {name: attribute_json(a) for name, a in attrs.items() if name not in HIDDEN_ATTRIBUTES and isinstance(a, dict)}


# --- chunk bodies of variable-length elements (numcodecs' vlen-utf8 / vlen-bytes format) -------


def vlen_encode(items: np.ndarray, form: ZarrForm) -> bytes:
    """A chunk of variable-length elements as zarr's ``vlen-utf8``/``vlen-bytes`` codec writes it:
    the element count, then each element's byte length and bytes (little-endian uint32s)."""
    flat = items.reshape(-1)
    parts = [struct.pack("<I", flat.size)]
    for v in flat:
        if isinstance(v, str):
            b = v.encode("utf-8", "surrogateescape")
        elif isinstance(v, bytes | bytearray | memoryview):
            b = bytes(v)
        elif isinstance(v, np.ndarray):
            b = v.tobytes()
        elif v is None:
            b = b""
        else:
            b = str(v).encode()
        parts.append(struct.pack("<I", len(b)))
        parts.append(b)
    return b"".join(parts)


def vlen_decode(data: bytes, count: int, form: ZarrForm) -> np.ndarray:
    """The ``count`` elements of a ``vlen-utf8``/``vlen-bytes`` chunk body; ValueError if malformed."""
    if len(data) < 4:
        raise ValueError("a variable-length chunk needs at least 4 bytes")
    (n,) = struct.unpack_from("<I", data, 0)
    if n != count:
        raise ValueError(f"the chunk holds {n} elements, expected {count}")
    out = np.empty(count, dtype=object)
    pos = 4
    for k in range(count):
        if pos + 4 > len(data):
            raise ValueError("the chunk ends inside an element's length")
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if pos + size > len(data):
            raise ValueError("the chunk ends inside an element")
        b = bytes(data[pos : pos + size])
        pos += size
        out[k] = b.decode("utf-8") if form.elements is Elements.UTF8 else b
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes after the last element")
    return out


FILL_ATTR = "_FillValue"
KEPT_FILL_ATTR = ATTR_PREFIX + "FillValue"


def _b64_double(v: Any) -> str:
    return base64.b64encode(struct.pack("<d", float(v))).decode()


def fill_attribute(attrs: dict[str, Any], form: ZarrForm) -> dict[str, Any]:
    """An array's ``_FillValue`` attribute (netCDF's) in the form xarray's Zarr reader decodes:
    a float as the base64 of its little-endian float64, a complex as two of those, integers
    and booleans as they are. Of any other type it is kept as ``_h5lake_FillValue``."""
    if FILL_ATTR not in attrs:
        return attrs
    value = attrs[FILL_ATTR]
    kind = form.served.kind if form.elements is Elements.FIXED else "O"
    out = dict(attrs)
    try:
        if kind == "f":
            out[FILL_ATTR] = _b64_double(_number(value))
        elif kind == "c":
            pair = value if isinstance(value, list) else [value, 0]
            out[FILL_ATTR] = [_b64_double(_number(pair[0])), _b64_double(_number(pair[1]))]
        elif kind in "iub" and isinstance(value, int | float) and not isinstance(value, bool) or isinstance(value, bool):
            out[FILL_ATTR] = value
        else:
            raise ValueError
    except (ValueError, TypeError, IndexError):
        del out[FILL_ATTR]
        out[KEPT_FILL_ATTR] = value
    return out


def _number(v: Any) -> float:
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return float(v)
