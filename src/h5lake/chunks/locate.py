"""Where a chunk's bytes are: the one seam between chunk planning and storage.

Native chunks, chunks inside HDF5 files and chunks shared by versions differ only in how a
`ChunkLocator` answers `locate`; everything before (selection, projection) and after (fetch,
decode, assemble) is shared.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Protocol

from h5lake.chunks.written import written_chunks
from h5lake.model.ids import chunk_key
from h5lake.storage.base import ByteRangeSource, Store


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """A chunk's stored bytes: the whole object ``key`` of ``source``, or ``length`` bytes of it
    from ``offset``. ``filter_mask`` has bit i set when filter i was skipped for this chunk."""

    source: ByteRangeSource
    key: str
    offset: int | None = None
    length: int | None = None
    filter_mask: int = 0


class ChunkLocator(Protocol):
    writable: bool

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        """The chunk's bytes, or None when the chunk was never written (it reads as fill)."""
        ...


class ListsWritten(Protocol):
    """A locator that can say at once which of its chunks may exist (optional: the engine asks
    it before reading many chunks, so the ones never written cost no store call)."""

    async def written(self, domain: str, touched: int) -> Container[tuple[int, ...]] | None:
        """The chunks that may exist (any other reads as fill), or None when finding out would
        cost more than reading the ``touched`` chunks one by one."""
        ...


INTENTS_PER_CHUNK = 4  # at most one pending intent read per 4 chunks a read touches
CATALOG_BYTES_PER_CHUNK = 1024  # ~20 catalog lines (~1 us each) per chunk touched: less than a miss costs
CATALOG_BYTES_MAX = 2 << 20  # ~40,000 lines: parsed on the event loop, so ~0.1 s at most


class NativeChunks:
    """Chunks stored as objects of their own, keyed as the seed schema says."""

    writable = True

    def __init__(self, store: Store, dataset_id: str, *, cataloged: bool = True) -> None:
        self.store = store
        self.dataset_id = dataset_id
        self.cataloged = cataloged  # chunk objects of a head dataset, with a chunk catalog

    def key(self, index: tuple[int, ...]) -> str:
        return chunk_key(self.dataset_id, index)

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        return ChunkRef(self.store, self.key(index))

    async def written(self, domain: str, touched: int) -> Container[tuple[int, ...]] | None:
        """The chunk catalog and the pending write intents (`h5lake.chunks.written.written_chunks`):
        chunk keys are spread by a hash prefix, so they cannot be listed per dataset."""
        if not self.cataloged:
            return None
        most = min(touched * CATALOG_BYTES_PER_CHUNK, CATALOG_BYTES_MAX)
        return await written_chunks(
            self.store, domain, self.dataset_id, max_intents=max(16, touched // INTENTS_PER_CHUNK), max_catalog_bytes=most
        )

    async def original(self, index: tuple[int, ...]) -> bytes | None:
        """The bytes a chunk not yet written has (None: fill); a forked dataset's come from
        its source version (`h5lake.chunks.cas.ForkedChunks`)."""
        return None
