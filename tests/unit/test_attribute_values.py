"""Collecting large attribute values no document names (service/objects/attribute_values.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from h5lake.model.ids import attribute_value_key, attribute_values_prefix
from h5lake.service.objects import attribute_values as attrvalues
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


def test_top_level_listing_does_not_read_a_domain_per_objects_values(tmp_path: Any) -> None:
    """An object's large values sit under ``<object key>.attrs/``, a prefix at the top of the
    bucket: a listing of the top-level folder must not look for a domain in each (one GET per
    object holding a large attribute, in the whole bucket, before the first domain's name)."""
    from h5lake.api.app import build_service
    from h5lake.config import Settings
    from h5lake.service.context import Caller
    from h5lake.service.domains.core import create_domain, list_domains

    class Counting(MemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.asked: list[str] = []

        async def get(self, key: str) -> Any:
            self.asked.append(key)
            return await super().get(key)

    async def run() -> tuple[list[str], list[str]]:
        store = Counting()
        svc = build_service(Settings(data=tmp_path / "data"), store)
        admin = Caller("admin", is_admin=True)
        await create_domain(svc, admin, "/top.h5", {})
        for i in range(5):
            await store.put(attribute_value_key(OBJ[:-1] + str(i), "a" * 32), b"value")
        store.asked.clear()
        listed = [d["name"] for d in await list_domains(svc, admin, "/")]
        return listed, [k for k in store.asked if ".attrs/" in k]

    listed, values_asked = asyncio.run(run())
    assert listed == ["/top.h5"]
    assert values_asked == []
