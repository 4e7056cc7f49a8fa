"""Reading a region of a dataset for a viewer: whole, or reduced to the size of a plot.

The reduction (see ``model.reduce``) keeps a plot of any dataset one small request. A line is
the minimum and maximum of each pixel's share, in index order, read and reduced a window at a
time on the CPU pool, up to ``LINE_SCAN_BUDGET`` bytes (76 MiB of float64 takes ~70 ms), so a
one-sample spike anywhere in a 10^7-point series shows; a longer region is sampled with a
stride. An image small enough to read whole (``READ_BUDGET``) is reduced to block means; a
larger one is sampled with a stride. A stride over unfiltered chunks is read as points, which
the chunk engine fetches as byte ranges of the rows it needs, so a sampled image of a 1 GiB
dataset reads a few per cent of its bytes.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.chunks import engine
from h5lake.errors import CallerGone, InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.h5pynumbers import as_numbers
from h5lake.model.reduce import (
    Region,
    array_stats,
    block_mean,
    finite_range,
    image_targets,
    is_numeric,
    min_max,
    parse_index,
    rows_of,
    steps_for,
    strided,
    window,
)
from h5lake.model.selection import PointSelection, Selection
from h5lake.service.budget import NOTHING, Reservation, held_read
from h5lake.service.context import Caller, Service
from h5lake.service.datasets.opened import OpenDataset, open_dataset
from h5lake.service.viewer.browse import PathNotFound, entity_at

READ_BUDGET = 64 * 1024 * 1024
"""Bytes of an image region read whole to reduce it exactly; a larger one is sampled."""
MAX_IMAGE_PIXELS = 480_000
"""Values in one reduced image (float32: under 2 MiB)."""
MAX_LINE_WIDTH = 8192
LINE_SCAN_BUDGET = 512 * 1024 * 1024
"""Bytes of a 1-D region read whole (a window at a time) for its exact min/max envelope; a
longer one is sampled with a stride (zooming in brings it within the budget)."""
LINE_WINDOW = 16 * 1024 * 1024
"""Bytes read and reduced at once for an envelope."""
Gone = Callable[[], Awaitable[bool]]
"""Whether the caller has gone away (its connection closed): long work then stops."""
POINTS_MIN_STEP = 4
"""A sampled row step from which reading points (ranges) beats reading whole chunks."""


async def check_caller(gone: Gone | None) -> None:
    """Stop (`CallerGone`) when the caller has gone: nobody would read the answer."""
    if gone is not None and await gone():
        raise CallerGone("the caller went away; its read was stopped")


async def open_at(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> OpenDataset:
    """The dataset at ``h5path``, opened for reading (404 when the path names something else)."""
    domain, entity = await entity_at(svc, caller, domain_path, h5path)
    if entity.kind != "dataset" or entity.doc is None:
        raise PathNotFound(f"{entity.path} is not a dataset")
    return await open_dataset(svc, caller, domain.path, entity.doc["id"], Permission.READ)


@dataclass(frozen=True, slots=True)
class RegionValues:
    dataset: OpenDataset
    region: Region
    values: np.ndarray  # shaped as region.shape (fixed dimensions dropped)
    held: Reservation = NOTHING  # of the server's reply budget: the caller releases it once answered


async def read_region(svc: Service, caller: Caller, domain_path: str, h5path: str | None, index: str | None,
                      *, max_bytes: int | None = None, holds: float = 3, per_value: int = 0,
                      gone: Gone | None = None) -> RegionValues:
    """The values at ``index`` (numpy-style), whole. Bounded by ``max_bytes`` (default: the
    request limit) so a careless click cannot ask for a terabyte. ``holds`` times their bytes
    (the values and what the answer makes of them), plus ``per_value`` bytes a value, are
    reserved from the server's reply budget (`service.budget`) before reading, waiting their
    turn if others hold it; the caller releases ``held`` once its answer is sent. A caller gone
    meanwhile (``gone``) is not read for."""
    ds = await open_at(svc, caller, domain_path, h5path)
    if ds.layout is None:
        return RegionValues(ds, Region(parse_index(None, ()).selection, ()), np.empty(0))
    region = parse_index(index, ds.layout.shape)
    limit = max_bytes if max_bytes is not None else svc.limits.max_request_size
    nbytes = region.selection.count * ds.layout.dtype.itemsize
    if nbytes > limit:
        raise TooLarge(f"the selection holds {nbytes} bytes, more than the {limit} one request may read")
    held = await svc.replies.reserve(int(nbytes * holds) + region.selection.count * per_value)
    if not held.small:
        await held_read(held, check_caller(gone))
    arr = await held_read(held, _read(svc, ds, region.selection))
    # an array type's dimensions follow the region's, as h5py reads them (numpy spreads a
    # subarray dtype into trailing dimensions)
    return RegionValues(ds, region, arr.reshape(region.shape + ds.layout.dtype.shape), held)


async def region_stats(svc: Service, caller: Caller, domain_path: str, h5path: str | None, index: str | None,
                       gone: Gone | None = None) -> dict[str, Any]:
    """h5grove's statistics of the values at ``index``, over the numbers h5py reads (a long
    double is numpy's longdouble, answered as floats); complex and other data are refused."""
    found = await read_region(svc, caller, domain_path, h5path, index, holds=2, per_value=STATS_PER_VALUE, gone=gone)
    with found.held:
        if found.dataset.layout is None:  # an empty (null) dataspace: no values
            return array_stats(np.empty(0))
        numbers = as_numbers(found.values, found.dataset.type_json)
        if not is_numeric(numbers.dtype):
            raise InvalidInput("statistics need numeric data")
        return await svc.workers.cpu(array_stats, numbers, size=numbers.nbytes)


STATS_PER_VALUE = 17
"""Bytes a value statistics hold besides the values and a finite copy of floats (with NaN or
infinities only): a mask, and ``np.std``'s two float64 temporaries."""


# --- reduced reads ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Preview:
    """A reduced region. ``mode``: "full" (every value), "mean", "minmax" or "stride".

    Images: ``data`` is 2-D float32. Lines: ``x`` holds each value's dataset index."""

    mode: str
    shape: tuple[int, ...]  # the region's full shape (fixed dimensions dropped)
    start: tuple[int, ...]
    steps: tuple[int, ...]
    data: np.ndarray
    x: np.ndarray | None
    vmin: float | None
    vmax: float | None
    itemsize: int

    def header(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "shape": list(self.shape),
            "start": list(self.start),
            "step": list(self.steps),
            "dims": list(self.data.shape),
            "min": self.vmin,
            "max": self.vmax,
            "lines": self.x is not None,
        }


async def preview(svc: Service, caller: Caller, domain_path: str, h5path: str | None, index: str | None,
                  width: int, height: int, gone: Gone | None = None) -> Preview:
    """The region at ``index`` (one or two kept dimensions) reduced for a plot of ``width`` x
    ``height`` pixels; a long scan stops once the caller has gone (``gone``, asked between
    windows)."""
    ds = await open_at(svc, caller, domain_path, h5path)
    layout = ds.require_layout()
    if not is_numeric(layout.dtype):
        raise InvalidInput("only numeric data can be plotted; read it as a table")
    region = parse_index(index, layout.shape)
    if len(region.kept) == 1:
        return await _line(svc, ds, region, width, gone)
    if len(region.kept) == 2:
        return await _image(svc, ds, region, width, height, gone)
    raise InvalidInput("a plot needs one or two dimensions given as slices, the others as indexes")


async def _line(svc: Service, ds: OpenDataset, region: Region, width: int, gone: Gone | None) -> Preview:
    width = max(16, min(width, MAX_LINE_WIDTH))
    (part,) = region.slices()
    n = part.count
    itemsize = ds.require_layout().dtype.itemsize
    if n <= 2 * width:
        data = (await _read(svc, ds, region.selection)).reshape(-1)
        x = part.start + np.arange(n) * part.step
        return _made("full", region, (1,), data.astype(np.float64), x.astype(np.float64), itemsize)
    step = math.ceil(n / width)
    if n * itemsize <= LINE_SCAN_BUDGET:
        x, y = await _envelope(svc, ds, region, step, itemsize, gone)
        return _made("minmax", region, (step,), y, x, itemsize)
    (step,) = steps_for((n,), (2 * width,))
    sampled = strided(region, (step,))
    async with svc.scanning:
        await check_caller(gone)
        data = (await _read_sampled(svc, ds, sampled)).reshape(-1)
    (sp,) = sampled.slices()
    x = sp.start + np.arange(sp.count) * sp.step
    return _made("stride", region, (step,), data.astype(np.float64), x.astype(np.float64), itemsize)


async def _envelope(svc: Service, ds: OpenDataset, region: Region, step: int, itemsize: int,
                    gone: Gone | None) -> tuple[np.ndarray, np.ndarray]:
    """``min_max`` of a 1-D region, read in windows of whole bins (about ``LINE_WINDOW`` bytes)
    and reduced on the CPU pool window by window: memory stays at a window, whatever the length,
    and the event loop serves others meanwhile. The result is that of ``min_max`` over the whole."""
    (part,) = region.slices()
    n = part.count
    per = max(1, LINE_WINDOW // (step * itemsize)) * step
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for first in range(0, n, per):
        count = min(per, n - first)
        async with svc.scanning:  # one window at a time server-wide: other requests run between
            await check_caller(gone)
            data = (await _read(svc, ds, window(region, first, count).selection)).reshape(-1)
            x, y = await svc.workers.cpu(min_max, data, step, part.start + first * part.step, part.step,
                                         size=data.nbytes)
        xs.append(x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


async def _image(svc: Service, ds: OpenDataset, region: Region, width: int, height: int, gone: Gone | None) -> Preview:
    targets = image_targets(width, height, MAX_IMAGE_PIXELS)
    counts = region.shape
    steps = steps_for(counts, targets)
    itemsize = ds.require_layout().dtype.itemsize
    if steps == (1, 1):
        data = (await _read(svc, ds, region.selection)).reshape(counts)
        return _made("full", region, steps, data.astype(np.float32), None, itemsize)
    if math.prod(counts) * itemsize <= READ_BUDGET:
        return _made("mean", region, steps, await _band_means(svc, ds, region, (steps[0], steps[1]), gone), None, itemsize)
    sampled = strided(region, steps)
    async with svc.scanning:
        await check_caller(gone)
        data = (await _read_sampled(svc, ds, sampled)).reshape(sampled.shape)
    return _made("stride", region, steps, data.astype(np.float32), None, itemsize)


async def _band_means(svc: Service, ds: OpenDataset, region: Region, steps: tuple[int, int],
                      gone: Gone | None) -> np.ndarray:
    """``block_mean`` of a 2-D region, read and reduced in bands of whole blocks of rows (about
    ``LINE_WINDOW`` bytes of float64, which the mean works in), one band at a time server-wide;
    the same as ``block_mean`` over the whole."""
    rows, cols = region.shape
    per = max(1, LINE_WINDOW // (8 * steps[0] * cols)) * steps[0]
    bands: list[np.ndarray] = []
    for first in range(0, rows, per):
        count = min(per, rows - first)
        async with svc.scanning:
            await check_caller(gone)
            data = (await _read(svc, ds, rows_of(region, first, count).selection)).reshape(count, cols)
            bands.append(await svc.workers.cpu(block_mean, data, steps, size=data.nbytes))
    if not bands:  # no rows: the means of nothing
        return np.empty((0, math.ceil(cols / steps[1])), np.float32)
    return np.concatenate(bands).astype(np.float32)


def _made(mode: str, region: Region, steps: tuple[int, ...], data: np.ndarray, x: np.ndarray | None,
          itemsize: int) -> Preview:
    lo, hi = finite_range(data)
    start = tuple(p.start for p in region.slices())
    return Preview(mode, region.shape, start, steps, data, x, lo, hi, itemsize)


async def _read_sampled(svc: Service, ds: OpenDataset, region: Region) -> np.ndarray:
    """A strided region. Over unfiltered stored chunks with a large row step, as points: the
    engine then fetches only the byte ranges of the sampled rows, not whole chunks."""
    layout = ds.require_layout()
    rows = region.selection.parts[region.kept[0]]
    sparse = getattr(rows, "step", 1) >= POINTS_MIN_STEP
    if sparse and not layout.codec.pipeline.filters and not ds.doc.get("layout", {}).get("file_uri"):
        axes = [np.arange(p.start, p.stop, p.step) for p in region.selection.parts]  # type: ignore[union-attr]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
        points = PointSelection.from_array(grid, layout.shape)
        return await engine.read_points(ds.require_layout(), points, svc.workers)
    return await _read(svc, ds, region.selection)


async def _read(svc: Service, ds: OpenDataset, selection: Selection | None) -> np.ndarray:
    layout = ds.require_layout()
    whole = selection if selection is not None else Selection.all(layout.shape)
    return await engine.read_selection(layout, whole, svc.workers)
