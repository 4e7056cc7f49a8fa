"""Compact values: a small dataset's chunks kept inside its document (seed 004's "Small" case).

Opening and reading such a dataset reads one stored object, not two. The document holds

    "compact": {"chunks": {"0": "<base64 of the stored chunk>", "1_0": ...}}

the same bytes a chunk object would hold (the dataset's filter pipeline applied), keyed by chunk
index as in chunk keys. A chunk not listed reads as fill. ``creationProperties`` and ``layout``
are unchanged: this is where values are kept, not a layout the client chose.

* A native dataset is created compact when the chunks covering its extent hold at most
  ``Limits.compact_max_size`` bytes.
* Every write of a compact dataset is one conditional update of the document: the chunks are
  decoded from the document as it is, changed by the ordinary chunk engine (on a scratch store),
  and written back if-match; a lost race runs the write again on the document as it is then.
* Growing past the limit (a write whose stored chunks exceed it, or a resize or prepend whose
  extent does) moves the values to chunk objects in three steps, each safe to repeat by anyone:
  1. the update that grows it marks ``"moving": true``: from then on the listed chunks never
     change (writers that see the mark help finish the move and then write chunk objects);
  2. each listed chunk is stored as a chunk object, create-only (one already there is either the
     same bytes, stored by another helper, or newer: written after step 3);
  3. a conditional update drops ``compact`` from the document; from then on values are chunks.
  No write is lost: before step 1 writes are document updates (if-match), after it they wait
  for the chunk objects of step 2 and go to them.
"""

from __future__ import annotations

import asyncio
import base64
import math
import random
from collections.abc import Awaitable, Callable
from typing import Any

from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.inline import KEY, listed_chunks
from h5lake.chunks.locate import NativeChunks
from h5lake.errors import Conflict
from h5lake.model.ids import index_name, object_key
from h5lake.model.layout import chunk_span, is_linked, span_count
from h5lake.model.shapes import SpaceClass, space_from_json
from h5lake.model.stored import DatasetDoc, as_dataset
from h5lake.model.types import to_dtype
from h5lake.service.context import Service, now
from h5lake.service.datasets.dataset_layout import compact_layout
from h5lake.service.datasets.shrink import kept_region, reset_outside
from h5lake.service.documents import Unchanged
from h5lake.service.views import Domain
from h5lake.storage.base import PreconditionFailed

_MAX_ATTEMPTS = 100

Work = Callable[[DatasetLayout], Awaitable[Any]]


def is_compact(doc: DatasetDoc) -> bool:
    return KEY in doc


def is_moving(doc: DatasetDoc) -> bool:
    return bool(doc.get(KEY, {}).get("moving"))


def extent_bytes(doc: DatasetDoc) -> int:
    """Bytes of the chunks that cover the dataset's extent, unfiltered (what its values take
    when every chunk is written)."""
    space = space_from_json(doc["shape"])
    if space.kind is SpaceClass.NULL:
        return 0
    layout = doc.get("layout") or {}
    chunk = layout.get("dims") or []
    itemsize = to_dtype(doc["type"]).itemsize
    if space.kind is SpaceClass.SCALAR or not chunk:
        return itemsize
    span = chunk_span(space.dims, chunk, layout.get("origin") or ())
    return span_count(span) * math.prod(chunk) * itemsize


def start_compact(doc: DatasetDoc, limit: int) -> None:
    """At creation: keep the values of a small native dataset in its document."""
    if is_linked(doc) or space_from_json(doc["shape"]).kind is SpaceClass.NULL:
        return
    if 0 < extent_bytes(doc) <= limit:
        doc[KEY] = {"chunks": {}}


def mark_moving_if_grown(doc: DatasetDoc, limit: int) -> None:
    """After a resize (in the same update): a compact dataset whose extent passed the limit
    starts moving to chunk objects."""
    if is_compact(doc) and not is_moving(doc) and extent_bytes(doc) > limit:
        doc[KEY]["moving"] = True


def trim(doc: DatasetDoc, keep: DatasetLayout) -> None:
    """In the update that shrinks a compact dataset to ``keep.shape``: drop the listed chunks
    wholly outside it and reset the part outside of those it crosses to fill (one atomic step
    with the new shape; `service.datasets.shrink`)."""
    out: dict[str, str] = {}
    for index, data in stored_chunks(doc).items():
        region = kept_region(keep, index)
        if region is None:
            continue
        chunk = keep.codec.decode(data).copy()
        reset_outside(chunk, region, keep.fill)
        out[index_name(index)] = base64.b64encode(keep.codec.encode(chunk)).decode()
    doc[KEY]["chunks"] = out


def stored_chunks(doc: DatasetDoc) -> dict[tuple[int, ...], bytes]:
    return listed_chunks(doc.get(KEY, {}).get("chunks", {}))


async def write(svc: Service, domain: Domain, doc: DatasetDoc | None, etag: str | None, dataset_id: str, work: Work) -> DatasetDoc | None:
    """Run ``work`` (a chunk write) on a compact dataset as one conditional update of its
    document. Returns None when done, or the document (no longer compact) whose chunk objects
    the write must go to instead."""
    key = object_key(dataset_id)
    for attempt in range(_MAX_ATTEMPTS):
        if doc is None or etag is None:
            found = await svc.docs.require(key, f"dataset {dataset_id}")
            doc, etag = as_dataset(found.doc), found.etag
        if not is_compact(doc):
            return doc
        if is_moving(doc):
            return await finish_move(svc, domain, doc)
        layout = compact_layout(domain, doc)
        assert layout is not None
        await work(layout)
        held = layout.locator.store  # type: ignore[attr-defined]
        new: DatasetDoc = {**doc, KEY: {"chunks": held.contents(dataset_id)}, "lastModified": now()}
        moving = held.size() > svc.limits.compact_max_size
        if moving:
            new[KEY]["moving"] = True
        try:
            await svc.docs.put_object(domain.path, dataset_id, new, if_match=etag)
        except PreconditionFailed:
            doc = etag = None
            await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
            continue
        if moving:
            await finish_move(svc, domain, new)
        return None
    raise Conflict(f"dataset {dataset_id} is being written too often; try again")


async def finish_move(svc: Service, domain: Domain, doc: DatasetDoc) -> DatasetDoc:
    """Steps 2 and 3 of a move (see the module docstring); returns the document after it."""
    dataset_id = doc["id"]
    chunks = stored_chunks(doc)
    target = domain.view.chunks(dataset_id)
    assert isinstance(target, NativeChunks)
    async def store(item: tuple[tuple[int, ...], bytes]) -> None:
        try:
            await target.store.put(target.key(item[0]), item[1], if_none_match=True)
        except PreconditionFailed:
            pass  # stored by another helper of this move, or written since it ended

    async with svc.catalog.recording(domain.path, dataset_id, list(chunks)):
        await svc.workers.each(list(chunks.items()), store)

    def drop(current: DatasetDoc) -> Any:
        if not is_moving(current):
            return Unchanged(None)
        del current[KEY]
        current["lastModified"] = now()
        return None

    after, _ = await svc.docs.update_object(domain.path, dataset_id, drop, f"dataset {dataset_id}")
    return after

