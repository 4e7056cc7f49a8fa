"""The root ``zarr.json`` (the whole hierarchy inline, `nodes.consolidate`) kept whole, so opening
a domain costs a few small reads instead of one read per object.

An answer is kept under the domain's metadata change token (`h5lake.catalog.metatoken`), read
*before* the documents it is made from, and the domain document's ETag (its ACLs, its root):
any change of an object document since gives the domain another token, so a kept answer is
never served after a change acknowledged by any process. A version's answer is kept under the
version itself (it never changes).

Kept in two places: in this process (`_KEPT`, by bytes) and, when it is the same for every
reader (no object has its own ACL) and not a version, in the store
(``.h5lake/zarr/<root>.<profile>.bin``: the token, the domain's ETag and the time in a first
line, then the answer), so other processes and restarts use it too. An answer is trusted for
at most `CONSOLIDATED_MAX_AGE` seconds: that bounds what a process that died between storing a
change and dropping the token (the metatoken's one gap) can leave stale.

The root's ETag names the answer (token, domain ETag, profile and, for an answer that depends
on the caller, the user), so ``If-None-Match`` is answered 304 without making it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass

import orjson

from h5lake.catalog import metatoken
from h5lake.errors import H5LakeError
from h5lake.model import ids
from h5lake.model.acl import Permission
from h5lake.model.stored import as_group
from h5lake.service.context import Caller, Service
from h5lake.service.views import Domain
from h5lake.service.zarr import nodes

log = logging.getLogger(__name__)

CONSOLIDATED_MAX_AGE = 600.0
KEPT_BYTES = 128 << 20  # answers kept in one process, together
_HEADER_MAX = 4096


@dataclass(frozen=True, slots=True)
class Answer:
    body: bytes  # the root zarr.json, serialized
    etag: str
    made: float  # time.time() when made
    shared: bool  # the same for every caller allowed to read the domain


_KEPT: OrderedDict[tuple[str, ...], Answer] = OrderedDict()
_kept_bytes = 0
_LOCKS: dict[tuple[str, ...], tuple[asyncio.Lock, int]] = {}  # answers being made, and their waiters
VERSION = "version"  # the token of a version's answer: it never changes


def _etag(base: tuple[str, ...], user: str | None) -> str:
    digest = hashlib.sha256("\0".join((*base, user or "")).encode()).hexdigest()
    return f'"{digest[:40]}"'


def _fresh(answer: Answer | None) -> Answer | None:
    if answer is None or time.time() - answer.made > CONSOLIDATED_MAX_AGE:
        return None
    return answer


def _keep(key: tuple[str, ...], answer: Answer) -> None:
    global _kept_bytes
    old = _KEPT.pop(key, None)
    if old is not None:
        _kept_bytes -= len(old.body)
    if len(answer.body) > KEPT_BYTES // 4:
        return
    _KEPT[key] = answer
    _kept_bytes += len(answer.body)
    while _kept_bytes > KEPT_BYTES and _KEPT:
        _, dropped = _KEPT.popitem(last=False)
        _kept_bytes -= len(dropped.body)


async def root_answer(svc: Service, caller: Caller, key: nodes.Key, core: bool) -> Answer:
    """The root ``zarr.json`` of ``key``'s domain for ``caller``: kept, or made now."""
    domain = await nodes.open_key(svc, caller, key, Permission.READ)
    root = domain.require_root()
    token = VERSION if not domain.view.writable else await metatoken.current(svc.store, root)  # before any document
    profile = "core" if core else "all"
    base = (domain.path, domain.etag, token, profile)
    user = caller.user or ""
    making = (*base, user)
    lock, waiting = _LOCKS.get(making) or (asyncio.Lock(), 0)
    _LOCKS[making] = (lock, waiting + 1)
    try:
        async with lock:  # one caller makes it, the others wait and find it kept
            return await _answer(svc, caller, domain, base, user, core)
    finally:
        count = _LOCKS[making][1] - 1
        if count:
            _LOCKS[making] = (lock, count)
        else:
            del _LOCKS[making]


async def _answer(svc: Service, caller: Caller, domain: Domain, base: tuple[str, ...], user: str, core: bool) -> Answer:
    for k in (base, (*base, user)):
        found = _fresh(_KEPT.get(k))
        if found is not None:
            _KEPT.move_to_end(k)
            return found
    versioned = base[2] == VERSION
    root = domain.require_root()
    answer = None if versioned else await _stored(svc, root, base)
    if answer is None:
        answer = await _make(svc, caller, domain, base, core)
        if answer.shared and not versioned:
            try:
                await _store(svc, root, base, answer)
            except H5LakeError as exc:  # kept for other processes only: the answer stands
                log.warning("keeping the consolidated metadata of %s failed: %s", domain.path, exc)
    _keep(base if answer.shared else (*base, user), answer)
    return answer


async def _make(svc: Service, caller: Caller, domain: Domain, base: tuple[str, ...], core: bool) -> Answer:
    node = await nodes.load_root(svc, domain)
    nodes.check_object(caller, domain, node.doc, Permission.READ)
    meta, shared = await nodes.consolidate(svc, caller, domain, as_group(node.doc), core)
    body = await svc.workers.cpu(orjson.dumps, meta, size=len(meta.get("consolidated_metadata", {}).get("metadata", {})) * 500)
    return Answer(body, _etag(base, None if shared else caller.user or ""), time.time(), shared)


def _stored_key(root: str, base: tuple[str, ...]) -> str:
    return ids.zarr_consolidated_key(root, base[3])


async def _stored(svc: Service, root: str, base: tuple[str, ...]) -> Answer | None:
    """The answer another process (or this one, before a restart) kept in the store, when it
    was made under the same token and domain ETag."""
    blob = await svc.store.get(_stored_key(root, base))
    if blob is None:
        return None
    data = bytes(blob.data)
    line, sep, body = data.partition(b"\n")
    if not sep or len(line) > _HEADER_MAX:
        return None
    try:
        header = orjson.loads(line)
        token, domain_etag, made = header["token"], header["domain_etag"], float(header["made"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    if token != base[2] or domain_etag != base[1]:
        return None
    return _fresh(Answer(body, _etag(base, None), made, True))


async def _store(svc: Service, root: str, base: tuple[str, ...], answer: Answer) -> None:
    header = orjson.dumps({"token": base[2], "domain_etag": base[1], "made": answer.made})
    await svc.store.put(_stored_key(root, base), header + b"\n" + answer.body)

