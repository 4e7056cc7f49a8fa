"""Where a chunk's bytes are: the one seam between chunk planning and storage.

Native chunks, chunks inside HDF5 files and chunks shared by versions differ only in how a
`ChunkLocator` answers `locate`; everything before (selection, projection) and after (fetch,
decode, assemble) is shared.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Protocol, TypeGuard, cast, runtime_checkable

from h5lake.chunks.capability import capable
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
        """Where the chunk's bytes are if it has any; None when the locator knows, without a store
        call, that it has none. Either way a chunk without bytes reads as fill: a ref to an object
        that does not exist reads as fill too (a native locator answers a ref for every index,
        and the fetch finds out)."""
        ...


@runtime_checkable
class RangedChunks(Protocol):
    """A locator whose chunks are byte ranges of larger objects (chunks inside HDF5 files): the
    engine reads neighbouring chunks together and a chunk in part (`chunks/ranged.py`)."""

    ranged: bool


@runtime_checkable
class ListsWritten(Protocol):
    """A locator that can say at once which of its chunks may exist (optional: the engine asks
    it before reading many chunks, so the ones never written cost no store call)."""

    async def written(self, domain: str, touched: int) -> Container[tuple[int, ...]] | None:
        """The chunks that may exist (any other reads as fill), or None when finding out would
        cost more than reading the ``touched`` chunks one by one."""
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
        its source version (`h5lake.versions.content.ForkedChunks`)."""
        return None


def reads_ranged(locator: ChunkLocator) -> bool:
    """Whether the engine reads this locator's chunks as byte ranges (`RangedChunks`)."""
    return capable(locator, RangedChunks) and bool(cast(RangedChunks, locator).ranged)


def lists_written(locator: ChunkLocator) -> TypeGuard[ListsWritten]:
    """Whether the locator can say which of its chunks may exist (`ListsWritten`)."""
    return capable(locator, ListsWritten)
