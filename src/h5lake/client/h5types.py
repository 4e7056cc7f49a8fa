"""HDF5 datatypes (h5py ``TypeID``) to the service's type JSON and back, exactly.

Why not numpy dtypes: a dtype cannot say string padding, bitfield, opaque tags, compound
padding around references or variable-length members, so the tools read and build HDF5 types
directly. :func:`type_json` refuses, with :class:`Unrepresentable`, anything the type JSON cannot
say (HDF5 1.12 references, enum bases and bitfields of reduced precision);
:func:`type_id` builds the HDF5 type of any normalized type JSON. Atomic types with no name in
the type JSON (long double, 16-byte integers, time types, HDF5 2.0's native complex numbers) are
carried as opaque types with an ``hdf5Type`` description (:func:`carried_type_id`).

Compound ``offset``/``size`` are HDF5 member offsets and size. They are left out when the
compound is packed, i.e. every member starts where the previous one ends in HDF5 sizes
(:func:`h5lake.model.types.hdf5_size`), which is how h5py lays out a compound made from a numpy dtype.
"""

from __future__ import annotations

from typing import Any

from h5py import h5t

from h5lake.client import h5native
from h5lake.errors import InvalidInput
from h5lake.model.typecheck import validate_type
from h5lake.model.types import CharSet, TypeJson, hdf5_size, reduced_precision

TypeID = Any  # h5py.h5t.TypeID and its subclasses (no stubs)


class Unrepresentable(Exception):
    """Something in an HDF5 file has no form in the service's model; ``feature`` says what."""

    def __init__(self, feature: str) -> None:
        super().__init__(feature)
        self.feature = feature


_ORDER = {h5t.ORDER_LE: "LE", h5t.ORDER_BE: "BE"}
_STRPAD = {h5t.STR_NULLTERM: "H5T_STR_NULLTERM", h5t.STR_NULLPAD: "H5T_STR_NULLPAD", h5t.STR_SPACEPAD: "H5T_STR_SPACEPAD"}
_CSET = {h5t.CSET_ASCII: CharSet.ASCII.value, h5t.CSET_UTF8: CharSet.UTF8.value}
_IEEE = {2: h5t.IEEE_F16LE, 4: h5t.IEEE_F32LE, 8: h5t.IEEE_F64LE}


def _order(tid: TypeID, what: str) -> str:
    order = tid.get_order()
    if order not in _ORDER:
        raise Unrepresentable(f"{what} with byte order {order} (neither little nor big endian)")
    return _ORDER[order]


def _check_precision(tid: TypeID, what: str) -> None:
    size = tid.get_size()
    if hasattr(tid, "get_precision"):
        precision, offset = tid.get_precision(), tid.get_offset()
    else:  # h5py does not wrap these for bitfields
        precision, offset = h5native.precision_and_offset(tid)
    if precision != 8 * size or offset != 0:
        raise Unrepresentable(
            f"{what} of {size} bytes with {precision}-bit precision at bit offset {offset} "
            "(only full-precision types can be represented)"
        )


def _integer_base(tid: TypeID, what: str, letter: str | None = None) -> str:
    size = tid.get_size()
    if size not in (1, 2, 4, 8):
        raise Unrepresentable(f"{size}-byte {what}")
    _check_precision(tid, what)
    if letter is None:
        letter = "I" if tid.get_sign() == h5t.SGN_2 else "U"
    return f"H5T_STD_{letter}{8 * size}{_order(tid, what)}"


def _integer_json(tid: TypeID) -> TypeJson:
    """An integer; one of 1, 2, 4 or 8 bytes with fewer significant bits or a bit offset keeps
    ``precision`` and ``offset`` (its values are the integers; see ``model.types``). Other sizes,
    and padding bits that are not zero, are carried (:func:`_carried`)."""
    size, precision, offset = tid.get_size(), tid.get_precision(), tid.get_offset()
    if size not in (1, 2, 4, 8):
        return _carried(tid, "integer")
    if (precision, offset) == (8 * size, 0):
        return {"class": "H5T_INTEGER", "base": _integer_base(tid, "integer")}
    if tid.get_pad() != (h5t.PAD_ZERO, h5t.PAD_ZERO):
        return _carried(tid, "integer")
    letter = "I" if tid.get_sign() == h5t.SGN_2 else "U"
    base = f"H5T_STD_{letter}{8 * size}{_order(tid, 'integer')}"
    return {"class": "H5T_INTEGER", "base": base, "precision": int(precision), "offset": int(offset)}


def memory_type_id(tid: TypeID, t: TypeJson) -> TypeID:
    """The type to read and write values of ``t`` with: ``tid`` itself, or, when ``t`` has
    integers of reduced precision, the same type at full precision, so HDF5 converts between
    the stored bits and the integers the service holds."""
    if not reduced_precision(t):
        return tid
    return type_id(_full_precision(t))


def _full_precision(t: TypeJson) -> TypeJson:
    cls = t["class"]
    if cls == "H5T_INTEGER":
        return {"class": cls, "base": t["base"]}
    if cls in ("H5T_ARRAY", "H5T_ENUM"):
        return {**t, "base": _full_precision(t["base"])}
    if cls == "H5T_COMPOUND":
        return {**t, "fields": [{**f, "type": _full_precision(f["type"])} for f in t["fields"]]}
    return t


_PAD = {h5t.PAD_ZERO: "H5T_PAD_ZERO", h5t.PAD_ONE: "H5T_PAD_ONE", h5t.PAD_BACKGROUND: "H5T_PAD_BACKGROUND"}
_NORM = {h5t.NORM_IMPLIED: "H5T_NORM_IMPLIED", h5t.NORM_MSBSET: "H5T_NORM_MSBSET", h5t.NORM_NONE: "H5T_NORM_NONE"}


def _carried(tid: TypeID, what: str) -> TypeJson:
    """An atomic type the type JSON has no name for (a long double, a 16-byte integer, a time
    type): an opaque type of its size whose ``hdf5Type`` describes it fully, so values move as
    the file's bytes and export rebuilds the very same type (docs/fidelity.md)."""
    cls = tid.get_class()
    if cls == h5t.TIME:  # h5py wraps none of the atomic calls for time types
        precision, offset = h5native.precision_and_offset(tid)
        order = _ORDER.get(h5native.byte_order(tid))
        if tid.get_size() not in (4, 8) or precision != 8 * tid.get_size() or offset or order is None:
            raise Unrepresentable(f"a time type of {tid.get_size()} bytes other than HDF5's H5T_UNIX_D32/D64 (LE or BE)")
        return {"class": "H5T_OPAQUE", "size": tid.get_size(), "hdf5Type": {"class": "H5T_TIME", "size": tid.get_size(), "order": order, "precision": precision}}
    precision, offset = tid.get_precision(), tid.get_offset()
    d: dict[str, Any] = {
        "class": {h5t.INTEGER: "H5T_INTEGER", h5t.FLOAT: "H5T_FLOAT"}[cls],
        "size": tid.get_size(),
        "order": _order(tid, what),
        "precision": int(precision),
        "offset": int(offset),
    }
    d["pad"] = [_PAD[p] for p in tid.get_pad()]
    if cls == h5t.INTEGER:
        d["signed"] = tid.get_sign() == h5t.SGN_2
    elif cls == h5t.FLOAT:
        spos, epos, esize, mpos, msize = tid.get_fields()
        d["signPosition"] = int(spos)
        d["exponent"] = {"position": int(epos), "size": int(esize), "bias": int(tid.get_ebias())}
        d["mantissa"] = {"position": int(mpos), "size": int(msize), "norm": _NORM[tid.get_norm()]}
        d["internalPad"] = _PAD[tid.get_inpad()]
    return {"class": "H5T_OPAQUE", "size": tid.get_size(), "hdf5Type": d}


def carried_type_id(d: dict[str, Any]) -> TypeID:
    """The HDF5 type an ``hdf5Type`` description (see :func:`_carried`) stands for."""
    size = int(d["size"])
    if d["class"] == "H5T_TIME":
        name = f"UNIX_D{8 * size}{'BE' if d['order'] == 'BE' else 'LE'}"
        if size not in (4, 8) or not hasattr(h5t, name):
            raise Unrepresentable(f"a time type of {size} bytes")
        return getattr(h5t, name).copy()
    if d["class"] == "H5T_COMPLEX":
        name = "COMPLEX_" + str(d.get("base", "")).removeprefix("H5T_")
        if not hasattr(h5t, name):
            raise Unrepresentable(f"a complex number type of {d.get('base')} parts (HDF5 2.0's H5T_COMPLEX; this HDF5 is {'too old' if _COMPLEX is None else 'missing it'})")
        return getattr(h5t, name).copy()
    if d["class"] == "H5T_FLOAT":
        tid = h5t.IEEE_F64LE.copy()
    else:
        tid = (h5t.STD_I64LE if d.get("signed") else h5t.STD_U64LE).copy()
    if size > tid.get_size():
        tid.set_size(size)
        tid.set_precision(8 * size)
    if d["class"] == "H5T_FLOAT":  # HDF5 wants the fields inside the precision at every step
        exp, man = d["exponent"], d["mantissa"]
        tid.set_fields(d["signPosition"], exp["position"], exp["size"], man["position"], man["size"])
        tid.set_ebias(exp["bias"])
        tid.set_norm({v: k for k, v in _NORM.items()}[man["norm"]])
        tid.set_inpad({v: k for k, v in _PAD.items()}[d["internalPad"]])
    tid.set_precision(int(d["precision"]))
    tid.set_size(size)
    tid.set_offset(int(d["offset"]))
    if "pad" in d:
        lsb, msb = ({v: k for k, v in _PAD.items()}[p] for p in d["pad"])
        tid.set_pad(lsb, msb)
    tid.set_order(h5t.ORDER_BE if d["order"] == "BE" else h5t.ORDER_LE)
    return tid


def _float_base(tid: TypeID) -> str:
    size = tid.get_size()
    ieee = _IEEE.get(size)
    same = ieee is not None and (
        tid.get_fields() == ieee.get_fields()
        and tid.get_ebias() == ieee.get_ebias()
        and tid.get_norm() == ieee.get_norm()
        and tid.get_precision() == ieee.get_precision()
        and tid.get_offset() == 0
    )
    if not same:
        _, _, esize, _, msize = tid.get_fields()
        raise Unrepresentable(
            f"{size}-byte float with {esize}-bit exponent and {msize}-bit mantissa "
            "(only IEEE 754 half, single and double precision can be represented)"
        )
    return f"H5T_IEEE_F{8 * size}{_order(tid, 'float')}"


_TYPE_CACHE: dict[bytes, TypeJson] = {}
TYPE_CACHE_ENTRIES = 4096  # distinct types remembered (a file of more starts the cache again)


def type_json(tid: TypeID) -> TypeJson:
    """The normalized type JSON of an HDF5 datatype (committed or not); see the module doc.

    Remembered by the type's encoded description (``H5Tencode``, all the type says: class,
    size, order, precision, padding, members, tags), which is ten times cheaper than reading
    the type again: a file's objects share few types. The JSON returned is shared: callers
    must not change it."""
    try:
        key = tid.encode()
    except (RuntimeError, ValueError, TypeError):  # a type HDF5 cannot encode: read it each time
        key = None
    if key is not None:
        found = _TYPE_CACHE.get(key)
        if found is not None:
            return found
    try:
        made = validate_type(_raw_json(tid))
    except InvalidInput as exc:
        raise Unrepresentable(exc.message) from None
    if key is not None:
        if len(_TYPE_CACHE) >= TYPE_CACHE_ENTRIES:
            _TYPE_CACHE.clear()
        _TYPE_CACHE[key] = made
    return made


def remembered(key: bytes) -> TypeJson | None:
    """The type JSON :func:`type_json` remembered for a type encoding (``H5Tencode``), if any."""
    return _TYPE_CACHE.get(key)


def _raw_json(tid: TypeID) -> TypeJson:
    cls = tid.get_class()
    if cls == h5t.INTEGER and tid.get_size() not in (1, 2, 4, 8):
        return _carried(tid, "integer")
    if cls == h5t.INTEGER:
        return _integer_json(tid)
    if cls == h5t.FLOAT:
        try:
            return {"class": "H5T_FLOAT", "base": _float_base(tid)}
        except Unrepresentable:
            return _carried(tid, "float")
    if cls == h5t.TIME:
        return _carried(tid, "time")
    if cls == _COMPLEX:
        return _complex_json(tid)
    if cls == h5t.BITFIELD:
        return {"class": "H5T_BITFIELD", "base": _integer_base(tid, "bitfield", "B")}
    if cls == h5t.STRING:
        return _string_json(tid)
    if cls == h5t.OPAQUE:
        out: TypeJson = {"class": "H5T_OPAQUE", "size": tid.get_size()}
        tag = tid.get_tag()
        if tag:
            out["tag"] = tag.decode("utf-8", "surrogateescape")
        return out
    if cls == h5t.COMPOUND:
        return _compound_json(tid)
    if cls == h5t.ENUM:
        return _enum_json(tid)
    if cls == h5t.VLEN:
        return {"class": "H5T_VLEN", "base": _raw_json(tid.get_super())}
    if cls == h5t.ARRAY:
        return {"class": "H5T_ARRAY", "dims": list(tid.get_array_dims()), "base": _raw_json(tid.get_super())}
    if cls == h5t.REFERENCE:
        if tid.equal(h5t.STD_REF_OBJ):
            return {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
        if tid.equal(h5t.STD_REF_DSETREG):
            return {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}
        raise Unrepresentable("an HDF5 1.12 reference type (H5T_STD_REF); only object and dataset region references can be represented")
    raise Unrepresentable(f"datatype class {cls}")


_COMPLEX = getattr(h5t, "COMPLEX", None)  # HDF5 2.0's native complex class (h5py built on 2.0)


def _complex_json(tid: TypeID) -> TypeJson:
    """HDF5 2.0's native complex number type, carried (docs/fidelity.md): an opaque type of its
    size with ``hdf5Type`` ``{"class": "H5T_COMPLEX", "size", "base"}``, ``base`` naming the IEEE
    float of its real and imaginary parts."""
    part = tid.get_super()
    try:
        base = _float_base(part) if part.get_class() == h5t.FLOAT else None
    except Unrepresentable:
        base = None
    if base is None:
        raise Unrepresentable(f"a complex number type of {tid.get_size()} bytes whose parts are not IEEE half, single or double floats")
    return {"class": "H5T_OPAQUE", "size": tid.get_size(), "hdf5Type": {"class": "H5T_COMPLEX", "size": tid.get_size(), "base": base}}


def _string_json(tid: TypeID) -> TypeJson:
    cset = tid.get_cset()
    if cset not in _CSET:
        raise Unrepresentable(f"string character set {cset}")
    pad = tid.get_strpad()
    length: Any = "H5T_VARIABLE" if tid.is_variable_str() else tid.get_size()
    return {"class": "H5T_STRING", "length": length, "charSet": _CSET[cset], "strPad": _STRPAD[pad]}


def _enum_json(tid: TypeID) -> TypeJson:
    base = tid.get_super()
    members = []
    for i in range(tid.get_nmembers()):
        name = tid.get_member_name(i).decode("utf-8", "surrogateescape")
        members.append({"name": name, "value": int(tid.get_member_value(i))})
    return {"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": _integer_base(base, "enum base")}, "members": members}


def _compound_json(tid: TypeID) -> TypeJson:
    fields: list[TypeJson] = []
    packed = True
    end = 0
    for i in range(tid.get_nmembers()):
        member = tid.get_member_type(i)
        offset = tid.get_member_offset(i)
        name = tid.get_member_name(i).decode("utf-8", "surrogateescape")
        fields.append({"name": name, "type": _raw_json(member), "offset": offset})
        packed = packed and offset == end
        end = offset + member.get_size()
    size = tid.get_size()
    out: TypeJson = {"class": "H5T_COMPOUND", "fields": fields}
    if packed and size == end:
        for f in fields:
            del f["offset"]
    else:
        out["size"] = size
    return out


# -- type JSON to HDF5 ---------------------------------------------------------------------------


def _atomic(t: TypeJson) -> TypeID:
    name = t["base"].removeprefix("H5T_")
    return getattr(h5t, name)


def type_id(t: TypeJson) -> TypeID:
    """A new (transient, uncommitted) HDF5 datatype for normalized type JSON ``t``."""
    cls = t["class"]
    if cls == "H5T_INTEGER" and "precision" in t:
        tid = _atomic(t).copy()
        tid.set_precision(int(t["precision"]))
        tid.set_offset(int(t["offset"]))
        return tid
    if cls in ("H5T_INTEGER", "H5T_FLOAT", "H5T_BITFIELD"):
        return _atomic(t).copy()
    if cls == "H5T_STRING":
        tid = h5t.C_S1.copy()
        tid.set_size(h5t.VARIABLE if t["length"] == "H5T_VARIABLE" else int(t["length"]))
        tid.set_strpad({v: k for k, v in _STRPAD.items()}[t["strPad"]])
        tid.set_cset({v: k for k, v in _CSET.items()}[t["charSet"]])
        return tid
    if cls == "H5T_OPAQUE" and "hdf5Type" in t:
        return carried_type_id(t["hdf5Type"])
    if cls == "H5T_OPAQUE":
        tid = h5t.create(h5t.OPAQUE, int(t["size"]))
        tid.set_tag(t.get("tag", "").encode("utf-8", "surrogateescape"))
        return tid
    if cls == "H5T_ENUM":
        tid = h5t.enum_create(type_id(t["base"]))
        for m in t["members"]:
            tid.enum_insert(m["name"].encode("utf-8", "surrogateescape"), m["value"])
        return tid
    if cls == "H5T_VLEN":
        return h5t.vlen_create(type_id(t["base"]))
    if cls == "H5T_ARRAY":
        return h5t.array_create(type_id(t["base"]), tuple(t["dims"]))
    if cls == "H5T_REFERENCE":
        return (h5t.STD_REF_OBJ if t["base"] == "H5T_STD_REF_OBJ" else h5t.STD_REF_DSETREG).copy()
    if cls == "H5T_COMPOUND":
        tid = h5t.create(h5t.COMPOUND, hdf5_size(t))
        offset = 0
        for f in t["fields"]:
            member = type_id(f["type"])
            at = f.get("offset", offset)
            tid.insert(f["name"].encode("utf-8", "surrogateescape"), at, member)
            offset = at + member.get_size()
        return tid
    raise ValueError(f"unknown type class {cls!r}")
