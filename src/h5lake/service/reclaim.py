"""Reclaiming storage of deleted domains and datasets, after the delete has been answered.

Deletion is acknowledged once the domain (or dataset) document is gone, which makes everything
below it unreachable; the objects and chunks are then removed in the background. A crash in
between leaves only unreachable objects behind, never a visible half-deleted domain.
"""

from __future__ import annotations

import asyncio
import logging

from h5lake.model.ids import catalog_key, object_key
from h5lake.service.context import Service
from h5lake.service.documents import Doc
from h5lake.service.domains import Domain

log = logging.getLogger(__name__)


async def reclaim_domain(svc: Service, path: str, root: str) -> None:
    from h5lake.service.walk import walk_objects

    try:
        domain = Domain(path, {"root": root}, "")
        docs = [doc async for doc in walk_objects(svc, domain)]
        for doc in docs:
            if doc["id"].startswith("d-"):
                await reclaim_dataset_chunks(svc, path, doc)
        await asyncio.gather(*(svc.store.delete(object_key(d["id"])) for d in docs))
        await asyncio.gather(
            *(svc.store.delete(catalog_key(path, name)) for name in (".groups.txt", ".datasets.txt", ".datatypes.txt"))
        )
    except Exception:  # background clean-up: log, never crash the server
        log.exception("reclaiming domain %s failed", path)


async def reclaim_dataset_chunks(svc: Service, path: str, dataset: Doc) -> None:
    """Remove a deleted dataset's chunk objects (listed by its chunk catalog)."""
    from h5lake.chunks.catalog import delete_dataset_chunks

    try:
        await delete_dataset_chunks(svc.store, path, dataset)
    except Exception:
        log.exception("reclaiming chunks of %s failed", dataset.get("id"))
