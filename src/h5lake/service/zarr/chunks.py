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

from h5lake.chunks import engine, writes
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.locate import NativeChunks
from h5lake.errors import DataCorruption, InvalidInput, NotFound, ReadOnly, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.zarrtypes import Elements, ZarrForm, to_served, vlen_decode, vlen_encode
from h5lake.service.context import Caller, Service
from h5lake.service.datasets import compact
from h5lake.service.datasets.opened import Change, OpenDataset, check_writable
from h5lake.service.values.writing import recorded
from h5lake.service.views import Domain
from h5lake.service.zarr import nodes

_INDEX = re.compile(r"(0|[1-9][0-9]{0,17})\Z")
_VERSION_ID = re.compile(r"v[0-9]+\Z")


@dataclass(frozen=True, slots=True)
class ChunkBytes:
    data: bytes | memoryview
    etag: str | None  # strong, for a version's chunks (they never change)
    immutable: bool  # the key names a version by id: its answer can be cached for good


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
    return await nodes.node_meta(svc, caller, domain, node, core), _etag(domain, key, core)


async def read_chunk(svc: Service, caller: Caller, key: nodes.Key, core: bool) -> ChunkBytes:
    domain = await nodes.open_key(svc, caller, key, Permission.READ)
    node, rest = await nodes.walk(svc, caller, domain, key.parts, Permission.READ)
    if node.is_group:
        raise NotFound(f"{node.path} is a group: it has no chunk {'/'.join(rest)[:100]}")
    view = await _view(svc, domain, node, core)
    index = chunk_index(view.layout, rest, writing=False)
    ref = await view.layout.locator.locate(index)
    stored = None if ref is None else await engine.fetch(ref)
    if ref is None or stored is None:
        raise NotFound(f"chunk {list(index)} of {node.path} was never written (it reads as the fill value)")
    etag = _etag(domain, key, core)
    if view.plan.as_stored and ref.filter_mask == 0:
        return ChunkBytes(stored, etag, immutable(key))
    layout = view.layout
    arr = await svc.workers.cpu(layout.codec.decode, stored, ref.filter_mask, size=len(stored) * 4)
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


async def write_chunk(svc: Service, caller: Caller, key: nodes.Key, body: bytes, core: bool) -> None:
    """Replace one chunk with ``body`` (its Zarr encoding under the array's codecs): checked to
    decode to the chunk's shape and type first; stored as sent when the codecs are the stored
    format, else encoded with the dataset's filters."""
    ds, view, index = await _writable(svc, caller, key, core)
    layout = view.layout
    limit = max(layout.codec.chunk_bytes * 2 + 4096, svc.limits.max_chunk_size) if view.form.elements is Elements.FIXED else svc.limits.max_chunk_size * 4
    if len(body) > limit:
        raise TooLarge(f"a chunk body of {len(body)} bytes is larger than this array's chunks can be")
    if view.plan.as_stored:
        try:
            arr = await svc.workers.cpu(layout.codec.decode, body, 0, size=len(body) * 4)
        except DataCorruption as exc:
            raise InvalidInput(f"the chunk does not decode with this array's codecs: {exc.message}") from None
        native = isinstance(layout.locator, NativeChunks) and not compact.is_compact(ds.doc)

        async def store_as_sent(target: DatasetLayout) -> None:
            if native and isinstance(target.locator, NativeChunks):
                await target.locator.store.put(target.locator.key(index), body)
            else:
                await writes.update_chunk(target, index, _replace(arr), True, svc.workers, whole=arr)

        await recorded(svc, ds, layout, [index], store_as_sent)
        return
    raw: bytes = body
    if view.plan.filtered:
        try:
            raw = bytes(await svc.workers.cpu(layout.codec.pipeline.decode, body, 0, size=len(body) * 4))
        except DataCorruption as exc:
            raise InvalidInput(f"the chunk does not decode with this array's codecs: {exc.message}") from None
    arr = await svc.workers.cpu(_from_served, raw, view.form, layout, size=len(raw))

    async def encode_and_store(target: DatasetLayout) -> None:
        await writes.update_chunk(target, index, _replace(arr), True, svc.workers, whole=arr)

    await recorded(svc, ds, layout, [index], encode_and_store)


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
