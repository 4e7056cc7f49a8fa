"""Reclaiming storage of deleted domains and datasets, after the delete has been answered.

Deletion is acknowledged once the domain (or dataset) document is gone, which makes everything
below it unreachable; the objects and chunks are then removed in the background, a bounded
number at a time. A crash in between leaves only unreachable objects behind, never a visible
half-deleted domain.
"""

from __future__ import annotations

import logging

from h5lake.catalog.catalogs import delete_dataset_chunks
from h5lake.maps.buckets import reachable_buckets
from h5lake.model.ids import (
    CATALOG_FILES,
    TOMBSTONES,
    Collection,
    catalog_key,
    changed_key,
    derived_keys,
    domain_key,
    domain_prefix,
    object_key,
    parse_id,
    same_domain,
    versions_prefix,
)
from h5lake.service.context import Service
from h5lake.service.documents import Doc
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.views import Domain
from h5lake.service.walk import walk_objects

log = logging.getLogger(__name__)

_CATALOGS = tuple(CATALOG_FILES.values())


async def reclaim_domain(svc: Service, path: str, root: str) -> None:
    try:
        domain = Domain(path, {"root": root}, "", svc.head)
        docs = [doc async for doc in walk_objects(svc, domain)]
        for doc in docs:
            if parse_id(doc["id"]) in (Collection.DATASETS, Collection.MAPS):
                await reclaim_dataset_chunks(svc, path, doc)
        await svc.workers.each(docs, lambda d: svc.store.delete(object_key(d["id"])))
        valued = [d for d in docs if attrvalues.outside_refs(d.get("attributes") or {})]
        await svc.workers.each(valued, lambda d: attrvalues.collect(svc, d["id"], None))
        # The path's own state. A domain made there again meanwhile (its creator cleared what
        # the deleted one left, `clear_path`) owns it now: only the deleted domain's marks go.
        await clear_path(svc, path, root)
        await svc.workers.each(derived_keys(root), svc.store.delete)
    except Exception:  # background clean-up: log, never crash the server
        log.exception("reclaiming domain %s failed", path)


async def clear_path(svc: Service, path: str, root: str | None = None) -> None:
    """Delete what a deleted domain left under its path: its history (records, tags, a fork's
    base; the manifests and chunks are left to gc), its catalogs and its objects' deletion
    marks. ``root``: the background reclaim of the domain of that root, which leaves the
    history and catalogs to a domain made at the path again (and only deletes marks of its
    own objects); without it (the creator of a new domain at the path, before it exists),
    everything goes. The history is looked at first and the marks last, so the reclaim's
    marks being gone says it is done."""
    if root is None or await svc.store.head(domain_key(path)) is None:
        history = [k async for k in svc.store.list(versions_prefix(path))]
        if root is None or await svc.store.head(domain_key(path)) is None:  # not made again while listed
            await svc.workers.each(history, svc.store.delete)
            await svc.workers.each(_CATALOGS, lambda name: svc.store.delete(catalog_key(path, name)))
            await svc.store.delete(changed_key(path))
    prefix = domain_prefix(path) + TOMBSTONES
    gone = [k async for k in svc.store.list(prefix)
            if root is None or same_domain(k[len(prefix):], root)]
    await svc.workers.each(gone, svc.store.delete)


async def reclaim_dataset_chunks(svc: Service, path: str, dataset: Doc) -> None:
    """Remove a deleted dataset's chunk objects (listed by its chunk catalog), or a deleted map's
    pair buckets (those its catalog lists and those reachable from its root bucket)."""
    try:
        more = []
        if Collection.of(dataset["id"]) is Collection.MAPS:
            more = [(b.node,) for b in await reachable_buckets(svc.store, dataset["id"], svc.workers)]
        await delete_dataset_chunks(svc.store, path, dataset, more)
    except Exception:
        log.exception("reclaiming chunks of %s failed", dataset.get("id"))
