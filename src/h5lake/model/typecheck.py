"""Checking type JSON: :func:`validate_type` normalizes every type that enters h5lake (see
:mod:`h5lake.model.types` for the normalized form), and :func:`type_from_dtype` reads a numpy dtype
back into one."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.typemessage import MAX_MESSAGE_BYTES, MIN_FIELD_BYTES, MIN_MEMBER_BYTES, message_size
from h5lake.model.types import (
    BASES_BY_CLASS,
    BIT_OFFSET,
    BOOL_MEMBERS,
    HDF5_CLASS,
    HDF5_TYPE,
    HDF5_TYPE_CLASSES,
    HDF5_TYPE_KEYS,
    INT_BASES,
    MAX_ARRAY_RANK,
    MAX_MEMBERS,
    MAX_NESTING,
    MAX_TYPE_SIZE,
    META_CLASS,
    META_HDF5,
    META_STRPAD,
    META_TAG,
    OBJ_REF_SIZE,
    PRECISION,
    VARIABLE,
    CharSet,
    RefKind,
    StrPad,
    TypeClass,
    TypeJson,
    hdf5_size,
    layout_dtype,
    to_dtype,
)

#: Normalized forms of the flat types sent lately (a predefined name, or a dictionary of strings
#: and numbers: every integer, float and string type), by what was sent: h5pyd sends the same
#: few types with every attribute, and checking one builds a numpy dtype (~10 us a PUT).
_FLAT_TYPES: dict[Any, TypeJson] = {}
_FLAT_TYPES_MAX = 1024


def _flat_key(t: Any) -> Any:
    """A hashable key for ``t`` when it is flat (see `_FLAT_TYPES`), else None."""
    if type(t) is str:
        return t
    if type(t) is dict and len(t) <= 8 and all(type(v) in _FLAT_VALUES for v in t.values()):
        return tuple((k, type(v), v) for k, v in t.items())  # the type too: 1 == 1.0 == True
    return None


_FLAT_VALUES = (str, int)


def validate_type(t: Any) -> TypeJson:
    """Check type JSON as a client sent it and return its normalized form.

    Accepts every form h5pyd 1.0 sends (API-NOTES §4), a bare predefined name such as
    ``"H5T_STD_I32LE"``, and the ``mapping`` alias for enum members. Unknown keys are dropped,
    so that two equal types compare equal. Committed type ids (``t-...``) are not types: the
    caller resolves them first. Raises :class:`InvalidInput` naming the offending place for
    anything unknown or malformed, and never any other exception. Each call returns a new
    dictionary (flat types: a copy of the form remembered for what was sent).
    """
    key = _flat_key(t)
    if key is not None:
        known = _FLAT_TYPES.get(key)
        if known is not None:
            return dict(known)
    result = _validate(t, "type", 0)
    _check_size(result, "type")
    size = message_size(result)
    if size > MAX_MESSAGE_BYTES:
        raise _too_large_for_hdf5("type", size)
    if key is not None and all(type(v) in _FLAT_VALUES for v in result.values()):
        if len(_FLAT_TYPES) >= _FLAT_TYPES_MAX:
            _FLAT_TYPES.clear()
        _FLAT_TYPES[key] = dict(result)
    return result


def _too_large_for_hdf5(where: str, size: int) -> InvalidInput:
    return InvalidInput(
        f"{where}: the type takes {size} bytes as an HDF5 datatype message, over HDF5's limit of {MAX_MESSAGE_BYTES} "
        "(about 3,000 compound fields or 6,000 enum members with short names)"
    )


def _check_size(t: TypeJson, where: str) -> int:
    """The in-memory element size of ``t``, or InvalidInput if numpy cannot hold one."""
    try:
        size = layout_dtype(t, packed=False).itemsize
    except (ValueError, TypeError, OverflowError, MemoryError):
        size = MAX_TYPE_SIZE + 1
    if size > MAX_TYPE_SIZE:
        raise InvalidInput(f"{where}: type is too large (over {MAX_TYPE_SIZE} bytes per element)")
    return size


def _validate(t: Any, where: str, depth: int) -> TypeJson:
    if depth > MAX_NESTING:
        raise InvalidInput(f"{where}: types nested more than {MAX_NESTING} deep")
    if isinstance(t, str):
        return _from_name(t, where)
    if not isinstance(t, dict):
        raise InvalidInput(f"{where}: expected an object or a predefined type name")
    name = t.get("class")
    try:
        cls = TypeClass(str(name))
    except ValueError:
        raise InvalidInput(f"{where}: unknown type class {name!r}") from None
    match cls:
        case TypeClass.INTEGER if t.get(HDF5_CLASS) == TypeClass.BITFIELD.value:
            return _bitfield_from_client(t, where)
        case TypeClass.INTEGER:
            return _with_precision({"class": cls.value, "base": _base_name(t.get("base"), cls, where)}, t, where)
        case TypeClass.FLOAT | TypeClass.BITFIELD:
            return {"class": cls.value, "base": _base_name(t.get("base"), cls, where)}
        case TypeClass.STRING:
            return _validate_string(t, where)
        case TypeClass.OPAQUE:
            return _validate_opaque(t, where)
        case TypeClass.COMPOUND:
            return _validate_compound(t, where, depth)
        case TypeClass.REFERENCE:
            return _validate_reference(t, where)
        case TypeClass.ENUM:
            return _validate_enum(t, where)
        case TypeClass.VLEN:
            base = _validate(_required(t, "base", where), f"{where}.base", depth + 1)
            return {"class": cls.value, "base": base, "size": VARIABLE}
        case TypeClass.ARRAY:
            dims = _validate_dims(_required(t, "dims", where), where)
            base = _validate(_required(t, "base", where), f"{where}.base", depth + 1)
            return {"class": cls.value, "dims": dims, "base": base}


def _with_precision(out: TypeJson, t: dict[str, Any], where: str) -> TypeJson:
    """An integer's ``precision`` and ``offset`` (HDF5's significant bits and where they start),
    kept only when they differ from the full size; see :func:`reduced_precision`."""
    bits = 8 * np.dtype(INT_BASES[out["base"]]).itemsize
    precision, offset = t.get(PRECISION, bits), t.get(BIT_OFFSET, 0)
    for key, value in ((PRECISION, precision), (BIT_OFFSET, offset)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(f"{where}: {key} must be an integer, not {value!r}")
    if not 1 <= precision <= bits or not 0 <= offset <= bits - precision:
        raise InvalidInput(f"{where}: precision {precision} at bit offset {offset} does not fit a {bits}-bit integer")
    if (precision, offset) != (bits, 0):
        out[PRECISION], out[BIT_OFFSET] = precision, offset
    return out


def _bitfield_from_client(t: dict[str, Any], where: str) -> TypeJson:
    """A bitfield as :func:`client_type` shows it: an unsigned integer marked ``hdf5Class``."""
    base = _base_name(t.get("base"), TypeClass.INTEGER, where)
    if not base.startswith("H5T_STD_U"):
        raise InvalidInput(f"{where}: a bitfield shown as an integer must be unsigned, not {base}")
    return {"class": TypeClass.BITFIELD.value, "base": base.replace("H5T_STD_U", "H5T_STD_B", 1)}


def _from_name(name: str, where: str) -> TypeJson:
    """A predefined type by name; a missing LE/BE suffix means LE, as in :func:`_base_name` (h5pyd
    before 1.0 names a vlen's base ``H5T_STD_I32``, and HSDS takes it)."""
    for cls, table in BASES_BY_CLASS.items():
        if name in table:
            return {"class": cls.value, "base": name}
        if name + "LE" in table:
            return {"class": cls.value, "base": name + "LE"}
    if name in (RefKind.OBJECT, RefKind.REGION):
        return _validate_reference({"base": name}, where)
    raise InvalidInput(f"{where}: unknown predefined type {name!r}")


def _required(t: dict[str, Any], key: str, where: str) -> Any:
    if key not in t:
        raise InvalidInput(f"{where}: {t.get('class')} needs {key!r}")
    return t[key]


def _base_name(base: Any, cls: TypeClass, where: str) -> str:
    """A predefined base name for an atomic class; a missing LE/BE suffix means LE."""
    table = BASES_BY_CLASS[cls]
    if isinstance(base, str):
        if base in table:
            return base
        if base + "LE" in table:
            return base + "LE"
    raise InvalidInput(f"{where}: invalid base {base!r} for {cls.value}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _validate_string(t: dict[str, Any], where: str) -> TypeJson:
    length = _required(t, "length", where)
    if length != VARIABLE and not (_is_int(length) and 0 < length <= MAX_TYPE_SIZE):
        raise InvalidInput(f"{where}: string length must be a positive integer or {VARIABLE!r}")
    cset = t.get("charSet", CharSet.ASCII.value)
    if cset not in tuple(CharSet):
        raise InvalidInput(f"{where}: unknown charSet {cset!r}")
    default_pad = StrPad.NULLTERM if length == VARIABLE else StrPad.NULLPAD
    pad = t.get("strPad", default_pad.value)
    if pad not in tuple(StrPad):
        raise InvalidInput(f"{where}: unknown strPad {pad!r}")
    return {"class": TypeClass.STRING.value, "length": length, "charSet": cset, "strPad": pad}


def _validate_opaque(t: dict[str, Any], where: str) -> TypeJson:
    size = _required(t, "size", where)
    if not (_is_int(size) and 0 < size <= MAX_TYPE_SIZE):
        raise InvalidInput(f"{where}: opaque size must be a positive integer")
    result: TypeJson = {"class": TypeClass.OPAQUE.value, "size": size}
    tag = t.get("tag")
    if tag is not None and not isinstance(tag, str):
        raise InvalidInput(f"{where}: opaque tag must be a string")
    if tag:
        result["tag"] = tag
    if t.get(HDF5_TYPE) is not None:
        result[HDF5_TYPE] = _validate_hdf5_type(t[HDF5_TYPE], size, where)
    return result


def _validate_hdf5_type(d: Any, size: int, where: str) -> dict[str, Any]:
    """The ``hdf5Type`` of an opaque type: the full description of an HDF5 atomic type the
    standard type JSON cannot name (a long double, a 16-byte integer, a time type). Only its
    shape is checked here (the exporter hands it to HDF5, which checks the rest); values move
    as opaque bytes of ``size``, never converted."""
    if not isinstance(d, dict) or d.get("class") not in HDF5_TYPE_CLASSES:
        raise InvalidInput(f"{where}: hdf5Type must be an object of class {', '.join(HDF5_TYPE_CLASSES)}")
    if d.get("size") != size:
        raise InvalidInput(f"{where}: hdf5Type size must equal the opaque size {size}")
    out: dict[str, Any] = {}
    for key, value in d.items():
        kind = HDF5_TYPE_KEYS.get(key)
        if kind is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InvalidInput(f"{where}: hdf5Type has an invalid {key!r}")
        if isinstance(value, dict | list) and not all(
            _is_int(v) or isinstance(v, str) for v in (value.values() if isinstance(value, dict) else value)
        ):
            raise InvalidInput(f"{where}: hdf5Type {key!r} must hold integers and names only")
        if isinstance(value, int) and not 0 <= value <= 8 * MAX_TYPE_SIZE:
            raise InvalidInput(f"{where}: hdf5Type {key!r} is out of range")
        out[key] = dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
    return out


_HSDS_OBJ_REF_SIZE = 38


def _validate_reference(t: dict[str, Any], where: str) -> TypeJson:
    base = t.get("base")
    if base == RefKind.OBJECT:
        length = t.get("length", OBJ_REF_SIZE)
        if length not in (_HSDS_OBJ_REF_SIZE, OBJ_REF_SIZE):  # HSDS's (a bare id) is stored as ours
            raise InvalidInput(f"{where}: an object reference is {OBJ_REF_SIZE} bytes long")
        return {
            "class": TypeClass.REFERENCE.value,
            "base": RefKind.OBJECT.value,
            "length": OBJ_REF_SIZE,
            "charSet": CharSet.ASCII.value,
            "strPad": StrPad.NULLPAD.value,
        }
    if base == RefKind.REGION:
        return {"class": TypeClass.REFERENCE.value, "base": RefKind.REGION.value}
    raise InvalidInput(f"{where}: invalid reference base {base!r}")


def _validate_dims(dims: Any, where: str) -> list[int]:
    if _is_int(dims):
        dims = [dims]
    if not isinstance(dims, list | tuple) or not 0 < len(dims) <= MAX_ARRAY_RANK:
        raise InvalidInput(f"{where}: array dims must be a non-empty list of integers")
    for d in dims:
        if not (_is_int(d) and 0 < d <= MAX_TYPE_SIZE):
            raise InvalidInput(f"{where}: array dims must be positive integers, got {d!r}")
    return list(dims)


def _validate_compound(t: dict[str, Any], where: str, depth: int) -> TypeJson:
    fields = _required(t, "fields", where)
    if not isinstance(fields, list) or not fields:
        raise InvalidInput(f"{where}: compound fields must be a non-empty list")
    if len(fields) > MAX_MEMBERS or len(fields) * MIN_FIELD_BYTES > MAX_MESSAGE_BYTES:
        raise _too_large_for_hdf5(where, len(fields) * MIN_FIELD_BYTES)  # before checking each
    out_fields: list[TypeJson] = []
    names: set[str] = set()
    for i, field in enumerate(fields):
        fwhere = f"{where}.fields[{i}]"
        if not isinstance(field, dict):
            raise InvalidInput(f"{fwhere}: expected an object with 'name' and 'type'")
        name = field.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{fwhere}: field name must be a non-empty string")
        if "\x00" in name:  # HDF5 keeps names as C strings
            raise InvalidInput(f"{fwhere}: field name {name[:40]!r} may not contain a NUL character")
        if name in names:
            raise InvalidInput(f"{where}: duplicate field name {name!r}")
        names.add(name)
        out: TypeJson = {
            "name": name,
            "type": _validate(_required(field, "type", fwhere), f"{fwhere}.type", depth + 1),
        }
        if "offset" in field:
            out["offset"] = field["offset"]
        out_fields.append(out)
    result: TypeJson = {"class": TypeClass.COMPOUND.value, "fields": out_fields}
    if "size" in t:
        result["size"] = t["size"]
    _check_layout(result, where)
    return result


def _check_layout(t: TypeJson, where: str) -> None:
    """Explicit offsets are all-or-nothing, within ``size``, and fields must not overlap."""
    fields = t["fields"]
    with_offset = sum("offset" in f for f in fields)
    if with_offset == 0:
        if "size" in t:
            raise InvalidInput(f"{where}: compound 'size' needs field offsets")
        return
    if with_offset != len(fields):
        raise InvalidInput(f"{where}: give an offset for every field or for none")
    spans = []
    for f in fields:
        offset = f["offset"]
        if not (_is_int(offset) and 0 <= offset <= MAX_TYPE_SIZE):
            raise InvalidInput(f"{where}: field offset must be a non-negative integer")
        _check_size(f["type"], where)
        size = hdf5_size(f["type"])
        spans.append((offset, offset + size, f["name"]))
    spans.sort()
    for (_, end, a), (start, _, b) in itertools.pairwise(spans):
        if start < end:
            raise InvalidInput(f"{where}: fields {a!r} and {b!r} overlap")
    end = spans[-1][1]
    size = t.get("size", end)
    if not (_is_int(size) and end <= size <= MAX_TYPE_SIZE):
        raise InvalidInput(f"{where}: compound size must be an integer of at least {end}")


def _validate_enum(t: dict[str, Any], where: str) -> TypeJson:
    base_json = _required(t, "base", where)
    base = _validate(base_json, f"{where}.base", 1)
    if base["class"] != TypeClass.INTEGER:
        raise InvalidInput(f"{where}: an enum base must be an integer type")
    members = t.get("members", t.get("mapping"))
    if isinstance(members, dict):
        members = [{"name": k, "value": v} for k, v in members.items()]
    if not isinstance(members, list) or not members:
        raise InvalidInput(f"{where}: enum needs a non-empty 'members' list")
    if len(members) > MAX_MEMBERS or len(members) * MIN_MEMBER_BYTES > MAX_MESSAGE_BYTES:
        raise _too_large_for_hdf5(where, len(members) * MIN_MEMBER_BYTES)
    info = np.iinfo(np.dtype(INT_BASES[base["base"]]))
    out: list[TypeJson] = []
    names: set[str] = set()
    values: set[int] = set()
    for m in members:
        if not isinstance(m, dict):
            raise InvalidInput(f"{where}: enum members must be objects with 'name' and 'value'")
        name, value = m.get("name"), m.get("value")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{where}: enum member name must be a non-empty string")
        if "\x00" in name:  # HDF5 keeps names as C strings
            raise InvalidInput(f"{where}: enum member name {name[:40]!r} may not contain a NUL character")
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"{where}: enum member {name!r} needs an integer value")
        if not info.min <= value <= info.max:
            raise InvalidInput(f"{where}: enum value {value} does not fit {base['base']}")
        if name in names or value in values:
            raise InvalidInput(f"{where}: duplicate enum member {name!r} or value {value}")
        names.add(name)
        values.add(value)
        out.append({"name": name, "value": value})
    return {"class": TypeClass.ENUM.value, "base": base, "members": out}


def type_from_dtype(dtype: Any) -> TypeJson:
    """The normalized type JSON for a numpy dtype, h5py's special dtypes included.

    Inverse of :func:`to_dtype`. Also maps what a loader meets in the wild: complex as a
    compound of ``r`` and ``i`` (the h5py convention), numpy ``U`` strings as fixed UTF-8 of
    4 bytes per character, h5py's object reference dtype as an object reference, and
    h5json's reference dtypes. Raises :class:`InvalidInput` for dtypes HDF5 cannot hold.
    """
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as e:
        raise InvalidInput(f"not a numpy dtype: {dtype!r}") from e
    return _type_of(dt, dt.metadata)


def _type_of(dt: np.dtype[Any], metadata: Any) -> TypeJson:
    meta = dict(metadata or {})
    if dt.names is not None:
        return _compound_of(dt)
    if dt.subdtype is not None:
        sub, dims = dt.subdtype
        return {
            "class": TypeClass.ARRAY.value,
            "dims": list(dims),
            "base": _type_of(sub, sub.metadata or meta),
        }
    order = ">" if dt.byteorder == ">" else "<"
    suffix = "BE" if order == ">" else "LE"
    match dt.kind:
        case "b":
            return {
                "class": TypeClass.ENUM.value,
                "base": {"class": TypeClass.INTEGER.value, "base": "H5T_STD_I8LE"},
                "members": [dict(m) for m in BOOL_MEMBERS],
            }
        case "i" | "u":
            bits = dt.itemsize * 8
            if meta.get(META_CLASS) == TypeClass.BITFIELD and dt.kind == "u":
                return {"class": TypeClass.BITFIELD.value, "base": f"H5T_STD_B{bits}{suffix}"}
            sign = "I" if dt.kind == "i" else "U"
            base = {"class": TypeClass.INTEGER.value, "base": f"H5T_STD_{sign}{bits}{suffix}"}
            if "enum" in meta:
                members = [{"name": str(k), "value": int(v)} for k, v in meta["enum"].items()]
                return _validate_enum({"base": base, "members": members}, "dtype")
            return base
        case "f" if dt.itemsize in (2, 4, 8):
            return {"class": TypeClass.FLOAT.value, "base": f"H5T_IEEE_F{dt.itemsize * 8}{suffix}"}
        case "c" if dt.itemsize in (4, 8, 16):
            part = {"class": TypeClass.FLOAT.value, "base": f"H5T_IEEE_F{dt.itemsize * 4}{suffix}"}
            return {
                "class": TypeClass.COMPOUND.value,
                "fields": [{"name": "r", "type": part}, {"name": "i", "type": dict(part)}],
            }
        case "S":
            if _is_object_ref(meta):
                return _validate_reference({"base": RefKind.OBJECT.value}, "dtype")
            cset = CharSet.UTF8 if meta.get("h5py_encoding") == "utf-8" else CharSet.ASCII
            pad = meta.get(META_STRPAD, StrPad.NULLPAD.value)
            return _validate_string(
                {"length": dt.itemsize, "charSet": cset.value, "strPad": pad}, "dtype"
            )
        case "U":
            return _validate_string({"length": dt.itemsize, "charSet": CharSet.UTF8.value}, "dtype")
        case "T":
            return _validate_string({"length": VARIABLE, "charSet": CharSet.UTF8.value}, "dtype")
        case "V":
            opaque = {"size": dt.itemsize, "tag": meta.get(META_TAG), HDF5_TYPE: meta.get(META_HDF5)}
            return _validate_opaque(opaque, "dtype")
        case "O":
            return _object_type_of(meta)
    if meta.get("h5py_opaque"):
        return _validate_opaque({"size": dt.itemsize}, "dtype")
    raise InvalidInput(f"numpy dtype {dt} has no HDF5 equivalent")


def _is_object_ref(meta: dict[str, Any]) -> bool:
    ref = meta.get("ref")
    return meta.get(META_CLASS) == TypeClass.REFERENCE or (
        ref is not None and getattr(ref, "__name__", "") == "Reference"
    )


def _object_type_of(meta: dict[str, Any]) -> TypeJson:
    vlen = meta.get("vlen")
    if vlen is str or vlen is bytes:
        cset = CharSet.UTF8 if vlen is str else CharSet.ASCII
        pad = meta.get(META_STRPAD, StrPad.NULLTERM.value)
        return _validate_string({"length": VARIABLE, "charSet": cset.value, "strPad": pad}, "dtype")
    if vlen is not None:
        base = np.dtype(vlen)
        return {
            "class": TypeClass.VLEN.value,
            "base": _type_of(base, base.metadata),
            "size": VARIABLE,
        }
    ref = getattr(meta.get("ref"), "__name__", None)
    if ref == "Reference":
        return _validate_reference({"base": RefKind.OBJECT.value}, "dtype")
    if ref == "RegionReference":
        return _validate_reference({"base": RefKind.REGION.value}, "dtype")
    raise InvalidInput(
        "an object dtype without h5py vlen or reference metadata has no HDF5 equivalent"
    )


def _compound_of(dt: np.dtype[Any]) -> TypeJson:
    assert dt.names is not None and dt.fields is not None
    fields: list[TypeJson] = []
    packed_offset = 0
    is_packed = True
    for name in dt.names:
        fdt, offset = dt.fields[name][:2]
        fields.append({"name": name, "type": _type_of(fdt, fdt.metadata), "offset": offset})
        is_packed = is_packed and offset == packed_offset
        packed_offset = offset + fdt.itemsize
    is_packed = is_packed and dt.itemsize == packed_offset
    result: TypeJson = {"class": TypeClass.COMPOUND.value, "fields": fields}
    if is_packed:
        for f in fields:
            del f["offset"]
    elif dt.itemsize != max(f["offset"] + to_dtype(f["type"]).itemsize for f in fields):
        result["size"] = dt.itemsize
    _check_layout(result, "dtype")
    return result
