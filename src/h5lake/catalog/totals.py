"""What a dataset's chunks add up to: the ``stats`` of a dataset (seed 001, "Dataset catalog")
and the totals of a domain's datasets (``num_chunks``, ``allocated_bytes``...), from the catalogs
of `h5lake.catalog.catalogs` for native chunks, from the document for compact values and from the
chunk table of a linked layout."""

from __future__ import annotations

import base64
from typing import Any

from h5lake.catalog.catalogs import (
    DATASETS_CATALOG,
    HEAD_CONCURRENCY,
    listed_totals,
    logical_grid,
    parse_lines,
)
from h5lake.chunks.fanout import bounded
from h5lake.model import ids
from h5lake.model.layout import COMPACT_KEY, is_linked, span_count
from h5lake.model.shapes import space_from_json
from h5lake.model.stored import DatasetDoc
from h5lake.model.types import to_dtype
from h5lake.storage.base import Store


def _compact_chunks(doc: DatasetDoc) -> tuple[int, int]:
    """Chunk count and stored bytes of values kept in the dataset's document."""
    listed = doc[COMPACT_KEY].get("chunks", {})
    return len(listed), sum(len(base64.b64decode(text)) for text in listed.values())


def _linked_chunks(doc: DatasetDoc) -> tuple[int, int]:
    """Chunk count and bytes from a linked layout's ``chunks`` table (``"i_j": [offset, size]``)."""
    table = doc.get("layout", {}).get("chunks")
    if not isinstance(table, dict):
        return 0, 0
    return len(table), sum(int(v[1]) for v in table.values() if isinstance(v, list) and len(v) > 1)


async def dataset_chunk_totals(store: Store, domain: str,
                               datasets: list[DatasetDoc]) -> tuple[int, int, int, int]:
    """(num_chunks, allocated_bytes, num_linked_chunks, linked_bytes) over ``datasets``: native
    totals from their ``.datasets.txt`` lines (one read), or from the chunk catalog of a dataset
    without a line yet; linked ones from the layout's chunk table."""
    blob = await store.get(ids.catalog_key(domain, DATASETS_CATALOG))
    lines = parse_lines(blob.data) if blob is not None else {}
    totals = [0, 0, 0, 0]

    async def one(doc: DatasetDoc) -> None:
        fields = lines.get(doc["id"], "").split()
        if is_linked(doc):
            at, (count, size) = 2, _linked_chunks(doc)
        elif COMPACT_KEY in doc:
            at, (count, size) = 0, _compact_chunks(doc)
        elif len(fields) >= 6:
            at, count, size = 0, int(fields[4]), int(fields[5])
        else:
            at, (count, size, _) = 0, await listed_totals(store, domain, doc["id"])
        totals[at] += count
        totals[at + 1] += size

    await bounded(datasets, one, HEAD_CONCURRENCY)
    return totals[0], totals[1], totals[2], totals[3]


def json_int(n: int) -> int | float:
    """``n``, as a float past int64 (JSON encoders, orjson's too, stop at 64 bits): a chunked
    dataset's logical size may pass 2**63 bytes (docs/api.md, "Datasets past 2**63 bytes")."""
    return n if n <= 2**63 - 1 else float(n)


async def map_bucket_bytes(store: Store, domain: str, map_ids: list[str]) -> int:
    """The bytes of the pair buckets of maps ``map_ids``: from their ``.maps.txt`` lines (one
    read), or from the bucket catalog of a map without a line yet."""
    if not map_ids:
        return 0
    blob = await store.get(ids.catalog_key(domain, ids.CATALOG_FILES[ids.Collection.MAPS]))
    lines = parse_lines(blob.data) if blob is not None else {}
    total = 0

    async def one(map_id: str) -> None:
        nonlocal total
        fields = lines.get(map_id, "").split()
        total += int(fields[5]) if len(fields) >= 6 else (await listed_totals(store, domain, map_id))[1]

    await bounded(map_ids, one, HEAD_CONCURRENCY)
    return total


async def dataset_stats(store: Store, domain: str, dataset_doc: DatasetDoc,
                        item_size: int | None = None) -> dict[str, Any]:
    """The seed's dataset ``stats``: allocated and logical chunk counts and sizes."""
    grid = logical_grid(dataset_doc)
    if item_size is None:
        item_size = to_dtype(dataset_doc["type"]).itemsize
    last = float(dataset_doc.get("lastModified", 0.0))
    storage = "chunks"
    if is_linked(dataset_doc):
        count, size = _linked_chunks(dataset_doc)
        storage = "linked"
    elif COMPACT_KEY in dataset_doc:
        count, size = _compact_chunks(dataset_doc)
        storage = "compact"
    else:
        count, size, newest = await listed_totals(store, domain, dataset_doc["id"])
        last = max(last, newest)
    logical_count = 0 if grid is None else span_count(grid)
    logical_size = space_from_json(dataset_doc["shape"]).count * item_size
    return {"allocatedChunkCount": count, "logicalChunkCount": json_int(logical_count),
            "logicalSize": json_int(logical_size), "allocatedSize": size, "lastModified": last, "storage": storage}
