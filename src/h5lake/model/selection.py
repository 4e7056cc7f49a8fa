"""Dataset selections: what a value request reads or writes, as plain values (no I/O).

Two kinds of selection reach the value routes (API-NOTES §3 "Values"):

* a **hyperslab** (`Selection`): one part per dimension, either a regular `Slice` or a
  `Coords` list. It comes from the ``select`` query parameter (or the ``{"select": ...}`` body of
  a long-selection POST), or is the whole dataset when ``select`` is absent;
* a **point list** (`PointSelection`): ``npoints x rank`` coordinates from the uint64 body of a
  point read, or the ``points`` JSON of a point write.

Both are validated against the dataset shape here, so the layers below can trust them: every
index is in range and every count is exact. Errors are always `InvalidInput` (HTTP 400).

The ``select`` grammar accepted by `parse_select` (in :mod:`h5lake.model.selectparse`; whitespace
is ignored)::

    select := "[" [ part ("," part)* ] "]"
    part   := [int] ":" [int] [ ":" [int] ]      a slice: start:stop:step
            | int                                a single index, kept as a length-1 dimension
            | "[" [ int ("," int)* ] "]"         a coordinate list

Decisions, and why:

* Bounds follow numpy: a negative start, stop, index or coordinate counts from the end (an
  extension: HSDS refuses negative bounds). A ``stop`` beyond the extent is refused (400), as
  HSDS 1.0 does, except in a selection that also holds a coordinate list: there h5pyd sends the
  slice's bounds as given (``d[0:100, [1]]`` sends ``[0:100,[1]]``, ``d[[1], -5:]`` on an extent
  of 3 ``[[1],-5:3]``), so they are clamped as numpy clamps them (an empty slice included), as
  h5py would. Otherwise anything out of range (a start past the extent, an index or coordinate outside
  ``[-n, n)``, a negative bound below ``-n``) is an error, as are ``step <= 0`` and
  ``stop < start`` (numpy would return an empty result; HSDS answers 400, and a silent empty
  answer hides client bugs).
* A single integer keeps its dimension with count 1: h5pyd sends ``d[3, 4]`` as ``[3:4,4:5]``
  and reshapes the answer itself, so the output shape of ``[3,4]`` and ``[3:4,4:5]`` agree.
* Coordinates may come in any order and may repeat; the output follows the order given (numpy's
  rule, and h5py's). On a write, the last of repeated coordinates wins.
* Several coordinate lists in one ``select`` are paired up element by element, as HSDS 1.0 and
  numpy do (h5pyd sends ``d[[0,1],[2,3]]`` as ``[[0,1],[2,3]]``, meaning points (0,2) and (1,3)):
  the lists must have the same length and together give one output dimension, at the place of
  the first list. `parse_select` returns a `PairedSelection` for that case. (The `Selection`
  type itself combines several lists orthogonally, for callers that build one directly.)
* The ``start``/``stop``/``step`` keys of a JSON value request (`Bounds`) select a hyperslab as
  the ``select`` text would, with the same checks; a bare integer stands for a 1-D list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from h5lake.errors import InvalidInput

IndexArray: TypeAlias = npt.NDArray[np.int64]


POINTS_BLOCK = 65_536
"""Listed points turned into an array in one call."""


@dataclass(frozen=True, slots=True)
class Slice:
    """A regular run ``start, start+step, ...`` below ``stop``, with non-negative bounds.

    ``stop`` is normalised to one past the last selected index (``start`` when empty), so two
    `Slice` values selecting the same elements compare equal.
    """

    start: int
    stop: int
    step: int = 1

    def __post_init__(self) -> None:
        if self.start < 0 or self.stop < self.start or self.step < 1:
            raise InvalidInput(f"invalid slice {self.start}:{self.stop}:{self.step}")
        n = self.count
        tight = self.start + (n - 1) * self.step + 1 if n else self.start
        object.__setattr__(self, "stop", tight)

    @property
    def count(self) -> int:
        return (self.stop - self.start + self.step - 1) // self.step

    @property
    def last(self) -> int:
        """The last selected index; only meaningful when ``count > 0``."""
        return self.stop - 1

    def to_slice(self) -> slice:
        return slice(self.start, self.stop, self.step)

    def __str__(self) -> str:
        text = f"{self.start}:{self.stop}"
        return text if self.step == 1 else f"{text}:{self.step}"


class Coords:
    """An explicit list of indices in one dimension, in the order the output should follow.

    Holds a read-only int64 array; equality and hashing are by content so `Selection` stays a
    well-behaved value.
    """

    __slots__ = ("_index",)

    def __init__(self, index: npt.ArrayLike) -> None:
        arr = np.array(index, dtype=np.int64).reshape(-1)
        if arr.size and int(arr.min()) < 0:
            raise InvalidInput("coordinates must be non-negative once normalised")
        arr.flags.writeable = False
        self._index = arr

    @property
    def index(self) -> IndexArray:
        return self._index

    @property
    def count(self) -> int:
        return int(self._index.size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Coords) and np.array_equal(self._index, other._index)

    def __hash__(self) -> int:
        return hash(self._index.tobytes())

    def __repr__(self) -> str:
        return f"Coords({self._index.tolist()!r})"

    def __str__(self) -> str:
        return "[" + ",".join(str(i) for i in self._index.tolist()) + "]"


Part: TypeAlias = Slice | Coords


@dataclass(frozen=True, slots=True)
class Selection:
    """A hyperslab: one `Slice` or `Coords` per dimension, selected orthogonally.

    The output of a read has shape `shape` (one entry per dataset dimension; single indices keep
    their dimension) and holds `count` elements in C order over that shape. A scalar dataset's
    selection has no parts, shape ``()`` and count 1.
    """

    parts: tuple[Part, ...]

    @classmethod
    def all(cls, shape: Sequence[int]) -> Selection:
        """The whole dataset (what an absent ``select`` means)."""
        return cls(tuple(Slice(0, int(n)) for n in shape))

    @classmethod
    def from_key(
        cls, key: Sequence[int | slice | Sequence[int]], shape: Sequence[int]
    ) -> Selection:
        """Build from a numpy-style key (ints, slices, int lists), validated as `parse_select`.

        Unlike numpy, an int keeps its dimension and several lists combine orthogonally.
        """
        shape = tuple(int(n) for n in shape)
        if len(key) != len(shape):
            raise InvalidInput(f"selection has rank {len(key)}, dataset has rank {len(shape)}")
        parts: list[Part] = []
        for dim, (item, extent) in enumerate(zip(key, shape)):
            if isinstance(item, slice):
                parts.append(slice_part(item.start, item.stop, item.step, extent, dim))
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                parts.append(index_part(int(item), extent, dim))
            else:
                parts.append(coords_part(item, extent, dim))
        return cls(tuple(parts))

    @property
    def rank(self) -> int:
        return len(self.parts)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(p.count for p in self.parts)

    @property
    def count(self) -> int:
        n = 1
        for p in self.parts:
            n *= p.count
        return n

    def is_all(self, shape: Sequence[int]) -> bool:
        """Does this select every element of a dataset of ``shape``, in order?"""
        return len(shape) == self.rank and all(
            isinstance(p, Slice) and p.start == 0 and p.step == 1 and p.stop == n
            for p, n in zip(self.parts, shape)
        )

    def check_within(self, shape: Sequence[int]) -> None:
        """Raise `InvalidInput` unless the selection fits a dataset of ``shape``.

        Needed when a selection outlives the shape it was parsed against (e.g. after a resize).
        """
        if len(shape) != self.rank:
            raise InvalidInput(f"selection has rank {self.rank}, dataset has rank {len(shape)}")
        for dim, (p, n) in enumerate(zip(self.parts, shape)):
            if isinstance(p, Slice):
                bad = p.stop > n
            else:
                bad = p.count > 0 and int(p.index.max()) >= n
            if bad:
                raise InvalidInput(f"selection {p} is out of range for extent {n} in dim {dim}")

    def numpy_index(self) -> tuple[slice | IndexArray, ...]:
        """An index that applied to the whole dataset array gives the output (shape `shape`).

        With two or more coordinate lists the arrays are shaped to broadcast orthogonally
        (as `numpy.ix_` does), since numpy would otherwise pair them up.
        """
        items: list[slice | IndexArray] = [
            p.to_slice() if isinstance(p, Slice) else p.index for p in self.parts
        ]
        if sum(isinstance(p, Coords) for p in self.parts) < 2:
            return tuple(items)
        return orthogonal_index(items, self.shape)

    def dataset_positions(self, flat: IndexArray, shape: Sequence[int]) -> IndexArray:
        """The positions in a dataset of ``shape`` (C-order flat indexes) of the selection's
        elements numbered ``flat`` (C order over `shape` of the selection): for one dimension,
        the dataset indexes themselves."""
        flat = np.asarray(flat, dtype=np.int64)
        if not self.parts:
            return np.zeros(flat.shape, dtype=np.int64)
        # each axis's k-th selected index, found for the k asked only (a slice is never spelled
        # out: a query of a Limit over billions of rows asks for a few)
        coords = np.unravel_index(flat, self.shape) if len(self.parts) > 1 else (flat,)
        at = tuple(
            p.start + np.asarray(k, dtype=np.int64) * p.step if isinstance(p, Slice) else np.asarray(p.index, dtype=np.int64)[k]
            for p, k in zip(self.parts, coords)
        )
        if len(at) == 1:
            return at[0]
        return np.ravel_multi_index(at, tuple(int(n) for n in shape)).astype(np.int64)

    def __str__(self) -> str:
        """The ``select`` string h5pyd would send for this selection."""
        return "[" + ",".join(str(p) for p in self.parts) + "]"


def orthogonal_index(
    items: Sequence[slice | IndexArray], lengths: Sequence[int]
) -> tuple[IndexArray, ...]:
    """Turn per-dimension slices/arrays into index arrays that numpy combines orthogonally.

    ``lengths[d]`` is the number of elements ``items[d]`` selects; used to expand slices.
    """
    rank = len(items)
    out: list[IndexArray] = []
    for d, item in enumerate(items):
        if isinstance(item, slice):
            start = item.start or 0
            step = item.step or 1
            arr = np.arange(start, start + lengths[d] * step, step, dtype=np.int64)
        else:
            arr = np.asarray(item, dtype=np.int64)
        out.append(arr.reshape([-1 if i == d else 1 for i in range(rank)]))
    return tuple(out)


@dataclass(frozen=True, slots=True, eq=False)
class PairedSelection:
    """A ``select`` with several coordinate lists, paired element by element (HSDS, numpy).

    ``parts`` hold one `Slice` or `Coords` per dimension; the `Coords` all have the same
    length and make one output dimension, placed where the first of them is.
    """

    parts: tuple[Part, ...]

    @classmethod
    def of(cls, parts: Sequence[Part]) -> PairedSelection:
        lengths = {p.count for p in parts if isinstance(p, Coords)}
        if len(lengths) > 1:
            raise InvalidInput(
                f"coordinate lists of lengths {sorted(lengths)} cannot be paired: they must have the same length"
            )
        return cls(tuple(parts))

    @property
    def rank(self) -> int:
        return len(self.parts)

    @property
    def shape(self) -> tuple[int, ...]:
        out: list[int] = []
        listed = False
        for p in self.parts:
            if isinstance(p, Coords):
                if listed:
                    continue
                listed = True
            out.append(p.count)
        return tuple(out)

    @property
    def count(self) -> int:
        n = 1
        for c in self.shape:
            n *= c
        return n

    def points(self) -> PointSelection:
        """Every selected element as a point, in the output's C order."""
        shape = self.shape
        axes: list[int] = []
        shared, following = -1, 0
        for p in self.parts:
            if isinstance(p, Coords) and shared >= 0:
                axes.append(shared)
                continue
            if isinstance(p, Coords):
                shared = following
            axes.append(following)
            following += 1
        columns: list[IndexArray] = []
        for p, axis in zip(self.parts, axes):
            idx = p.index if isinstance(p, Coords) else np.arange(p.start, p.stop, p.step, dtype=np.int64)
            view = idx.reshape([-1 if a == axis else 1 for a in range(len(shape))])
            columns.append(np.broadcast_to(view, shape).reshape(-1))
        coords = np.ascontiguousarray(np.stack(columns, axis=1) if columns else np.zeros((0, 0), np.int64))
        coords.flags.writeable = False
        return PointSelection(coords)

    def __str__(self) -> str:
        return "[" + ",".join(str(p) for p in self.parts) + "]"


@dataclass(frozen=True, slots=True, eq=False)
class PointSelection:
    """``npoints`` coordinates into a dataset, each in range; the output is 1-D in point order.

    ``coords`` is a read-only int64 array of shape ``(npoints, rank)``. Build one with
    `from_array`, `from_bytes` or `from_json`, which validate; the constructor trusts its input.
    """

    coords: IndexArray

    @classmethod
    def from_array(cls, points: npt.ArrayLike, shape: Sequence[int]) -> PointSelection:
        """Validate an ``(npoints, rank)`` integer array (uint64 as h5pyd sends) against ``shape``.

        For a 1-D dataset a flat ``(npoints,)`` array is accepted too.
        """
        shape = tuple(int(n) for n in shape)
        rank = len(shape)
        if rank == 0:
            raise InvalidInput("a point selection needs a dataset of rank 1 or more")
        try:
            arr = np.asarray(points)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("points must be a list of coordinate lists") from exc
        if arr.ndim == 1 and rank == 1:
            arr = arr.reshape(-1, 1)
        if arr.size == 0:
            arr = np.zeros((0, rank), dtype=np.int64)
        if arr.ndim != 2 or arr.shape[1] != rank:
            raise InvalidInput(f"points must have shape (npoints, {rank}), got {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise InvalidInput("point coordinates must be integers")
        if arr.size:
            limits = np.asarray(shape, dtype=np.uint64 if arr.dtype.kind == "u" else np.int64)
            bad_rows = (arr >= limits).any(axis=1)
            if arr.dtype.kind == "i":
                bad_rows |= (arr < 0).any(axis=1)
            if bool(bad_rows.any()):
                bad = arr[int(np.argmax(bad_rows))].tolist()
                raise InvalidInput(f"point {bad} is out of range for shape {shape}")
        coords = np.ascontiguousarray(arr, dtype=np.int64)
        coords.flags.writeable = False
        return cls(coords)

    @classmethod
    def from_bytes(cls, data: bytes, shape: Sequence[int]) -> PointSelection:
        """Decode a point-read body: little-endian uint64, ``npoints x rank`` (API-NOTES §5)."""
        rank = len(shape)
        if rank == 0:
            raise InvalidInput("a point selection needs a dataset of rank 1 or more")
        if len(data) % (8 * rank):
            raise InvalidInput(
                f"point body of {len(data)} bytes is not a whole number of {rank}-d uint64 points"
            )
        arr = np.frombuffer(data, dtype="<u8").reshape(-1, rank)
        return cls.from_array(arr, shape)

    @classmethod
    def from_json(cls, points: Any, shape: Sequence[int]) -> PointSelection:
        """Decode the ``points`` of a JSON point write: ``[[i, j], ...]`` (1-D: ``[[i], ...]``
        or ``[i, ...]``). Python ints are checked before any fixed-width conversion."""
        if not isinstance(points, list) or not all(
            _is_int(p) or isinstance(p, list) and all(_is_int(c) for c in p) for p in points
        ):
            raise InvalidInput("points must be a list of integer coordinate lists")
        limit = 2**63
        for p in points:
            for c in p if isinstance(p, list) else (p,):
                if not 0 <= c < limit:
                    raise InvalidInput(f"point coordinate {c} is out of range")
        try:
            # a block at a time: one conversion of millions would hold the interpreter for a second
            blocks = [np.array(points[i : i + POINTS_BLOCK], dtype=np.int64) for i in range(0, len(points), POINTS_BLOCK)]
            arr = np.concatenate(blocks) if len(blocks) > 1 else blocks[0] if blocks else np.empty(0, np.int64)
        except ValueError as exc:
            raise InvalidInput("points must all have the same rank") from exc
        return cls.from_array(arr, shape)

    @property
    def npoints(self) -> int:
        return int(self.coords.shape[0])

    @property
    def rank(self) -> int:
        return int(self.coords.shape[1])

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.npoints,)

    @property
    def count(self) -> int:
        return self.npoints

    def numpy_index(self) -> tuple[IndexArray, ...]:
        """An index that applied to the whole dataset array gives the 1-D output."""
        return tuple(self.coords.T)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def slice_part(start: Any, stop: Any, step: Any, extent: int, dim: int, *, clamp: bool = True) -> Slice:
    step = 1 if step is None else _as_int(step, dim)
    if step <= 0:
        raise InvalidInput(f"select step must be positive, got {step} in dim {dim}")
    lo = 0 if start is None else _as_int(start, dim)
    hi = extent if stop is None else _as_int(stop, dim)
    if lo < 0:
        lo += extent
    if hi < 0:
        hi += extent
    if clamp:  # beside a coordinate list: every bound as numpy takes it (h5pyd sends them as given)
        lo, hi = min(max(lo, 0), extent), min(max(hi, 0), extent)
        hi = max(hi, lo)
    if lo < 0 or lo > extent:
        raise InvalidInput(f"select start {start} is out of range for extent {extent} in dim {dim}")
    if hi < 0:
        raise InvalidInput(f"select stop {stop} is out of range for extent {extent} in dim {dim}")
    if hi > extent and not clamp:
        raise InvalidInput(f"select stop {stop} is out of range for extent {extent} in dim {dim}")
    hi = min(hi, extent)
    if hi < lo:
        raise InvalidInput(f"select stop {stop} is before start {start} in dim {dim}")
    return Slice(lo, hi, step)


def index_part(index: int, extent: int, dim: int) -> Slice:
    i = index + extent if index < 0 else index
    if not 0 <= i < extent:
        raise InvalidInput(f"select index {index} is out of range for extent {extent} in dim {dim}")
    return Slice(i, i + 1, 1)


def coords_part(items: Any, extent: int, dim: int) -> Coords:
    try:
        arr = np.asarray(items)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"select dim {dim}: invalid coordinate list") from exc
    if arr.size == 0:
        return Coords(np.zeros(0, dtype=np.int64))
    if arr.ndim == 1 and arr.dtype == object:  # Python ints too large for 64 bits
        raise InvalidInput(f"select coordinate out of range for extent {extent} in dim {dim}")
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidInput(f"select dim {dim}: coordinates must be a flat list of integers")
    if arr.dtype.kind == "u":
        if int(arr.max()) >= extent:
            raise InvalidInput(f"select coordinate out of range for extent {extent} in dim {dim}")
        return Coords(arr.astype(np.int64))
    if arr.dtype != np.int64:  # Python ints beyond int64 become object arrays above
        arr = arr.astype(np.int64)
    if int(arr.min()) < -extent or int(arr.max()) >= extent:
        raise InvalidInput(f"select coordinate out of range for extent {extent} in dim {dim}")
    return Coords(np.where(arr < 0, arr + extent, arr))


def _as_int(value: Any, dim: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidInput(f"select bound {value!r} in dim {dim} is not an integer")
    return min(max(int(value), -(2**63)), 2**63 - 1)  # clamped like any bound past the extent
