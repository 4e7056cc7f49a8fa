"""The few HDF5 C calls h5py does not wrap, made through ctypes on the library h5py itself loaded.

Why: exact round trips need anonymous committed datatypes (``H5Tcommit_anon``, so links can be
made later in their original creation order), user-defined links (``H5Lregister``,
``H5Lcreate_ud``, ``H5Lget_val``) and a group's link storage thresholds
(``H5Pget/set_link_phase_change``). Identifiers are shared with h5py because the calls go to the
very library instance h5py uses (found in the process's memory map, else next to h5py).

Every call holds h5py's lock, as h5py's own calls do. Every function raises :class:`NativeUnavailable` when the library cannot be found, and
``RuntimeError`` naming the call when HDF5 reports a failure.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import h5py
from h5py._objects import phil

H5P_DEFAULT = 0
LINK_CLASS_VERSION = 1  # H5L_LINK_CLASS_T_VERS
UD_LINK_MIN = 64  # H5L_TYPE_UD_MIN

hid_t = ctypes.c_int64
herr_t = ctypes.c_int


class NativeUnavailable(RuntimeError):
    """The HDF5 library h5py uses cannot be reached through ctypes."""


def _library_path() -> str:
    h5py.h5.get_libversion()  # make sure h5py has loaded HDF5
    try:
        with open("/proc/self/maps") as maps:
            found = re.findall(r"(/\S*libhdf5(?:_serial)?[-.][^/\s]*\.(?:so|dylib)[^/\s]*)", maps.read())
    except OSError:
        found = []
    found = [p for p in found if "_hl" not in os.path.basename(p)]
    here = os.path.dirname(h5py.__file__)
    # Other copies of HDF5 may be mapped too (filter plugins on HDF5_PLUGIN_PATH bring their own,
    # e.g. netCDF4's): the one in h5py's own folders is the one h5py uses.
    own = {os.path.realpath(os.path.join(here, d)) for d in ("../h5py.libs", ".dylibs", ".")}
    found.sort(key=lambda p: os.path.realpath(os.path.dirname(p)) not in own)
    if found:
        return found[0]
    for pattern in ("../h5py.libs/libhdf5-*.so*", ".dylibs/libhdf5*.dylib", "libhdf5*.so*"):
        hits = [p for p in glob.glob(os.path.join(here, pattern)) if "_hl" not in os.path.basename(p)]
        if hits:
            return hits[0]
    raise NativeUnavailable("cannot find the HDF5 library h5py uses")


@functools.cache
def _lib() -> Any:
    lib: Any = ctypes.CDLL(_library_path())
    lib.H5Tcommit_anon.argtypes = [hid_t, hid_t, hid_t, hid_t]
    lib.H5Tcommit_anon.restype = herr_t
    lib.H5Lcreate_ud.argtypes = [hid_t, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, hid_t, hid_t]
    lib.H5Lcreate_ud.restype = herr_t
    lib.H5Lget_val.argtypes = [hid_t, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, hid_t]
    lib.H5Lget_val.restype = herr_t
    lib.H5Lget_info2.argtypes = [hid_t, ctypes.c_char_p, ctypes.c_void_p, hid_t]
    lib.H5Lget_info2.restype = herr_t
    lib.H5Lis_registered.argtypes = [ctypes.c_int]
    lib.H5Lis_registered.restype = ctypes.c_int
    lib.H5Lregister.argtypes = [ctypes.c_void_p]
    lib.H5Lregister.restype = herr_t
    lib.H5Tget_precision.argtypes = [hid_t]
    lib.H5Tget_precision.restype = ctypes.c_size_t
    lib.H5Tget_offset.argtypes = [hid_t]
    lib.H5Tget_offset.restype = ctypes.c_int
    lib.H5Tget_order.argtypes = [hid_t]
    lib.H5Tget_order.restype = ctypes.c_int
    lib.H5Pget_fill_value.argtypes = [hid_t, hid_t, ctypes.c_void_p]
    lib.H5Pget_fill_value.restype = herr_t
    lib.H5Pset_fill_value.argtypes = [hid_t, hid_t, ctypes.c_void_p]
    lib.H5Pset_fill_value.restype = herr_t
    lib.H5Dvlen_reclaim.argtypes = [hid_t, hid_t, hid_t, ctypes.c_void_p]
    lib.H5Dvlen_reclaim.restype = herr_t
    lib.H5Acreate2.argtypes = [hid_t, ctypes.c_char_p, hid_t, hid_t, hid_t, hid_t]
    lib.H5Acreate2.restype = hid_t
    lib.H5Pcreate.argtypes = [hid_t]
    lib.H5Pcreate.restype = hid_t
    lib.H5Pclose.argtypes = [hid_t]
    lib.H5Pclose.restype = herr_t
    lib.H5Pset_char_encoding.argtypes = [hid_t, ctypes.c_int]
    lib.H5Pset_char_encoding.restype = herr_t
    lib.acpl_class = hid_t.in_dll(lib, "H5P_CLS_ATTRIBUTE_CREATE_ID_g")
    lib.tcpl_class = hid_t.in_dll(lib, "H5P_CLS_DATATYPE_CREATE_ID_g")
    lib.H5Oget_comment.argtypes = [hid_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.H5Oget_comment.restype = ctypes.c_ssize_t
    lib.H5Pget_link_phase_change.argtypes = [hid_t, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
    lib.H5Pget_link_phase_change.restype = herr_t
    lib.H5Pset_link_phase_change.argtypes = [hid_t, ctypes.c_uint, ctypes.c_uint]
    lib.H5Pset_link_phase_change.restype = herr_t
    lib.H5Zfilter_avail.argtypes = [ctypes.c_int]
    lib.H5Zfilter_avail.restype = ctypes.c_int
    lib.H5Zregister.argtypes = [ctypes.c_void_p]
    lib.H5Zregister.restype = herr_t
    lib.H5Zunregister.argtypes = [ctypes.c_int]
    lib.H5Zunregister.restype = herr_t
    lib.H5Eclear2.argtypes = [hid_t]
    lib.H5Eclear2.restype = herr_t
    lib.H5Fset_libver_bounds.argtypes = [hid_t, ctypes.c_int, ctypes.c_int]
    lib.H5Fset_libver_bounds.restype = herr_t
    lib.H5allocate_memory.argtypes = [ctypes.c_size_t, ctypes.c_bool]
    lib.H5allocate_memory.restype = ctypes.c_void_p
    lib.H5free_memory.argtypes = [ctypes.c_void_p]
    lib.H5free_memory.restype = herr_t
    return lib


def library() -> Any:
    """The HDF5 library h5py uses, as a ctypes library (raises :class:`NativeUnavailable`)."""
    return _lib()


F = TypeVar("F", bound=Callable[..., Any])


def _locked(fn: F) -> F:
    """Hold h5py's lock during the call: HDF5 is not thread-safe, and h5py serializes every call
    it makes with this lock, so ours must take it too."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with phil:
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]


def _check(result: int, call: str) -> None:
    if result < 0:
        raise RuntimeError(f"HDF5 {call} failed")


def available() -> bool:
    try:
        _lib()
    except (NativeUnavailable, OSError, AttributeError):
        return False
    return True


@_locked
def commit_anonymous(loc: Any, tid: Any, tcpl: Any = None) -> None:
    """Commit ``tid`` (an h5py TypeID) as a datatype object with no name, in ``loc``'s file."""
    plist = tcpl.id if tcpl is not None else H5P_DEFAULT
    _check(_lib().H5Tcommit_anon(loc.id, tid.id, plist, H5P_DEFAULT), "H5Tcommit_anon")


@_locked
def set_libver_bounds(fid: Any, low: int, high: int) -> None:
    """Raise an open file's format bounds (h5py sets them only when a file is opened)."""
    _check(_lib().H5Fset_libver_bounds(fid.id, low, high), "H5Fset_libver_bounds")


@_locked
def precision_and_offset(tid: Any) -> tuple[int, int]:
    """Significant bits and bit offset of an atomic type; h5py has no such call for bitfields."""
    return int(_lib().H5Tget_precision(tid.id)), int(_lib().H5Tget_offset(tid.id))


@_locked
def byte_order(tid: Any) -> int:
    """``H5Tget_order``; h5py has no such call for time types."""
    return int(_lib().H5Tget_order(tid.id))


@_locked
def datatype_create_plist() -> Any:
    """A new datatype creation property list (h5py has no class constant for one)."""
    lib = _lib()
    plist = lib.H5Pcreate(lib.tcpl_class.value)
    _check(plist, "H5Pcreate")
    return h5py.h5p.PropTCID(plist)


@_locked
def create_attribute(loc: Any, name: bytes, tid: Any, space: Any, cset: int) -> Any:
    """``H5Acreate2`` with the name's character set, which h5py's ``h5a.create`` cannot set."""
    lib = _lib()
    acpl = lib.H5Pcreate(lib.acpl_class.value)
    _check(acpl, "H5Pcreate")
    try:
        _check(lib.H5Pset_char_encoding(acpl, cset), "H5Pset_char_encoding")
        aid = lib.H5Acreate2(loc.id, name, tid.id, space.id, acpl, H5P_DEFAULT)
        _check(aid, "H5Acreate2")
    finally:
        lib.H5Pclose(acpl)
    return h5py.h5a.AttrID(aid)


@_locked
def comment(obj: Any) -> bytes:
    """An object's comment (h5py's ``h5o.get_comment`` returns garbage in h5py 3.16)."""
    lib = _lib()
    size = lib.H5Oget_comment(obj.id, None, 0)
    _check(size, "H5Oget_comment")
    if size == 0:
        return b""
    buf = ctypes.create_string_buffer(size + 1)
    _check(lib.H5Oget_comment(obj.id, buf, size + 1), "H5Oget_comment")
    return buf.value


@_locked
def reclaim(tid: Any, space: Any, address: int) -> None:
    """Free the memory HDF5 allocated for the variable-length parts of a read buffer of memory
    type ``tid`` (``H5Dvlen_reclaim``; h5py has no such call, it reclaims inside its own reads)."""
    _check(_lib().H5Dvlen_reclaim(tid.id, space.id, H5P_DEFAULT, address), "H5Dvlen_reclaim")


# -- fill values ---------------------------------------------------------------------------------


@_locked
def fill_value(dcpl: Any, tid: Any) -> bytes:
    """A dataset's fill value as raw bytes of ``tid`` (use the dataset's own fixed-size type for
    the exact bytes; h5py's call always converts through a numpy dtype)."""
    buf = ctypes.create_string_buffer(tid.get_size())
    _check(_lib().H5Pget_fill_value(dcpl.id, tid.id, buf), "H5Pget_fill_value")
    return buf.raw


@_locked
def set_fill_value(dcpl: Any, tid: Any, raw: bytes | None) -> None:
    """Set the fill value from raw bytes of ``tid``; None makes it undefined."""
    buf = ctypes.create_string_buffer(raw, len(raw)) if raw is not None else None
    _check(_lib().H5Pset_fill_value(dcpl.id, tid.id, buf), "H5Pset_fill_value")


# -- user-defined links ------------------------------------------------------------------------

_TRAVERSE = ctypes.CFUNCTYPE(hid_t, ctypes.c_char_p, hid_t, ctypes.c_void_p, ctypes.c_size_t, hid_t, hid_t)
_QUERY = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


class _LinkClass(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int),
        ("id", ctypes.c_int),
        ("comment", ctypes.c_char_p),
        ("create_func", ctypes.c_void_p),
        ("move_func", ctypes.c_void_p),
        ("copy_func", ctypes.c_void_p),
        ("trav_func", _TRAVERSE),
        ("del_func", ctypes.c_void_p),
        ("query_func", _QUERY),
    ]


@_TRAVERSE
def _no_traversal(name: bytes, cur_group: int, udata: int, udata_size: int, lapl: int, dxpl: int) -> int:
    return -1  # these links are carried, not followed


@_QUERY
def _query(name: bytes, data: int, size: int, buf: int, buf_size: int) -> int:
    if buf and data:
        ctypes.memmove(buf, data, min(size, buf_size))
    return size  # the value is the link's user data, as stored


_registered: dict[int, _LinkClass] = {}  # keep the structures (and their callbacks) alive


@_locked
def ensure_link_class(class_id: int) -> None:
    """Register user-defined link class ``class_id`` (64..255) unless the library knows it.

    The class registered here cannot be traversed; it exists so links of that class can be
    created and read back byte for byte (its query callback returns the stored user data).
    """
    if not UD_LINK_MIN <= class_id <= 255:
        raise ValueError(f"user-defined link class must be 64..255, not {class_id}")
    lib = _lib()
    if lib.H5Lis_registered(class_id) > 0:
        return
    cls = _LinkClass(LINK_CLASS_VERSION, class_id, b"h5lake carried link", None, None, None, _no_traversal, None, _query)
    _check(lib.H5Lregister(ctypes.byref(cls)), "H5Lregister")
    _registered[class_id] = cls


@_locked
def create_ud_link(loc: Any, name: bytes, class_id: int, value: bytes, lcpl: Any = None) -> None:
    ensure_link_class(class_id)
    buf = ctypes.create_string_buffer(value, len(value)) if value else None
    plist = lcpl.id if lcpl is not None else H5P_DEFAULT
    result = _lib().H5Lcreate_ud(loc.id, name, class_id, buf, len(value), plist, H5P_DEFAULT)
    _check(result, "H5Lcreate_ud")


class _LinkInfo(ctypes.Structure):
    """H5L_info2_t; the union member used here is ``val_size``."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("corder_valid", ctypes.c_bool),
        ("corder", ctypes.c_int64),
        ("cset", ctypes.c_int),
        ("val_size", ctypes.c_size_t),
        ("_token_rest", ctypes.c_uint8 * 8),
    ]


@_locked
def ud_link_value(loc: Any, name: bytes) -> bytes:
    """The user data of a user-defined link, byte for byte."""
    info = _LinkInfo()
    _check(_lib().H5Lget_info2(loc.id, name, ctypes.byref(info), H5P_DEFAULT), "H5Lget_info2")
    size = info.val_size
    if size == 0:
        return b""
    buf = ctypes.create_string_buffer(size)
    _check(_lib().H5Lget_val(loc.id, name, buf, size, H5P_DEFAULT), "H5Lget_val")
    return buf.raw[:size]


# -- group link storage ------------------------------------------------------------------------


@_locked
def link_phase_change(gcpl: Any) -> tuple[int, int]:
    max_compact, min_dense = ctypes.c_uint(), ctypes.c_uint()
    _check(
        _lib().H5Pget_link_phase_change(gcpl.id, ctypes.byref(max_compact), ctypes.byref(min_dense)),
        "H5Pget_link_phase_change",
    )
    return max_compact.value, min_dense.value


@_locked
def set_link_phase_change(gcpl: Any, max_compact: int, min_dense: int) -> None:
    _check(_lib().H5Pset_link_phase_change(gcpl.id, max_compact, min_dense), "H5Pset_link_phase_change")


# -- filters -----------------------------------------------------------------------------------

H5Z_CLASS_VERSION = 1  # H5Z_CLASS_T_VERS
H5Z_FLAG_REVERSE = 0x0100
_FILTER_FUNC = ctypes.CFUNCTYPE(
    ctypes.c_size_t, ctypes.c_uint, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_void_p),
)
Codec = Callable[[bool, tuple[int, ...], bytes], bytes]
"""``codec(decode, cd_values, data)``: a filter's work on one chunk, raising on failure."""


class _FilterClass(ctypes.Structure):
    """H5Z_class2_t."""

    _fields_ = [
        ("version", ctypes.c_int),
        ("id", ctypes.c_int),
        ("encoder_present", ctypes.c_uint),
        ("decoder_present", ctypes.c_uint),
        ("name", ctypes.c_char_p),
        ("can_apply", ctypes.c_void_p),
        ("set_local", ctypes.c_void_p),
        ("filter", _FILTER_FUNC),
    ]


_filters: dict[int, tuple[_FilterClass, Any]] = {}  # keep the structures and callbacks alive


def _filter_callback(codec: Codec) -> Any:
    def run(flags: int, nelmts: int, cd: Any, nbytes: int, buf_size: Any, buf: Any) -> int:
        try:
            data = ctypes.string_at(buf[0], nbytes)
            out = codec(bool(flags & H5Z_FLAG_REVERSE), tuple(cd[i] for i in range(nelmts)), data)
            lib = _lib()
            new = lib.H5allocate_memory(max(1, len(out)), False)
            if not new:
                return 0
            ctypes.memmove(new, out, len(out))
            lib.H5free_memory(buf[0])
            buf[0] = new
            buf_size[0] = max(1, len(out))
            return len(out)
        except Exception:  # noqa: BLE001 - HDF5 reports a filter failure by a 0 return
            return 0

    return _FILTER_FUNC(run)


@_locked
def register_filter(filter_id: int, name: bytes, codec: Codec) -> bool:
    """Register an HDF5 filter run by ``codec`` unless HDF5 already has one (a plugin, or
    PyTables' own); returns whether it was registered here. Lets h5py read and write datasets
    of a filter h5lake has a codec for but no HDF5 plugin ships (PyTables' LZO)."""
    lib = _lib()
    if filter_id in _filters or lib.H5Zfilter_avail(filter_id) > 0:
        return False
    callback = _filter_callback(codec)
    cls = _FilterClass(H5Z_CLASS_VERSION, filter_id, 1, 1, name, None, None, callback)
    _check(lib.H5Zregister(ctypes.byref(cls)), "H5Zregister")
    _filters[filter_id] = (cls, callback)
    return True


def _always_fails(flags: int, nelmts: int, cd: Any, nbytes: int, buf_size: Any, buf: Any) -> int:
    return 0  # HDF5 then skips an optional filter for this chunk (sets its bit in the chunk's mask)


_ALWAYS_FAILS = _FILTER_FUNC(_always_fails)


@_locked
def register_skipped_filter(filter_id: int, name: bytes) -> None:
    """Register, in place of whatever HDF5 runs for ``filter_id`` (a plugin), a filter with no
    ``set_local`` that fails every chunk: a dataset created now keeps the filter's cd_values
    exactly as given (a plugin's ``set_local`` may rewrite or refuse the cd_values it wrote
    itself), and an optional filter is then skipped for each chunk written, which is stored as
    given, its bit set in the chunk's filter mask. ``unregister_filter`` ends it."""
    cls = _FilterClass(H5Z_CLASS_VERSION, filter_id, 1, 1, name, None, None, _ALWAYS_FAILS)
    _check(_lib().H5Zregister(ctypes.byref(cls)), "H5Zregister")
    _filters[filter_id] = (cls, _ALWAYS_FAILS)


@_locked
def unregister_filter(filter_id: int) -> bool:
    """Unregister ``filter_id`` (HDF5 loads its plugin again when one is next needed); False
    when HDF5 refuses, as it does while an open object uses the filter."""
    lib = _lib()
    _filters.pop(filter_id, None)
    ok = lib.H5Zunregister(filter_id) >= 0
    if not ok:
        lib.H5Eclear2(0)  # H5E_DEFAULT
    return ok
