"""An object's document changed through `Documents` tells the catalog itself
(`Documents.object_changed`, wired to `ChunkCatalog.note_object`): no use case can forget it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from h5lake.errors import InvalidInput
from h5lake.service.documents import Documents, Unchanged
from h5lake.storage.memory import MemoryStore

OBJ = "g-12345678-12345678-1234-123456-123456"


def test_every_object_change_through_documents_is_told_with_its_domain() -> None:
    async def run() -> list[tuple[str, str]]:
        docs = Documents(MemoryStore())
        told: list[tuple[str, str]] = []
        docs.object_changed = lambda domain, obj_id: told.append((domain, obj_id))
        await docs.create_object("/a.h5", {"id": OBJ, "links": {}})
        await docs.create_object("/a.h5", {"id": OBJ, "links": {}}, lambda existing: existing == {"id": OBJ, "links": {}})
        await docs.update_object("/a.h5", OBJ, lambda d: d.update(title="x"), f"object {OBJ}")
        await docs.update_object("/a.h5", OBJ, lambda d: Unchanged(), f"object {OBJ}")

        def refuse(doc: object) -> None:
            raise InvalidInput("no")

        with pytest.raises(InvalidInput):
            await docs.update_object("/a.h5", OBJ, refuse, f"object {OBJ}")
        assert len(told) == 4  # a refused change is not told
        await docs.put_object("/a.h5", OBJ, {"id": OBJ, "links": {}})
        await docs.delete_object("/a.h5", OBJ)
        return told

    assert asyncio.run(run()) == [("/a.h5", OBJ)] * 6


def test_an_attribute_put_reaches_the_domains_last_change_stamp(tmp_path: Path) -> None:
    """Through a use case: the update of the root group's document alone (no chunk written)
    moves the domain's last-change stamp at the next catalog flush."""
    from h5lake.api.app import build_service
    from h5lake.catalog.changed import last_changed
    from h5lake.config import Settings
    from h5lake.service.context import Caller
    from h5lake.service.domains.core import create_domain
    from h5lake.service.objects.attributes import put_attribute

    async def run() -> tuple[float | None, float | None]:
        svc = build_service(Settings(data=tmp_path / "data"), MemoryStore())
        admin = Caller("admin", is_admin=True)
        root = (await create_domain(svc, admin, "/noted.h5", {})).require_root()
        await svc.catalog.flush()
        before = await last_changed(svc.store, "/noted.h5")
        attr = {"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 1}
        await put_attribute(svc, admin, "/noted.h5", root, "a", attr)
        await svc.catalog.flush()
        return before, await last_changed(svc.store, "/noted.h5")

    before, after = asyncio.run(run())
    assert before is None
    assert after is not None
