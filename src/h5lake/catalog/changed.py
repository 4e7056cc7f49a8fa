"""A domain's last change, kept where a listing can read it in one request (``<domain>/
.changed.txt``, `h5lake.model.ids.changed_key`).

Writes below the domain document (values, attributes, links, map pairs) do not rewrite it, so
its ``lastModified`` stays at its last own change. The catalog flusher
(`h5lake.catalog.catalogs.ChunkCatalog`) already hears of every write a moment after it is
acknowledged; once per flush, for each domain written, it moves this stamp forward to the time
of the newest write it merged. Cost: one small read and one conditional put per domain per flush
(writes within the catalog's ``delay`` share them), off the request path; a listing reads one
small object per domain listed. It lags a write by about the flush delay, as the catalogs do.
"""

from __future__ import annotations

import asyncio
import random

from h5lake.errors import Conflict
from h5lake.model import ids
from h5lake.storage.base import PreconditionFailed, Store

_MAX_ATTEMPTS = 20


def _parse(data: bytes) -> float | None:
    try:
        value = float(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None
    return value if value >= 0 else None


async def last_changed(store: Store, domain: str) -> float | None:
    """The time of the newest write the flusher recorded for ``domain`` (None: none yet)."""
    blob = await store.get(ids.changed_key(domain))
    return _parse(blob.data) if blob is not None else None


async def advance(store: Store, domain: str, at: float) -> None:
    """Move ``domain``'s stamp forward to ``at`` (never back: of several processes' stamps the
    newest stays; a lost race is read again)."""
    key = ids.changed_key(domain)
    for attempt in range(_MAX_ATTEMPTS):
        blob = await store.get(key)
        current = _parse(blob.data) if blob is not None else None
        if current is not None and current >= at:
            return
        try:
            await store.put(key, b"%.3f" % at, if_match=blob.etag if blob else None,
                            if_none_match=blob is None)
            return
        except PreconditionFailed:
            await asyncio.sleep(random.uniform(0, 0.005 * (attempt + 1)))
    raise Conflict(f"{key!r} is being updated too often")
