"""Dataspaces: scalar, simple (with optional maximum extents), and null."""

from __future__ import annotations

import enum
import math
import reprlib
from dataclasses import dataclass
from typing import Any

from h5lake.errors import InvalidInput

UNLIMITED = "H5S_UNLIMITED"
MAX_RANK = 32
H5S_UNLIMITED_VALUE = 2**64 - 1  # HDF5's H5S_UNLIMITED, ``(hsize_t)-1``, as a number
MAX_EXTENT = 2**63 - 1
"""The largest extent (and maximum extent) of a dimension: element indexes are int64 (numpy's,
h5py's), and HDF5 reserves 2**64 - 1 for ``H5S_UNLIMITED``. Unbounded, an extent of 2**64 - 1
was stored and then read as empty, and a prepend past 2**64 made a document that could not be
written (a 500)."""


class SpaceClass(enum.Enum):
    SCALAR = "H5S_SCALAR"
    SIMPLE = "H5S_SIMPLE"
    NULL = "H5S_NULL"


@dataclass(frozen=True, slots=True)
class Space:
    kind: SpaceClass
    dims: tuple[int, ...] = ()
    maxdims: tuple[int | None, ...] | None = None  # None entries are unlimited

    @property
    def count(self) -> int:
        if self.kind is SpaceClass.NULL:
            return 0
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def rank(self) -> int:
        return len(self.dims)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.kind.value}
        if self.kind is SpaceClass.SIMPLE:
            out["dims"] = list(self.dims)
            if self.maxdims is not None:
                out["maxdims"] = [UNLIMITED if m is None else m for m in self.maxdims]
        return out

    def resized(self, dims: tuple[int, ...]) -> Space:
        return Space(self.kind, dims, self.maxdims)


def _dim(value: Any, what: str, capped: bool = True) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be non-negative integers, got {reprlib.repr(value)}")
    if capped:
        check_extent(value, what)
    return value


def check_extent(value: int, what: str = "dims") -> None:
    if value > MAX_EXTENT:
        raise InvalidInput(f"{what} may be at most 2**63 - 1, got {reprlib.repr(value)}")


def check_bytes(dims: tuple[int, ...], itemsize: int) -> None:
    """A dataset's element count stays within int64: HDF5 counts a dataspace's elements in a
    signed 64-bit ``hssize_t`` (``H5Sget_simple_extent_npoints``), and numpy and h5py index
    them with int64. Its bytes may pass that (HDF5 makes such a chunked dataset without
    allocating it; the REST VOL's suite makes 22-dimension ones of ~10**21 bytes): each chunk is
    bounded by the chunk limit, and selections and statistics use Python integers. ``itemsize``
    names the element size in the message."""
    count = math.prod(dims)
    if count > MAX_EXTENT:
        raise InvalidInput(f"a dataset of extent {list(dims)} holds {count} elements (of {itemsize} bytes): "
                           "at most 2**63 - 1 elements are possible (HDF5's hssize_t, numpy's int64 index)")


def _maxdims(value: Any, dims: tuple[int, ...], zero_unlimited: bool, capped: bool = True) -> tuple[int | None, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or len(value) != len(dims):
        raise InvalidInput("maxdims must be a list with one entry per dimension")
    out: list[int | None] = []
    for m, d in zip(value, dims):
        if m == UNLIMITED or m == H5S_UNLIMITED_VALUE or m == 0 and (d != 0 or zero_unlimited):
            out.append(None)  # HSDS treats 0 as unlimited too
            continue
        m = _dim(m, "maxdims", capped)
        if m < d:
            raise InvalidInput(f"maxdims {m} is smaller than dims {d}")
        out.append(m)
    return tuple(out)


# the enum's values as plain strings: ``SpaceClass.X.value`` is a descriptor call (~0.5 us), and
# every attribute and dataset of a request is parsed here
_SIMPLE, _SCALAR, _NULL = SpaceClass.SIMPLE.value, SpaceClass.SCALAR.value, SpaceClass.NULL.value
_SCALAR_SPACE, _NULL_SPACE = Space(SpaceClass.SCALAR), Space(SpaceClass.NULL)  # frozen: shared


def parse_space(shape: Any, maxdims: Any = None, *, zero_unlimited: bool = False, capped: bool = True) -> Space:
    """Parse a dataspace as clients send it: absent (scalar), ``"H5S_NULL"``, ``[dims]``, an int,
    or the object form ``{"class": ..., "dims": ..., "maxdims": ...}``.

    A maximum extent of 0 is unlimited where the extent is not 0. ``zero_unlimited`` (a client's
    request) makes it unlimited everywhere, as HSDS reads it: h5pyd before 1.0 sends 0 for every
    unlimited dimension, ``shape [0], maxdims [0]`` too (h5pyd 1.0 and h5lake's loader send
    ``H5S_UNLIMITED``, and a stored document keeps a fixed extent of 0 as 0). ``capped`` false
    takes extents past `MAX_EXTENT` (documents stored before that cap)."""
    if isinstance(shape, dict):
        kind = shape.get("class", _SIMPLE if "dims" in shape else None)
        if maxdims is None:
            maxdims = shape.get("maxdims")
        if kind == _SCALAR:
            return _SCALAR_SPACE
        if kind == _NULL:
            return _NULL_SPACE
        if kind != _SIMPLE:
            raise InvalidInput(f"unknown dataspace class {kind!r}")
        shape = shape.get("dims")
        if shape is None:
            raise InvalidInput("a simple dataspace needs dims")
    if shape is None or shape == _SCALAR:
        return _SCALAR_SPACE
    if shape == _NULL:
        return _NULL_SPACE
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = [shape]
    if not isinstance(shape, list):
        raise InvalidInput(f"invalid shape {shape!r}")
    if len(shape) > MAX_RANK:
        raise InvalidInput(f"rank {len(shape)} exceeds the limit of {MAX_RANK}")
    if not shape:
        return _SCALAR_SPACE
    dims = tuple(_dim(d, "dims", capped) for d in shape)
    return Space(SpaceClass.SIMPLE, dims, None if maxdims is None else _maxdims(maxdims, dims, zero_unlimited, capped))


def space_from_json(doc: dict[str, Any]) -> Space:
    """A stored (already validated) dataspace. Not held to `MAX_EXTENT`: a document stored before
    that cap (an extent or a maximum past 2**63 - 1) stays readable, can be shrunk back within it,
    and its chunks are reclaimed when it is deleted (checked, each was a 400 or a leak)."""
    return parse_space(doc, capped=False)
