"""Write intents of the catalog (`h5lake.catalog.catalogs`): the chunks a write may touch."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from h5lake.model.stored import IntentRecord

Index = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Intent:
    """A durable note that a write is under way (``key`` None: it touches no chunk)."""

    key: str | None


class Recording:
    """One write of chunks between its intent and its note (`ChunkCatalog.recording`).
    ``written`` is what the note records: the chunks the intent named, unless the write sets the
    chunks it did touch, or None to note nothing. ``intent`` is None while the intent is being
    written beside the write (``early``): the write awaits `ready` before it places anything."""

    __slots__ = ("_begun", "intent", "written")

    def __init__(self, intent: Intent | asyncio.Future[Intent], written: Iterable[Index] | None) -> None:
        self._begun = intent if isinstance(intent, asyncio.Future) else None
        self.intent: Intent | None = intent if isinstance(intent, Intent) else None
        self.written = written

    async def ready(self) -> Intent:
        """The intent, durable."""
        if self.intent is None:
            assert self._begun is not None
            self.intent = await asyncio.shield(self._begun)
        return self.intent

    def failed(self) -> Intent | None:
        """The write failed: its intent if it was written (to abort). One still being written is
        cancelled; its put may land all the same, and is then left to recovery as an aborted one
        is (nothing was placed before it was durable)."""
        begun = self._begun
        if self.intent is None and begun is not None:
            if begun.done() and not begun.cancelled() and begun.exception() is None:
                self.intent = begun.result()
            else:
                begun.cancel()
        return self.intent


def region_json(indexes: Iterable[Index]) -> IntentRecord:
    """Chunk indexes as an intent stores them: their bounding box ``lo <= i < hi`` when it holds
    at most twice as many chunks (a hyperslab's chunks fill their box), else the list."""
    found = sorted({tuple(i) for i in indexes})
    if not found:
        return {"chunks": []}
    lo = [min(c) for c in zip(*found)]
    hi = [max(c) + 1 for c in zip(*found)]
    if math.prod(h - low for low, h in zip(lo, hi)) <= 2 * len(found):
        return {"lo": lo, "hi": hi}
    return {"chunks": [list(i) for i in found]}


def region_indexes(doc: IntentRecord) -> Iterator[Index]:
    if "chunks" in doc:
        return (tuple(int(c) for c in ix) for ix in doc["chunks"])
    return itertools.product(*(range(int(a), int(b)) for a, b in zip(doc["lo"], doc["hi"])))
