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

from h5lake.catalog.catalogs import ChunkCatalog
from h5lake.chunks.capability import gets_ranges
from h5lake.chunks.engine import fetch
from h5lake.chunks.fanout import Workers
from h5lake.chunks.filters import FilterPipeline
from h5lake.chunks.locate import ChunkLocator, NativeChunks
from h5lake.errors import Conflict
from h5lake.maps import data as md
from h5lake.maps import keys as mapkeys
from h5lake.maps import leaf as mapleaf
from h5lake.maps.keyindex import KeyIndex, KeyIndexes
from h5lake.model.ids import chunk_key
from h5lake.model.stored import BucketStats
from h5lake.storage.base import GetRanges, PreconditionFailed, Store

DEFAULT_MAX_BUCKET_BYTES = 2 * 1024 * 1024
"""A leaf is split when its pairs (before compression) would exceed this."""
MAX_DEPTH = 56
_MAX_ATTEMPTS = 60
PROBE_BYTES = 64 * 1024
"""A read of a few keys first reads this much of a bucket: the header and (mostly) the key section."""

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
        if not zero.strip(b"\0"):
            return np.zeros(count, dtype=f"V{self.values.size}")
        return np.frombuffer(zero * count, dtype=f"V{self.values.size}").copy()

    def decode(self, data: bytes) -> tuple[md.BucketHeader, md.Pairs | None]:
        header = md.parse_header(data)
        if header.split:
            return header, None
        if header.count == 0:
            return header, self.empty()
        if header.version == 2:
            return header, mapleaf.decode(header, data, self.keys, self.values, self.pipeline.decode)
        payload = self.pipeline.decode(memoryview(data)[md.HEADER_SIZE :])  # format 1, written before
        return header, md.parse_leaf(payload, header.count, self.keys, self.values)

    def encode_leaf(self, depth: int, pairs: md.Pairs) -> bytes:
        return mapleaf.encode(depth, pairs, self.keys.variable, self.values.variable, self.pipeline.encode,
                              secrets.randbits(63))

    def index(self, header: md.BucketHeader, stored: bytes | memoryview) -> KeyIndex:
        """A format 2 leaf's key section (from the bytes after its header), ready to search."""
        section = mapleaf.decode_keys(header, stored, self.keys, self.pipeline.decode)
        return KeyIndex(header, section, md.KeyFinder.of(section.keys))

    def lookup(self, pairs: md.Pairs, want: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return md.lookup(pairs, want, self.keys.variable)

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


@dataclass(frozen=True, slots=True)
class Found:
    """Keys looked up in a leaf: the index of each in the leaf (-1: absent), and the values of
    those found, in order."""

    at: np.ndarray[Any, Any]
    values: np.ndarray[Any, Any]


TABLE_BITS = 16
"""Route through a table of the leaves by the low hash bits when no leaf is deeper than this."""


LeafTable = tuple[list[tuple[int, int]], np.ndarray[Any, Any], int]
_TABLES: dict[int, tuple[Tree, int, LeafTable | None]] = {}
"""Leaf tables by the id of their tree, with the tree (kept, so the id is not reused) and its
size when made: a tree only grows (a split is never undone), so the same size is the same tree."""


def _leaf_table(tree: Tree) -> LeafTable | None:
    """The leaves of a tree (as far as known: (bucket, depth)) and, for each value of the low
    ``bits`` bits of a key hash, the index of the leaf it falls in; None when a leaf is deeper
    than ``TABLE_BITS`` (routing node by node is then cheaper)."""
    known = _TABLES.get(id(tree))
    if known is not None and known[0] is tree and known[1] == len(tree):
        return known[2]
    if len(_TABLES) >= 256:
        _TABLES.clear()
    size = len(tree)
    table = _make_leaf_table(tree)
    _TABLES[id(tree)] = (tree, size, table)
    return table


def _make_leaf_table(tree: Tree) -> LeafTable | None:
    leaves: list[tuple[int, int, int]] = []  # bucket, depth, path bits
    pending = [(0, 0, 0)]
    while pending:
        node, depth, path = pending.pop()
        split = tree.get(node)
        if split is None:
            leaves.append((node, depth, path))
        elif depth >= TABLE_BITS:
            return None
        else:
            pending.append((split[1], depth + 1, path))
            pending.append((split[2], depth + 1, path | 1 << depth))
    bits = max(d for _, d, _ in leaves)
    slots = np.empty(1 << bits, dtype=np.int64)
    for i, (_, depth, path) in enumerate(leaves):
        slots[path :: 1 << depth] = i  # every value whose low `depth` bits are the leaf's path
    return [(n, d) for n, d, _ in leaves], slots, bits


def _new_bucket_number() -> int:
    return secrets.randbits(62) + 1


class MapBuckets:
    """One map's buckets, for one request."""

    def __init__(self, store: Store, locator: ChunkLocator, map_id: str, fmt: MapFormat, tree: Tree,
                 catalog: ChunkCatalog, domain: str, workers: Workers, indexes: KeyIndexes | None = None) -> None:
        self.store, self.locator, self.map_id, self.fmt = store, locator, map_id, fmt
        self.tree, self.catalog, self.domain, self.workers = tree, catalog, domain, workers
        self.indexes = indexes if indexes is not None else KeyIndexes(0)
        self.value_size = fmt.values.size  # 0 for variable-length values

    def key(self, node: int) -> str:
        return chunk_key(self.map_id, (node,))

    # -- placing keys
    def route(self, hashes: np.ndarray[Any, Any], start: int = 0, depth: int = 0) -> dict[tuple[int, int], np.ndarray[Any, Any]]:
        """(leaf as far as known, its depth) -> indexes of the keys it holds."""
        if start == 0 and len(hashes) > 64 and len(self.tree) > 8:
            table = _leaf_table(self.tree)
            if table is not None:
                leaves, slots, low_bits = table
                at = slots[(hashes & np.uint64((1 << low_bits) - 1)).astype(np.int64)]
                order = np.argsort(at, kind="stable")
                ordered = at[order]
                starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
                ends = [*starts[1:].tolist(), len(order)]
                return {leaves[leaf]: order[a:b] for leaf, a, b in zip(ordered[starts].tolist(), starts.tolist(), ends)}
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
        return await self.workers.cpu(mapkeys.key_hashes, keys, self.fmt.keys.variable, size=keys.nbytes)

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
            lost = False
            async with self.catalog.recording(self.domain, self.map_id, indexes):
                try:
                    await self.workers.each(writes[1:], lambda w: self._put(w[0], w[1]))
                    await self.store.put(self.key(node), writes[0][1], if_match=blob.etag if blob else None,
                                         if_none_match=blob is None)
                except PreconditionFailed:  # another writer changed the bucket: ours are deleted, noted
                    await self.workers.each(writes[1:], lambda w: self.store.delete(self.key(w[0])))
                    lost = True
            if lost:
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
                continue
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
        prints = None if self.fmt.keys.variable else mapkeys.fingerprints(keys)  # a fixed width: once for all

        async def resolve(start: int, depth: int, idx: np.ndarray[Any, Any]) -> None:
            groups = self.route(hashes[idx], start, depth)

            async def one(item: tuple[tuple[int, int], np.ndarray[Any, Any]]) -> None:
                (node, d), sub = item
                where = idx[sub]
                got = await self._probe(node, d, keys[where], None if prints is None else prints[where])
                if not isinstance(got, Found):  # a split marker
                    await resolve(node, d, where)
                    return
                hit = got.at >= 0
                found[where[hit]] = True
                values[where[hit]] = got.values

            await self.workers.each(list(groups.items()), one)

        await resolve(0, 0, np.arange(len(keys)))
        return found, values

    async def _probe(self, node: int, depth: int, want: np.ndarray[Any, Any],
                     prints: np.ndarray[Any, Any] | None = None) -> Found | tuple[int, int]:
        """The children of a split marker (recorded in the tree), or the wanted keys found in a
        leaf. A leaf of format 2 larger than one read is read in part: its header and key
        section (unless this process holds them: ``self.indexes``), then, with the header
        again, only the value blocks holding wanted keys."""
        ref = await self.locator.locate((node,))
        if ref is None:
            return Found(np.full(len(want), -1), self.fmt.defaults(0))
        if ref.offset is None and gets_ranges(ref.source):
            known = self.indexes.get(ref.key)
            if known is not None:
                got = await self._probe_indexed(ref.source, ref.key, known, want, prints)
                if got is not None:
                    return got
                self.indexes.drop(ref.key)  # the bucket changed since
            first = await ref.source.get_ranges(ref.key, [(0, PROBE_BYTES)])
            if first is None:
                return Found(np.full(len(want), -1), self.fmt.defaults(0))
            head = first[0]
            header = md.parse_header(head)
            if header.version == 2 and len(head) == PROBE_BYTES:
                index = await self._read_index(ref.source, ref.key, header, head)
                got = None if index is None else await self._probe_indexed(ref.source, ref.key, index, want, prints)
                if got is not None:
                    assert index is not None
                    self.indexes.put(ref.key, index)
                    return got
            elif len(head) < PROBE_BYTES:  # the whole bucket
                return await self._probe_whole(node, depth, head, want)
        data = await fetch(ref)
        if data is None:
            return Found(np.full(len(want), -1), self.fmt.defaults(0))
        return await self._probe_whole(node, depth, data, want)

    async def _probe_whole(self, node: int, depth: int, data: bytes,
                           want: np.ndarray[Any, Any]) -> Found | tuple[int, int]:
        header, pairs = await self._decode(data)
        if header.split:
            self.tree[node] = (depth, *header.children)
            return header.children
        assert pairs is not None
        at = await self.workers.cpu(self.fmt.lookup, pairs, want, size=(len(pairs) + len(want)) * 16)
        return Found(at, pairs.values[at[at >= 0]])

    async def _read_index(self, source: GetRanges, key: str, header: md.BucketHeader, head: bytes) -> KeyIndex | None:
        """The key section of a format 2 leaf whose first bytes are ``head``; None when the
        bucket changed between the reads."""
        end = md.HEADER_SIZE + header.key_bytes
        stored = memoryview(head)[md.HEADER_SIZE : end]
        if end > len(head):
            rest = await source.get_ranges(key, [(0, md.HEADER_SIZE), (len(head), end - len(head))])
            if rest is None or md.parse_header(rest[0]) != header or len(rest[1]) != end - len(head):
                return None
            stored = memoryview(head[md.HEADER_SIZE :] + rest[1])
        return await self.workers.cpu(self.fmt.index, header, stored, size=header.key_bytes * 4)

    async def _probe_indexed(self, source: GetRanges, key: str, index: KeyIndex, want: np.ndarray[Any, Any],
                             prints: np.ndarray[Any, Any] | None) -> Found | None:
        """The wanted keys found through the key section ``index``, reading the header and the
        value blocks wanted at once; None when the bucket is no longer the one indexed."""
        section = index.section
        at = index.finder.find(want, prints)
        pairs = at[at >= 0]
        holding = section.blocks_of(pairs)
        size = self.value_size
        exact = size > 0 and bool(section.raw[holding].all())
        if exact:  # values stored as they are: read just their bytes
            starts = (section.offsets[holding] + (pairs - section.first[holding]) * size).tolist()
            ranges = [(0, md.HEADER_SIZE), *((start, size) for start in starts)]
        else:
            blocks = np.unique(holding)
            ranges = [(0, md.HEADER_SIZE), *zip(section.offsets[blocks].tolist(), section.sizes[blocks].tolist())]
        parts = await source.get_ranges(key, ranges)
        if parts is None or len(parts[0]) < md.HEADER_SIZE or md.parse_header(parts[0]) != index.header:
            return None
        if any(len(p) != n for p, (_, n) in zip(parts[1:], ranges[1:])):
            return None
        if not len(pairs):
            return Found(at, self.fmt.defaults(0))
        if exact:
            return Found(at, np.frombuffer(b"".join(parts[1:]), dtype=f"V{size}"))
        counts = section.counts[blocks]
        block_values = await self.workers.cpu(mapleaf.decode_blocks, parts[1:], counts.tolist(),
                                              section.raw[blocks].tolist(), self.fmt.values, self.fmt.pipeline.decode,
                                              size=sum(n for _, n in ranges))
        # the position of each found pair among the values of the blocks read
        which = np.searchsorted(blocks, holding)
        return Found(at, block_values[(np.cumsum(counts) - counts - section.first[blocks])[which] + pairs])

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

    async def buckets(self) -> list[BucketStats]:
        """Every bucket reachable from the root as this map's view has them (the head, a
        version, a fork), reading only headers."""
        out: list[BucketStats] = []
        frontier = [(0, 0)]
        while frontier:
            found: list[tuple[int, int]] = []

            async def one(item: tuple[int, int], found: list[tuple[int, int]] = found) -> None:
                node, depth = item
                ref = await self.locator.locate((node,))
                if ref is None:
                    return
                if ref.offset is not None:
                    size: int | None = ref.length
                    head = await ref.source.get_range(ref.key, ref.offset, md.HEADER_SIZE)
                else:
                    info = await ref.source.head(ref.key) if isinstance(ref.source, Store) else None
                    head = await ref.source.get_range(ref.key, 0, md.HEADER_SIZE)
                    size = None if info is None else info.size
                if head is None or size is None:
                    return
                header = md.parse_header(head)
                out.append(BucketStats(node, size, header.count))
                if header.split:
                    self.tree[node] = (depth, *header.children)
                    found.extend((c, depth + 1) for c in header.children)

            await self.workers.each(frontier, one)
            frontier = found
        return out


async def reachable_buckets(store: Store, map_id: str, workers: Workers,
                            tree: Tree | None = None) -> list[BucketStats]:
    """Every bucket of a map reachable from its root, reading only headers."""
    out: list[BucketStats] = []
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
            out.append(BucketStats(node, info.size, header.count))
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
    h = mapkeys.bit_reversed(mapkeys.key_hashes(key, keys.variable))
    raw = key.tobytes() if not keys.variable else bytes(key[0])
    return int(h[0]), raw if keys.variable else raw[: keys.width]
