"""A page of ``GET /?getobjs=1`` reads its documents a batch at a time (`listing.DOCUMENT_READS`
at once), not at the service's fan-out bound for chunks: on S3 each read is a round trip."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from h5lake.chunks.fanout import Workers
from h5lake.model.ids import Collection, new_object_id, new_root_id
from h5lake.service.documents import Versioned
from h5lake.service.objects import listing
from h5lake.service.views import Domain


class _SlowView:
    """Documents by id, each read taking a moment; counts the reads running at once."""

    def __init__(self, docs: dict[str, dict[str, Any]]) -> None:
        self.docs = docs
        self.running = self.most = 0

    async def object(self, obj_id: str) -> Versioned | None:
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.002)
        self.running -= 1
        doc = self.docs.get(obj_id)
        return None if doc is None else Versioned(doc, "etag")


def test_a_page_reads_a_batch_of_documents_at_once() -> None:
    root = new_root_id()
    children = [new_object_id(Collection.GROUPS, root) for _ in range(150)]
    docs: dict[str, dict[str, Any]] = {root: {"id": root, "root": root, "links": {
        f"g{i:03d}": {"class": "H5L_TYPE_HARD", "id": c} for i, c in enumerate(children)}}}
    for c in children:
        docs[c] = {"id": c, "root": root, "links": {}}
    view = _SlowView(docs)
    domain = Domain("/d.h5", {"root": root}, "etag", view)  # type: ignore[arg-type]
    svc = SimpleNamespace(workers=Workers(16, None))  # type: ignore[arg-type]  # the service's bound for chunks
    page = asyncio.run(listing.objects_page(svc, domain, 1000, None))  # type: ignore[arg-type]
    assert set(page.objects) == {root, *children} and page.next_marker is None
    assert view.most == listing.DOCUMENT_READS > 16


def test_a_resumed_page_reads_the_groups_it_enters_together() -> None:
    """A page that resumes inside a group whose groups the page before listed reads their
    documents (and then their targets) a batch at a time, not one round trip per group."""
    root = new_root_id()
    top = new_object_id(Collection.GROUPS, root)
    groups = [new_object_id(Collection.GROUPS, root) for _ in range(150)]
    datasets = [new_object_id(Collection.DATASETS, root) for _ in groups]
    docs: dict[str, dict[str, Any]] = {
        root: {"id": root, "root": root, "links": {"top": {"class": "H5L_TYPE_HARD", "id": top}}},
        top: {"id": top, "root": root, "links": {
            f"g{i:03d}": {"class": "H5L_TYPE_HARD", "id": g} for i, g in enumerate(groups)}},
    }
    for g, d in zip(groups, datasets, strict=True):
        docs[g] = {"id": g, "root": root, "links": {"values": {"class": "H5L_TYPE_HARD", "id": d}}}
        docs[d] = {"id": d, "root": root}
    svc = SimpleNamespace(workers=Workers(16, None))
    listed: set[str] = set()
    marker = None
    pages = []
    while True:
        view = _SlowView(docs)
        domain = Domain("/d.h5", {"root": root}, "etag", view)  # type: ignore[arg-type]
        reads = _counted(view)
        page = asyncio.run(listing.objects_page(svc, domain, 200, marker))  # type: ignore[arg-type]
        pages.append((len(page.objects), reads[0], view.most))
        listed |= set(page.objects)
        marker = page.next_marker
        if marker is None:
            break
    assert listed == set(docs)
    assert len(pages) == 2
    count, reads, most = pages[1]  # resumed in /top, its groups listed by the first page
    assert most > 16  # the groups and their datasets read a batch at a time
    assert reads <= count + 150 + 2  # each object listed once, each group it enters once, the path


def _counted(view: _SlowView) -> list[int]:
    reads = [0]
    read = view.object

    async def counting(obj_id: str) -> Versioned | None:
        reads[0] += 1
        return await read(obj_id)

    view.object = counting  # type: ignore[method-assign]
    return reads
