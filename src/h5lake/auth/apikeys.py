"""API keys: long random bearer tokens, of which the store keeps only a hash.

``h5lake apikey create USER`` prints a key once; the store keeps
``.h5lake/apikeys/<sha256 of the key>`` holding the user's name, so every server process on the
store accepts it and nobody can recover a key from the store. A key is 256 random bits, so a
plain SHA-256 is enough (no slow hash: there is nothing to guess). h5pyd sends a key as
``Authorization: Bearer <key>`` (``api_key=`` or ``hs_api_key``).

Lookups are remembered for ``ttl`` seconds (found or not), so a revoked key stops working on
every process within that time and a flood of made-up keys costs one store read each at most.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

import orjson

from h5lake.storage import Store

PREFIX = ".h5lake/apikeys/"
TOKEN_PREFIX = "h5l_"
_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class ApiKey:
    id: str  # the first 16 hex digits of the key's hash: safe to show and enough to revoke
    user: str
    created: float
    note: str = ""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_key(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX) and 16 < len(token) < 200


class ApiKeys:
    def __init__(self, store: Store, *, ttl: float = 30.0) -> None:
        self._store = store
        self._ttl = ttl
        self._cache: OrderedDict[str, tuple[float, str | None]] = OrderedDict()

    async def create(self, user: str, note: str = "") -> tuple[str, ApiKey]:
        """A new key for ``user``: the key itself (shown once) and its record."""
        if not user or ":" in user:
            raise ValueError("user names may not be empty or contain ':'")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = _digest(token)
        record = ApiKey(digest[:16], user, time.time(), note)
        body = {"user": user, "created": record.created, "note": note}
        await self._store.put(PREFIX + digest, orjson.dumps(body), if_none_match=True)
        return token, record

    async def user_for(self, token: str) -> str | None:
        """The user a key belongs to, or ``None`` for an unknown or revoked key."""
        if not looks_like_key(token):
            return None
        digest = _digest(token)
        now = time.monotonic()
        hit = self._cache.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        blob = await self._store.get(PREFIX + digest)
        user: str | None = None
        if blob is not None:
            try:
                user = str(orjson.loads(blob.data)["user"])
            except (orjson.JSONDecodeError, KeyError, TypeError):
                user = None
        self._cache[digest] = (now + self._ttl, user)
        self._cache.move_to_end(digest)
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return user

    async def list(self, user: str | None = None) -> list[ApiKey]:
        keys = []
        async for key in self._store.list(PREFIX):
            blob = await self._store.get(key)
            if blob is None:
                continue
            body = orjson.loads(blob.data)
            record = ApiKey(key[len(PREFIX) :][:16], body["user"], body["created"], body.get("note", ""))
            if user is None or record.user == user:
                keys.append(record)
        return keys

    async def revoke(self, key_id: str) -> int:
        """Delete every key whose id starts with ``key_id`` (at least 8 hex digits); returns how many."""
        if len(key_id) < 8:
            raise ValueError("give at least the first 8 hex digits of the key's id")
        gone = 0
        async for key in self._store.list(PREFIX + key_id.lower()):
            await self._store.delete(key)
            gone += 1
        return gone
