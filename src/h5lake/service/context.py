"""What every use case is handed: the service's parts and who is calling."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from h5lake.catalog.catalogs import ChunkCatalog
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.errors import AlreadyExists
from h5lake.maps.keyindex import KeyIndexes
from h5lake.model import acl
from h5lake.model.ids import domain_key
from h5lake.service.budget import ByteBudget
from h5lake.service.datasets.watch import Watch
from h5lake.service.documents import ByEtag, Documents
from h5lake.service.fences import DomainFences
from h5lake.service.objects.deleted_names import DeletedNames
from h5lake.service.views import HeadView
from h5lake.sources.files import SourceRegistry, default_registry
from h5lake.storage import Store
from h5lake.versions.content import ContentStore

log = logging.getLogger(__name__)

SCANS_AT_ONCE = 1
"""Windows of preview scanning (read and reduce) in progress at once, server-wide."""


@dataclass(frozen=True, slots=True)
class Caller:
    user: str | None
    is_admin: bool = False


@dataclass(frozen=True, slots=True)
class Limits:
    min_chunk_size: int
    max_chunk_size: int
    max_request_size: int
    max_json_size: int = 100 * 1024 * 1024  # JSON text, in and out: the encoder's own limits are far above
    compact_max_size: int = 64 * 1024  # stored bytes a dataset may keep in its document (service.datasets.compact)
    max_attribute_size: int = 1024 * 1024  # one attribute as stored (JSON), service.objects.attributes
    max_reply_size: int = 4 * 1024**3  # one binary value reply, streamed (service.values.core)
    max_query_elements: int = 10**9  # elements one value query may examine (service.values.queries)

    def to_json(self) -> dict[str, int]:
        return {
            "min_chunk_size": self.min_chunk_size,
            "max_chunk_size": self.max_chunk_size,
            "max_request_size": self.max_request_size,
            "max_json_size": self.max_json_size,
        }


@dataclass
class Service:
    store: Store
    limits: Limits
    admins: frozenset[str] = frozenset()
    public_read: bool = False
    chunk_concurrency: int = 16
    domain_objects_limit: int = 500  # GET /?getobjs=1 lists a domain's objects up to this many
    allowed_sources: tuple[str, ...] = ()
    sources: SourceRegistry | None = None  # where linked files are read; default: allowed_sources, local only
    catalog_stale_after: float = 30.0  # an intent this old is a dead process's: recover it
    catalog_recover_every: float = 30.0
    commit_lease: float = 10.0  # seconds a commit's mark on a domain lasts unrenewed (service.versions.applying)
    reply_memory: int = 1024 * 1024 * 1024  # bytes of replies made whole at once (service.budget)
    watch_interval: float = 0.5  # seconds between looks at each watched dataset (service.datasets.watch)
    watch_max_datasets: int = 256  # datasets watched at once per process; more waits get 503
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.docs = Documents(self.store)
        self.watch = Watch(self.store, interval=self.watch_interval, most=self.watch_max_datasets)
        self.docs.written = self.watch.changed
        self.described = ByEtag(most_one=256 * 1024)  # objects as domain_objs lists them (service.objects.paths)
        self.cas = ContentStore(self.store)  # versions: content-addressed chunks and manifests
        self.head = HeadView(self.docs, self.store, self.cas)
        self.fences = DomainFences()  # versions: a commit against this process's own changes
        self.deleted_names = DeletedNames()  # 410 for a link or attribute deleted here (as HSDS)
        # The one CPU pool and fan-out bound of this service: every fan-out in service/ and the
        # chunk engine runs on it (see h5lake.chunks.fanout).
        self.workers = Workers(self.chunk_concurrency, cpu_pool())
        # The web view's scans (a long line's windows, an image's bands: service.viewer.preview) run one
        # at a time, so however many plots are asked at once, the pool is never filled with them.
        self.scanning = asyncio.Semaphore(SCANS_AT_ONCE)
        # Replies read and encoded whole (h5grove data, downloads, JSON values) hold their bytes
        # from this budget until sent, so that many at once wait instead of exhausting memory.
        self.replies = ByteBudget(self.reply_memory)
        self.catalog = ChunkCatalog(
            self.store, stale_after=self.catalog_stale_after, recover_every=self.catalog_recover_every
        )
        self.docs.object_changed = self.catalog.note_object  # every object's change reaches the catalog
        self.docs.object_made = self.catalog.note_made  # a new object's line from its create
        self._background: set[asyncio.Task[Any]] = set()
        # split markers of map bucket trees seen by this process (map id -> tree); a split is
        # never undone, so a stale entry only costs a read (h5lake.maps.buckets)
        self.map_trees: dict[str, dict[int, tuple[int, int, int]]] = {}
        # key sections of map buckets read by this process, checked against each bucket's
        # header at every use (h5lake.maps.keyindex)
        self.map_indexes = KeyIndexes()
        if self.sources is None:
            self.sources = default_registry(self.allowed_sources)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run clean-up work after the reply; it is never needed for correctness."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.catalog.close()
        await self.watch.close()
        if self.sources is not None:
            await self.sources.close()
        self.workers.executor.shutdown(wait=False)

    async def ensure_home_folder(self) -> None:
        """The ``/home`` folder, where each user may make their own folder, exists from the start."""
        ts = time.time()
        owner = min(self.admins) if self.admins else "admin"
        doc = {
            "owner": owner,
            "acls": {owner: acl.full_acl(), acl.DEFAULT: acl.acl_for(read=True)},
            "created": ts,
            "lastModified": ts,
        }
        try:
            await self.docs.create(domain_key("/home"), doc, "folder /home")
        except AlreadyExists:
            pass

    def caller(self, user: str | None, *, admin: bool = False) -> Caller:
        """The caller ``user``; an admin when named by ``--admin`` or when ``admin`` (the identity
        provider said so)."""
        is_admin = user is not None and (admin or user in self.admins)
        key = (user, is_admin)
        found = _CALLERS.get(key)
        if found is None:  # a frozen dataclass costs ~1.5 us to make: one per user is kept
            if len(_CALLERS) >= _CALLERS_MAX:
                _CALLERS.clear()
            found = _CALLERS[key] = Caller(user, is_admin)
        return found


_CALLERS: dict[tuple[str | None, bool], Caller] = {}
_CALLERS_MAX = 1024


def now() -> float:
    return time.time()
