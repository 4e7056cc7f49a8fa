"""Walking a domain's object graph from its root group along hard links."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from h5lake.service.context import Service
from h5lake.service.documents import Doc
from h5lake.service.views import Domain

_BATCH = 64


async def walk_objects(svc: Service, domain: Domain) -> AsyncGenerator[Doc, None]:
    """Yield every object reachable from the root once (groups, datasets, datatypes), as the
    domain's view sees them.

    Objects are fetched in bounded concurrent batches; a dangling link is skipped.
    """
    root = domain.require_root()
    seen = {root}
    frontier = [root]
    while frontier:
        batch, frontier = frontier[:_BATCH], frontier[_BATCH:]
        found = await svc.workers.map(batch, domain.view.object)
        for item in found:
            if item is None or item.doc.get("root") != root:
                continue
            doc = item.doc
            yield doc
            targets = [l.get("id") for l in doc.get("links", {}).values()]
            type_ref = doc.get("type", {}).get("id") if isinstance(doc.get("type"), dict) else None
            for target in targets + [type_ref]:
                if isinstance(target, str) and target not in seen:
                    seen.add(target)
                    frontier.append(target)
