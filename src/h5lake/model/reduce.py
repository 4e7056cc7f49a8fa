"""Pure parts of looking at data: numpy-style index strings, and reducing arrays to screen size.

A viewer asks for a region of a dataset as a numpy-style index (``"3,0:100,:"``, the form h5grove
and H5Web use): integers fix a dimension and drop it from the result, slices keep it. A plot
then needs no more values than it has pixels, so a region is reduced before it is sent:

* a line keeps, per pixel column, the minimum and the maximum (in index order), so the drawn
  envelope is exactly that of the full data;
* an image keeps the mean of each block of elements one pixel covers;
* when the region is too large to read whole (a line: to read at all, window by window, see
  ``service.viewer.preview``), both sample it with a stride instead (every ``step``-th element), which
  reads a fraction of the bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.selection import Selection, Slice

MAX_INDEX_TEXT = 4096


@dataclass(frozen=True, slots=True)
class Region:
    """A parsed index: the hyperslab to read and which of its dimensions the result keeps."""

    selection: Selection
    kept: tuple[int, ...]  # dimensions given as slices, in order; the others are fixed

    @property
    def shape(self) -> tuple[int, ...]:
        """The result's shape (fixed dimensions dropped, as numpy does)."""
        return tuple(self.selection.parts[d].count for d in self.kept)

    def slices(self) -> tuple[Slice, ...]:
        return tuple(self.selection.parts[d] for d in self.kept)  # type: ignore[misc]


def parse_index(text: str | None, shape: tuple[int, ...]) -> Region:
    """Parse ``"i,a:b,a:b:s,..."`` against ``shape``; fewer members than dimensions leave the
    rest whole, as numpy does. ``None`` or ``""`` selects everything."""
    if text is None or text.strip() == "":
        return Region(Selection.all(shape), tuple(range(len(shape))))
    if len(text) > MAX_INDEX_TEXT:
        raise InvalidInput("selection is too long")
    members = [m.strip() for m in text.strip().strip("[]()").split(",")]
    if members and members[-1] == "" and len(members) > 1:
        members.pop()  # a trailing comma, as in "3,"
    if len(members) > len(shape):
        raise InvalidInput(f"selection {text[:80]!r} has {len(members)} members for a {len(shape)}-D dataset")
    members += [":"] * (len(shape) - len(members))
    key: list[Any] = []
    kept: list[int] = []
    for dim, member in enumerate(members):
        if ":" in member:
            bits = member.split(":")
            if len(bits) > 3:
                raise InvalidInput(f"{member!r} is not a valid slice")
            nums = [_int(b, member) if b.strip() else None for b in bits] + [None] * (3 - len(bits))
            key.append(slice(nums[0], nums[1], nums[2]))
            kept.append(dim)
        else:
            key.append(_int(member, member))
    return Region(Selection.from_key(key, shape), tuple(kept))


def _int(text: str, member: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidInput(f"{member!r} is not an index or a slice") from None


def is_numeric(dtype: np.dtype[Any]) -> bool:
    return dtype.names is None and dtype.subdtype is None and dtype.kind in "biuf"


# --- planning ----------------------------------------------------------------------------------


def steps_for(counts: tuple[int, ...], targets: tuple[int, ...]) -> tuple[int, ...]:
    """The smallest step per dimension that brings ``counts`` within ``targets``."""
    return tuple(max(1, math.ceil(n / max(1, t))) for n, t in zip(counts, targets))


def image_targets(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """(rows, columns) wanted for an image of ``width`` x ``height`` pixels, scaled down to at
    most ``max_pixels`` values (which bounds the reply)."""
    width, height = max(1, width), max(1, height)
    scale = math.sqrt(max_pixels / (width * height)) if width * height > max_pixels else 1.0
    return max(1, int(height * scale)), max(1, int(width * scale))


def strided(region: Region, steps: tuple[int, ...]) -> Region:
    """``region`` with every kept dimension sampled at ``steps`` (one per kept dimension)."""
    parts = list(region.selection.parts)
    for dim, step in zip(region.kept, steps):
        p = parts[dim]
        assert isinstance(p, Slice)
        parts[dim] = Slice(p.start, p.stop, p.step * step)
    return Region(Selection(tuple(parts)), region.kept)


def window(region: Region, first: int, count: int) -> Region:
    """``count`` elements of a 1-D region from its ``first`` on (same step)."""
    (dim,) = region.kept
    return _part(region, dim, first, count)


def rows_of(region: Region, first: int, count: int) -> Region:
    """``count`` rows of a 2-D region from its ``first`` on (same steps)."""
    return _part(region, region.kept[0], first, count)


def _part(region: Region, dim: int, first: int, count: int) -> Region:
    parts = list(region.selection.parts)
    p = parts[dim]
    assert isinstance(p, Slice)
    start = p.start + first * p.step
    parts[dim] = Slice(start, start + count * p.step, p.step)
    return Region(Selection(tuple(parts)), region.kept)


# --- reductions --------------------------------------------------------------------------------


def block_mean(values: np.ndarray, steps: tuple[int, int]) -> np.ndarray:
    """Mean of each ``steps`` block of a 2-D array (the last blocks may be smaller), ignoring
    NaN; a block with no finite value is NaN."""
    data = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(data)
    data = np.where(finite, data, 0.0)
    rows = np.arange(0, data.shape[0], steps[0])
    cols = np.arange(0, data.shape[1], steps[1])
    sums = np.add.reduceat(np.add.reduceat(data, rows, axis=0), cols, axis=1)
    counts = np.add.reduceat(np.add.reduceat(finite.astype(np.int64), rows, axis=0), cols, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def min_max(values: np.ndarray, step: int, start: int = 0, stride: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per bin of ``step`` elements of a 1-D array, its minimum and maximum as ``(x, y)`` points
    in index order, two per bin: a line through them draws the data's exact envelope.

    ``x`` is the dataset index of each point (``start + i * stride``). NaNs are skipped; a bin
    of NaNs gives NaN points (a gap in the line). Infinities are values like any other (the
    page leaves a gap for them). Works on views of ``values`` (no float copy of integers, no
    padded copy), so a window of a long series costs little more memory than itself.
    """
    data = np.asarray(values).reshape(-1)
    if data.dtype.kind not in "iuf":
        data = data.astype(np.float64)
    n = data.size
    whole = n // step
    parts = [data[: whole * step].reshape(whole, step)] if whole else []
    if whole * step < n:
        parts.append(data[whole * step :].reshape(1, -1))
    lows, highs, gaps = [], [], []
    for bins in parts:
        lo, hi, empty = _extremes(bins)
        lows.append(lo)
        highs.append(hi)
        gaps.append(empty)
    lo, hi = np.concatenate(lows), np.concatenate(highs)
    base = np.arange(lo.size, dtype=np.int64) * step
    idx = np.stack((base + np.minimum(lo, hi), base + np.maximum(lo, hi)), axis=1).reshape(-1)
    y = data[idx].astype(np.float64)
    y[np.repeat(np.concatenate(gaps), 2)] = np.nan
    return (start + idx * stride).astype(np.float64), y


def _extremes(bins: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: where its minimum and its maximum are (NaN skipped), and whether it is all NaN."""
    if bins.dtype.kind == "f":
        nan = np.isnan(bins)
        if nan.any():
            lo = np.argmin(np.where(nan, np.inf, bins), axis=1)
            hi = np.argmax(np.where(nan, -np.inf, bins), axis=1)
            return lo, hi, nan.all(axis=1)
    return np.argmin(bins, axis=1), np.argmax(bins, axis=1), np.zeros(bins.shape[0], dtype=bool)


def finite_range(values: np.ndarray) -> tuple[float | None, float | None]:
    data = np.asarray(values)
    if data.dtype.kind == "f":
        data = data[np.isfinite(data)]
    if data.size == 0:
        return None, None
    return float(np.min(data)), float(np.max(data))


def array_stats(values: np.ndarray) -> dict[str, float | int | None]:
    """h5grove's statistics of numeric data, over its finite values. Besides the values it
    holds a mask and ``np.std``'s temporaries at most (no copy of the positive values)."""
    data = np.asarray(values)
    if data.dtype.kind == "b":
        data = data.astype(np.int8)
    if data.dtype.kind == "f":
        finite = np.isfinite(data)
        if not finite.all():
            data = data[finite]
        del finite
    keys = ("strict_positive_min", "positive_min", "min", "max", "mean", "std")
    if data.size == 0:
        return dict.fromkeys(keys)
    cast = float if data.dtype.kind == "f" else int
    top = np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).max
    out: dict[str, float | int | None] = {}
    for key, mask in (("strict_positive_min", np.greater), ("positive_min", np.greater_equal)):
        where = mask(data, 0)
        out[key] = cast(np.min(data, where=where, initial=top)) if where.any() else None
        del where
    out.update(min=cast(data.min()), max=cast(data.max()), mean=cast(np.mean(data)), std=cast(np.std(data)))
    return out
