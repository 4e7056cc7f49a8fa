"""The load walk's shortcut for attributes: the HDF5 calls of one attribute made through ctypes on
bare identifiers, closed at once, instead of an h5py object per call.

Why: h5py makes a Python object for every identifier (type, space, the attribute itself) and
registers it in its weak registry; for the small attributes of metadata-heavy files that is
most of the cost (~16 us an attribute through h5py, ~6 us here). Only the common kinds are taken:
a type seen before (its JSON remembered by its encoding, `h5types.remembered`) that is not
committed, with a scalar or simple dataspace, whose values are either the file's bytes as they
are (fixed-size, no references, full precision, packed) or variable-length strings. Anything else
answers None and the general path (`loadplan.Planner._attributes`) reads the attribute, giving
the type JSON this shortcut remembers for the next one. tests/unit/test_load_shortcuts.py checks
that both give the same plan and bytes.

The calls go to the HDF5 library h5py uses (`h5native`), holding h5py's lock.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any

from h5py import h5s
from h5py._objects import phil

from h5lake.client import h5native
from h5lake.client.h5memory import COUNT, memory_type
from h5lake.client.h5types import remembered
from h5lake.client.h5values import has_reference, leaf_dtypes_match
from h5lake.model.shapes import UNLIMITED
from h5lake.model.types import TypeClass, TypeJson, is_variable, item_size, reduced_precision, type_class

hid_t = ctypes.c_int64
_SIZE = ctypes.c_size_t
_MAX_RANK = 32  # H5S_MAX_RANK
_TYPE_KEY_BYTES = 4096  # encodings longer than this take the general path

RAW, STRINGS = 1, 2  # how an attribute's values are read: the file's bytes, or char * pointers


@dataclass(frozen=True, slots=True)
class TypeFacts:
    """What the shortcut needs of one type, worked out once per encoding."""

    type: TypeJson
    kind: int  # RAW, STRINGS, or 0: the general path reads it
    size: int  # HDF5's bytes per element (RAW)
    unit: int  # bytes per element `loadplan.attr_weight` counts
    memory: Any  # the memory type of variable-length strings (h5py TypeID), else None


_FACTS: dict[bytes, TypeFacts] = {}
FACTS_ENTRIES = 1024  # types remembered (more: the table starts again)


def facts_of(t: TypeJson, hdf5_size: int) -> TypeFacts:
    """The facts of type ``t`` whose HDF5 elements are ``hdf5_size`` bytes."""
    variable = is_variable(t)
    unit = 64 if variable else item_size(t) or 64
    kind, memory = 0, None
    if type_class(t) is TypeClass.STRING and t.get("length") == "H5T_VARIABLE":
        kind, memory = STRINGS, memory_type(t)
    elif (
        not variable and not has_reference(t) and not reduced_precision(t)
        and leaf_dtypes_match(t) and item_size(t) == hdf5_size
    ):
        kind = RAW
    return TypeFacts(t, kind, hdf5_size, unit, memory)


def _declare() -> Any:
    lib = h5native.library()
    for name, args, result in (
        ("H5Aopen", [hid_t, ctypes.c_char_p, hid_t], hid_t),
        ("H5Aget_type", [hid_t], hid_t),
        ("H5Aget_space", [hid_t], hid_t),
        ("H5Aread", [hid_t, hid_t, ctypes.c_void_p], ctypes.c_int),
        ("H5Aclose", [hid_t], ctypes.c_int),
        ("H5Tclose", [hid_t], ctypes.c_int),
        ("H5Sclose", [hid_t], ctypes.c_int),
        ("H5Tencode", [hid_t, ctypes.c_void_p, ctypes.POINTER(_SIZE)], ctypes.c_int),
        ("H5Tcommitted", [hid_t], ctypes.c_int),
        ("H5Tget_size", [hid_t], _SIZE),
        ("H5Sget_simple_extent_type", [hid_t], ctypes.c_int),
        ("H5Sget_simple_extent_dims", [hid_t, ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int),
        ("H5Pencode2", [hid_t, ctypes.c_void_p, ctypes.POINTER(_SIZE), hid_t], ctypes.c_int),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


class _Calls:
    """The declared functions and the buffers they reuse (used under h5py's lock only)."""

    def __init__(self) -> None:
        lib = _declare()
        self.lib = lib
        self.key = ctypes.create_string_buffer(_TYPE_KEY_BYTES)
        self.nalloc = _SIZE(0)
        self.dims = (ctypes.c_uint64 * _MAX_RANK)()
        self.maxdims = (ctypes.c_uint64 * _MAX_RANK)()


_calls: _Calls | None = None


def _get_calls() -> _Calls | None:
    global _calls
    if _calls is None:
        if not h5native.available():
            return None
        _calls = _Calls()
    return _calls


def _type_facts(c: _Calls, tid: int) -> TypeFacts | None:
    lib, nalloc = c.lib, c.nalloc
    nalloc.value = 0  # too small: HDF5 says the size it needs
    if lib.H5Tencode(tid, c.key, ctypes.byref(nalloc)) < 0 or not 0 < nalloc.value <= _TYPE_KEY_BYTES:
        return None
    if lib.H5Tencode(tid, c.key, ctypes.byref(nalloc)) < 0:
        return None
    key = c.key.raw[: nalloc.value]
    facts = _FACTS.get(key)
    if facts is None:
        t = remembered(key)
        if t is None:
            return None  # the general path works it out and remembers it
        if len(_FACTS) >= FACTS_ENTRIES:
            _FACTS.clear()
        facts = _FACTS[key] = facts_of(t, int(lib.H5Tget_size(tid)))
    return facts


def raw_size(tid: Any) -> int | None:
    """HDF5's bytes per element of the type ``tid`` (h5py TypeID) when its values are the file's
    bytes as they are (read with ``tid`` itself, nothing converted), else None."""
    key = tid.encode()
    facts = _FACTS.get(key)
    if facts is None:
        t = remembered(key)
        if t is None:
            return None
        if len(_FACTS) >= FACTS_ENTRIES:
            _FACTS.clear()
        facts = _FACTS[key] = facts_of(t, int(tid.get_size()))
    return facts.size if facts.kind == RAW else None


Read = tuple[TypeJson, dict[str, Any], tuple[int, ...], int, "bytes | None"]


def attribute(oid: Any, raw_name: bytes, room: int) -> Read | None:
    """The attribute ``raw_name`` of the open object ``oid`` as the general path reads it:
    its type JSON, dataspace JSON, dims, weight (`loadplan.attr_weight`) and, when the weight is
    at most ``room``, its wire bytes; None when the shortcut does not take it."""
    c = _get_calls()
    if c is None:
        return None
    lib = c.lib
    with phil:
        aid = lib.H5Aopen(oid.id, raw_name, 0)
        if aid < 0:
            return None
        tid = sid = -1
        try:
            tid = lib.H5Aget_type(aid)
            if tid < 0 or lib.H5Tcommitted(tid) != 0:
                return None
            facts = _type_facts(c, tid)
            if facts is None or not facts.kind:
                return None
            sid = lib.H5Aget_space(aid)
            if sid < 0:
                return None
            shape = _space(c, sid)
            if shape is None:
                return None
            space, dims = shape
            count = math.prod(dims)
            weight = 256 + facts.unit * count
            if weight > room:
                return facts.type, space, dims, weight, None
            if facts.kind == RAW:
                buf = ctypes.create_string_buffer(facts.size * count or 1)
                if count and lib.H5Aread(aid, tid, buf) < 0:
                    return None
                return facts.type, space, dims, weight, buf.raw[: facts.size * count]
            return facts.type, space, dims, weight, _strings(lib, aid, sid, facts.memory, count)
        finally:
            if sid >= 0:
                lib.H5Sclose(sid)
            if tid >= 0:
                lib.H5Tclose(tid)
            lib.H5Aclose(aid)


def _space(c: _Calls, sid: int) -> tuple[dict[str, Any], tuple[int, ...]] | None:
    """As `loadplan.space_json`, for scalar and simple dataspaces (None for others)."""
    kind = c.lib.H5Sget_simple_extent_type(sid)
    if kind == h5s.SCALAR:
        return {"class": "H5S_SCALAR"}, ()
    if kind != h5s.SIMPLE:
        return None
    rank = c.lib.H5Sget_simple_extent_dims(sid, c.dims, c.maxdims)
    if rank < 0:
        return None
    dims = tuple(c.dims[:rank])
    out: dict[str, Any] = {"class": "H5S_SIMPLE", "dims": list(dims)}
    maxdims = tuple(c.maxdims[:rank])
    if maxdims != dims:
        out["maxdims"] = [UNLIMITED if m == h5s.UNLIMITED else m for m in maxdims]
    return out, dims


def _strings(lib: Any, aid: int, sid: int, memory: Any, count: int) -> bytes | None:
    """The wire bytes of ``count`` variable-length strings (as `h5memory.read` makes them)."""
    if not count:
        return b""
    pointers = (ctypes.c_void_p * count)()
    if lib.H5Aread(aid, memory.id, pointers) < 0:
        return None
    try:
        out = bytearray()
        for ptr in pointers:
            raw = ctypes.string_at(ptr) if ptr else b""
            out += COUNT.pack(len(raw)) + raw
        return bytes(out)
    finally:
        lib.H5Dvlen_reclaim(memory.id, sid, 0, pointers)


# -- property lists --------------------------------------------------------------------------

_PLIST_KEY_BYTES = 64 * 1024  # encodings longer than this are not remembered


def plist_key(plist: Any) -> bytes | None:
    """A property list's encoding (``H5Pencode2``): equal lists encode alike. None when it
    cannot be had."""
    c = _get_calls()
    if c is None:
        return None
    lib, nalloc = c.lib, _SIZE(0)
    with phil:
        if lib.H5Pencode2(plist.id, None, ctypes.byref(nalloc), 0) < 0 or not 0 < nalloc.value <= _PLIST_KEY_BYTES:
            return None
        buf = ctypes.create_string_buffer(nalloc.value)  # HDF5 writes as much as it said it needs
        if lib.H5Pencode2(plist.id, buf, ctypes.byref(nalloc), 0) < 0:
            return None
        return buf.raw[: nalloc.value]


class PlistMemo:
    """What was worked out from a property list, found again for an equal one: looked up by its
    encoding (`plist_key`) and given only if HDF5 finds the two lists equal (``H5Pequal``, each
    property's own comparison), so an encoding that leaves something out never mixes two lists.
    Every lookup encodes: ``H5Pequal`` alone is not enough (it finds two dataset creation lists
    of different chunk shapes equal). Holds at most ``entries`` lists (then starts again)."""

    def __init__(self, entries: int = 256) -> None:
        self.entries = entries
        self.table: dict[Any, tuple[Any, Any]] = {}

    def find(self, plist: Any, kind: Any = None) -> tuple[Any, Any]:
        """``(key, value)`` for ``plist`` (``kind``: what else the value depends on, compared
        as it is): value None when not known, key None when it cannot be remembered."""
        code = plist_key(plist)
        if code is None:
            return None, None
        key = (kind, code)
        hit = self.table.get(key)
        if hit is None or not hit[0].equal(plist):
            return key, None
        return key, hit[1]

    def keep(self, key: Any, plist: Any, value: Any) -> None:
        if len(self.table) >= self.entries:
            self.table.clear()
        self.table[key] = (plist, value)
