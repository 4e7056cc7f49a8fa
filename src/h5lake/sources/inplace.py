"""Datasets whose values stay in HDF5 files: checking what a link names, and locating chunks.

Pure of the service: everything here is handed what it needs through narrow, typed values.
The service (``h5lake.service.datasets.linked``) does the ingest (reading and writing documents through
a domain view) and calls in here:

* `check_linkable` and `check_extent` when ``POST /datasets`` carries a REF layout: the layout,
  type and filters are valid, the named file holds what the layout points at;
* `check_chunk_table`, `table_fields` and `entry_uris` for an INDIRECT layout's chunk table;
* `linked_locator` for reads: a `ChunkLocator` answering where each chunk's bytes are. The
  chunk engine does the rest (ranged reads, filter pipeline, assembling), as for native chunks.

Fingerprints live in the document that names the file: the linked dataset's
``linked_sources`` for a layout ``file_uri``, the chunk table's for per-chunk URIs.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final

import numpy as np

from h5lake.chunks import engine
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.fanout import Workers
from h5lake.chunks.filters import FilterPipeline
from h5lake.chunks.locate import ChunkLocator, ChunkRef
from h5lake.errors import Conflict, InvalidInput
from h5lake.model.shapes import Space, SpaceClass, space_from_json
from h5lake.model.stored import DatasetDoc, Doc
from h5lake.model.types import TypeClass, is_variable, to_dtype, type_class
from h5lake.sources.files import (
    Fingerprint,
    PinnedFile,
    SourceChanged,
    SourceRegistry,
)
from h5lake.sources.refs import (
    ChunkedRef,
    ChunkedRefIndirect,
    ContiguousRef,
    RefLayout,
    Segment,
    is_ref_layout,
    location_from_entry,
    parse_ref_layout,
)

log = logging.getLogger(__name__)

SOURCES_KEY: Final = "linked_sources"  # {file_uri: fingerprint JSON}
TABLE_OF_KEY: Final = "chunk_table_of"  # on a chunk table: ids of the linked datasets using it


# --- ingest -----------------------------------------------------------------------------------


def _check_type(type_json: Doc) -> None:
    if is_variable(type_json):
        raise InvalidInput("variable-length data lives in the file's heaps and cannot be linked; copy it")
    if _has_reference(type_json):
        raise InvalidInput("references hold file addresses and cannot be linked; copy the dataset")


def _has_reference(t: Doc) -> bool:
    cls = type_class(t)
    if cls is TypeClass.REFERENCE:
        return True
    if cls is TypeClass.COMPOUND:
        return any(_has_reference(f["type"]) for f in t["fields"])
    if cls is TypeClass.ARRAY:
        return _has_reference(t["base"])
    return False


def check_linkable(space: Space, type_json: Doc, props: Doc) -> RefLayout:
    """The REF layout of a new dataset, checked: a simple dataspace, a type whose bytes are all
    in the file, filters the chunk engine can decode. Raises `InvalidInput` otherwise."""
    if space.kind is not SpaceClass.SIMPLE:
        raise InvalidInput("linked layouts need a simple dataspace; copy scalar and null datasets")
    _check_type(type_json)
    dtype = to_dtype(type_json)
    layout = parse_ref_layout(props["layout"], space.dims, dtype.itemsize)
    filters = props.get("filters") or []
    if isinstance(layout, ContiguousRef) and filters:
        raise InvalidInput("contiguous HDF5 data has no filters; H5D_CONTIGUOUS_REF takes none")
    FilterPipeline.from_json(filters, dtype, layout.dims)  # unsupported filters fail here, by name
    if not isinstance(layout, ChunkedRefIndirect) and space.maxdims is not None and tuple(space.maxdims) != space.dims:
        raise InvalidInput(f"{layout.layout_class.value} datasets cannot be resizable; use H5D_CHUNKED_REF_INDIRECT")
    return layout


def check_extent(layout: RefLayout, fingerprint: Fingerprint, uri: str) -> None:
    if isinstance(layout, ContiguousRef) and layout.segments:
        return  # an external file shorter than its segment reads as zeros past its end, as in HDF5
    if isinstance(layout, ContiguousRef):
        ends = [layout.offset + layout.size] if layout.size else []
    elif isinstance(layout, ChunkedRef):
        ends = [loc.offset + loc.size for loc in layout.chunks.values() if not loc.missing]
    else:
        return
    if ends and max(ends) > fingerprint.size:
        raise InvalidInput(f"the layout points past the end of {uri} ({fingerprint.size} bytes)")


def table_fields(type_json: Doc) -> tuple[str, str, str | None, str | None]:
    """(offset field, size field, file_uri field or None, filter-mask field or None)."""
    if type_class(type_json) is not TypeClass.COMPOUND or len(type_json["fields"]) < 2:
        raise InvalidInput("a chunk table is a compound of (offset, size) or (offset, size, file_uri)")
    names = [f["name"] for f in type_json["fields"]]
    kinds = {f["name"]: type_class(f["type"]) for f in type_json["fields"]}
    offset = "offset" if "offset" in names else names[0]
    size = "size" if "size" in names else "length" if "length" in names else names[1]
    if kinds[offset] is not TypeClass.INTEGER or kinds[size] is not TypeClass.INTEGER:
        raise InvalidInput("chunk table offset and size must be integers")
    uri = "file_uri" if "file_uri" in names else None
    if uri is None and len(names) >= 3 and kinds[names[2]] is TypeClass.STRING:
        uri = names[2]
    if uri is not None and kinds[uri] is not TypeClass.STRING:
        raise InvalidInput("chunk table file_uri must be a string")
    mask = "filter_mask" if "filter_mask" in names else None
    return offset, size, uri, mask


def check_chunk_table(table: DatasetDoc, layout: ChunkedRefIndirect, rank: int) -> str | None:
    """Check that ``table`` can be the chunk table of an INDIRECT dataset of ``rank``; return
    its file_uri field (None when the layout's file_uri names the one file)."""
    if is_ref_layout(table.get("layout")):
        raise InvalidInput("a chunk table must be an ordinary dataset, not a linked one")
    space = space_from_json(table["shape"])
    if space.kind is not SpaceClass.SIMPLE or len(space.dims) != rank:
        raise InvalidInput(f"the chunk table must have the dataset's rank, {rank}")
    _, _, uri_field, _ = table_fields(table["type"])
    if uri_field is None and layout.file_uri is None:
        raise InvalidInput("without a layout file_uri the chunk table needs a file_uri field")
    return uri_field


def mark_table_user(table: DatasetDoc, dataset_id: str) -> None:
    """Record on a chunk table that ``dataset_id`` reads its entries (writes then register files)."""
    users = table.setdefault(TABLE_OF_KEY, [])
    if dataset_id not in users:
        users.append(dataset_id)


def entry_uris(type_json: Doc, values: np.ndarray) -> set[str]:
    _, size_f, uri_f, _ = table_fields(type_json)
    names = values.dtype.names or ()
    if uri_f is None or uri_f not in names:
        return set()
    uris = values[uri_f].reshape(-1)
    if size_f in names:
        uris = uris[values[size_f].reshape(-1) > 0]
    out = set()
    for u in uris.tolist():
        text = u.decode("utf-8") if isinstance(u, bytes) else str(u)
        text = text.rstrip("\x00")
        if text:
            out.add(text)
    return out


async def new_sources(registry: SourceRegistry, table_doc: DatasetDoc, values: np.ndarray) -> Doc:
    """The fingerprints of files named by chunk-table entries ``values`` and not yet recorded.

    A file outside the allowed roots is refused (`Forbidden`); a file already recorded with a
    different fingerprint is a `SourceChanged` (a `Conflict`).
    """
    uris = entry_uris(table_doc["type"], values)
    known = table_doc.get(SOURCES_KEY, {})
    new: Doc = {}
    for uri in sorted(uris):
        resolved = registry.resolve(uri)
        fingerprint = await registry.fingerprint(resolved)
        if uri in known:
            if Fingerprint.from_json(known[uri]) != fingerprint:
                raise SourceChanged(f"{uri} has changed since it was first linked into this chunk table")
            continue
        new[uri] = fingerprint.to_json()
    return new


# --- reads ------------------------------------------------------------------------------------


class _Pins:
    """Linked files of one request, each resolved (roots checked) and pinned once."""

    def __init__(self, registry: SourceRegistry, recorded: Doc) -> None:
        self.registry = registry
        self.recorded = recorded
        self._pins: dict[str, PinnedFile] = {}

    def pin(self, uri: str) -> PinnedFile:
        pinned = self._pins.get(uri)
        if pinned is None:
            resolved = self.registry.resolve(uri)  # Forbidden when outside the roots: never read
            fingerprint = self.recorded.get(uri)
            if fingerprint is None:
                raise Conflict(f"{uri} was never registered as a source of this dataset; link it again")
            pinned = self._pins[uri] = PinnedFile(resolved, Fingerprint.from_json(fingerprint))
        return pinned


class ContiguousRefChunks:
    """Contiguous data cut into virtual chunks of whole trailing dimensions."""

    writable = False
    ranged = True  # chunks are byte ranges of files: the engine reads neighbours together

    def __init__(self, layout: ContiguousRef, shape: tuple[int, ...], itemsize: int, pins: _Pins) -> None:
        self.layout = layout
        self.chunk_bytes = itemsize * int(np.prod(layout.dims))
        self.data_bytes = itemsize * int(np.prod(shape))
        self.pins = pins

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        if not self.layout.size:
            return None
        start = index[0] * self.chunk_bytes
        if start >= self.data_bytes:
            return None
        length = min(self.chunk_bytes, self.data_bytes - start)
        if self.layout.segments:
            return ChunkRef(SegmentedFiles(self.layout.segments, self.pins), "external files", start, length)
        uri = self.layout.file_uri
        assert uri is not None
        return ChunkRef(self.pins.pin(uri), uri, self.layout.offset + start, length)


class SegmentedFiles:
    """The byte stream of an External File List: each segment a byte range of its own (pinned)
    file, joined in order. A file shorter than its segment reads as zeros past its end, and so
    does the stream past the last segment, as HDF5 reads them."""

    def __init__(self, segments: tuple[Segment, ...], pins: _Pins) -> None:
        self.segments = segments
        self.pins = pins

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        out = bytearray(length)
        reads = []
        at = 0
        for seg in self.segments:
            lo, hi = max(offset, at), min(offset + length, at + seg.size)
            if lo < hi:
                pinned = self.pins.pin(seg.file_uri)
                inside = seg.offset + lo - at
                n = max(0, min(hi - lo, pinned.expected.size - inside))
                if n:
                    reads.append((lo - offset, pinned.get_range(seg.file_uri, inside, n)))
            at += seg.size
            if at >= offset + length:
                break
        for (where, read), data in zip(reads, await asyncio.gather(*(r for _, r in reads)), strict=True):
            if data is None:
                return None
            out[where : where + len(data)] = data
        return bytes(out)


class ChunkedRefChunks:
    """Chunks listed in the layout itself."""

    writable = False
    ranged = True  # chunks are byte ranges of files: the engine reads neighbours together

    def __init__(self, layout: ChunkedRef, pins: _Pins) -> None:
        self.layout = layout
        self.pins = pins

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        loc = self.layout.chunks.get(tuple(index))
        if loc is None or loc.missing:
            return None
        uri = self.layout.file_uri
        return ChunkRef(self.pins.pin(uri), uri, loc.offset, loc.size, loc.filter_mask)


class IndirectChunks:
    """Chunks listed in a chunk-table dataset, looked up one table chunk at a time.

    Only the table chunks holding entries of the chunks a request touches are read, each once
    per request (concurrent lookups share the read).
    """

    writable = False
    ranged = True  # chunks are byte ranges of files: the engine reads neighbours together

    def __init__(
        self, layout: ChunkedRefIndirect, table_doc: DatasetDoc, table: DatasetLayout, pins: _Pins, workers: Workers
    ) -> None:
        self.layout = layout
        self.table = table
        self.fields = table_fields(table_doc["type"])
        self.pins = pins
        self.workers = workers
        self._table_chunks: dict[tuple[int, ...], asyncio.Future[np.ndarray | None]] = {}

    async def _table_chunk(self, index: tuple[int, ...]) -> np.ndarray | None:
        future = self._table_chunks.get(index)
        if future is None:
            future = self._table_chunks[index] = asyncio.ensure_future(engine.load_chunk(self.table, index, self.workers))
        return await asyncio.shield(future)

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        table_shape = self.table.shape
        if any(i >= n for i, n in zip(index, table_shape)):
            return None
        tc = self.table.chunk_shape
        chunk = await self._table_chunk(tuple(i // c for i, c in zip(index, tc)))
        if chunk is None:
            return None
        entry = chunk[tuple(i % c for i, c in zip(index, tc))]
        offset_f, size_f, uri_f, mask_f = self.fields
        loc = location_from_entry(int(entry[offset_f]), int(entry[size_f]), int(entry[mask_f]) if mask_f else 0)
        if loc is None:
            return None
        uri = None
        if uri_f is not None:
            raw = entry[uri_f]
            uri = (raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)).rstrip("\x00") or None
        uri = uri or self.layout.file_uri
        if uri is None:
            raise InvalidInput(f"chunk {index} names no file and the layout has no file_uri")
        return ChunkRef(self.pins.pin(uri), uri, loc.offset, loc.size, loc.filter_mask)


@dataclass(frozen=True, slots=True)
class ChunkTable:
    """An INDIRECT dataset's chunk table, read as the native dataset it is."""

    doc: DatasetDoc
    layout: DatasetLayout


def ref_layout(doc: DatasetDoc) -> RefLayout:
    return parse_ref_layout(doc["layout"], tuple(space_from_json(doc["shape"]).dims), to_dtype(doc["type"]).itemsize)


def linked_locator(doc: DatasetDoc, registry: SourceRegistry, table: ChunkTable | None, workers: Workers) -> ChunkLocator:
    """The chunk locator of a linked dataset; ``table`` is its chunk table when the layout is
    INDIRECT (see `ref_layout`)."""
    layout = ref_layout(doc)
    recorded: Doc = dict(doc.get(SOURCES_KEY, {}))
    if isinstance(layout, ContiguousRef):
        shape = tuple(space_from_json(doc["shape"]).dims)
        return ContiguousRefChunks(layout, shape, to_dtype(doc["type"]).itemsize, _Pins(registry, recorded))
    if isinstance(layout, ChunkedRef):
        return ChunkedRefChunks(layout, _Pins(registry, recorded))
    if table is None:
        raise InvalidInput(f"{layout.layout_class.value} needs its chunk table")
    recorded.update(table.doc.get(SOURCES_KEY, {}))
    return IndirectChunks(layout, table.doc, table.layout, _Pins(registry, recorded), workers)
