"""Finishing a version left half written to a domain's head by a dead process
(service/versions/applying.py): two services on one in-memory store stand for the dead writer's
process and the next one; the writer's intent is put in the domain document as it would have
left it (its lease lapsed)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from h5lake.api.app import build_service
from h5lake.config import Settings
from h5lake.model.ids import domain_key, object_key, version_key
from h5lake.service.context import Caller, Service
from h5lake.service.documents import Doc
from h5lake.service.domains.core import create_domain, load_domain
from h5lake.service.versions.applying import APPLYING, COMMITTING
from h5lake.service.versions.commit import commit
from h5lake.storage.memory import MemoryStore

ADMIN = Caller("admin", is_admin=True)
PATH = "/d.h5"


async def _two(tmp_path: Path) -> tuple[Service, Service]:
    store = MemoryStore()
    dead, alive = (build_service(Settings(data=tmp_path / "data"), store) for _ in range(2))
    await create_domain(dead, ADMIN, PATH, {})
    return dead, alive


async def _set_attr(svc: Service, value: int) -> None:
    root = (await load_domain(svc, PATH)).require_root()

    def put(doc: Doc) -> None:
        doc.setdefault("attributes", {})["a"] = {"type": "H5T_STD_I32LE", "shape": {"class": "H5S_SCALAR"},
                                                 "value": value, "created": time.time()}

    await svc.docs.update(object_key(root), put, "root")


async def _died_writing(svc: Service, intent: Doc) -> None:
    """As a writer dying after `begin` leaves the domain document: the intent, a lapsed lease."""

    def left(doc: Doc) -> None:
        doc[APPLYING] = intent
        doc[COMMITTING] = {"until": time.time() - 1}

    await svc.docs.update(domain_key(PATH), left, "domain")


async def _root_attr(svc: Service) -> Any:
    root = (await load_domain(svc, PATH)).require_root()
    found = await svc.docs.get(object_key(root))
    assert found is not None
    return (found.doc.get("attributes") or {}).get("a", {}).get("value")


def test_a_version_whose_record_exists_is_written_to_the_head_by_the_next_load(tmp_path: Path) -> None:
    async def run() -> tuple[Any, Any, bool]:
        dead, alive = await _two(tmp_path)
        await _set_attr(dead, 1)
        await commit(dead, ADMIN, PATH, {})
        v1 = (await dead.docs.get(version_key(PATH, 1))).doc  # type: ignore[union-attr]
        await _set_attr(dead, 2)  # the head moved on; then a restore of v1 died part-way
        await _died_writing(dead, {"version": v1["id"], "tree": v1["tree"], "parent": None})
        before = (await dead.docs.get(domain_key(PATH))).doc[APPLYING]  # type: ignore[union-attr]
        head = await load_domain(alive, PATH)  # finishes the restore
        return before["version"], await _root_attr(alive), APPLYING in head.doc

    version, value, left = asyncio.run(run())
    assert version == "v1" and value == 1 and not left


def test_a_merge_that_died_before_its_record_never_happens(tmp_path: Path) -> None:
    async def run() -> tuple[Any, Any, Any, bool]:
        dead, alive = await _two(tmp_path)
        await _set_attr(dead, 1)
        v1 = await commit(dead, ADMIN, PATH, {})
        await _died_writing(dead, {"version": "v2", "tree": "0" * 64, "parent": v1["id"]})
        head = await load_domain(alive, PATH)
        stub = await alive.docs.get(version_key(PATH, 2))
        late = await commit(alive, ADMIN, PATH, {})  # the number is taken: a commit gets the next
        return await _root_attr(alive), stub and stub.doc, late["id"], APPLYING in head.doc

    value, stub, late, left = asyncio.run(run())
    assert value == 1 and not left
    assert stub is not None and stub["deleted"] is True and stub["number"] == 2
    assert late == "v3"


def test_a_version_that_cannot_be_written_leaves_the_domain_usable(tmp_path: Path) -> None:
    """Its manifest is missing from the store: the intent goes (logged) rather than every request
    to the domain failing or waiting for ever."""

    async def run() -> tuple[Any, bool]:
        dead, alive = await _two(tmp_path)
        await _set_attr(dead, 1)
        v1 = await commit(dead, ADMIN, PATH, {})
        await _set_attr(dead, 2)
        record = dict((await dead.docs.get(version_key(PATH, 1))).doc)  # type: ignore[union-attr]
        record["tree"] = "1" * 64  # a version whose manifest is gone
        await dead.store.put(version_key(PATH, 1), orjson.dumps(record))
        await _died_writing(dead, {"version": v1["id"], "tree": "1" * 64, "parent": None})
        head = await load_domain(alive, PATH)
        return await _root_attr(alive), APPLYING in head.doc

    out: list[tuple[Any, bool]] = []
    worker = threading.Thread(target=lambda: out.append(asyncio.run(run())), daemon=True)
    worker.start()
    worker.join(60)  # a load that retried the unfinishable version for ever would never return
    assert out, "loading the domain did not return"
    value, left = out[0]
    assert value == 2 and not left
