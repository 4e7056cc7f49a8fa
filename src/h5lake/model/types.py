"""The HDF5 type system: type JSON as the HDF REST API carries it, and its numpy form.

Every type that enters h5lake goes through :func:`~h5lake.model.typecheck.validate_type` once, at the edge. What comes
out is a *normalized* type dict: the same JSON shape h5pyd sends (API-NOTES §4), with defaults
filled in, aliases resolved and every fidelity field kept (``strPad``, ``charSet``, opaque
``tag``, enum members in order, compound field offsets). The other functions here assume such a
dict and do no further checking; a malformed dict given to them is a programming error.

numpy cannot say everything HDF5 can, so :func:`to_dtype` keeps the rest in dtype metadata:
h5py's own keys (``vlen``, ``enum``, ``ref``, ``h5py_encoding``) where h5py has one, so the
dtypes work with h5py, and ``h5lake_*`` keys for the rest (bitfield, object reference, string
padding, opaque tag). :func:`~h5lake.model.typecheck.type_from_dtype` reads both back, so for every normalized type ``t``
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
import math
from typing import Any

import numpy as np

TypeJson = dict[str, Any]
"""A normalized type, as returned by :func:`~h5lake.model.typecheck.validate_type`."""

VARIABLE = "H5T_VARIABLE"

MAX_TYPE_SIZE = 2**31 - 1
"""Largest fixed element size accepted, in bytes; far above any real type, it bounds memory."""

MAX_NESTING = 32

MAX_ARRAY_RANK = 32

MAX_MEMBERS = 2**16 - 1
"""Fields of one compound, members of one enum: what an HDF5 datatype message can hold."""

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


NUMERIC_CLASSES = (TypeClass.INTEGER, TypeClass.FLOAT, TypeClass.BITFIELD, TypeClass.ENUM)
"""Classes whose elements are plain numbers in numpy."""


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


INT_BASES = _predefined("H5T_STD_I", "i", (8, 16, 32, 64)) | _predefined(
    "H5T_STD_U", "u", (8, 16, 32, 64)
)

FLOAT_BASES = _predefined("H5T_IEEE_F", "f", (16, 32, 64))

BITFIELD_BASES = _predefined("H5T_STD_B", "u", (8, 16, 32, 64))

BASES_BY_CLASS = {
    TypeClass.INTEGER: INT_BASES,
    TypeClass.FLOAT: FLOAT_BASES,
    TypeClass.BITFIELD: BITFIELD_BASES,
}

BOOL_MEMBERS = [{"name": "FALSE", "value": 0}, {"name": "TRUE", "value": 1}]

# dtype metadata keys for what neither numpy nor h5py can express
META_CLASS = "h5lake_class"  # "H5T_BITFIELD" or "H5T_REFERENCE" on plain numeric/S48 dtypes

META_STRPAD = "h5lake_strpad"  # strPad of a string type, when it is not the default

META_TAG = "h5lake_tag"  # opaque tag

META_HDF5 = "h5lake_hdf5"  # an opaque type's hdf5Type

HDF5_TYPE = "hdf5Type"

PRECISION = "precision"  # of an integer with fewer significant bits than its size

BIT_OFFSET = "offset"  # where those bits start
"""Key of an opaque type carrying an HDF5 atomic type the type JSON has no name for."""

HDF5_CLASS = "hdf5Class"
"""Key of an integer type that is an HDF5 bitfield, as clients are shown it (:func:`client_type`)."""


def reduced_precision(t: TypeJson) -> bool:
    """True if ``t`` (or a member, base or element of it) is an integer whose significant bits
    are fewer than its size or start at a bit offset (HDF5 ``H5Tset_precision``/``H5Tset_offset``).
    Values are the integers themselves (as if read into a full-size integer); the stored chunk
    bytes are HDF5's: the value shifted to its offset (see ``h5lake.chunks.codecs.precision``)."""
    match type_class(t):
        case TypeClass.INTEGER:
            return PRECISION in t
        case TypeClass.COMPOUND:
            return any(reduced_precision(f["type"]) for f in t["fields"])
        case TypeClass.ARRAY | TypeClass.ENUM:
            return reduced_precision(t["base"])
        case _:
            return False


HDF5_TYPE_CLASSES = ("H5T_INTEGER", "H5T_FLOAT", "H5T_TIME", "H5T_COMPLEX")

HDF5_TYPE_KEYS: dict[str, type] = {
    "class": str, "size": int, "order": str, "precision": int, "offset": int, "pad": list,
    "signed": bool, "signPosition": int, "exponent": dict, "mantissa": dict, "internalPad": str,
    "base": str,  # H5T_COMPLEX (HDF5 2.0): its float parts' type, e.g. "H5T_IEEE_F32BE"
}

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
            return layout_dtype(t, packed=False).itemsize


def client_type(t: Any) -> Any:
    """``t`` as clients are shown it: every bitfield (nested too) as the unsigned integer of its
    size and order, marked ``"hdf5Class": "H5T_BITFIELD"``. h5pyd 1.0 cannot open a bitfield
    ("Invalid type class") but reads the integer; :func:`~h5lake.model.typecheck.validate_type` turns the marked form
    back into the bitfield, so ``h5lake export`` still writes one. An enum also carries its members
    as ``mapping`` (``{name: value}``, in order): h5pyd before 1.0 reads only that key, as HSDS
    returns what such a client sent; h5pyd 1.0 reads either. Other keys pass through."""
    if not isinstance(t, dict):
        return t
    cls = t.get("class")
    if cls == TypeClass.BITFIELD.value and isinstance(t.get("base"), str):
        base = t["base"].replace("H5T_STD_B", "H5T_STD_U", 1)
        return {**t, "class": TypeClass.INTEGER.value, "base": base, HDF5_CLASS: TypeClass.BITFIELD.value}
    out = dict(t)
    if cls == TypeClass.ENUM.value and isinstance(t.get("members"), list) and "mapping" not in t:
        out["mapping"] = {m["name"]: m["value"] for m in t["members"] if isinstance(m, dict) and "name" in m}
    if isinstance(t.get("base"), dict):
        out["base"] = client_type(t["base"])
    if isinstance(t.get("fields"), list):
        out["fields"] = [{**f, "type": client_type(f.get("type"))} if isinstance(f, dict) else f for f in t["fields"]]
    return out


def type_class(t: TypeJson) -> TypeClass:
    try:  # a dict lookup: the enum's own call costs ~2 us, and a type is classified many times
        return _TYPE_CLASSES[t["class"]]
    except (KeyError, TypeError):
        return TypeClass(t["class"])  # its ValueError for anything else


_TYPE_CLASSES: dict[str, TypeClass] = {c.value: c for c in TypeClass}


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


def holds_region_reference(t: TypeJson) -> bool:
    """True if a region reference is an element of ``t`` or nested in it (compound, array, vlen)."""
    match type_class(t):
        case TypeClass.REFERENCE:
            return bool(t["base"] == RefKind.REGION)
        case TypeClass.ARRAY | TypeClass.VLEN:
            return holds_region_reference(t["base"])
        case TypeClass.COMPOUND:
            return any(holds_region_reference(f["type"]) for f in t["fields"])
        case _:
            return False


def is_bool(t: TypeJson) -> bool:
    """True for h5py's bool convention, stored as ``numpy.bool_``: an enum over a one-byte
    signed integer whose members are exactly ``FALSE=0`` and ``TRUE=1``, in either order."""
    return (
        type_class(t) is TypeClass.ENUM
        and t["base"]["base"] in ("H5T_STD_I8LE", "H5T_STD_I8BE")
        and sorted(t["members"], key=lambda m: m["value"]) == BOOL_MEMBERS
    )


def item_size(t: TypeJson) -> int | None:
    """Bytes per element in binary transfer and in a stored chunk (packed, no padding), or
    None for a variable-length type, whose elements differ in size."""
    key = tuple(t.items()) if type(t) is dict and all(type(v) in _FLAT for v in t.values()) else None
    if key is not None:
        known = _FLAT_SIZES.get(key, _UNKNOWN)  # one lookup: another thread may clear meanwhile
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
    size = None if is_variable(t) else wire_dtype(t).itemsize
    if key is not None:
        if len(_FLAT_SIZES) >= 1024:
            _FLAT_SIZES.clear()
        _FLAT_SIZES[key] = size
    return size


#: `item_size` of flat types (strings and integers only: every integer, float and string type),
#: by their items: each attribute PUT asks, and building the dtype is most of the answer's cost.
_FLAT_SIZES: dict[tuple[tuple[str, Any], ...], int | None] = {}
_FLAT = (str, int)
_UNKNOWN = object()


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


def to_dtype(t: TypeJson) -> np.dtype[Any]:
    """The numpy dtype holding elements of the (normalized) type ``t`` in memory.

    See the module docstring for the mapping. Compounds honour explicit offsets here; use
    :func:`wire_dtype` for the packed layout of the binary wire.
    """
    return layout_dtype(t, packed=False)


def wire_dtype(t: TypeJson) -> np.dtype[Any]:
    """Like :func:`to_dtype` but every compound is packed: the binary transfer layout.

    Equal to ``to_dtype(t)`` unless the type carries compound offsets.
    """
    return layout_dtype(t, packed=True)


def _meta_dtype(base: Any, **metadata: Any) -> np.dtype[Any]:
    return np.dtype(base, metadata=metadata) if metadata else np.dtype(base)


def layout_dtype(t: TypeJson, packed: bool) -> np.dtype[Any]:
    match type_class(t):
        case TypeClass.INTEGER:
            return np.dtype(INT_BASES[t["base"]])
        case TypeClass.FLOAT:
            return np.dtype(FLOAT_BASES[t["base"]])
        case TypeClass.BITFIELD:
            return _meta_dtype(BITFIELD_BASES[t["base"]], **{META_CLASS: t["class"]})
        case TypeClass.STRING:
            return _string_dtype(t)
        case TypeClass.OPAQUE:
            meta = {META_TAG: t["tag"]} if "tag" in t else {}
            if HDF5_TYPE in t:
                meta[META_HDF5] = t[HDF5_TYPE]
            return _meta_dtype(f"V{t['size']}", **meta)
        case TypeClass.REFERENCE:
            if t["base"] == RefKind.REGION:
                import h5py  # only here: h5py's own reference class (12 MiB resident per process)

                return np.dtype(h5py.regionref_dtype)
            return _meta_dtype(f"S{OBJ_REF_SIZE}", **{META_CLASS: t["class"]})
        case TypeClass.ENUM:
            if is_bool(t):
                return np.dtype(np.bool_)
            mapping = {m["name"]: m["value"] for m in t["members"]}
            return np.dtype(to_dtype(t["base"]), metadata={"enum": mapping})  # h5py.enum_dtype
        case TypeClass.VLEN:
            return np.dtype("O", metadata={"vlen": layout_dtype(t["base"], packed)})  # h5py.vlen_dtype
        case TypeClass.ARRAY:
            return np.dtype((layout_dtype(t["base"], packed), tuple(t["dims"])))
        case TypeClass.COMPOUND:
            names = [f["name"] for f in t["fields"]]
            formats = [layout_dtype(f["type"], packed) for f in t["fields"]]
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
    # h5py.string_dtype's conventions, made here so the server need not load h5py
    metadata: dict[str, Any] = {"vlen": str if utf8 else bytes} if variable else {"h5py_encoding": "utf-8" if utf8 else "ascii"}
    if t["strPad"] != (StrPad.NULLTERM if variable else StrPad.NULLPAD):
        metadata[META_STRPAD] = t["strPad"]
    return _meta_dtype(f"S{t['length']}", **metadata) if not variable else np.dtype("O", metadata=metadata)


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
