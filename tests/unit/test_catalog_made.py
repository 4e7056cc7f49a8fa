"""Catalog lines of objects a process created, taken from the create's answer instead of a HEAD
(`ChunkCatalog.note_made`), and HEADed again whenever anything else may have changed them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from h5lake.catalog.catalogs import ChunkCatalog
from h5lake.model.ids import Collection, catalog_key, new_object_id, new_root_id, object_key
from h5lake.storage.base import ObjectInfo, Store
from h5lake.storage.local import LocalStore
from h5lake.storage.memory import MemoryStore

DOMAIN = "/home/test_user1/made.h5"


@pytest.fixture(params=["memory", "local"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    s: Store = MemoryStore() if request.param == "memory" else LocalStore(tmp_path / "store")
    yield s
    await s.close()


class Counted:
    """Counts the HEADs and GETs a store is asked for, by key."""

    def __init__(self, store: Store) -> None:
        self.heads: list[str] = []
        self.gets: list[str] = []
        head, get = store.head, store.get

        async def counted_head(key: str) -> Any:
            self.heads.append(key)
            return await head(key)

        async def counted_get(key: str) -> Any:
            self.gets.append(key)
            return await get(key)

        store.head, store.get = counted_head, counted_get  # type: ignore[method-assign]


async def make(store: Store, kind: Collection, root: str, **extra: Any) -> tuple[str, ObjectInfo]:
    obj_id = new_object_id(kind, root)
    data = orjson.dumps({"id": obj_id, "root": root, **extra})
    etag = await store.put(object_key(obj_id), data, if_none_match=True)
    return obj_id, ObjectInfo(object_key(obj_id), len(data), etag, time.time())


async def lines(store: Store, name: str) -> dict[str, list[str]]:
    blob = await store.get(catalog_key(DOMAIN, name))
    return {} if blob is None else {line.split()[0]: line.split() for line in blob.data.decode().splitlines()}


async def test_a_made_object_is_listed_from_its_create_with_no_head(store: Store) -> None:
    root = new_root_id()
    group, group_made = await make(store, Collection.GROUPS, root)
    dataset, dataset_made = await make(store, Collection.DATASETS, root, type="H5T_STD_I32LE")
    catalog = ChunkCatalog(store, autostart=False)
    counted = Counted(store)
    catalog.note_made(DOMAIN, group, group_made)
    catalog.note_made(DOMAIN, dataset, dataset_made)
    await catalog.flush()
    assert object_key(group) not in counted.heads and object_key(dataset) not in counted.heads
    assert not [key for key in counted.gets if dataset in key]  # no chunk catalog read: none listed
    for obj_id, name, totals in ((group, ".groups.txt", []), (dataset, ".datasets.txt", ["0", "0"])):
        info = await store.head(object_key(obj_id))
        assert info is not None
        line = (await lines(store, name))[obj_id]
        assert line[:2] + line[3:] == [obj_id, info.etag, str(info.size), *totals]  # what a HEAD gives
        assert abs(int(line[2]) - info.last_modified) <= 1


async def test_a_made_object_changed_since_is_headed(store: Store) -> None:
    root = new_root_id()
    group, made = await make(store, Collection.GROUPS, root)
    catalog = ChunkCatalog(store, autostart=False)
    catalog.note_made(DOMAIN, group, made)
    changed = orjson.dumps({"id": group, "root": root, "attributes": {"a": 1}})
    etag = await store.put(object_key(group), changed)
    catalog.note_object(DOMAIN, group)  # this process changed it after the create
    counted = Counted(store)
    await catalog.flush()
    assert object_key(group) in counted.heads
    assert (await lines(store, ".groups.txt"))[group][1] == etag


async def test_a_line_another_process_wrote_since_wins_over_the_create(store: Store) -> None:
    """Another process changed the object and flushed first: its line is in the catalog, so the
    creator HEADs instead of putting back the create's ETag."""
    root = new_root_id()
    group, made = await make(store, Collection.GROUPS, root)
    mine, other = ChunkCatalog(store, autostart=False), ChunkCatalog(store, autostart=False)
    mine.note_made(DOMAIN, group, made)
    etag = await store.put(object_key(group), orjson.dumps({"id": group, "root": root, "attributes": {"b": 2}}))
    other.note_object(DOMAIN, group)
    await other.flush()
    await mine.flush()
    assert (await lines(store, ".groups.txt"))[group][1] == etag


async def test_a_made_object_noted_twice_is_headed(store: Store) -> None:
    """Two notes of one object before a flush (a create sent again, say): no answer is trusted."""
    root = new_root_id()
    group, made = await make(store, Collection.GROUPS, root)
    catalog = ChunkCatalog(store, autostart=False)
    catalog.note_made(DOMAIN, group, made)
    catalog.note_made(DOMAIN, group, made)
    counted = Counted(store)
    await catalog.flush()
    assert counted.heads == [object_key(group)]
