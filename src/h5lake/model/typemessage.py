"""How many bytes a type takes as an HDF5 datatype message (the format's version 3 encoding).

HDF5 keeps a dataset's or attribute's type in one object header message, whose size is a 16-bit
number: a compound of ~3,000 fields with short names, or an enum of ~6,000 members, is as much
as a file can hold (h5py refuses a larger one: "object header message is too large"). h5lake
refuses the same types, so every type it stores can be exported; this also bounds the work
every request on a dataset does with its type (a 60,000-field compound cost seconds of the
event loop per read).
"""

from __future__ import annotations

from h5lake.model.types import TypeClass, TypeJson, hdf5_size, type_class

MAX_MESSAGE_BYTES = 2**16 - 1
HEADER = 8  # class and version, class bit fields, element size
MIN_FIELD_BYTES = 2 + 1 + HEADER  # a one-letter name and its NUL, a one-byte offset, a member type
MIN_MEMBER_BYTES = 2 + 1  # an enum member: a one-letter name and its NUL, a one-byte value
_PROPERTIES = {
    TypeClass.INTEGER: 4,  # bit offset, precision
    TypeClass.BITFIELD: 4,
    TypeClass.FLOAT: 12,  # bit offset, precision, exponent and mantissa places, exponent bias
    TypeClass.STRING: 0,
    TypeClass.REFERENCE: 0,
}


def message_size(t: TypeJson) -> int:
    """Bytes of the HDF5 datatype message of ``t`` (a validated type)."""
    cls = type_class(t)
    if cls in _PROPERTIES:
        return HEADER + _PROPERTIES[cls]
    match cls:
        case TypeClass.OPAQUE:
            tag = len(str(t.get("tag", "")).encode()) + 1
            return HEADER + -(-tag // 8) * 8
        case TypeClass.COMPOUND:
            size = hdf5_size(t)
            offset = 1 if size < 2**8 else 2 if size < 2**16 else 3 if size < 2**24 else 4
            return HEADER + sum(len(f["name"].encode()) + 1 + offset + message_size(f["type"]) for f in t["fields"])
        case TypeClass.ENUM:
            value = hdf5_size(t["base"])
            names = sum(len(m["name"].encode()) + 1 for m in t["members"])
            return HEADER + message_size(t["base"]) + names + value * len(t["members"])
        case TypeClass.VLEN:
            return HEADER + message_size(t["base"])
        case TypeClass.ARRAY:
            return HEADER + 1 + 4 * len(t["dims"]) + message_size(t["base"])
    return HEADER
