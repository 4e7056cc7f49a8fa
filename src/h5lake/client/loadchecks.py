"""Checks and fixes of the load's walk (client/loadplan.py) that need no walk state: fill values
whose JSON form would not give their bytes back, null-terminated strings' leftover bytes, and the
filters a dataset's values need (kept by the server, readable here)."""

from __future__ import annotations

import math
from typing import Any

import orjson
from h5py import h5z

from h5lake.chunks.filters import KNOWN_FILTER_IDS
from h5lake.client.h5types import Unrepresentable
from h5lake.errors import InvalidInput
from h5lake.model.fromjson import json_to_array
from h5lake.model.types import StrPad, TypeClass, TypeJson, type_class, wire_dtype
from h5lake.model.values import array_to_bytes


def fill_json_is_exact(value: Any, t: TypeJson, wire: bytes) -> bool:
    """Whether a fill value's JSON gives back its bytes, as far as strings go: bytes that are
    not UTF-8 become U+FFFD (and may then not fit the string); a NaN's payload may change too,
    which HDF5 and h5lake read as the same NaN."""
    if "\ufffd" not in orjson.dumps(value).decode():
        return True
    try:
        return array_to_bytes(json_to_array(value, t, ()), t) == wire
    except InvalidInput:
        return False


def nullterm_cut(wire: bytes, t: TypeJson) -> bytes:
    """A null-terminated fixed-length string ends at its first NUL, as HDF5 reads it: the bytes
    after it (a C buffer's leftovers, often not UTF-8) are no part of the value and are zeroed,
    also in the members of compounds and the elements of arrays (one element, packed)."""
    buf = bytearray(wire)
    _cut_strings(buf, t, 0)
    return bytes(buf)


def _cut_strings(buf: bytearray, t: TypeJson, at: int) -> None:
    match type_class(t):
        case TypeClass.STRING if t.get("strPad") == StrPad.NULLTERM and isinstance(t.get("length"), int):
            end = at + t["length"]
            nul = buf.find(b"\0", at, end)
            if nul >= 0:
                buf[nul:end] = bytes(end - nul)
        case TypeClass.COMPOUND:
            for f in t["fields"]:
                _cut_strings(buf, f["type"], at)
                at += wire_dtype(f["type"]).itemsize
        case TypeClass.ARRAY:
            size = wire_dtype(t["base"]).itemsize
            for k in range(math.prod(t["dims"])):
                _cut_strings(buf, t["base"], at + k * size)


def check_filters_kept(dsid: Any, dcpl: Any = None) -> None:
    """A filter h5lake has no codec for is kept (its chunks stored without it) only when HDF5
    may skip it, ``H5Z_FLAG_OPTIONAL``; the server refuses a mandatory one (docs/fidelity.md).
    Found here, while walking, so the refusal names the dataset (hdf5plugin's SPERR
    filter is one: its set_local makes it mandatory)."""
    if dcpl is None:
        dcpl = dsid.get_create_plist()
    for i in range(dcpl.get_nfilters()):
        fid, flags, _, raw_name = dcpl.get_filter(i)
        if fid in KNOWN_FILTER_IDS or flags & h5z.FLAG_OPTIONAL:
            continue
        name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        raise Unrepresentable(
            f"filter {fid} ({name or 'unnamed'}) is not optional and h5lake has no codec for it "
            "(h5lake keeps such a filter only when HDF5 may skip it, H5Z_FLAG_OPTIONAL)"
        )


def check_filters_readable(dsid: Any, dcpl: Any = None) -> None:
    """Values are copied through HDF5: each filter of a dataset with stored values must be one
    HDF5 can run here (built in, a plugin, or h5lake's codec registered by `open_source`)."""
    if dsid.get_storage_size() == 0:
        return
    if dcpl is None:
        dcpl = dsid.get_create_plist()
    for i in range(dcpl.get_nfilters()):
        fid, _, _, raw_name = dcpl.get_filter(i)
        if not h5z.filter_avail(fid):
            name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
            raise Unrepresentable(
                f"filter {fid} ({name or 'unnamed'}): neither h5lake nor an HDF5 plugin here can decode it, "
                "so its values cannot be read (install the plugin and set HDF5_PLUGIN_PATH)"
            )
