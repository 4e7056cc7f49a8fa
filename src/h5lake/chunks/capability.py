"""Optional capabilities of a store or byte source (``ReadInto``, ``GetRanges``, ``PutHashed``,
``CopyObject``, ``GetMapped`` in storage/base.py), checked once per class: an ``isinstance`` on a runtime-checkable Protocol
costs ~10 us, and the engine asks for every chunk."""

from __future__ import annotations

from typing import TypeGuard

from h5lake.storage.base import CopyObject, GetMapped, GetRanges, PutHashed, ReadInto

_CAPABLE: dict[tuple[type, type], bool] = {}


def capable(source: object, capability: type) -> bool:
    key = (type(source), capability)
    found = _CAPABLE.get(key)
    if found is None:
        found = _CAPABLE[key] = isinstance(source, capability)
    return found


def reads_into(source: object) -> TypeGuard[ReadInto]:
    return capable(source, ReadInto)


def gets_ranges(source: object) -> TypeGuard[GetRanges]:
    return capable(source, GetRanges)


def puts_hashed(source: object) -> TypeGuard[PutHashed]:
    return capable(source, PutHashed)


def copies(source: object) -> TypeGuard[CopyObject]:
    return capable(source, CopyObject)


def maps(source: object) -> TypeGuard[GetMapped]:
    return capable(source, GetMapped)


# --- reads ------------------------------------------------------------------------------------
