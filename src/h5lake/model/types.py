"""The HDF5 type system: type JSON as the HDF REST API carries it, and its numpy form.

Every type that enters h5lake goes through :func:`validate_type` once, at the edge. What comes
out is a *normalized* type dict: the same JSON shape h5pyd sends (API-NOTES §4), with defaults
filled in, aliases resolved and every fidelity field kept (``strPad``, ``charSet``, opaque
``tag``, enum members in order, compound field offsets). The other functions here assume such a
dict and do no further checking; a malformed dict given to them is a programming error.

numpy cannot say everything HDF5 can, so :func:`to_dtype` keeps the rest in dtype metadata:
h5py's own keys (``vlen``, ``enum``, ``ref``, ``h5py_encoding``) where h5py has one, so the
dtypes work with h5py, and ``h5lake_*`` keys for the rest (bitfield, object reference, string
padding, opaque tag). :func:`type_from_dtype` reads both back, so for every normalized type ``t``
``type_from_dtype(to_dtype(t)) == t``, except that compound offsets equal to the packed layout
are dropped, one-byte big-endian bases come back little-endian (numpy has no byte order for
one byte; the bytes are the same), and a bool comes back in h5py's own form.

Representation choices, fixed here once:

- An object reference is ``S48``: the ASCII id (``g-...`` or ``groups/g-...``), NUL-padded, as
  it travels on the wire (API-NOTES §5).
- A region reference (``H5T_STD_REF_DSETREG``) is *variable length*: h5pyd 1.0 sends each one
  as an opaque serialized blob with a uint32 byte count, like a vlen. It maps to h5py's
  ``regionref_dtype`` (object) and elements are kept as ``bytes``.
- A bool is h5py's convention: an enum over a one-byte signed integer with members exactly
  ``FALSE=0`` and ``TRUE=1``, mapped to ``numpy.bool_`` (h5pyd maps the same types to bool).
- Compound dtypes are packed unless the type gives explicit offsets. The binary wire format is
  always packed (h5pyd ignores offsets), see :func:`wire_dtype`. Offsets and ``size`` are those
  of the HDF5 compound type (:func:`hdf5_size`); a compound with variable-length or reference
  members keeps them for HDF5's sake but is packed in numpy, whose sizes for those differ.
"""

from __future__ import annotations

import enum
import itertools
import math
from typing import Any

import h5py
import numpy as np

from h5lake.errors import InvalidInput

TypeJson = dict[str, Any]
"""A normalized type, as returned by :func:`validate_type`."""

VARIABLE = "H5T_VARIABLE"
MAX_TYPE_SIZE = 2**31 - 1
"""Largest fixed element size accepted, in bytes; far above any real type, it bounds memory."""
MAX_NESTING = 32
MAX_ARRAY_RANK = 32
OBJ_REF_SIZE = 48


class TypeClass(enum.StrEnum):
    INTEGER = "H5T_INTEGER"
    FLOAT = "H5T_FLOAT"
    STRING = "H5T_STRING"
    BITFIELD = "H5T_BITFIELD"
    OPAQUE = "H5T_OPAQUE"
    COMPOUND = "H5T_COMPOUND"
    REFERENCE = "H5T_REFERENCE"
    ENUM = "H5T_ENUM"
    VLEN = "H5T_VLEN"
    ARRAY = "H5T_ARRAY"


class CharSet(enum.StrEnum):
    ASCII = "H5T_CSET_ASCII"
    UTF8 = "H5T_CSET_UTF8"


class StrPad(enum.StrEnum):
    NULLTERM = "H5T_STR_NULLTERM"
    NULLPAD = "H5T_STR_NULLPAD"
    SPACEPAD = "H5T_STR_SPACEPAD"


class RefKind(enum.StrEnum):
    OBJECT = "H5T_STD_REF_OBJ"
    REGION = "H5T_STD_REF_DSETREG"


def _predefined(prefix: str, kind: str, sizes: tuple[int, ...]) -> dict[str, str]:
    """Map predefined HDF5 names (``H5T_STD_I32LE``...) to numpy type strings (``<i4``)."""
    table = {}
    for bits in sizes:
        for suffix, order in (("LE", "<"), ("BE", ">")):
            table[f"{prefix}{bits}{suffix}"] = f"{order}{kind}{bits // 8}"
    return table


_INT_BASES = _predefined("H5T_STD_I", "i", (8, 16, 32, 64)) | _predefined(
    "H5T_STD_U", "u", (8, 16, 32, 64)
)
_FLOAT_BASES = _predefined("H5T_IEEE_F", "f", (16, 32, 64))
_BITFIELD_BASES = _predefined("H5T_STD_B", "u", (8, 16, 32, 64))
_BASES_BY_CLASS = {
    TypeClass.INTEGER: _INT_BASES,
    TypeClass.FLOAT: _FLOAT_BASES,
    TypeClass.BITFIELD: _BITFIELD_BASES,
}
_BOOL_MEMBERS = [{"name": "FALSE", "value": 0}, {"name": "TRUE", "value": 1}]

# dtype metadata keys for what neither numpy nor h5py can express
_META_CLASS = "h5lake_class"  # "H5T_BITFIELD" or "H5T_REFERENCE" on plain numeric/S48 dtypes
_META_STRPAD = "h5lake_strpad"  # strPad of a string type, when it is not the default
_META_TAG = "h5lake_tag"  # opaque tag
_META_HDF5 = "h5lake_hdf5"  # an opaque type's hdf5Type

HDF5_TYPE = "hdf5Type"
PRECISION = "precision"  # of an integer with fewer significant bits than its size
BIT_OFFSET = "offset"  # where those bits start
"""Key of an opaque type carrying an HDF5 atomic type the type JSON has no name for."""
HDF5_CLASS = "hdf5Class"
"""Key of an integer type that is an HDF5 bitfield, as clients are shown it (:func:`client_type`)."""


# --------------------------------------------------------------------------------------------
# validation


def validate_type(t: Any) -> TypeJson:
    """Check type JSON as a client sent it and return its normalized form.

    Accepts every form h5pyd 1.0 sends (API-NOTES §4), a bare predefined name such as
    ``"H5T_STD_I32LE"``, and the ``mapping`` alias for enum members. Unknown keys are dropped,
    so that two equal types compare equal. Committed type ids (``t-...``) are not types: the
    caller resolves them first. Raises :class:`InvalidInput` naming the offending place for
    anything unknown or malformed, and never any other exception.
    """
    result = _validate(t, "type", 0)
    _check_size(result, "type")
    return result


def _check_size(t: TypeJson, where: str) -> int:
    """The in-memory element size of ``t``, or InvalidInput if numpy cannot hold one."""
    try:
        size = _dtype(t, packed=False).itemsize
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
    bits = 8 * np.dtype(_INT_BASES[out["base"]]).itemsize
    precision, offset = t.get(PRECISION, bits), t.get(BIT_OFFSET, 0)
    for key, value in ((PRECISION, precision), (BIT_OFFSET, offset)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(f"{where}: {key} must be an integer, not {value!r}")
    if not 1 <= precision <= bits or not 0 <= offset <= bits - precision:
        raise InvalidInput(f"{where}: precision {precision} at bit offset {offset} does not fit a {bits}-bit integer")
    if (precision, offset) != (bits, 0):
        out[PRECISION], out[BIT_OFFSET] = precision, offset
    return out


def reduced_precision(t: TypeJson) -> bool:
    """True if ``t`` (or a member, base or element of it) is an integer whose significant bits
    are fewer than its size or start at a bit offset (HDF5 ``H5Tset_precision``/``H5Tset_offset``).
    Values are the integers themselves (as if read into a full-size integer); the stored chunk
    bytes are HDF5's: the value shifted to its offset (see ``h5lake.chunks.precision``)."""
    match type_class(t):
        case TypeClass.INTEGER:
            return PRECISION in t
        case TypeClass.COMPOUND:
            return any(reduced_precision(f["type"]) for f in t["fields"])
        case TypeClass.ARRAY | TypeClass.ENUM:
            return reduced_precision(t["base"])
        case _:
            return False


def _bitfield_from_client(t: dict[str, Any], where: str) -> TypeJson:
    """A bitfield as :func:`client_type` shows it: an unsigned integer marked ``hdf5Class``."""
    base = _base_name(t.get("base"), TypeClass.INTEGER, where)
    if not base.startswith("H5T_STD_U"):
        raise InvalidInput(f"{where}: a bitfield shown as an integer must be unsigned, not {base}")
    return {"class": TypeClass.BITFIELD.value, "base": base.replace("H5T_STD_U", "H5T_STD_B", 1)}


def _from_name(name: str, where: str) -> TypeJson:
    for cls, table in _BASES_BY_CLASS.items():
        if name in table:
            return {"class": cls.value, "base": name}
    if name in (RefKind.OBJECT, RefKind.REGION):
        return _validate_reference({"base": name}, where)
    raise InvalidInput(f"{where}: unknown predefined type {name!r}")


def _required(t: dict[str, Any], key: str, where: str) -> Any:
    if key not in t:
        raise InvalidInput(f"{where}: {t.get('class')} needs {key!r}")
    return t[key]


def _base_name(base: Any, cls: TypeClass, where: str) -> str:
    """A predefined base name for an atomic class; a missing LE/BE suffix means LE."""
    table = _BASES_BY_CLASS[cls]
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


_HDF5_TYPE_CLASSES = ("H5T_INTEGER", "H5T_FLOAT", "H5T_TIME")
_HDF5_TYPE_KEYS: dict[str, type] = {
    "class": str, "size": int, "order": str, "precision": int, "offset": int, "pad": list,
    "signed": bool, "signPosition": int, "exponent": dict, "mantissa": dict, "internalPad": str,
}


def _validate_hdf5_type(d: Any, size: int, where: str) -> dict[str, Any]:
    """The ``hdf5Type`` of an opaque type: the full description of an HDF5 atomic type the
    standard type JSON cannot name (a long double, a 16-byte integer, a time type). Only its
    shape is checked here (the exporter hands it to HDF5, which checks the rest); values move
    as opaque bytes of ``size``, never converted."""
    if not isinstance(d, dict) or d.get("class") not in _HDF5_TYPE_CLASSES:
        raise InvalidInput(f"{where}: hdf5Type must be an object of class {', '.join(_HDF5_TYPE_CLASSES)}")
    if d.get("size") != size:
        raise InvalidInput(f"{where}: hdf5Type size must equal the opaque size {size}")
    out: dict[str, Any] = {}
    for key, value in d.items():
        kind = _HDF5_TYPE_KEYS.get(key)
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


def _validate_reference(t: dict[str, Any], where: str) -> TypeJson:
    base = t.get("base")
    if base == RefKind.OBJECT:
        length = t.get("length", OBJ_REF_SIZE)
        if length != OBJ_REF_SIZE:
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
    out_fields: list[TypeJson] = []
    names: set[str] = set()
    for i, field in enumerate(fields):
        fwhere = f"{where}.fields[{i}]"
        if not isinstance(field, dict):
            raise InvalidInput(f"{fwhere}: expected an object with 'name' and 'type'")
        name = field.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{fwhere}: field name must be a non-empty string")
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


_HDF5_POINTER_SIZES = {"vlen": 16, "vstring": 8, RefKind.OBJECT: 8, RefKind.REGION: 12}
"""HDF5's in-memory sizes of the members numpy holds differently: ``hvl_t``, ``char *``,
``hobj_ref_t`` and ``hdset_reg_ref_t``."""


def _holds_pointers(t: TypeJson) -> bool:
    """Whether a type has a member whose HDF5 size differs from its numpy size (a variable-length
    member or a reference), so that HDF5 offsets cannot lay out a numpy dtype."""
    match type_class(t):
        case TypeClass.REFERENCE | TypeClass.VLEN:
            return True
        case TypeClass.STRING:
            return bool(t["length"] == VARIABLE)
        case TypeClass.ARRAY:
            return _holds_pointers(t["base"])
        case TypeClass.COMPOUND:
            return any(_holds_pointers(f["type"]) for f in t["fields"])
        case _:
            return False


def hdf5_size(t: TypeJson) -> int:
    """Bytes an element of ``t`` takes as an HDF5 compound member, the unit of compound
    ``offset`` and ``size``. Equal to the numpy itemsize except for variable-length members and
    references, which HDF5 holds as ``hvl_t`` (16), ``char *`` (8), ``hobj_ref_t`` (8) or
    ``hdset_reg_ref_t`` (12) where numpy holds objects or 48-byte ids. So a compound's offsets
    are exactly those of the HDF5 type, and a compound holding such members is laid out packed
    in numpy (its wire layout) whatever its offsets say."""
    match type_class(t):
        case TypeClass.REFERENCE:
            return _HDF5_POINTER_SIZES[RefKind(t["base"])]
        case TypeClass.VLEN:
            return _HDF5_POINTER_SIZES["vlen"]
        case TypeClass.STRING if t["length"] == VARIABLE:
            return _HDF5_POINTER_SIZES["vstring"]
        case TypeClass.ARRAY:
            return math.prod(t["dims"]) * hdf5_size(t["base"])
        case TypeClass.COMPOUND if _holds_pointers(t):
            if "size" in t:
                return int(t["size"])
            if "offset" in t["fields"][0]:
                return max(f["offset"] + hdf5_size(f["type"]) for f in t["fields"])
            return sum(hdf5_size(f["type"]) for f in t["fields"])
        case _:
            return _dtype(t, packed=False).itemsize


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
    info = np.iinfo(np.dtype(_INT_BASES[base["base"]]))
    out: list[TypeJson] = []
    names: set[str] = set()
    values: set[int] = set()
    for m in members:
        if not isinstance(m, dict):
            raise InvalidInput(f"{where}: enum members must be objects with 'name' and 'value'")
        name, value = m.get("name"), m.get("value")
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{where}: enum member name must be a non-empty string")
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


# --------------------------------------------------------------------------------------------
# queries on a normalized type


def client_type(t: Any) -> Any:
    """``t`` as clients are shown it: every bitfield (nested too) as the unsigned integer of its
    size and order, marked ``"hdf5Class": "H5T_BITFIELD"``. h5pyd 1.0 cannot open a bitfield
    ("Invalid type class") but reads the integer; :func:`validate_type` turns the marked form
    back into the bitfield, so ``h5lake export`` still writes one. Other keys pass through."""
    if not isinstance(t, dict):
        return t
    cls = t.get("class")
    if cls == TypeClass.BITFIELD.value and isinstance(t.get("base"), str):
        base = t["base"].replace("H5T_STD_B", "H5T_STD_U", 1)
        return {**t, "class": TypeClass.INTEGER.value, "base": base, HDF5_CLASS: TypeClass.BITFIELD.value}
    out = dict(t)
    if isinstance(t.get("base"), dict):
        out["base"] = client_type(t["base"])
    if isinstance(t.get("fields"), list):
        out["fields"] = [{**f, "type": client_type(f.get("type"))} if isinstance(f, dict) else f for f in t["fields"]]
    return out


def type_class(t: TypeJson) -> TypeClass:
    return TypeClass(t["class"])


def is_variable(t: TypeJson) -> bool:
    """True if an element has no fixed size: a vlen, a variable-length string or a region
    reference, at the top or nested anywhere in a compound, array or vlen."""
    match type_class(t):
        case TypeClass.VLEN:
            return True
        case TypeClass.STRING:
            return bool(t["length"] == VARIABLE)
        case TypeClass.REFERENCE:
            return bool(t["base"] == RefKind.REGION)
        case TypeClass.ARRAY:
            return is_variable(t["base"])
        case TypeClass.COMPOUND:
            return any(is_variable(f["type"]) for f in t["fields"])
        case _:
            return False


def is_bool(t: TypeJson) -> bool:
    """True for h5py's bool convention, stored as ``numpy.bool_``: an enum over a one-byte
    signed integer whose members are exactly ``FALSE=0`` and ``TRUE=1``, in either order."""
    return (
        type_class(t) is TypeClass.ENUM
        and t["base"]["base"] in ("H5T_STD_I8LE", "H5T_STD_I8BE")
        and sorted(t["members"], key=lambda m: m["value"]) == _BOOL_MEMBERS
    )


def item_size(t: TypeJson) -> int | None:
    """Bytes per element in binary transfer and in a stored chunk (packed, no padding), or
    None for a variable-length type, whose elements differ in size."""
    if is_variable(t):
        return None
    return wire_dtype(t).itemsize


def array_dims(t: TypeJson) -> tuple[tuple[int, ...], TypeJson]:
    """Peel nested H5T_ARRAY layers off a type: ``(dims, element type)``.

    numpy absorbs subarray dims into an array's shape, so an array of ``shape`` elements of an
    H5T_ARRAY type is held as an array of ``shape + dims`` of its element type.
    """
    dims: tuple[int, ...] = ()
    while type_class(t) is TypeClass.ARRAY:
        dims += tuple(t["dims"])
        t = t["base"]
    return dims, t


# --------------------------------------------------------------------------------------------
# numpy dtypes


def to_dtype(t: TypeJson) -> np.dtype[Any]:
    """The numpy dtype holding elements of the (normalized) type ``t`` in memory.

    See the module docstring for the mapping. Compounds honour explicit offsets here; use
    :func:`wire_dtype` for the packed layout of the binary wire.
    """
    return _dtype(t, packed=False)


def wire_dtype(t: TypeJson) -> np.dtype[Any]:
    """Like :func:`to_dtype` but every compound is packed: the binary transfer layout.

    Equal to ``to_dtype(t)`` unless the type carries compound offsets.
    """
    return _dtype(t, packed=True)


def _meta_dtype(base: Any, **metadata: Any) -> np.dtype[Any]:
    return np.dtype(base, metadata=metadata) if metadata else np.dtype(base)


def _dtype(t: TypeJson, packed: bool) -> np.dtype[Any]:
    match type_class(t):
        case TypeClass.INTEGER:
            return np.dtype(_INT_BASES[t["base"]])
        case TypeClass.FLOAT:
            return np.dtype(_FLOAT_BASES[t["base"]])
        case TypeClass.BITFIELD:
            return _meta_dtype(_BITFIELD_BASES[t["base"]], **{_META_CLASS: t["class"]})
        case TypeClass.STRING:
            return _string_dtype(t)
        case TypeClass.OPAQUE:
            meta = {_META_TAG: t["tag"]} if "tag" in t else {}
            if HDF5_TYPE in t:
                meta[_META_HDF5] = t[HDF5_TYPE]
            return _meta_dtype(f"V{t['size']}", **meta)
        case TypeClass.REFERENCE:
            if t["base"] == RefKind.REGION:
                return np.dtype(h5py.regionref_dtype)
            return _meta_dtype(f"S{OBJ_REF_SIZE}", **{_META_CLASS: t["class"]})
        case TypeClass.ENUM:
            if is_bool(t):
                return np.dtype(np.bool_)
            mapping = {m["name"]: m["value"] for m in t["members"]}
            return np.dtype(h5py.enum_dtype(mapping, basetype=to_dtype(t["base"])))
        case TypeClass.VLEN:
            return np.dtype(h5py.vlen_dtype(_dtype(t["base"], packed)))
        case TypeClass.ARRAY:
            return np.dtype((_dtype(t["base"], packed), tuple(t["dims"])))
        case TypeClass.COMPOUND:
            names = [f["name"] for f in t["fields"]]
            formats = [_dtype(f["type"], packed) for f in t["fields"]]
            if packed or "offset" not in t["fields"][0] or _holds_pointers(t):
                return np.dtype(list(zip(names, formats, strict=True)))
            offsets = [f["offset"] for f in t["fields"]]
            end = max(o + d.itemsize for o, d in zip(offsets, formats, strict=True))
            spec = {
                "names": names,
                "formats": formats,
                "offsets": offsets,
                "itemsize": t.get("size", end),
            }
            return np.dtype(spec)  # type: ignore[call-overload]


def _string_dtype(t: TypeJson) -> np.dtype[Any]:
    utf8 = t["charSet"] == CharSet.UTF8
    variable = t["length"] == VARIABLE
    h5 = h5py.string_dtype("utf-8" if utf8 else "ascii", None if variable else t["length"])
    metadata = dict(h5.metadata or {})
    if t["strPad"] != (StrPad.NULLTERM if variable else StrPad.NULLPAD):
        metadata[_META_STRPAD] = t["strPad"]
    return _meta_dtype(h5.str, **metadata) if not variable else np.dtype("O", metadata=metadata)


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
                "members": [dict(m) for m in _BOOL_MEMBERS],
            }
        case "i" | "u":
            bits = dt.itemsize * 8
            if meta.get(_META_CLASS) == TypeClass.BITFIELD and dt.kind == "u":
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
            pad = meta.get(_META_STRPAD, StrPad.NULLPAD.value)
            return _validate_string(
                {"length": dt.itemsize, "charSet": cset.value, "strPad": pad}, "dtype"
            )
        case "U":
            return _validate_string({"length": dt.itemsize, "charSet": CharSet.UTF8.value}, "dtype")
        case "T":
            return _validate_string({"length": VARIABLE, "charSet": CharSet.UTF8.value}, "dtype")
        case "V":
            opaque = {"size": dt.itemsize, "tag": meta.get(_META_TAG), HDF5_TYPE: meta.get(_META_HDF5)}
            return _validate_opaque(opaque, "dtype")
        case "O":
            return _object_type_of(meta)
    if meta.get("h5py_opaque"):
        return _validate_opaque({"size": dt.itemsize}, "dtype")
    raise InvalidInput(f"numpy dtype {dt} has no HDF5 equivalent")


def _is_object_ref(meta: dict[str, Any]) -> bool:
    ref = meta.get("ref")
    return meta.get(_META_CLASS) == TypeClass.REFERENCE or (
        ref is not None and getattr(ref, "__name__", "") == "Reference"
    )


def _object_type_of(meta: dict[str, Any]) -> TypeJson:
    vlen = meta.get("vlen")
    if vlen is str or vlen is bytes:
        cset = CharSet.UTF8 if vlen is str else CharSet.ASCII
        pad = meta.get(_META_STRPAD, StrPad.NULLTERM.value)
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


# --------------------------------------------------------------------------------------------
# default and fill values


def elements_from_buffer(buf: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """The packed elements of ``dtype`` in ``buf`` (no copy) as an array of ``shape`` elements.

    For an H5T_ARRAY type (a numpy subarray dtype) the array dims are appended to ``shape``, as
    everywhere in memory (see :func:`array_dims`): ``np.frombuffer`` with a subarray dtype
    already expands them, so a plain ``reshape(shape)`` would fail.
    """
    return np.frombuffer(buf, dtype=dtype.base).reshape(tuple(shape) + dtype.shape)


def empty_array(t: TypeJson, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """A new array of ``shape`` elements of ``t``, each the HDF5 default value.

    Zeros for numbers, empty strings (``str`` for UTF-8, ``bytes`` for ASCII), empty vlens,
    null references. ``numpy.zeros`` alone would put the integer 0 in object slots. For an
    H5T_ARRAY type the array dims are appended to ``shape`` (see :func:`array_dims`).
    """
    dims, elem = array_dims(t)
    out = np.zeros(tuple(shape) + dims, dtype=to_dtype(elem))
    _set_defaults(out, elem)
    return out


def _set_defaults(view: np.ndarray[Any, Any], t: TypeJson) -> None:
    """Put the default value in every object slot of ``view``, an array of elements of ``t``
    with any array dims of ``t`` already folded into its shape."""
    if not is_variable(t):
        return  # numpy's zeros are the default
    _, t = array_dims(t)
    match type_class(t):
        case TypeClass.STRING:
            view.fill("" if t["charSet"] == CharSet.UTF8 else b"")
        case TypeClass.REFERENCE:
            view.fill(b"")
        case TypeClass.VLEN:
            dims, elem = array_dims(t["base"])
            view.fill(np.zeros((0, *dims), dtype=to_dtype(elem)))  # size 0: safe to share
        case TypeClass.COMPOUND:
            for f in t["fields"]:
                _set_defaults(view[f["name"]], f["type"])


def fill_value_array(t: TypeJson, fill_json: Any = None) -> np.ndarray[Any, Any]:
    """One element of ``t`` holding the dataset fill value, as a 0-d array of ``to_dtype(t)``.

    ``fill_json`` is the ``fillValue`` of the creation properties, in the JSON value form of
    :func:`h5lake.model.values.json_to_array`; None means the HDF5 default (see
    :func:`empty_array`). For an H5T_ARRAY type the result has the array's dims as its shape
    (numpy absorbs them, see :func:`array_dims`). Raises :class:`InvalidInput` if the fill
    value does not fit the type.
    """
    if fill_json is None:
        return empty_array(t, ())
    # values builds on this module; importing here keeps the module dependency one way
    from h5lake.model.values import json_to_array

    return json_to_array(fill_json, t, ())
