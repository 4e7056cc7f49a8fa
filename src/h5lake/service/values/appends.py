"""Appends that readers never see half done: reserve the rows, write them, then show them.

An append (``PUT /datasets/{id}/value?append=n``) takes its rows in three steps:

1. **reserve**: one conditional update of the dataset's document moves the reserved top along
   the append axis by ``n`` and records the region ``[start, stop)`` as pending
   (``doc["appends"]``); the visible ``shape`` does not change, so concurrent appenders each get
   a region of their own and no reader sees it yet;
2. the writer writes its values into that region (chunks, as any write), through a layout whose
   extent reaches the reserved top;
3. **publish**: a second update removes the region from the pending ones and sets the visible
   extent to the start of the lowest region still pending (all rows below it are written), or
   to the reserved top when none is.

So a reader that sees an extent can read every row inside it. A region pending longer than
``STALE_SECONDS`` (its writer died) no longer holds the extent back at the next publish or resize:
its rows read as the fill value. A resize (``PUT /datasets/{id}/shape``) while regions are
pending and fresh is a `Conflict` (409, try again). Compact datasets and datasets linked to HDF5
files keep the older order (grow, then write): their values are written by other updates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from h5lake.errors import Conflict, InvalidInput
from h5lake.model.ids import object_key
from h5lake.model.layout import is_linked
from h5lake.model.selection import Selection, Slice
from h5lake.model.stored import DatasetDoc
from h5lake.service.context import Service
from h5lake.service.datasets import compact, shrink
from h5lake.service.documents import Unchanged
from h5lake.service.views import Domain

KEY: Final = "appends"
"""The document's record of reserved appends: ``{"axis": a, "top": t, "pending": [[start, stop, since], ...]}``."""

STALE_SECONDS = 60.0
"""A pending region older than this is taken for its writer's death."""


def reservable(doc: DatasetDoc) -> bool:
    """Whether an append to this dataset reserves its rows first (not compact, not linked, no
    cleaning or move owed)."""
    return not (compact.is_compact(doc) or is_linked(doc) or shrink.pending(doc) is not None)


@dataclass(frozen=True, slots=True)
class Reserved:
    """Rows ``[start, stop)`` along ``axis`` reserved for one append, and the document after."""

    doc: DatasetDoc
    axis: int
    start: int
    stop: int

    def writable_doc(self) -> DatasetDoc:
        """The document with its extent past the reserved rows by a chunk (what the writes go
        through): the chunk holding the last rows is then never taken for an edge chunk this
        write covers whole, which would replace rows a later appender wrote beyond them."""
        shape = dict(self.doc["shape"])
        dims = list(shape["dims"])
        chunk = (self.doc.get("layout") or {}).get("dims") or []
        dims[self.axis] = max(dims[self.axis], self.stop + (chunk[self.axis] if len(chunk) > self.axis else 1))
        shape["dims"] = dims
        return {**self.doc, "shape": shape}

    def rows(self) -> Selection:
        """The reserved rows, whole along the other dimensions."""
        dims = self.doc["shape"]["dims"]
        return Selection(tuple(Slice(self.start, self.stop) if i == self.axis else Slice(0, n) for i, n in enumerate(dims)))


async def reserve(svc: Service, domain: Domain, dset_id: str, count: int, axis: int) -> Reserved | None:
    """Reserve ``count`` rows along ``axis``; None when the dataset does not reserve (`reservable`).
    A compact dataset's values move to chunk objects first (a dataset appended to is growing)."""
    found: list[tuple[int, int]] = []

    def mark_moving(doc: DatasetDoc) -> object:
        if not compact.is_compact(doc) or compact.is_moving(doc) or is_linked(doc):
            return Unchanged(None)
        doc[compact.KEY] = {**doc[compact.KEY], "moving": True}
        return None

    doc, _ = await svc.docs.update(object_key(dset_id), mark_moving, f"dataset {dset_id}")
    if compact.is_moving(doc):
        await compact.finish_move(svc, domain, doc)

    def mutate(doc: DatasetDoc) -> object:
        if not reservable(doc):
            return Unchanged(None)
        settle(doc)
        shape = doc["shape"]
        dims, maxdims = list(shape["dims"]), shape.get("maxdims")
        record = doc.get(KEY)
        if record is not None and record["axis"] != axis:
            raise Conflict("appends along another dimension are in progress; try again")
        start = record["top"] if record is not None else dims[axis]
        stop = start + count
        if maxdims is None:
            raise InvalidInput(f"the dataset is not extensible (no maxdims): dimension {axis} cannot grow")
        limit = maxdims[axis]
        if isinstance(limit, int) and stop > limit:
            raise Conflict(f"dimension {axis} cannot grow past its maximum {limit}")
        pending = [*(record["pending"] if record is not None else []), [start, stop, time.time()]]
        doc[KEY] = {"axis": axis, "top": stop, "pending": pending}
        found[:] = [(start, stop)]
        return None

    doc, _ = await svc.docs.update(object_key(dset_id), mutate, f"dataset {dset_id}")
    if not found:
        return None
    return Reserved(doc, axis, *found[0])


async def publish(svc: Service, dset_id: str, reserved: Reserved) -> DatasetDoc:
    """The rows of ``reserved`` are written (or given up): show every row below the lowest
    region still pending."""

    def mutate(doc: DatasetDoc) -> object:
        record = doc.get(KEY)
        if record is not None:
            record["pending"] = [p for p in record["pending"] if p[0] != reserved.start]
        settle(doc)
        return None

    doc, _ = await svc.docs.update(object_key(dset_id), mutate, f"dataset {dset_id}")
    return doc


def settle(doc: DatasetDoc) -> bool:
    """Drop stale pending regions and set the visible extent as far as the rows are written;
    with none left pending, the record goes. True when regions are still pending."""
    record = doc.get(KEY)
    if record is None:
        return False
    now = time.time()
    pending = [p for p in record["pending"] if now - p[2] < STALE_SECONDS]
    axis = record["axis"]
    visible = min(p[0] for p in pending) if pending else record["top"]
    shape = doc["shape"]
    if visible > shape["dims"][axis]:
        dims = list(shape["dims"])
        dims[axis] = visible
        doc["shape"] = {**shape, "dims": dims}
        doc["lastModified"] = now
    if pending:
        doc[KEY] = {**record, "pending": pending}
        return True
    del doc[KEY]
    return False


def check_no_appends(doc: DatasetDoc) -> None:
    """For a resize: settle the record; 409 while appends are in progress."""
    if settle(doc):
        raise Conflict("appends to this dataset are in progress; try the resize again")
