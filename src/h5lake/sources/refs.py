"""The three linked layouts of the "HDF5 as single object" design, as typed values (pure).

``H5D_CONTIGUOUS_REF``  ``file_uri``, ``offset``, ``size``, and ``dims``: the contiguous data cut
                        into virtual chunks of whole trailing dimensions (chosen here when
                        absent, as h5pyd's hsload sends none). For an External File List,
                        ``segments`` (``[{"file_uri", "offset", "size"}]``, in order) replace
                        ``file_uri``/``offset``/``size``: the data is those byte ranges joined.
``H5D_CHUNKED_REF``     ``file_uri``, ``dims`` and ``chunks: {"i_j": [offset, size]}``; a third
                        element, when present, is the chunk's HDF5 filter mask.
``H5D_CHUNKED_REF_INDIRECT``
                        ``dims``, ``chunk_table`` (id of a dataset of ``(offset, size)`` or
                        ``(offset, size, file_uri)`` elements, one per chunk) and an optional
                        ``file_uri``; without it each chunk names its own file.

Offset 0 with size 0 marks a chunk that was never written: it reads as the fill value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from h5lake.errors import InvalidInput
from h5lake.model.ids import Collection, index_name, parse_id, parse_index_name, strip_collection_prefix
from h5lake.model.layout import LayoutClass, linked_class

CONTIGUOUS_CHUNK_BYTES = 4 * 1024 * 1024  # virtual chunk size aimed at for contiguous data


@dataclass(frozen=True, slots=True)
class ChunkLocation:
    offset: int
    size: int
    filter_mask: int = 0

    @property
    def missing(self) -> bool:
        return self.size == 0


@dataclass(frozen=True, slots=True)
class Segment:
    """One entry of an External File List: ``size`` bytes at ``offset`` of ``file_uri``."""

    file_uri: str
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class ContiguousRef:
    file_uri: str | None
    offset: int
    size: int
    dims: tuple[int, ...]
    segments: tuple[Segment, ...] = ()  # external storage: the data is these byte ranges, in order

    layout_class = LayoutClass.CONTIGUOUS_REF

    @property
    def uris(self) -> tuple[str, ...]:
        if self.segments:
            return tuple(dict.fromkeys(seg.file_uri for seg in self.segments))
        return (self.file_uri,) if self.file_uri else ()

    def to_json(self) -> dict[str, Any]:
        if self.segments:
            segments = [{"file_uri": seg.file_uri, "offset": seg.offset, "size": seg.size} for seg in self.segments]
            return {"class": self.layout_class.value, "segments": segments, "dims": list(self.dims)}
        return {
            "class": self.layout_class.value,
            "file_uri": self.file_uri,
            "offset": self.offset,
            "size": self.size,
            "dims": list(self.dims),
        }


@dataclass(frozen=True, slots=True)
class ChunkedRef:
    file_uri: str
    dims: tuple[int, ...]
    chunks: dict[tuple[int, ...], ChunkLocation] = field(default_factory=dict)

    layout_class = LayoutClass.CHUNKED_REF

    def to_json(self) -> dict[str, Any]:
        chunks: dict[str, list[int]] = {}
        for index, loc in self.chunks.items():
            value = [loc.offset, loc.size] + ([loc.filter_mask] if loc.filter_mask else [])
            chunks[index_name(index)] = value
        return {"class": self.layout_class.value, "file_uri": self.file_uri, "dims": list(self.dims), "chunks": chunks}


@dataclass(frozen=True, slots=True)
class ChunkedRefIndirect:
    dims: tuple[int, ...]
    chunk_table: str
    file_uri: str | None = None

    layout_class = LayoutClass.CHUNKED_REF_INDIRECT

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.layout_class.value, "dims": list(self.dims), "chunk_table": self.chunk_table}
        if self.file_uri is not None:
            out["file_uri"] = self.file_uri
        return out


RefLayout: TypeAlias = ContiguousRef | ChunkedRef | ChunkedRefIndirect


def is_ref_layout(layout: Any) -> bool:
    return linked_class(layout) is not None


def _int(value: Any, what: str, lo: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InvalidInput(f"layout {what} must be an integer >= {lo}, not {value!r}")
    return value


def _file_uri(value: Any, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput("layout file_uri must be a non-empty string")
    return value


def _dims(value: Any, rank: int) -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or len(value) != rank:
        raise InvalidInput(f"layout dims must be a list of {rank} chunk extents")
    return tuple(_int(d, "dims", 1) for d in value)


def contiguous_dims(shape: tuple[int, ...], itemsize: int, target: int = CONTIGUOUS_CHUNK_BYTES) -> tuple[int, ...]:
    """Virtual chunks for contiguous data: whole trailing dimensions, about ``target`` bytes."""
    row = itemsize * math.prod(shape[1:])
    lead = max(1, min(max(1, shape[0]), target // max(1, row)))
    return (lead, *(max(1, n) for n in shape[1:]))


MAX_INLINE_CHUNKS = 10_000
"""Chunks an ``H5D_CHUNKED_REF`` layout may list inline: the list lives in the dataset document,
which every read loads, so a larger one belongs in a chunk table (``H5D_CHUNKED_REF_INDIRECT``)."""


def parse_ref_layout(layout: dict[str, Any], shape: tuple[int, ...], itemsize: int) -> RefLayout:
    """Validate a REF layout from ``creationProperties`` for a dataset of ``shape``."""
    cls = linked_class(layout)
    if cls is None:
        raise InvalidInput(f"{layout.get('class')!r} is not a linked layout class")
    rank = len(shape)
    if rank == 0:
        raise InvalidInput(f"{cls.value} needs a dataset with a simple dataspace of rank >= 1")
    if cls is LayoutClass.CONTIGUOUS_REF:
        segments = _segments(layout.get("segments"))
        if segments:
            uri, offset, size = None, 0, sum(seg.size for seg in segments)
        else:
            uri = _file_uri(layout.get("file_uri"), True)
            offset = _int(layout.get("offset"), "offset")
            size = _int(layout.get("size"), "size")
        if "dims" in layout and layout["dims"] is not None:
            dims = _dims(layout["dims"], rank)
            if tuple(dims[1:]) != tuple(max(1, n) for n in shape[1:]):
                raise InvalidInput(
                    "H5D_CONTIGUOUS_REF dims must equal the dataset's extent in every dimension but the first"
                )
        else:
            dims = contiguous_dims(shape, itemsize)
        needed = itemsize * math.prod(shape)
        if size and size < needed:
            raise InvalidInput(f"H5D_CONTIGUOUS_REF size {size} is less than the {needed} bytes of the dataset")
        if bool(offset) != bool(size) and not (offset == 0 and size > 0):
            raise InvalidInput("H5D_CONTIGUOUS_REF offset and size must both be set, or both 0 (no data)")
        return ContiguousRef(uri, offset, size, dims, segments)
    dims = _dims(layout.get("dims"), rank)
    if cls is LayoutClass.CHUNKED_REF:
        uri = _file_uri(layout.get("file_uri"), True)
        assert uri is not None
        raw = layout.get("chunks", {})
        if not isinstance(raw, dict):
            raise InvalidInput("H5D_CHUNKED_REF chunks must be an object of \"i_j\": [offset, size]")
        if len(raw) > MAX_INLINE_CHUNKS:
            raise InvalidInput(
                f"H5D_CHUNKED_REF lists {len(raw)} chunks; more than {MAX_INLINE_CHUNKS} go in a chunk table "
                "(use H5D_CHUNKED_REF_INDIRECT)"
            )
        grid = tuple(-(-n // c) for n, c in zip(shape, dims))
        chunks: dict[tuple[int, ...], ChunkLocation] = {}
        for key, value in raw.items():
            chunks[_chunk_index(key, grid)] = _location(value, key)
        return ChunkedRef(uri, dims, chunks)
    table = layout.get("chunk_table")
    if not isinstance(table, str):
        raise InvalidInput("H5D_CHUNKED_REF_INDIRECT needs chunk_table, the id of a dataset")
    table = strip_collection_prefix(table)
    parse_id(table, Collection.DATASETS)
    return ChunkedRefIndirect(dims, table, _file_uri(layout.get("file_uri"), False))


MAX_SEGMENTS = 10_000


def _segments(value: Any) -> tuple[Segment, ...]:
    """An External File List (``segments``: ``[{"file_uri", "offset", "size"}...]``), or ()."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not value or len(value) > MAX_SEGMENTS:
        raise InvalidInput(f"H5D_CONTIGUOUS_REF segments must be a list of 1 to {MAX_SEGMENTS} {{file_uri, offset, size}}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InvalidInput(f"segment {i} must be an object with file_uri, offset and size")
        uri = _file_uri(item.get("file_uri"), True)
        assert uri is not None
        out.append(Segment(uri, _int(item.get("offset"), f"segment {i} offset"), _int(item.get("size"), f"segment {i} size", 1)))
    return tuple(out)


def _chunk_index(key: Any, grid: tuple[int, ...]) -> tuple[int, ...]:
    try:
        index = parse_index_name(str(key))
    except ValueError:
        raise InvalidInput(f"chunk key {key!r} must look like \"i_j\"") from None
    if len(index) != len(grid) or any(not 0 <= i < g for i, g in zip(index, grid)):
        raise InvalidInput(f"chunk key {key!r} is outside the chunk grid {list(grid)}")
    return index


def _location(value: Any, key: Any) -> ChunkLocation:
    if not isinstance(value, list | tuple) or len(value) not in (2, 3):
        raise InvalidInput(f"chunk {key!r} must be [offset, size] or [offset, size, filter_mask]")
    offset = _int(value[0], f"chunk {key} offset")
    size = _int(value[1], f"chunk {key} size")
    mask = _int(value[2], f"chunk {key} filter mask") if len(value) == 3 else 0
    return ChunkLocation(offset, size, mask)


def location_from_entry(offset: int, size: int, mask: int = 0) -> ChunkLocation | None:
    """A chunk-table entry as a location, or None for a chunk that was never written."""
    if size <= 0:
        return None
    return ChunkLocation(int(offset), int(size), int(mask))
