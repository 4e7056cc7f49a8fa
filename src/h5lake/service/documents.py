"""JSON documents in the store, updated only by conditional writes.

Every metadata change is read, mutate, write-if-unchanged; a lost race re-reads and re-applies
the mutation, so concurrent writers in any number of processes never lose each other's changes.
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from h5lake.errors import AlreadyExists, Conflict, DataCorruption, NotFound
from h5lake.storage import PreconditionFailed, Store

Doc = dict[str, Any]
_MAX_ATTEMPTS = 50


@dataclass(frozen=True, slots=True)
class Versioned:
    doc: Doc
    etag: str


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc)


def loads(data: bytes, key: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataCorruption(f"stored object {key!r} is not valid JSON") from exc


class Documents:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, key: str) -> Versioned | None:
        blob = await self.store.get(key)
        if blob is None:
            return None
        return Versioned(loads(blob.data, key), blob.etag)

    async def require(self, key: str, what: str) -> Versioned:
        found = await self.get(key)
        if found is None:
            raise NotFound(f"{what} not found")
        return found

    async def create(self, key: str, doc: Doc, what: str) -> str:
        try:
            return await self.store.put(key, dumps(doc), if_none_match=True)
        except PreconditionFailed:
            raise AlreadyExists(f"{what} already exists") from None

    async def put(self, key: str, doc: Doc) -> str:
        return await self.store.put(key, dumps(doc))

    async def update(self, key: str, mutate: Callable[[Doc], Any], what: str) -> tuple[Doc, Any]:
        """Apply ``mutate(doc)`` (which changes ``doc`` in place and returns a result) atomically.

        ``mutate`` may raise to abort; it may return the sentinel ``UNCHANGED`` as the first
        element of a tuple result to skip the write. Returns (new doc, mutate's result).
        """
        for attempt in range(_MAX_ATTEMPTS):
            current = await self.require(key, what)
            doc = current.doc
            result = mutate(doc)
            if isinstance(result, Unchanged):
                return doc, result.value
            try:
                await self.store.put(key, dumps(doc), if_match=current.etag)
                return doc, result
            except PreconditionFailed:
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise Conflict(f"{what} is changing too fast; try again")

    async def delete(self, key: str) -> None:
        await self.store.delete(key)


class PutOutcome(enum.Enum):
    """What a PUT of links or attributes did: something was added or replaced, or all was there."""

    CREATED = enum.auto()
    UNCHANGED = enum.auto()


@dataclass(frozen=True, slots=True)
class Unchanged:
    """Returned by a mutation that decided nothing needs writing."""

    value: Any = None
