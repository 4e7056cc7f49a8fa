"""The content-addressed store of versions (docs/versions.md): chunk bytes and manifests kept
once per bucket under the SHA-256 of their bytes, written create-only, and the read-only
`ChunkLocator` of a committed dataset.

* ``<sha256>.blob``: a committed chunk's stored (encoded) bytes; made as a copy of the head's
  chunk where the store can (``CopyObject``: on a local directory a hard link, so the head and
  its latest version keep those bytes once);
* ``<sha256>.tree``: a manifest, canonical JSON (sorted keys); immutable, so a process keeps
  recently read ones in a bounded LRU.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, cast

import orjson

from h5lake.chunks.capability import copies
from h5lake.chunks.locate import ChunkRef, NativeChunks
from h5lake.errors import DataCorruption, NotFound
from h5lake.model.ids import blob_key, index_name, parse_index_name, tree_key
from h5lake.model.stored import Manifest, RootManifest
from h5lake.storage.base import PreconditionFailed, Store

TREE_CACHE = 4096  # manifests kept per process
REFRESH_AFTER = 1800.0  # an existing blob older than this is re-put on reuse (gc's default grace: 3600 s)

Tree = dict[str, Any]


def sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


class ContentStore:
    """Blobs and manifests by content hash over one `Store`."""

    def __init__(self, store: Store, cache_size: int = TREE_CACHE) -> None:
        self.store = store
        self.cache_size = cache_size
        self._trees: OrderedDict[str, Tree] = OrderedDict()
        self.written = 0  # bytes this process wrote (blobs and trees), for the benchmark
        self.linked = 0  # bytes of blobs made as copies of head chunks (``copy_blob``)

    async def put_blob(self, data: bytes, sha: str | None = None) -> str:
        """Store a chunk's bytes once; ``sha`` is their SHA-256 when the caller has it."""
        sha = sha or sha256(data)
        await self._put_once(blob_key(sha), data)
        return sha

    async def copy_blob(self, source: str, etag: str, data: bytes, sha: str) -> None:
        """Store ``data`` once, where ``data`` (SHA-256 ``sha``) is what object ``source`` holds
        while its ETag is ``etag`` (a head chunk the commit read). A store that can
        (``CopyObject``: a hard link on a local directory) makes the blob a copy of ``source``,
        so the head's chunk and the version's blob share their bytes; should ``source`` have
        changed since it was read, or the store cannot copy, ``data`` itself is put."""
        key = blob_key(sha)
        if not copies(self.store):
            return await self._put_once(key, data)
        try:
            await self.store.copy(source, key, source_etag=etag, if_none_match=True)
            self.linked += len(data)
        except PreconditionFailed as e:
            if e.key != key:  # source changed or vanished since it was read: these bytes, then
                return await self._put_once(key, data)
            await self._refresh(key, data, source, etag)

    async def put_tree(self, tree: Tree) -> str:
        data = canonical(tree)
        sha = sha256(data)
        await self._put_once(tree_key(sha), data)
        self._remember(sha, tree)
        return sha

    async def get_root(self, sha: str) -> RootManifest:
        """A version's root manifest (`get_tree` typed)."""
        return cast(RootManifest, await self.get_tree(sha))

    async def get_manifest(self, sha: str) -> Manifest:
        """One object's manifest in a version (`get_tree` typed)."""
        return cast(Manifest, await self.get_tree(sha))

    async def get_tree(self, sha: str) -> Tree:
        found = self._trees.get(sha)
        if found is not None:
            self._trees.move_to_end(sha)
            return found
        blob = await self.store.get(tree_key(sha))
        if blob is None:
            raise NotFound(f"manifest {sha[:16]}... is missing from the store")
        if sha256(blob.data) != sha:
            raise DataCorruption(f"manifest {sha[:16]}... does not match its hash")
        tree: Tree = orjson.loads(blob.data)
        self._remember(sha, tree)
        return tree

    async def _put_once(self, key: str, data: bytes) -> None:
        """Create ``key``; an existing one has these very bytes and is kept, unless it is old
        enough that a concurrent gc might be about to collect it: then it is put again (same
        bytes, so readers see no change) to restart its grace period."""
        try:
            await self.store.put(key, data, if_none_match=True)
            self.written += len(data)
        except PreconditionFailed:
            await self._refresh(key, data)

    async def _refresh(self, key: str, data: bytes, source: str | None = None, etag: str = "") -> None:
        """Put ``key`` (which holds ``data``) again if it is old enough that a gc might be about
        to collect it: as a copy of ``source`` where the store can (its time is the copy's)."""
        info = await self.store.head(key)
        if info is not None and time.time() - info.last_modified <= REFRESH_AFTER:
            return
        if source is not None and copies(self.store):
            try:
                await self.store.copy(source, key, source_etag=etag)
                self.linked += len(data)
                return
            except PreconditionFailed:
                pass  # source changed since it was read: put the bytes
        await self.store.put(key, data)
        self.written += len(data)

    def _remember(self, sha: str, tree: Tree) -> None:
        self._trees[sha] = tree
        self._trees.move_to_end(sha)
        while len(self._trees) > self.cache_size:
            self._trees.popitem(last=False)


class VersionChunks:
    """A committed dataset's chunks: its chunk table (``"i_j" -> [sha256, etag]``) over blobs.

    The table is the dataset's manifest's ``chunks``: given when the manifest was read already,
    else read (once) through ``manifest`` at the first chunk located, so a locator made before the
    dataset's document was read still finds every chunk."""

    writable = False

    def __init__(self, store: Store, table: dict[str, list[str]] | None = None, *,
                 manifest: Callable[[], Awaitable[Manifest | None]] | None = None) -> None:
        self.store = store
        self.table = table
        self.manifest = manifest

    async def chunk_table(self) -> dict[str, list[str]]:
        if self.table is None:
            found = None if self.manifest is None else await self.manifest()
            self.table = {} if found is None else found.get("chunks", {})
        return self.table

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        table = self.table if self.table is not None else await self.chunk_table()
        entry = table.get(index_name(index))
        return None if entry is None else ChunkRef(self.store, blob_key(entry[0]))


class ForkedChunks(NativeChunks):
    """A forked dataset's chunks (copy on write): its own native chunk once written, else the
    chunk of the version it was forked from (manifest ``tree``), else fill. Reading a chunk
    costs one HEAD more than a native one."""

    def __init__(self, cas: ContentStore, dataset_id: str, tree: str) -> None:
        super().__init__(cas.store, dataset_id)  # no chunk catalog: unwritten chunks read the source's
        self.cas = cas
        self.tree = tree

    async def _source(self, index: tuple[int, ...]) -> str | None:
        entry = (await self.cas.get_tree(self.tree)).get("chunks", {}).get(index_name(index))
        return None if entry is None else blob_key(entry[0])

    async def in_source(self, index: tuple[int, ...]) -> bool:
        """Whether the source version has chunk ``index`` (this dataset reads it until it writes its own)."""
        return await self._source(index) is not None

    async def source_indexes(self) -> list[tuple[int, ...]]:
        """The chunk indexes the source version has."""
        names = (await self.cas.get_tree(self.tree)).get("chunks", {})
        return [parse_index_name(name) for name in names]

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        key = self.key(index)
        if await self.store.head(key) is not None:
            return ChunkRef(self.store, key)
        source = await self._source(index)
        return None if source is None else ChunkRef(self.store, source)

    async def original(self, index: tuple[int, ...]) -> bytes | None:
        source = await self._source(index)
        blob = None if source is None else await self.store.get(source)
        return None if blob is None else blob.data
