"""Which chunks of a dataset may exist, found cheaply for a read touching many chunks
(chunks/engine.py through a locator's ``written``): its chunk catalog plus the pending write
intents that name it. Chunk keys are spread by a hash prefix, so no listing can find them."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from h5lake.catalog.catalogs import HEAD_CONCURRENCY, PENDING_PREFIX, Index
from h5lake.chunks.fanout import bounded
from h5lake.chunks.locate import NativeChunks
from h5lake.model import ids
from h5lake.storage.base import Store


@dataclass(frozen=True, slots=True)
class Written:
    """The chunks of one dataset that may exist: those its chunk catalog lists, and those a
    pending write intent names (a list, or boxes ``lo <= i < hi``). Any other chunk reads as fill."""

    listed: frozenset[Index]
    boxes: tuple[tuple[Index, Index], ...] = ()

    def __contains__(self, index: object) -> bool:
        if index in self.listed:
            return True
        if not isinstance(index, tuple):
            return False
        return any(all(a <= i < b for i, a, b in zip(index, lo, hi)) for lo, hi in self.boxes)


async def written_chunks(store: Store, domain: str, dataset_id: str, *, max_intents: int,
                         max_catalog_bytes: int) -> Written | None:
    """The chunks of the dataset that may exist (`Written`), or None when finding out would cost
    more than the bounds allow (more pending intents than ``max_intents``, a larger catalog).

    Intents are read *before* the catalog: an acknowledged write's chunks are named by its intent
    until the intent is deleted, which happens only after they were merged into the catalog. So a
    write acknowledged before this call is either in an intent listed here or in the catalog read
    after it (an intent gone between the listing and its read was merged before the catalog read).
    """
    keys: list[str] = []
    async for key in store.list(PENDING_PREFIX):
        keys.append(key)
        if len(keys) > max_intents:
            return None
    listed: set[Index] = set()
    boxes: list[tuple[Index, Index]] = []

    async def one(key: str) -> None:
        blob = await store.get(key)
        if blob is None:
            return  # merged (and deleted) meanwhile: the catalog read below lists its chunks
        doc = orjson.loads(blob.data)
        if doc.get("dataset") != dataset_id:
            return
        if "chunks" in doc:
            listed.update(tuple(int(c) for c in ix) for ix in doc["chunks"])
        else:
            boxes.append((tuple(int(c) for c in doc["lo"]), tuple(int(c) for c in doc["hi"])))

    await bounded(keys, one, HEAD_CONCURRENCY)
    catalog = ids.chunk_catalog_key(domain, dataset_id)
    info = await store.head(catalog)
    if info is not None:
        if info.size > max_catalog_bytes:
            return None
        blob = await store.get(catalog)
        if blob is not None:
            _add_indexes(listed, bytes(blob.data))
    return Written(frozenset(listed), tuple(boxes))


def _add_indexes(found: set[Index], data: bytes) -> None:
    """The index of every catalog line, malformed lines' too (more than `parse_lines` keeps, at
    ~1 us a line rather than ~10: a read may take a listed chunk that is not there, never the
    reverse)."""
    for line in data.split(b"\n"):
        name = line.split(b" ", 1)[0]
        try:
            found.add(tuple(int(i) for i in name.split(b"_")))
        except ValueError:
            continue  # an empty or malformed line


INTENTS_PER_CHUNK = 4  # at most one pending intent read per 4 chunks a read touches
CATALOG_BYTES_PER_CHUNK = 1024  # ~20 catalog lines (~1 us each) per chunk touched: less than a miss costs
CATALOG_BYTES_MAX = 2 << 20  # ~40,000 lines: parsed on the event loop, so ~0.1 s at most


class CatalogedChunks(NativeChunks):
    """A head dataset's native chunks, which its chunk catalog and the pending write intents
    list (`ListsWritten`): a read of many chunks asks which may exist before it reads any."""

    async def written(self, domain: str, touched: int) -> Written | None:
        """The chunk catalog and the pending write intents (`written_chunks`): chunk keys are
        spread by a hash prefix, so they cannot be listed per dataset."""
        most = min(touched * CATALOG_BYTES_PER_CHUNK, CATALOG_BYTES_MAX)
        return await written_chunks(
            self.store, domain, self.dataset_id, max_intents=max(16, touched // INTENTS_PER_CHUNK), max_catalog_bytes=most
        )
