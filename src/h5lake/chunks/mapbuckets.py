"""The pairs of an HDF5 Map object in pair buckets (docs/maps.md, "Storage").

A map's pairs live in a binary tree of buckets stored as chunk objects ``chunk_key(map_id,
(n,))``. Bucket 0 is the root. A bucket is either a leaf (its pairs, filtered by the map's
pipeline) or a split marker naming two children; the child at depth ``d`` is chosen by bit ``d``
of the key hash. A leaf that grows past ``max_bytes`` is split: its halves are written first
under fresh random numbers (nothing refers to them yet), then the leaf is replaced by the marker
with a conditional put. So a put rewrites one leaf (at most ``max_bytes`` plus what it adds);
a split writes two half-size buckets and a 32-byte marker. Buckets never merge.

Every change of a bucket is read, change, put-if-unchanged (if-match, or create-only for a
bucket not yet written) and is retried from the read when another writer got there first, so
concurrent puts of different keys from any number of processes lose nothing, and concurrent
puts of one key leave one of the values whole. Each process caches the split markers it has
seen (a split is never undone); a stale cache only costs one extra read.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.chunks.catalog import ChunkCatalog
from h5lake.chunks.engine import fetch
from h5lake.chunks.fanout import Workers
from h5lake.chunks.filters import FilterPipeline
from h5lake.chunks.locate import ChunkLocator, NativeChunks
from h5lake.errors import Conflict
from h5lake.model import mapdata as md
from h5lake.model.ids import chunk_key
from h5lake.storage.base import PreconditionFailed, Store

DEFAULT_MAX_BUCKET_BYTES = 2 * 1024 * 1024
"""A leaf is split when its pairs (before compression) would exceed this."""
MAX_DEPTH = 56
_MAX_ATTEMPTS = 60

Tree = dict[int, tuple[int, int, int]]
"""Split markers seen: bucket number -> (depth, child 0, child 1)."""


@dataclass(frozen=True, slots=True)
class MapFormat:
    keys: md.KeyCodec
    values: md.ValueCodec
    pipeline: FilterPipeline
    max_bytes: int = DEFAULT_MAX_BUCKET_BYTES

    def empty(self) -> md.Pairs:
        return md.empty_pairs(self.values.variable, self.values.size)

    def defaults(self, count: int) -> np.ndarray[Any, Any]:
        """``count`` values, each the value type's default (what an absent key reads as)."""
        zero = self.values.zero()
        if self.values.variable:
            out = np.empty(count, dtype=object)
            out[:] = [zero] * count
            return out
        return np.frombuffer(zero * count, dtype=f"V{self.values.size}").copy()

    def decode(self, data: bytes) -> tuple[md.BucketHeader, md.Pairs | None]:
        header = md.parse_header(data)
        if header.split:
            return header, None
        if header.count == 0:
            return header, self.empty()
        payload = self.pipeline.decode(memoryview(data)[md.HEADER_SIZE :])
        return header, md.parse_leaf(payload, header.count, self.keys, self.values)

    def encode_leaf(self, depth: int, pairs: md.Pairs) -> bytes:
        payload = md.leaf_payload(pairs, self.keys.variable, self.values.variable) if len(pairs) else b""
        encoded = self.pipeline.encode(payload) if payload else b""
        return md.leaf_bytes(depth, len(pairs), self.keys.variable, self.values.variable, encoded)

    def build(self, node: int, depth: int, pairs: md.Pairs) -> tuple[list[tuple[int, bytes]], Tree]:
        """The buckets that hold ``pairs`` at ``node``: ``node`` itself first (a leaf, or a split
        marker over new buckets when they are too many bytes), then any new buckets."""
        size = md.payload_size(pairs, self.keys.variable, self.values.variable)
        if size <= self.max_bytes or depth >= MAX_DEPTH or len(pairs) < 2:
            return [(node, self.encode_leaf(depth, pairs))], {}
        children = (_new_bucket_number(), _new_bucket_number())
        left, right = md.partition(pairs, depth, self.keys.variable)
        out: list[tuple[int, bytes]] = [(node, md.split_marker(depth, children))]
        tree: Tree = {node: (depth, *children)}
        for child, part in zip(children, (left, right)):
            written, sub = self.build(child, depth + 1, part)
            out += written
            tree.update(sub)
        return out, tree


def _new_bucket_number() -> int:
    return secrets.randbits(62) + 1


class MapBuckets:
    """One map's buckets, for one request."""

    def __init__(self, store: Store, locator: ChunkLocator, map_id: str, fmt: MapFormat, tree: Tree,
                 catalog: ChunkCatalog, domain: str, workers: Workers) -> None:
        self.store, self.locator, self.map_id, self.fmt = store, locator, map_id, fmt
        self.tree, self.catalog, self.domain, self.workers = tree, catalog, domain, workers

    def key(self, node: int) -> str:
        return chunk_key(self.map_id, (node,))

    # -- placing keys
    def route(self, hashes: np.ndarray[Any, Any], start: int = 0, depth: int = 0) -> dict[tuple[int, int], np.ndarray[Any, Any]]:
        """(leaf as far as known, its depth) -> indexes of the keys it holds."""
        groups: dict[tuple[int, int], np.ndarray[Any, Any]] = {}
        pending = [(start, depth, np.arange(len(hashes)))]
        while pending:
            node, d, idx = pending.pop()
            split = self.tree.get(node)
            if split is None or not len(idx):
                if len(idx):
                    groups[(node, d)] = idx
                continue
            bits = ((hashes[idx] >> np.uint64(d)) & np.uint64(1)).astype(bool)
            pending.append((split[1], d + 1, idx[~bits]))
            pending.append((split[2], d + 1, idx[bits]))
        return groups

    async def _read(self, node: int) -> bytes | None:
        ref = await self.locator.locate((node,))
        return None if ref is None else await fetch(ref)

    async def _decode(self, data: bytes) -> tuple[md.BucketHeader, md.Pairs | None]:
        return await self.workers.cpu(self.fmt.decode, data, size=len(data))

    async def _hashes(self, keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The keys' hashes: a numpy pass per key byte (100,000 keys of 500 bytes held the event
        loop seconds), so on the CPU pool for more than a few keys."""
        return await self.workers.cpu(md.key_hashes, keys, self.fmt.keys.variable, size=keys.nbytes)

    # -- changing pairs
    async def apply(self, pairs: md.Pairs, deleted: np.ndarray[Any, Any]) -> tuple[int, int]:
        """Put (and, where ``deleted``, delete) the pairs in order. Returns (added, removed)."""
        hashes = await self._hashes(pairs.keys)
        totals = await self._apply_groups(pairs, deleted, hashes, 0, 0)
        return totals

    async def _apply_groups(self, pairs: md.Pairs, deleted: np.ndarray[Any, Any], hashes: np.ndarray[Any, Any],
                            start: int, depth: int) -> tuple[int, int]:
        groups = list(self.route(hashes, start, depth).items())

        async def one(item: tuple[tuple[int, int], np.ndarray[Any, Any]]) -> tuple[int, int]:
            (node, d), idx = item
            return await self._update_leaf(node, d, pairs.take(idx), deleted[idx], hashes[idx])

        results = await self.workers.map(groups, one)
        return sum(r[0] for r in results), sum(r[1] for r in results)

    async def _update_leaf(self, node: int, depth: int, new: md.Pairs, deleted: np.ndarray[Any, Any],
                           hashes: np.ndarray[Any, Any]) -> tuple[int, int]:
        for attempt in range(_MAX_ATTEMPTS):
            blob = await self.store.get(self.key(node))
            old = self.fmt.empty()
            # a forked map's bucket not written since the fork starts from the source version's
            data = bytes(blob.data) if blob is not None else await self._original(node)
            if data is not None:
                header, found = await self._decode(data)
                if header.split:
                    self.tree[node] = (depth, *header.children)
                    return await self._apply_groups(new, deleted, hashes, node, depth)
                old = found if found is not None else old
            merged, added, removed = await self.workers.cpu(
                md.merge, old, new, deleted, self.fmt.keys.variable, size=len(old) * 16 + len(new) * 16)
            if added == 0 and removed == 0 and bool(np.all(deleted)):
                return 0, 0  # deletes of absent keys change nothing
            writes, tree = await self.workers.cpu(self.fmt.build, node, depth, merged, size=len(merged) * 16)
            indexes = [(n,) for n, _ in writes]
            intent = await self.catalog.begin(self.domain, self.map_id, indexes)
            try:
                await self.workers.each(writes[1:], lambda w: self._put(w[0], w[1]))
                await self.store.put(self.key(node), writes[0][1], if_match=blob.etag if blob else None,
                                     if_none_match=blob is None)
            except PreconditionFailed:
                await self.workers.each(writes[1:], lambda w: self.store.delete(self.key(w[0])))
                self.catalog.note(self.domain, self.map_id, indexes, intent)
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
                continue
            except BaseException:
                self.catalog.abort(intent)
                raise
            self.catalog.note(self.domain, self.map_id, indexes, intent)
            self.tree.update(tree)
            return added, removed
        raise Conflict(f"map {self.map_id} bucket {node} is changing too fast; try again")

    async def _original(self, node: int) -> bytes | None:
        return await self.locator.original((node,)) if isinstance(self.locator, NativeChunks) else None

    async def _put(self, node: int, data: bytes) -> None:
        await self.store.put(self.key(node), data)

    # -- reading pairs
    async def _leaf(self, node: int, depth: int) -> md.Pairs | tuple[int, int]:
        """A leaf's pairs, or the children of a split marker (recorded in the tree)."""
        data = await self._read(node)
        if data is None:
            return self.fmt.empty()
        header, pairs = await self._decode(data)
        if header.split:
            self.tree[node] = (depth, *header.children)
            return header.children
        assert pairs is not None
        return pairs

    async def get(self, keys: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(found mask, values in key order: an absent key's is the value type's default)."""
        hashes = await self._hashes(keys)
        found = np.zeros(len(keys), dtype=bool)
        values = self.fmt.defaults(len(keys))

        async def resolve(start: int, depth: int, idx: np.ndarray[Any, Any]) -> None:
            groups = self.route(hashes[idx], start, depth)

            async def one(item: tuple[tuple[int, int], np.ndarray[Any, Any]]) -> None:
                (node, d), sub = item
                where = idx[sub]
                leaf = await self._leaf(node, d)
                if isinstance(leaf, tuple):
                    await resolve(node, d, where)
                    return
                at = md.lookup(leaf, keys[where], self.fmt.keys.variable)
                hit = at >= 0
                found[where[hit]] = True
                values[where[hit]] = leaf.values[at[hit]]

            await self.workers.each(list(groups.items()), one)

        await resolve(0, 0, np.arange(len(keys)))
        return found, values

    async def walk(self, after: tuple[int, bytes] | None = None) -> Any:
        """Yield the leaves' pairs in iteration order, from after the marker ``(bit-reversed
        hash, key bytes)`` when given. An async generator of ``Pairs``."""
        stack: list[tuple[int, int, int]] = [(0, 0, 0)]  # node, depth, path bits (low bit first)
        while stack:
            node, depth, path = stack.pop()
            if after is not None and _before(path, depth, after[0]):
                continue
            leaf = await self._leaf(node, depth)
            if isinstance(leaf, tuple):
                stack.append((leaf[1], depth + 1, path | (1 << depth)))
                stack.append((leaf[0], depth + 1, path))
                continue
            if after is not None and _covers(path, depth, after[0]):
                leaf = md.after(leaf, after[0], after[1], self.fmt.keys.variable)
            if len(leaf):
                yield leaf

    async def buckets(self) -> list[tuple[int, int, int]]:
        """Every bucket reachable from the root: (number, stored bytes, pairs)."""
        return await reachable_buckets(self.store, self.map_id, self.workers, self.tree)


async def reachable_buckets(store: Store, map_id: str, workers: Workers,
                            tree: Tree | None = None) -> list[tuple[int, int, int]]:
    """Every bucket of a map reachable from its root: (number, stored bytes, pairs), reading
    only headers."""
    out: list[tuple[int, int, int]] = []
    frontier = [(0, 0)]
    while frontier:
        batch: list[tuple[int, int]] = frontier
        found: list[tuple[int, int]] = []

        async def one(item: tuple[int, int], found: list[tuple[int, int]] = found) -> None:
            node, depth = item
            key = chunk_key(map_id, (node,))
            info = await store.head(key)
            head = await store.get_range(key, 0, md.HEADER_SIZE) if info is not None else None
            if info is None or head is None:
                return
            header = md.parse_header(head)
            out.append((node, info.size, header.count))
            if header.split:
                if tree is not None:
                    tree[node] = (depth, *header.children)
                found.extend((c, depth + 1) for c in header.children)

        await workers.each(batch, one)
        frontier = found
    return out


def _prefix(bits: int, depth: int) -> int:
    """The first ``depth`` bits of a path (bit 0 first) as a number, bit 0 most significant."""
    out = 0
    for i in range(depth):
        out = out << 1 | (bits >> i & 1)
    return out


def _reversed_prefix(hrev: int, depth: int) -> int:
    return hrev >> (64 - depth) if depth else 0


def _before(path: int, depth: int, hrev: int) -> bool:
    """Does the whole subtree at ``path`` come before the marker?"""
    return _prefix(path, depth) < _reversed_prefix(hrev, depth)


def _covers(path: int, depth: int, hrev: int) -> bool:
    return _prefix(path, depth) == _reversed_prefix(hrev, depth)


def marker_of(keys: md.KeyCodec, key: np.ndarray[Any, Any]) -> tuple[int, bytes]:
    """The iteration position of one key: (bit-reversed hash, key bytes)."""
    h = md.bit_reversed(md.key_hashes(key, keys.variable))
    raw = key.tobytes() if not keys.variable else bytes(key[0])
    return int(h[0]), raw if keys.variable else raw[: keys.width]
