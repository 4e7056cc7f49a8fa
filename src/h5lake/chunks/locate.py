"""Where a chunk's bytes are: the one seam between chunk planning and storage.

Native chunks, chunks inside HDF5 files and chunks shared by versions differ only in how a
`ChunkLocator` answers `locate`; everything before (selection, projection) and after (fetch,
decode, assemble) is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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


class NativeChunks:
    """Chunks stored as objects of their own, keyed as the seed schema says."""

    writable = True

    def __init__(self, store: Store, dataset_id: str) -> None:
        self.store = store
        self.dataset_id = dataset_id

    def key(self, index: tuple[int, ...]) -> str:
        return chunk_key(self.dataset_id, index)

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        return ChunkRef(self.store, self.key(index))

    async def original(self, index: tuple[int, ...]) -> bytes | None:
        """The bytes a chunk not yet written has (None: fill); a forked dataset's come from
        its source version (`h5lake.chunks.cas.ForkedChunks`)."""
        return None
