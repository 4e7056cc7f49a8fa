"""Chunk layouts: how a dataset's dataspace is cut into chunks (pure arithmetic, no I/O).

Every dataset is stored chunked, even one the client created as ``H5D_CONTIGUOUS`` (h5pyd does
that for small datasets given no chunks, API-NOTES §4). A chunk is always a full
``chunk_shape`` array; the chunks on the upper edge of the dataspace hold elements beyond the
extent, which read as the fill value.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from h5lake.errors import InvalidInput

KIB = 1024
MIB = 1024 * KIB

#: Chunk sizes `guess_chunk_shape` aims between.
MIN_CHUNK_BYTES = 1 * MIB
MAX_CHUNK_BYTES = 4 * MIB


class LayoutClass(enum.Enum):
    """Dataset layout classes of ``creationProperties.layout`` and the stored ``layout``."""

    CHUNKED = "H5D_CHUNKED"
    CONTIGUOUS = "H5D_CONTIGUOUS"
    COMPACT = "H5D_COMPACT"
    CONTIGUOUS_REF = "H5D_CONTIGUOUS_REF"
    CHUNKED_REF = "H5D_CHUNKED_REF"
    CHUNKED_REF_INDIRECT = "H5D_CHUNKED_REF_INDIRECT"


LINKED_LAYOUTS = frozenset({LayoutClass.CONTIGUOUS_REF, LayoutClass.CHUNKED_REF, LayoutClass.CHUNKED_REF_INDIRECT})


COMPACT_KEY: Final = "compact"  # a dataset document's values kept in it (service.datasets.compact): {"chunks": {"i_j": base64}}

def linked_class(layout: Any) -> LayoutClass | None:
    """The class of a layout whose values live in HDF5 files, else None."""
    if not isinstance(layout, dict):
        return None
    try:
        cls = LayoutClass(layout.get("class"))
    except ValueError:
        return None
    return cls if cls in LINKED_LAYOUTS else None


def native_layout(layout: Any) -> Any:
    """The layout an HDF5 file would give a dataset whose ``creationProperties.layout`` is
    ``layout``: a linked chunked layout is ``H5D_CHUNKED`` with the file's chunk shape, a linked
    contiguous one ``H5D_CONTIGUOUS`` (its ``dims`` are h5lake's virtual chunks, not the file's).
    Other layouts are returned as they are."""
    cls = linked_class(layout)
    if cls is None:
        return layout
    if cls is LayoutClass.CONTIGUOUS_REF:
        return {"class": LayoutClass.CONTIGUOUS.value, **({"externalStorage": layout["externalStorage"]} if "externalStorage" in layout else {})}
    return {"class": LayoutClass.CHUNKED.value, "dims": list(layout["dims"])}


def is_linked(doc: Mapping[str, Any]) -> bool:
    """Do a dataset's values live in HDF5 files (read-only) rather than in chunk objects?"""
    return linked_class(doc.get("layout")) is not None


def chunk_grid(shape: Sequence[int], chunk_shape: Sequence[int]) -> tuple[int, ...]:
    """Number of chunks along each dimension: ``ceil(shape / chunk_shape)`` (0 for an empty dim).

    A scalar dataset (shape ``()``) has the grid ``()``, i.e. exactly one chunk.
    """
    _check_pair(shape, chunk_shape)
    return tuple(-(-int(n) // int(c)) for n, c in zip(shape, chunk_shape))


def chunk_span(shape: Sequence[int], chunk_shape: Sequence[int], origin: Sequence[int] = ()) -> tuple[range, ...]:
    """The chunk indexes along each dimension that hold elements of the extent. ``origin`` (a
    dataset grown at the front) puts element 0 at grid position ``-origin``, so the first
    indexes may be negative; without it this is ``range(chunk_grid(...)[d])``."""
    grid = chunk_grid(shape, chunk_shape)
    if not any(origin):
        return tuple(range(g) for g in grid)
    return tuple(
        range(-o // c, -(-(n - o) // c)) if n else range(0)
        for n, c, o in zip(shape, chunk_shape, origin)
    )


def span_count(spans: Sequence[range]) -> int:
    """How many chunks the spans of `chunk_span` hold: ``math.prod(map(len, spans))``, also when
    a span is longer than ``sys.maxsize`` (an extent of 2**64 - 1 in chunks of one), where
    ``len`` raises ``OverflowError``."""
    return math.prod(max(0, r.stop - r.start) for r in spans)


def chunk_bounds(
    index: Sequence[int], shape: Sequence[int], chunk_shape: Sequence[int]
) -> tuple[slice, ...]:
    """The region of the dataset chunk ``index`` covers, clipped to the extent.

    ``chunk_bounds((1, 0), (10, 10), (4, 4)) == (slice(4, 8), slice(0, 4))``; an edge chunk's
    region is shorter than ``chunk_shape`` (its array is not). Raises `InvalidInput` for an
    index outside the grid.
    """
    grid = chunk_grid(shape, chunk_shape)
    if len(index) != len(grid):
        raise InvalidInput(f"chunk index {tuple(index)} has the wrong rank for grid {grid}")
    out: list[slice] = []
    for i, g, n, c in zip(index, grid, shape, chunk_shape):
        if not 0 <= int(i) < g:
            raise InvalidInput(f"chunk index {tuple(index)} is outside the grid {grid}")
        lo = int(i) * int(c)
        out.append(slice(lo, min(lo + int(c), int(n))))
    return tuple(out)


def _check_pair(shape: Sequence[int], chunk_shape: Sequence[int]) -> None:
    if len(shape) != len(chunk_shape):
        raise InvalidInput(
            f"chunk shape {tuple(chunk_shape)} does not match rank of {tuple(shape)}"
        )
    if any(int(c) < 1 for c in chunk_shape):
        raise InvalidInput(f"chunk shape {tuple(chunk_shape)} must be positive")


def guess_chunk_shape(
    shape: Sequence[int],
    maxdims: Sequence[int | None] | None,
    item_size: int,
    min_bytes: int = MIN_CHUNK_BYTES,
    max_bytes: int = MAX_CHUNK_BYTES,
) -> tuple[int, ...]:
    """A chunk shape for a dataset created without one.

    Contract:

    * A dataset that can never exceed ``max_bytes`` (no unlimited dimension, and the extent
      it may grow to fits) is one chunk, equal to its (maximum) shape.
    * Otherwise chunks aim at ``sqrt(min_bytes * max_bytes)`` (2 MiB by default) and stay within
      ``[min_bytes, max_bytes]`` whenever the dataspace is big enough and one element fits.
    * The chunk is shaped like the dataspace: short dimensions are taken whole, the rest share
      the budget equally, so a ``(2, 1_000_000)`` dataset gets ``(2, n)`` chunks, not slivers.
    * The extent used for each dimension is the one it may grow to: ``maxdims`` where bounded,
      and unbounded where unlimited (``None``). An unlimited dimension grows by appends, so its
      chunk extent is sized for the data to come rather than today's (often 0) extent.
    * Every chunk dimension is at least 1 (a 0 extent gets 1) and at most its bounded extent.

    ``item_size`` is the stored size of one element; for variable-length types pass an
    estimate. A scalar dataset gets ``()``.
    """
    rank = len(shape)
    if maxdims is not None and len(maxdims) != rank:
        raise InvalidInput("maxdims must have one entry per dimension")
    if item_size < 1:
        raise InvalidInput(f"item size must be positive, got {item_size}")
    if not 0 < min_bytes <= max_bytes:
        raise InvalidInput("chunk byte limits must satisfy 0 < min_bytes <= max_bytes")
    if rank == 0:
        return ()
    # None marks an unbounded dimension from here on.
    extents: list[int | None] = []
    for d in range(rank):
        bound = int(shape[d]) if maxdims is None else maxdims[d]
        extents.append(None if bound is None else max(int(bound), int(shape[d]), 1))

    bounded_total = math.prod(e for e in extents if e is not None)
    if None not in extents and bounded_total * item_size <= max_bytes:
        return tuple(e for e in extents if e is not None)

    budget = max(1.0, math.sqrt(min_bytes * max_bytes) / item_size)  # elements per chunk
    chunk: list[int] = [1] * rank
    # Water-filling: visit dimensions from shortest to longest; a dimension shorter than its
    # equal share of the remaining budget is taken whole and the rest share what is left.
    order = sorted(range(rank), key=lambda d: _sort_extent(extents[d]))
    remaining = budget
    for pos, d in enumerate(order):
        share = remaining ** (1.0 / (rank - pos))
        extent = extents[d]
        if extent is not None and extent <= share:
            chunk[d] = extent
        else:
            chunk[d] = max(1, int(share))
        remaining = max(1.0, remaining / chunk[d])

    # Rounding down can leave the chunk under min_bytes; grow the longest growable dimension.
    while math.prod(chunk) * item_size < min_bytes:
        growable = [d for d in range(rank) if chunk[d] < _sort_extent(extents[d])]
        if not growable:
            break
        d = max(growable, key=lambda k: chunk[k])
        target = -(-min_bytes // (item_size * (math.prod(chunk) // chunk[d])))
        extent = extents[d]
        chunk[d] = target if extent is None else min(extent, target)
    return tuple(chunk)


def _sort_extent(extent: int | None) -> float:
    return math.inf if extent is None else float(extent)


def adjust_chunk_shape(
    requested: Sequence[object],
    shape: Sequence[int],
    item_size: int,
    max_bytes: int | None = None,
    maxdims: Sequence[int | None] | None = None,
) -> tuple[int, ...]:
    """Validate a client's chunk shape and return it unchanged.

    Decision: we keep the client's chunk shape exactly, even when it is tiny or far above our
    own targets. h5pyd picks chunks itself (``2000x1000 f8`` gets 8 MB chunks) and HSDS kept
    them; hsload copies the source file's chunking, and the HDF5-file sources and hsget read
    one chunk per request, so changing the shape would break fidelity and chunk alignment. Only
    validity is enforced:

    * one positive integer per dimension;
    * no larger than a bounded ``maxdims`` entry (an extent of 0 still allows 1), as HDF5
      requires for fixed-size dimensions;
    * if ``max_bytes`` is given (a service limit, not a preference), the chunk must fit in it,
      unless it is one element: the smallest chunk there is, which a dataset of elements larger
      than the limit must have (as h5pyd asks for ``dtype='S100000000', chunks=True``, and as
      :func:`guess_chunk_shape` picks for such elements).

    Anything else raises `InvalidInput`.
    """
    rank = len(shape)
    if len(requested) != rank:
        raise InvalidInput(f"chunk shape {list(requested)} does not match dataset rank {rank}")
    if maxdims is not None and len(maxdims) != rank:
        raise InvalidInput("maxdims must have one entry per dimension")
    chunk: list[int] = []
    for d, c in enumerate(requested):
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise InvalidInput(f"chunk dims must be positive integers, got {c!r}")
        bound = int(shape[d]) if maxdims is None else maxdims[d]
        if bound is not None and c > max(int(bound), int(shape[d]), 1):
            raise InvalidInput(f"chunk dim {c} exceeds the maximum extent {bound} of dimension {d}")
        chunk.append(c)
    if max_bytes is not None and math.prod(chunk) > 1 and math.prod(chunk) * item_size > max_bytes:
        raise InvalidInput(
            f"chunk of {math.prod(chunk) * item_size} bytes exceeds the limit of {max_bytes}"
        )
    return tuple(chunk)
