"""Collecting large attribute values no document names (service/attrvalues.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from h5lake.model.ids import attribute_value_key, attribute_values_prefix
from h5lake.service import attrvalues
from h5lake.storage.memory import MemoryStore

OBJ = "g-12345678-12345678-1234-123456-123456"


def test_collect_deletes_only_old_unnamed_values() -> None:
    async def run() -> list[str]:
        store = MemoryStore()
        svc: Any = SimpleNamespace(store=store)
        for token in ("a" * 32, "b" * 32, "c" * 32):
            await store.put(attribute_value_key(OBJ, token), b"value " + token.encode())
        doc = {"attributes": {"x": {"valueObject": {"key": "a" * 32, "sha256": "0" * 64, "size": 38}},
                              "y": {"value": 1}}}
        await attrvalues.collect(svc, OBJ, doc)  # all young: kept
        assert len([k async for k in store.list(attribute_values_prefix(OBJ))]) == 3
        await attrvalues.collect(svc, OBJ, doc, grace=0.0)  # old and unnamed: b and c go
        kept = [k async for k in store.list(attribute_values_prefix(OBJ))]
        await attrvalues.collect(svc, OBJ, None)  # the object is gone: everything goes
        return kept + [k async for k in store.list(attribute_values_prefix(OBJ))]

    assert asyncio.run(run()) == [attribute_value_key(OBJ, "a" * 32)]
