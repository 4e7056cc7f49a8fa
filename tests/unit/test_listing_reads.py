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
