"""Zarr chunk keys (``.../c/{i}/{j}``) read, replaced and deleted through the chunk engine.

A read sends the chunk's stored bytes (or the byte range of a linked file) untouched when the
array's codecs are the stored format (`codecs.plan`), else decodes it here and sends it under
the plain codec. A chunk never written is `NotFound` (the reader applies the fill value).
A write is checked to decode to the chunk's shape and type before anything is stored.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from h5lake.chunks import engine, writes
from h5lake.chunks.capability import maps
from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.inline import DocumentChunks
from h5lake.chunks.locate import NativeChunks
from h5lake.errors import ConditionFailed, DataCorruption, InvalidInput, NotFound, ReadOnly, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.zarrtypes import Elements, ZarrForm, to_served, vlen_decode, vlen_encode
from h5lake.service.context import Caller, Service
from h5lake.service.datasets import compact
from h5lake.service.datasets.opened import Change, OpenDataset, check_writable
from h5lake.service.values.writing import recorded
from h5lake.service.views import Domain
from h5lake.service.zarr import listing, nodes
from h5lake.storage.base import PreconditionFailed

_INDEX = re.compile(r"(0|[1-9][0-9]{0,17})\Z")
_VERSION_ID = re.compile(r"v[0-9]+\Z")


@dataclass(frozen=True, slots=True)
class ChunkBytes:
    data: bytes | memoryview
    etag: str | None  # strong: a version's chunk key, or the stored object's ETag (head)
    immutable: bool  # the key names a version by id: its answer can be cached for good


@dataclass(frozen=True, slots=True)
class Conditions:
    """A write's preconditions as HTTP sends them: the ETags of ``If-Match`` and of
    ``If-None-Match`` (``"*"``: any), None when the header is absent."""

    if_match: tuple[str, ...] | None = None
    if_none_match: tuple[str, ...] | None = None

    @property
    def given(self) -> bool:
        return self.if_match is not None or self.if_none_match is not None

    def check(self, etag: str | None, exists: bool, what: str) -> None:
        """Raise `ConditionFailed` unless they hold for ``what`` as it is now (``etag``: the
        ETag a GET would give, None when it gives none)."""
        if self.if_match is not None and not (exists and ("*" in self.if_match or etag in self.if_match)):
            raise ConditionFailed(f"If-Match: {what} {'has ETag ' + etag if etag else 'does not exist' if not exists else 'has no ETag'}")
        if self.if_none_match is not None and exists and ("*" in self.if_none_match or etag in self.if_none_match):
            raise ConditionFailed(f"If-None-Match: {what} exists{' with that ETag' if etag else ''}")


NO_CONDITIONS = Conditions()


@dataclass(frozen=True, slots=True)
class Current:
    """A chunk as it is stored now: its bytes (None: never written) and, for a chunk object of
    its own, the store's ETag of it."""

    stored: bytes | memoryview | None  # a view: mapped (`current` with ``mapped``)
    store_etag: str | None
    filter_mask: int = 0

    def etag(self, core: bool) -> str | None:
        """The chunk key's ETag on the head: the stored object's (the answer is made from those
        bytes alone), per codec profile."""
        if self.store_etag is None:
            return None
        return f'"{self.store_etag.strip(chr(34))}{"-core" if core else ""}"'


async def current(layout: DatasetLayout, index: tuple[int, ...], mapped: bool = False) -> Current:
    """The chunk as stored now; with ``mapped``, an unfiltered chunk that is a whole object of
    the store (its own, or a version's content blob) is read as a view of the stored bytes
    where the store can (`GetMapped`: a reply that only passes them on needs no copy of them).
    A linked file's byte range is read as before: such files are not the store's own, and may
    be changed in place."""
    ref = await layout.locator.locate(index)
    if ref is None:
        return Current(None, None)
    locator = layout.locator
    own = ref.offset is None and isinstance(locator, NativeChunks) and ref.key == locator.key(index)
    if mapped and ref.offset is None and ref.filter_mask == 0 and maps(ref.source):
        view = await ref.source.get_mapped(ref.key)
        if view is None:
            return Current(None, None)
        return Current(view.data, view.etag if own else None)
    if own:
        assert isinstance(locator, NativeChunks)
        blob = await locator.store.get(ref.key)
        if blob is None:
            return Current(None, None)
        data = bytes(blob.data)
        if isinstance(locator.store, DocumentChunks):  # a compact dataset's: its serial names no content
            return Current(data, hashlib.md5(data).hexdigest(), ref.filter_mask)
        return Current(data, blob.etag, ref.filter_mask)
    return Current(await engine.fetch(ref), None, ref.filter_mask)


async def _as_stored_now(layout: DatasetLayout, index: tuple[int, ...]) -> Current:
    """What a conditional write checks: whether the chunk exists and its ETag. A chunk object of
    its own is asked its ETag alone (``head``: its bytes are not read; ``stored`` is then empty
    bytes, standing for "exists"); others as `current`."""
    locator = layout.locator
    if isinstance(locator, NativeChunks) and not isinstance(locator.store, DocumentChunks):
        ref = await locator.locate(index)
        if ref is not None and ref.offset is None and ref.key == locator.key(index):
            info = await locator.store.head(ref.key)
            return Current(None, None) if info is None else Current(b"", info.etag, ref.filter_mask)
    return await current(layout, index)


def chunk_index(layout: DatasetLayout, rest: tuple[str, ...], writing: bool) -> tuple[int, ...]:
    """The chunk index a key's tail names (``c`` then one index per dimension, inside the grid)."""
    bad = InvalidInput if writing else NotFound
    if not rest or rest[0] != "c":
        raise bad(f"{'/'.join(rest)[:100]!r} is not a chunk key of this array (c/i/j...)")
    parts = rest[1:]
    if len(parts) != len(layout.shape):
        raise bad(f"a chunk key of this array has {len(layout.shape)} indexes, not {len(parts)}")
    if not all(_INDEX.match(p) for p in parts):
        raise bad("chunk indexes are non-negative decimal integers")
    index = tuple(int(p) for p in parts)
    for i, n, c in zip(index, layout.shape, layout.chunk_shape, strict=True):
        if i >= max(1, math.ceil(n / c)) if c else i > 0:
            raise bad(f"chunk index {list(index)} is outside the chunk grid of shape {list(layout.shape)}")
    return index


def served_bytes(arr: np.ndarray, form: ZarrForm) -> bytes:
    """A decoded chunk as its Zarr encoding under the plain codec (``bytes`` or ``vlen-*``)."""
    if form.elements is not Elements.FIXED:
        return vlen_encode(arr, form)
    return np.ascontiguousarray(to_served(arr, form)).tobytes()


def _from_served(data: bytes, form: ZarrForm, layout: DatasetLayout) -> np.ndarray:
    """The chunk a body in the plain codec's encoding holds, in the dataset's dtype."""
    shape = layout.chunk_shape
    count = math.prod(shape)
    if form.elements is not Elements.FIXED:
        try:
            return vlen_decode(data, count, form).reshape(shape)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"the chunk does not decode as {form.data_type}: {exc}") from None
    dt = form.served
    if len(data) != count * dt.itemsize:
        raise InvalidInput(f"the chunk holds {len(data)} bytes; a chunk of this array holds {count * dt.itemsize}")
    arr = np.frombuffer(data, dtype=dt).reshape(shape)
    target = layout.dtype
    if dt.kind == "c" and target.names:
        out = np.empty(shape, dtype=target)
        out[target.names[0]] = arr.real
        out[target.names[1]] = arr.imag
        return out
    return arr.astype(target)


def _etag(domain: Domain, key: nodes.Key, core: bool) -> str | None:
    if domain.view.writable:
        return None
    digest = hashlib.sha256(f"{domain.etag}\0{'/'.join(key.parts)}\0{core}".encode()).hexdigest()
    return f'"{digest[:40]}"'


def immutable(key: nodes.Key) -> bool:
    return "@" in key.domain and bool(_VERSION_ID.match(key.domain.rsplit("@", 1)[1]))


async def read_meta(svc: Service, caller: Caller, key: nodes.Key, core: bool) -> tuple[dict[str, Any], str | None]:
    """A node's ``zarr.json`` and, for a version, its strong ETag."""
    domain = await nodes.open_key(svc, caller, key, Permission.READ)
    node, rest = await nodes.walk(svc, caller, domain, key.parts, Permission.READ)
    if rest != (nodes.META,):
        raise NotFound(f"{'/'.join(key.parts)[:200]} names no Zarr node metadata")
    meta = await nodes.node_meta(svc, caller, domain, node, core)
    return meta, _etag(domain, key, core) or content_etag(meta)


def content_etag(meta: dict[str, Any]) -> str:
    """A head node's ``zarr.json`` ETag: of its content (it changes with the node)."""
    return f'"{hashlib.sha256(orjson.dumps(meta, option=orjson.OPT_SORT_KEYS)).hexdigest()[:40]}"'


async def read_chunk(svc: Service, caller: Caller, key: nodes.Key, core: bool) -> ChunkBytes | listing.Listing:
    """A chunk key's bytes, or the entries of a node when the key names the node itself."""
    domain = await nodes.open_key(svc, caller, key, Permission.READ)
    node, rest = await nodes.walk(svc, caller, domain, key.parts, Permission.READ)
    if not rest:
        return await listing.list_node(svc, caller, key, node)
    if node.is_group:
        raise NotFound(f"{node.path} is a group: it has no chunk {'/'.join(rest)[:100]}")
    view = await _view(svc, domain, node, core)
    index = chunk_index(view.layout, rest, writing=False)
    now = await current(view.layout, index, mapped=view.plan.as_stored)
    stored = now.stored
    if stored is None:
        raise NotFound(f"chunk {list(index)} of {node.path} was never written (it reads as the fill value)")
    etag = _etag(domain, key, core) or now.etag(core)
    if view.plan.as_stored and now.filter_mask == 0:
        return ChunkBytes(stored, etag, immutable(key))
    layout = view.layout
    arr = await svc.workers.cpu(layout.codec.decode, stored, now.filter_mask, size=len(stored) * 4)
    data = await svc.workers.cpu(served_bytes, arr, view.form, size=arr.nbytes)
    if view.plan.filtered:  # the codecs name the dataset's filters: applied to the Zarr form
        data = bytes(await svc.workers.cpu(layout.codec.pipeline.encode, data, size=len(data)))
    return ChunkBytes(data, etag, immutable(key))


async def _view(svc: Service, domain: Domain, node: nodes.Node, core: bool) -> nodes.ArrayView:
    try:
        return await nodes.array_view(svc, domain, node.dataset, core)
    except nodes.Unrepresentable as exc:
        raise NotFound(f"{node.path} has no Zarr form: {exc.reason}") from None


async def _writable(svc: Service, caller: Caller, key: nodes.Key, core: bool) -> tuple[OpenDataset, nodes.ArrayView, tuple[int, ...]]:
    domain = await nodes.open_key(svc, caller, key, Permission.UPDATE)
    node, rest = await nodes.walk(svc, caller, domain, key.parts, Permission.UPDATE)
    if node.is_group:
        raise InvalidInput(f"{node.path} is a group: {'/'.join(rest)[:100]!r} is no chunk key")
    view = await _view(svc, domain, node, core)
    check_writable(domain, node.dataset, Change.VALUES)
    index = chunk_index(view.layout, rest, writing=True)
    return OpenDataset(domain, node.dataset, view.layout, node.etag), view, index


async def write_chunk(svc: Service, caller: Caller, key: nodes.Key, body: bytes | bytearray | memoryview, core: bool,
                      conditions: Conditions = NO_CONDITIONS) -> None:
    """Replace one chunk with ``body`` (its Zarr encoding under the array's codecs): checked to
    decode to the chunk's shape and type first; stored as sent when the codecs are the stored
    format, else encoded with the dataset's filters. ``conditions`` are checked against the
    chunk as stored, and the chunk object is put only if it is still that one (a compact
    dataset's chunk, kept in its document, is checked just before the write).
    The body is not changed (the caller's buffer is stored as it is)."""
    ds, view, index = await _writable(svc, caller, key, core)
    layout = view.layout
    limit = max(layout.codec.chunk_bytes * 2 + 4096, svc.limits.max_chunk_size) if view.form.elements is Elements.FIXED else svc.limits.max_chunk_size * 4
    if len(body) > limit:
        raise TooLarge(f"a chunk body of {len(body)} bytes is larger than this array's chunks can be")
    own = isinstance(layout.locator, NativeChunks) and not compact.is_compact(ds.doc)
    expected: Current | None = None
    if conditions.given:
        expected = await _as_stored_now(layout, index)
        conditions.check(expected.etag(core), expected.stored is not None, f"chunk {list(index)} of {ds.id}")
        if not own:
            expected = None  # checked, not held: no chunk object of its own to put conditionally
    if view.plan.as_stored:
        arr = await _decoded_as_stored(svc, layout, body, own)

        async def store_as_sent(target: DatasetLayout) -> None:
            if own and isinstance(target.locator, NativeChunks):
                await _put(target.locator, index, body if isinstance(body, bytes) else memoryview(body), expected)
            else:
                whole = arr if arr is not None else layout.codec.decode(bytes(body))
                await writes.update_chunk(target, index, _replace(whole), True, svc.workers, whole=whole)

        await recorded(svc, ds, layout, [index], store_as_sent)
        return
    raw: bytes = bytes(body)
    if view.plan.filtered:
        try:
            raw = bytes(await svc.workers.cpu(layout.codec.pipeline.decode, raw, 0, size=len(raw) * 4))
        except DataCorruption as exc:
            raise InvalidInput(f"the chunk does not decode with this array's codecs: {exc.message}") from None
    arr = await svc.workers.cpu(_from_served, raw, view.form, layout, size=len(raw))

    async def encode_and_store(target: DatasetLayout) -> None:
        if expected is not None and isinstance(target.locator, NativeChunks):
            data = await svc.workers.cpu(target.codec.encode, arr, size=target.codec.chunk_bytes)
            await _put(target.locator, index, data, expected)
        else:
            await writes.update_chunk(target, index, _replace(arr), True, svc.workers, whole=arr)

    await recorded(svc, ds, layout, [index], encode_and_store)


def _plain(codec: ChunkCodec) -> bool:
    """Whether a chunk's stored bytes are its values as they are (no filter, a fixed-size type at
    full precision): any body of ``chunk_bytes`` bytes then decodes to the chunk."""
    return not codec.pipeline.filters and not codec.variable and not codec.reduced


async def _decoded_as_stored(svc: Service, layout: DatasetLayout, body: bytes | bytearray | memoryview, own: bool) -> np.ndarray | None:
    """Check that a body stored as sent decodes to the chunk (else `InvalidInput`); the decoded
    chunk when the write needs it (not a chunk object of its own). A plain chunk (`_plain`) is
    checked by its length alone: decoding it would only view the same bytes."""
    codec = layout.codec
    if own and _plain(codec):
        if len(body) != codec.chunk_bytes:
            raise InvalidInput(f"the chunk does not decode with this array's codecs: chunk decoded to {len(body)} bytes, not {codec.chunk_bytes}")
        return None
    data = body if isinstance(body, bytes) else bytes(body)
    try:
        arr: np.ndarray = await svc.workers.cpu(codec.decode, data, 0, size=len(data) * 4)
    except DataCorruption as exc:
        raise InvalidInput(f"the chunk does not decode with this array's codecs: {exc.message}") from None
    return arr


async def _put(locator: NativeChunks, index: tuple[int, ...], data: bytes | memoryview, expected: Current | None) -> None:
    """Put a chunk object; with ``expected``, only if it is still the one the conditions were
    checked against (absent, or of that ETag)."""
    if expected is None:
        await locator.store.put(locator.key(index), data)
        return
    try:
        if expected.store_etag is None:
            await locator.store.put(locator.key(index), data, if_none_match=True)
        else:
            await locator.store.put(locator.key(index), data, if_match=expected.store_etag)
    except PreconditionFailed:
        raise ConditionFailed(f"chunk {list(index)} changed while it was written") from None


def _replace(arr: np.ndarray) -> Any:
    def modify(chunk: np.ndarray) -> None:
        chunk[...] = arr

    return modify


async def delete_chunk(svc: Service, caller: Caller, key: nodes.Key) -> None:
    """Drop one chunk (it reads as the fill value again); a compact dataset's from its document."""
    ds, view, index = await _writable(svc, caller, key, False)
    layout = view.layout

    async def drop(target: DatasetLayout) -> None:
        if not isinstance(target.locator, NativeChunks):
            raise ReadOnly(f"the chunks of {target.dataset_id} cannot be written")
        await target.locator.store.delete(target.locator.key(index))

    await recorded(svc, ds, layout, [index], drop)
