"""Walking a domain's object graph from its root group along hard links."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import TypeVar

from h5lake.service.context import Service
from h5lake.service.documents import Doc, Versioned
from h5lake.service.views import Domain
from h5lake.storage import LATER, Later

T = TypeVar("T")

_BATCH = 64


class TooMany(Exception):
    """The walk found more objects than its ``limit``."""


async def walk_objects(svc: Service, domain: Domain, limit: int | None = None) -> AsyncGenerator[Doc, None]:
    """Yield every object reachable from the root once (groups, datasets, datatypes), as the
    domain's view sees them (`walk_versioned`, its documents alone)."""
    walk = walk_versioned(svc, domain, limit)
    try:
        async for item in walk:
            yield item.doc
    finally:
        await walk.aclose()


async def walk_versioned(
    svc: Service, domain: Domain, limit: int | None = None
) -> AsyncGenerator[Versioned, None]:
    """Yield every object reachable from the root once (groups, datasets, datatypes), as the
    domain's view sees them, each with the ETag it was read with.

    Objects are fetched in bounded concurrent batches; a dangling link is skipped. With a
    ``limit``, :class:`TooMany` is raised as soon as more distinct ids than that have been
    linked (counted from the links read, before their objects are: a group of 1,000 links is
    found too large when it is read, not after 1,000 reads); a dangling link counts too.
    """
    async def fetch(obj_id: str) -> tuple[Versioned, str | None, list[str]] | None:
        item = await domain.view.object(obj_id)
        if item is None:
            return None
        return item, item.doc.get("root"), linked_ids(item.doc)

    walk = walk_graph(svc, domain.require_root(), limit, fetch)
    try:
        async for item in walk:
            yield item
    finally:
        await walk.aclose()


async def walk_graph(
    svc: Service,
    root: str,
    limit: int | None,
    fetch: Callable[[str], Awaitable[tuple[T, str | None, Iterable[str]] | None]],
    at_once: Callable[[str], tuple[T, str | None, Iterable[str]] | None | Later] | None = None,
) -> AsyncGenerator[T, None]:
    """`walk_versioned`'s walk, over what ``fetch`` gives for an id: a value to yield, the root
    its object names, and the ids it links to (None for an object that is not there). With
    ``at_once``, each id is first asked of it, and only those it answers `LATER` are fetched,
    concurrently: a task per object cost more than the answer of one read lately (~20% of a
    listing's CPU)."""
    seen = {root}
    frontier = [root]
    while frontier:
        if limit is not None and len(seen) > limit:
            raise TooMany(len(seen))
        batch, frontier = frontier[:_BATCH], frontier[_BATCH:]
        found: list[tuple[T, str | None, Iterable[str]] | None | Later]
        if at_once is None:
            found = [*await svc.workers.map(batch, fetch)]
        else:
            found = [at_once(obj_id) for obj_id in batch]
            waits = [n for n, item in enumerate(found) if item is LATER]
            if waits:
                fetched = await svc.workers.map([batch[n] for n in waits], fetch)
                for n, got in zip(waits, fetched, strict=True):
                    found[n] = got
            else:
                await asyncio.sleep(0)  # others run between batches, as between tasks
        for item in found:
            assert not isinstance(item, Later)
            if item is None or item[1] != root:
                continue
            yield item[0]
            for target in item[2]:
                if target not in seen:
                    seen.add(target)
                    frontier.append(target)


def linked_ids(doc: Doc) -> list[str]:
    """The ids an object's document links to: its hard links' targets, a dataset's committed type."""
    targets = [l.get("id") for l in doc.get("links", {}).values()]
    type_ref = doc.get("type", {}).get("id") if isinstance(doc.get("type"), dict) else None
    return [t for t in targets + [type_ref] if isinstance(t, str)]
