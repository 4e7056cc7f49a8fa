"""Linked datasets as use cases see them: ingest at creation, registering the files a chunk
table names, and finding the chunk locator of a linked dataset for a read.

Documents are read through the domain's view and changed by conditional updates; everything
about files and layouts is asked of ``h5lake.sources.inplace`` through typed values.
"""

from __future__ import annotations

import math

import numpy as np

from h5lake.chunks import engine
from h5lake.chunks.locate import ChunkLocator
from h5lake.errors import InvalidInput, NotFound
from h5lake.model.ids import object_key
from h5lake.model.layout import chunk_grid
from h5lake.model.selection import Selection
from h5lake.model.shapes import Space
from h5lake.model.stored import DatasetDoc, as_dataset
from h5lake.service.context import Service
from h5lake.service.datasets.dataset_layout import native_layout
from h5lake.service.documents import Doc
from h5lake.service.views import Domain
from h5lake.sources.files import SourceRegistry
from h5lake.sources.inplace import (
    SOURCES_KEY,
    TABLE_OF_KEY,
    ChunkTable,
    check_chunk_table,
    check_extent,
    check_linkable,
    linked_locator,
    mark_table_user,
    new_sources,
    ref_layout,
    table_fields,
)
from h5lake.sources.refs import ChunkedRefIndirect, ContiguousRef


def registry(svc: Service) -> SourceRegistry:
    """The service's source registry, made at start-up from the settings (``api.app``)."""
    if svc.sources is None:
        raise TypeError("the service has no source registry")
    return svc.sources


async def ingest_linked_layout(
    svc: Service, domain: Domain, dataset_id: str, space: Space, type_json: Doc, props: Doc, batch: list[DatasetDoc]
) -> tuple[Doc, Doc]:
    """Validate a REF layout for a new dataset and record its files.

    ``batch`` holds datasets not yet stored that were made earlier in the same request: the
    chunk table may be one of them.

    Returns ``(layout JSON, fingerprints)`` for the dataset document. Raises `InvalidInput`
    for a malformed layout, an unlinkable type or an unsupported filter, `Forbidden` for a file
    outside the allowed roots; no file outside them is opened.
    """
    layout = check_linkable(space, type_json, props)
    sources = registry(svc)
    fingerprints: Doc = {}
    uris = layout.uris if isinstance(layout, ContiguousRef) else ((layout.file_uri,) if layout.file_uri is not None else ())
    for uri in uris:  # an External File List names several files
        resolved = sources.resolve(uri)
        fingerprint = await sources.fingerprint(resolved)
        check_extent(layout, fingerprint, uri)
        fingerprints[uri] = fingerprint.to_json()
    if isinstance(layout, ChunkedRefIndirect):
        await _adopt_chunk_table(svc, domain, dataset_id, layout, len(space.dims), batch)
    return layout.to_json(), fingerprints


async def _adopt_chunk_table(
    svc: Service, domain: Domain, dataset_id: str, layout: ChunkedRefIndirect, rank: int, batch: list[DatasetDoc]
) -> None:
    pending = next((d for d in batch if d.get("id") == layout.chunk_table), None)
    if pending is not None:
        table = pending
    else:
        found = await domain.view.object(layout.chunk_table)
        if found is None or found.doc.get("root") != domain.root:
            raise InvalidInput(f"chunk_table {layout.chunk_table} is not a dataset of this domain")
        table = as_dataset(found.doc)
    uri_field = check_chunk_table(table, layout, rank)
    if pending is not None:
        mark_table_user(pending, dataset_id)  # stored with the mark, and empty: nothing to register yet
        return
    await svc.docs.update(
        object_key(layout.chunk_table), lambda doc: mark_table_user(doc, dataset_id), f"chunk table {layout.chunk_table}"
    )
    if uri_field is not None:  # a table filled before the dataset was made: register its files now
        table_layout = native_layout(domain, table)
        if table_layout is not None:
            entries = await engine.read_selection(table_layout, Selection.all(table_layout.shape), svc.workers)
            await register_table_sources(svc, table, entries)


def is_chunk_table(doc: DatasetDoc) -> bool:
    return bool(doc.get(TABLE_OF_KEY))


async def register_table_sources(svc: Service, table_doc: DatasetDoc, values: np.ndarray) -> None:
    """Before chunk-table entries are stored: check and record every file they name.

    A file outside the allowed roots is refused (`Forbidden`) and nothing is written; a file
    already recorded with a different fingerprint is a `SourceChanged` (a `Conflict`).
    """
    new = await new_sources(registry(svc), table_doc, values)
    if not new:
        return

    def record(doc: DatasetDoc) -> None:
        doc.setdefault(SOURCES_KEY, {}).update(new)

    await svc.docs.update(object_key(table_doc["id"]), record, f"chunk table {table_doc['id']}")


async def locator_of_linked(svc: Service, domain: Domain, doc: DatasetDoc) -> ChunkLocator:
    """The chunk locator of a linked dataset, its chunk table (if any) read through the view."""
    layout = ref_layout(doc)
    table: ChunkTable | None = None
    if isinstance(layout, ChunkedRefIndirect):
        found = await domain.view.object(layout.chunk_table)
        if found is None or found.doc.get("root") != domain.root:
            raise NotFound(f"the chunk table {layout.chunk_table} of this dataset is gone")
        table_doc = as_dataset(found.doc)
        table_layout = native_layout(domain, table_doc)
        if table_layout is None:
            raise InvalidInput(f"the chunk table {layout.chunk_table} has no values")
        table = ChunkTable(table_doc, table_layout)
    return linked_locator(doc, registry(svc), table, svc.workers)


TABLE_COUNT_LIMIT = 1 << 14
"""Entries of a chunk table (whole table chunks, as they are decoded) the view reads to count a
linked dataset's chunks per file; past it only the files the table names are listed. Decoding
is ~40 us an entry (variable-length file names): a table chunk of 4,096 entries ~160 ms."""


async def linked_storage(svc: Service, domain: Domain, doc: DatasetDoc, count: bool = False) -> Doc:
    """Where a linked dataset's values are, for the view: its layout class and the files it
    reads (``files``: ``[{uri, chunks}]``, ``chunks`` None when not counted). With ``count``,
    a chunk table of at most TABLE_COUNT_LIMIT entries is read to count each file's chunks and
    those that hold values with their bytes (``allocatedChunks``, ``allocatedBytes``);
    without, its files are those recorded on it (no values read)."""
    layout = doc.get("layout", {})
    out: Doc = {"class": layout.get("class")}
    parsed = ref_layout(doc)
    if isinstance(parsed, ContiguousRef):  # one file's bytes, or an External File List's
        out["files"] = [{"uri": uri, "chunks": None} for uri in parsed.uris]
        return out
    if not isinstance(parsed, ChunkedRefIndirect):  # CHUNKED_REF: one file, its chunks listed here
        table_dict = layout.get("chunks") or {}
        out["files"] = [{"uri": parsed.file_uri, "chunks": len(table_dict)}]
        return out
    out["chunk_table"] = layout["chunk_table"]
    found = await domain.view.object(layout["chunk_table"])
    if found is None or found.doc.get("root") != domain.root:
        out["files"] = []
        return out
    table = as_dataset(found.doc)
    table_layout = native_layout(domain, table)
    decoded = 0 if table_layout is None else math.prod(chunk_grid(table_layout.shape, table_layout.chunk_shape)) * math.prod(table_layout.chunk_shape)
    out["countable"] = table_layout is not None and decoded <= TABLE_COUNT_LIMIT
    if not (count and out["countable"]) or table_layout is None:
        out["files"] = [{"uri": uri, "chunks": None} for uri in sorted(table.get(SOURCES_KEY, {}))]
        return out
    entries = await engine.read_selection(table_layout, Selection.all(table_layout.shape), svc.workers)
    _, size_f, uri_f, _ = table_fields(table["type"])
    held = entries[entries[size_f] > 0] if entries.size else entries
    counts: dict[str, int] = {}
    for entry in held.reshape(-1):
        raw = entry[uri_f] if uri_f is not None else None
        uri = (raw.decode("utf-8") if isinstance(raw, bytes) else str(raw or "")).rstrip("\x00") or layout.get("file_uri") or "?"
        counts[uri] = counts.get(uri, 0) + 1
    out["files"] = [{"uri": uri, "chunks": n} for uri, n in sorted(counts.items())]
    out["allocatedChunks"] = int(held.size)
    out["allocatedBytes"] = int(held[size_f].astype("i8").sum()) if held.size else 0
    return out
