"""HDF5 references met by the load walk (client/loadplan.py) before ids are sent: in fill values
(only null ones, or targets planned as they are met) and in values read to find their targets."""

from __future__ import annotations

from typing import Any

import h5py
from h5py import h5r

from h5lake.client.h5types import Unrepresentable


class NullReferencesOnly:
    """References in a fill value: only null ones can be kept (ids are chosen later)."""

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if ref:
            raise Unrepresentable("a fill value holding a non-null reference")
        return b""

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


class FillReferences:
    """Object references in a fill value while planning (MATLAB v7.3 fills every cell array with
    a reference to ``/#refs#/a``): their targets are planned, so they get ids the upload writes.
    A region reference, or one to an object that no longer exists, cannot be kept."""

    def __init__(self, planner: Any) -> None:
        self.planner = planner
        self.found = False

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if not ref:
            return b""
        if region:
            raise Unrepresentable("a fill value holding a non-null region reference")
        target = dereference(ref, self.planner.file)
        if target is None:
            raise Unrepresentable("a fill value holding a reference to an object that no longer exists")
        self.planner._node(target, "(reached only by a reference)", linked=False)
        self.found = True
        return b"groups/g-00000000-00000000-0000-000000-000000"  # a placeholder: the upload writes the id

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


class Scanner:
    """References while planning: finds their targets; the bytes produced are thrown away."""

    def __init__(self, planner: Any) -> None:
        self.planner = planner

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if not ref:
            return b""
        target = dereference(ref, self.planner.file)
        if target is None:
            if not self.planner.dangling:
                self.planner.notes.append(DANGLING_NOTE)
            self.planner.dangling = True
        else:
            self.planner._node(target, "(reached only by a reference)", linked=False)
        return b"g-00000000-00000000-0000-000000-000000" if not region else b"{}"

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


DANGLING_NOTE = (
    "references to objects that no longer exist (dangling references) are kept as references to ids no "
    "object in the domain has; export writes them dangling again"
)


def dereference(ref: Any, f: h5py.File) -> Any:
    """The object a non-null reference points at, or None when it no longer exists (HDF5 then
    finds no valid object header at the reference's address)."""
    try:
        return h5r.dereference(ref, f.id)
    except (KeyError, ValueError, RuntimeError, OSError):
        return None
