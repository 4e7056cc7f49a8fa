"""Domain and dataset catalogs (h5lake.catalog.catalogs) on real stores: memory and a local folder."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from h5lake.catalog.catalogs import (
    PENDING_PREFIX,
    ChunkCatalog,
    delete_dataset_chunks,
    region_indexes,
    region_json,
)
from h5lake.catalog.liveness import DEAD_HEARTBEAT, SWEEP_EVERY
from h5lake.catalog.totals import dataset_chunk_totals, dataset_stats
from h5lake.model.ids import (
    Collection,
    alive_key,
    catalog_key,
    chunk_catalog_key,
    chunk_key,
    new_object_id,
    new_root_id,
    object_key,
)
from h5lake.storage.base import Store
from h5lake.storage.local import LocalStore
from h5lake.storage.memory import MemoryStore

DOMAIN = "/home/test_user1/cat.h5"
I32 = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
Index = tuple[int, ...]


@pytest.fixture(params=["memory", "local"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    s: Store = MemoryStore() if request.param == "memory" else LocalStore(tmp_path / "store")
    yield s
    await s.close()


# --- helpers ----------------------------------------------------------------------------------------


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


async def new_dataset(
    store: Store, root: str, dims: list[int] | None = (10, 10), chunks: list[int] | None = (4, 4), **extra: Any
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": new_object_id(Collection.DATASETS, root),
        "root": root,
        "type": I32,
        "shape": {"class": "H5S_SIMPLE", "dims": list(dims)} if dims is not None else {"class": "H5S_SCALAR"},
        "layout": {"class": "H5D_CHUNKED", "dims": list(chunks or [])},
        "lastModified": time.time(),
        **extra,
    }
    await store.put(object_key(doc["id"]), orjson.dumps(doc))
    return doc


async def write_chunk(store: Store, dataset_id: str, index: Index, data: bytes) -> None:
    await store.put(chunk_key(dataset_id, index), data)


async def read_catalog(store: Store, key: str) -> dict[str, list[str]]:
    blob = await store.get(key)
    if blob is None:
        return {}
    text = blob.data.decode()
    assert text == "" or text.endswith("\n")
    return {line.split(" ")[0]: line.split(" ") for line in text.splitlines()}


async def chunk_lines(store: Store, dataset_id: str) -> dict[str, list[str]]:
    return await read_catalog(store, chunk_catalog_key(DOMAIN, dataset_id))


async def pending(store: Store) -> list[str]:
    return [k async for k in store.list(PENDING_PREFIX)]


async def eventually(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            await check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)


# --- convergence of notes ------------------------------------------------------------------------------


async def test_notes_converge_into_catalogs_in_seed_format(store: Store) -> None:
    root = new_root_id()
    ds = await new_dataset(store, root)
    data = {(2, 2): b"c" * 30, (0, 1): b"b" * 20, (0, 0): b"a" * 10}
    for index, payload in data.items():
        await write_chunk(store, ds["id"], index, payload)
    catalog = ChunkCatalog(store, delay=0.01)
    catalog.note(DOMAIN, ds["id"], list(data))  # the flusher starts on its own

    async def converged() -> None:
        assert len(await chunk_lines(store, ds["id"])) == 3

    await eventually(converged)
    blob = await store.get(chunk_catalog_key(DOMAIN, ds["id"]))
    assert blob is not None
    lines = blob.data.decode().splitlines()
    assert [line.split()[0] for line in lines] == ["0_0", "0_1", "2_2"]  # sorted by index
    now = time.time()
    for line, index in zip(lines, [(0, 0), (0, 1), (2, 2)]):
        _, etag, modified, size = line.split(" ")
        assert etag == md5(data[index])
        assert int(size) == len(data[index])
        assert abs(int(modified) - now) < 60

    async def listed() -> None:
        assert ds["id"] in await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt"))

    await eventually(listed)
    fields = (await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt")))[ds["id"]]
    info = await store.head(object_key(ds["id"]))
    assert info is not None
    assert fields == [ds["id"], info.etag, str(int(info.last_modified)), str(info.size), "3", "60"]
    await catalog.close()


async def test_overwritten_chunk_updates_and_deleted_chunk_disappears(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    await write_chunk(store, ds["id"], (0, 0), b"x" * 10)
    await write_chunk(store, ds["id"], (1, 1), b"y" * 10)
    catalog.note(DOMAIN, ds["id"], [(0, 0), (1, 1)])
    await catalog.flush()
    assert set(await chunk_lines(store, ds["id"])) == {"0_0", "1_1"}

    await write_chunk(store, ds["id"], (0, 0), b"z" * 25)
    await store.delete(chunk_key(ds["id"], (1, 1)))
    catalog.note(DOMAIN, ds["id"], [(0, 0), (1, 1)])
    await catalog.flush()
    lines = await chunk_lines(store, ds["id"])
    assert set(lines) == {"0_0"}
    assert lines["0_0"][1:] [::2] == [md5(b"z" * 25), "25"]
    assert (await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt")))[ds["id"]][4:] == ["1", "25"]


async def test_scalar_dataset_chunk_is_index_0(store: Store) -> None:
    ds = await new_dataset(store, new_root_id(), dims=None, chunks=None)
    await write_chunk(store, ds["id"], (), b"s" * 4)
    catalog = ChunkCatalog(store, autostart=False)
    catalog.note(DOMAIN, ds["id"], [()])
    await catalog.close()
    assert list(await chunk_lines(store, ds["id"])) == ["0"]
    stats = await dataset_stats(store, DOMAIN, ds)
    assert (stats["allocatedChunkCount"], stats["logicalChunkCount"], stats["logicalSize"]) == (1, 1, 4)


async def test_close_flushes_what_is_buffered(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, delay=60.0)  # would otherwise wait a minute
    await write_chunk(store, ds["id"], (0, 0), b"a")
    catalog.note(DOMAIN, ds["id"], [(0, 0)])
    await asyncio.sleep(0)
    await catalog.close()
    assert set(await chunk_lines(store, ds["id"])) == {"0_0"}


async def test_notes_of_a_dataset_that_does_not_exist_write_no_catalog() -> None:
    store = MemoryStore()
    catalog = ChunkCatalog(store, delay=60.0)
    dataset_id = "d-00000000-00000000-0000-000000-000000"
    for i in range(1000):
        catalog.note(DOMAIN, dataset_id, [(i, 0), (i, 1)])
    await catalog.close()  # merges the notes: their chunks are missing, so no line is kept
    blob = await store.get(chunk_catalog_key(DOMAIN, dataset_id))
    assert blob is None or blob.data == b""


# --- several processes -------------------------------------------------------------------------------


async def test_two_processes_sharing_a_local_store_lose_no_entries(tmp_path: Path) -> None:
    """Two stores on one folder, each with its own catalog, as two server processes would be."""
    stores = [LocalStore(tmp_path / "shared"), LocalStore(tmp_path / "shared")]
    catalogs = [ChunkCatalog(s, autostart=False) for s in stores]
    root = new_root_id()
    datasets = [await new_dataset(stores[0], root, dims=[64, 4], chunks=[1, 4]) for _ in range(3)]
    expected: dict[str, dict[str, bytes]] = {d["id"]: {} for d in datasets}

    async def process(p: int) -> None:
        for round_ in range(8):
            for ds in datasets:
                # Both write rows 0..3 (the same chunks, last writer wins) and rows of their own.
                rows = [round_ % 4, 8 + 2 * round_ + p]
                for row in rows:
                    payload = f"{p}-{round_}-{row}".encode() * (row + 1)
                    await write_chunk(stores[p], ds["id"], (row, 0), payload)
                catalogs[p].note(DOMAIN, ds["id"], [(row, 0) for row in rows])
            await catalogs[p].flush()

    await asyncio.gather(process(0), process(1))
    for ds in datasets:
        for key_row in range(64):
            blob = await stores[0].get(chunk_key(ds["id"], (key_row, 0)))
            if blob is not None:
                expected[ds["id"]][f"{key_row}_0"] = blob.data
    for ds in datasets:
        lines = await chunk_lines(stores[1], ds["id"])
        assert set(lines) == set(expected[ds["id"]])  # 4 shared rows + 2 x 8 rows of their own
        assert len(lines) == 20
        for name, data in expected[ds["id"]].items():
            assert lines[name][1] == md5(data)  # never an older write's line
            assert lines[name][3] == str(len(data))
    listing = await read_catalog(stores[0], catalog_key(DOMAIN, ".datasets.txt"))
    for ds in datasets:
        total = sum(len(b) for b in expected[ds["id"]].values())
        assert listing[ds["id"]][4:] == ["20", str(total)]
    for s in stores:
        await s.close()


# --- crash convergence ------------------------------------------------------------------------------


async def test_recover_merges_what_a_crashed_process_left(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    crashed = ChunkCatalog(store, autostart=False)
    intent = await crashed.begin(DOMAIN, ds["id"], [(0, 0), (0, 1), (1, 0), (1, 1)])
    await write_chunk(store, ds["id"], (0, 0), b"a" * 5)
    await write_chunk(store, ds["id"], (1, 1), b"b" * 7)
    crashed.note(DOMAIN, ds["id"], [(0, 0), (1, 1)], intent)
    # A second write died half-way, before its note.
    await crashed.begin(DOMAIN, ds["id"], [(2, 2)])
    await write_chunk(store, ds["id"], (2, 2), b"c" * 3)
    del crashed  # killed: nothing was flushed
    assert await chunk_lines(store, ds["id"]) == {}
    assert len(await pending(store)) == 2

    fresh = ChunkCatalog(store, autostart=False)
    assert await fresh.recover() == 0  # too young: their writers might still be at work
    assert await fresh.recover(older_than=0) == 2
    lines = await chunk_lines(store, ds["id"])
    assert {n: f[3] for n, f in lines.items()} == {"0_0": "5", "1_1": "7", "2_2": "3"}
    assert (await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt")))[ds["id"]][4:] == ["3", "15"]
    assert await pending(store) == []


async def test_intent_is_deleted_once_its_note_is_merged(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    intent = await catalog.begin(DOMAIN, ds["id"], [(0, 0)])
    assert len(await pending(store)) == 1
    assert await catalog.recover(older_than=0) == 0  # our own live write is not recovered
    await write_chunk(store, ds["id"], (0, 0), b"a")
    catalog.note(DOMAIN, ds["id"], [(0, 0)], intent)
    await catalog.flush()
    assert await pending(store) == []
    assert set(await chunk_lines(store, ds["id"])) == {"0_0"}


async def test_aborted_write_is_left_to_recovery(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    intent = await catalog.begin(DOMAIN, ds["id"], [(0, 0), (0, 1)])
    await write_chunk(store, ds["id"], (0, 1), b"half")
    catalog.abort(intent)
    assert await catalog.recover(older_than=0) == 1
    assert set(await chunk_lines(store, ds["id"])) == {"0_1"}


async def test_recording_notes_what_the_write_did_with_its_intent(store: Store) -> None:
    """``catalog.recording``: the intent is durable while the body runs, the chunks the body says
    it wrote are noted with it, and the intent is deleted once they are merged."""
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    async with catalog.recording(DOMAIN, ds["id"], [(0, 0), (0, 1)]) as rec:
        assert len(await pending(store)) == 1
        await write_chunk(store, ds["id"], (0, 1), b"b")
        rec.written = [(0, 1)]
    await catalog.flush()
    assert await pending(store) == []
    assert set(await chunk_lines(store, ds["id"])) == {"0_1"}


async def test_a_recording_whose_write_fails_is_left_to_recovery(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    with pytest.raises(OSError):
        async with catalog.recording(DOMAIN, ds["id"], [(0, 0), (0, 1)]):
            await write_chunk(store, ds["id"], (0, 1), b"half")
            raise OSError("the store went away")
    await catalog.flush()
    assert len(await pending(store)) == 1  # not noted: the intent stays for recovery
    assert await catalog.recover(older_than=0) == 1
    assert set(await chunk_lines(store, ds["id"])) == {"0_1"}


async def test_a_live_process_keeps_its_intent_however_long_its_write_runs(store: Store) -> None:
    """Another process recovers an intent only once its owner stops saying it is alive (its
    heartbeat), so a write running past ``stale_after`` keeps its intent (docs/storage.md,
    "Crashes and races")."""
    ds = await new_dataset(store, new_root_id())
    # heartbeats every 0.3 s, judged stale after 0.9 s: a writer whose heartbeat task a loaded
    # machine delays by 0.1 s is still alive (at 0.05 s and 0.15 s the test failed under load)
    writer = ChunkCatalog(store, stale_after=1.2)
    await writer.start()
    await writer.begin(DOMAIN, ds["id"], [(3, 3)])
    other = ChunkCatalog(store, stale_after=1.2, autostart=False)
    for _ in range(4):  # well past the writer's stale_after and three heartbeat periods
        await asyncio.sleep(0.4)
        assert await other.recover(older_than=0) == 0
        assert len(await pending(store)) == 1
    await write_chunk(store, ds["id"], (3, 3), b"late")
    await writer.close()  # ends like a dead process here: the intent was never noted
    assert await other.recover(older_than=0) == 1
    assert set(await chunk_lines(store, ds["id"])) == {"3_3"}


async def test_start_runs_recovery_periodically(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    crashed = ChunkCatalog(store, autostart=False)
    await crashed.begin(DOMAIN, ds["id"], [(1, 2)])
    await write_chunk(store, ds["id"], (1, 2), b"x")
    catalog = ChunkCatalog(store, stale_after=0.0, recover_every=0.05)
    await catalog.start()

    async def recovered() -> None:
        assert set(await chunk_lines(store, ds["id"])) == {"1_2"}
        assert await pending(store) == []

    await eventually(recovered)
    await catalog.close()


def test_region_json_is_a_box_for_hyperslabs_and_a_list_for_scattered_points() -> None:
    box = [(i, j) for i in range(2, 5) for j in range(3)]
    assert region_json(box) == {"lo": [2, 0], "hi": [5, 3]}
    assert sorted(region_indexes(region_json(box))) == box
    scattered = [(0, 0), (100, 100)]
    assert region_json(scattered) == {"chunks": [[0, 0], [100, 100]]}
    assert list(region_indexes(region_json(scattered))) == scattered
    assert list(region_indexes(region_json([()]))) == [()]


# --- deletion, totals, stats -------------------------------------------------------------------------


async def test_delete_dataset_chunks_removes_chunks_catalog_and_line(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    for index in [(0, 0), (2, 1)]:
        await write_chunk(store, ds["id"], index, b"data")
    catalog.note(DOMAIN, ds["id"], [(0, 0), (2, 1)])
    await catalog.flush()
    await write_chunk(store, ds["id"], (1, 2), b"not yet catalogued")
    await store.delete(object_key(ds["id"]))

    await delete_dataset_chunks(store, DOMAIN, ds)
    for index in [(0, 0), (2, 1), (1, 2)]:
        assert await store.head(chunk_key(ds["id"], index)) is None
    assert await store.head(chunk_catalog_key(DOMAIN, ds["id"])) is None
    assert ds["id"] not in await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt"))


async def test_flush_for_a_deleted_dataset_writes_no_catalog(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    await write_chunk(store, ds["id"], (0, 0), b"late")
    await store.delete(object_key(ds["id"]))
    catalog = ChunkCatalog(store, autostart=False)
    catalog.note(DOMAIN, ds["id"], [(0, 0)])
    await catalog.flush()
    assert await store.head(chunk_catalog_key(DOMAIN, ds["id"])) is None
    assert ds["id"] not in await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt"))


async def test_dataset_stats(store: Store) -> None:
    ds = await new_dataset(store, new_root_id(), dims=[10, 7], chunks=[4, 4])
    catalog = ChunkCatalog(store, autostart=False)
    await write_chunk(store, ds["id"], (0, 0), b"a" * 64)
    await write_chunk(store, ds["id"], (2, 1), b"b" * 40)
    catalog.note(DOMAIN, ds["id"], [(0, 0), (2, 1)])
    await catalog.flush()
    stats = await dataset_stats(store, DOMAIN, ds)
    assert stats["allocatedChunkCount"] == 2
    assert stats["logicalChunkCount"] == 6  # ceil(10/4) * ceil(7/4)
    assert stats["logicalSize"] == 10 * 7 * 4
    assert stats["allocatedSize"] == 104
    assert stats["lastModified"] >= ds["lastModified"] - 1
    null = dict(ds, shape={"class": "H5S_NULL"}, id=new_object_id(Collection.DATASETS, ds["root"]))
    assert (await dataset_stats(store, DOMAIN, null))["logicalChunkCount"] == 0
    assert (await dataset_stats(store, DOMAIN, ds, item_size=8))["logicalSize"] == 560


async def test_dataset_chunk_totals_native_and_linked(store: Store) -> None:
    root = new_root_id()
    listed = await new_dataset(store, root)
    unlisted = await new_dataset(store, root)
    linked = await new_dataset(store, root)
    linked["layout"] = {"class": "H5D_CHUNKED_REF", "dims": [4, 4], "chunks": {"0_0": [0, 100], "0_1": [100, 50]}}
    catalog = ChunkCatalog(store, autostart=False)
    await write_chunk(store, listed["id"], (0, 0), b"a" * 10)
    catalog.note(DOMAIN, listed["id"], [(0, 0)])
    await catalog.flush()
    await write_chunk(store, unlisted["id"], (1, 1), b"b" * 5)
    await store.put(chunk_catalog_key(DOMAIN, unlisted["id"]), f"1_1 {md5(b'b' * 5)} 1 5\n".encode())
    totals = await dataset_chunk_totals(store, DOMAIN, [listed, unlisted, linked])
    assert totals == (2, 15, 2, 150)


async def test_group_and_datatype_catalogs(store: Store) -> None:
    root = new_root_id()
    group = new_object_id(Collection.GROUPS, root)
    dtype = new_object_id(Collection.DATATYPES, root)
    for obj_id in (root, group, dtype):
        await store.put(object_key(obj_id), orjson.dumps({"id": obj_id}))
    catalog = ChunkCatalog(store, autostart=False)
    for obj_id in (root, group, dtype):
        catalog.note_object(DOMAIN, obj_id)
    await catalog.flush()
    groups = await read_catalog(store, catalog_key(DOMAIN, ".groups.txt"))
    assert list(groups) == [group]  # the root group is not listed
    info = await store.head(object_key(group))
    assert info is not None
    assert groups[group] == [group, info.etag, str(int(info.last_modified)), str(info.size)]
    assert list(await read_catalog(store, catalog_key(DOMAIN, ".datatypes.txt"))) == [dtype]

    await store.delete(object_key(group))
    catalog.note_object(DOMAIN, group)
    await catalog.flush()
    assert await read_catalog(store, catalog_key(DOMAIN, ".groups.txt")) == {}


async def test_new_dataset_without_chunks_is_listed_with_zero_totals(store: Store) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    catalog.note_object(DOMAIN, ds["id"])
    await catalog.flush()
    assert (await read_catalog(store, catalog_key(DOMAIN, ".datasets.txt")))[ds["id"]][4:] == ["0", "0"]


async def test_a_live_writer_whose_clock_runs_behind_keeps_its_intent(store: Store) -> None:
    """A heartbeat is judged by when the store took it, not only by the clock of the process
    that wrote it: a live writer whose clock ran a minute behind had its intent recovered."""
    ds = await new_dataset(store, new_root_id())
    writer = ChunkCatalog(store, autostart=False)
    await writer.begin(DOMAIN, ds["id"], [(2, 3)])
    # the heartbeat that writer puts just now, its clock a minute behind this one's
    beat = {"renew": writer.alive.renew, "at": time.time() - 60}
    await store.put(alive_key(writer.alive.owner), orjson.dumps(beat))
    other = ChunkCatalog(store, autostart=False)
    assert await other.recover(older_than=0) == 0
    assert len(await pending(store)) == 1


async def test_a_dead_writer_whose_clock_ran_ahead_has_its_intent_recovered() -> None:
    """The other way round: a writer whose clock ran an hour ahead, killed a minute ago, kept
    its intent from recovery for another hour."""
    store = MemoryStore()
    ds = await new_dataset(store, new_root_id())
    crashed = ChunkCatalog(store, autostart=False)
    await crashed.begin(DOMAIN, ds["id"], [(1, 1)])
    await write_chunk(store, ds["id"], (1, 1), b"late")
    key = alive_key(crashed.alive.owner)
    await store.put(key, orjson.dumps({"renew": crashed.alive.renew, "at": time.time() + 3600}))
    beat = await store.get(key)
    assert beat is not None
    # the store took that heartbeat, the writer's last, a minute ago
    store._objects[key] = dataclasses.replace(beat, last_modified=time.time() - 60)
    assert await ChunkCatalog(store, autostart=False).recover(older_than=0) == 1
    assert set(await chunk_lines(store, ds["id"])) == {"1_1"}


async def test_dead_heartbeats_are_swept_at_most_every_sweep_period() -> None:
    """Heartbeats left by processes that died long ago are deleted by a recovery pass, but one
    process looks for them only every ``SWEEP_EVERY`` seconds, not at every pass: a look HEADs
    every heartbeat, so with N processes on S3 each pass cost N * N HEADs."""
    store = MemoryStore()

    async def dead_heartbeat(owner: str) -> str:
        key = alive_key(owner)
        await store.put(key, orjson.dumps({"renew": 1.0, "at": 0.0}))
        beat = await store.get(key)
        assert beat is not None
        store._objects[key] = dataclasses.replace(beat, last_modified=time.time() - 2 * DEAD_HEARTBEAT)
        return key

    first = await dead_heartbeat("a" * 32)
    catalog = ChunkCatalog(store, autostart=False)
    await catalog.recover()
    assert await store.head(first) is None
    second = await dead_heartbeat("b" * 32)
    await catalog.recover()  # within the sweep period: not looked for
    assert await store.head(second) is not None
    catalog.alive._last_sweep -= SWEEP_EVERY
    await catalog.recover()
    assert await store.head(second) is None


def hold_intents(store: Store, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Intent puts wait until the returned event is set (other puts go through)."""
    release, real_put = asyncio.Event(), store.put

    async def put(key: str, data: bytes, **options: Any) -> str:
        if key.startswith(PENDING_PREFIX):
            await release.wait()
        return await real_put(key, data, **options)

    monkeypatch.setattr(store, "put", put)
    return release


async def test_an_early_recording_runs_its_body_while_the_intent_is_written(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``recording(early=True)``: the body starts before the intent is durable, and
    ``rec.ready()`` returns once it is; the write is then noted with it as usual."""
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    release = hold_intents(store, monkeypatch)
    async with catalog.recording(DOMAIN, ds["id"], [(0, 0), (0, 1)], early=True) as rec:
        assert await pending(store) == []  # the body runs, the intent is still being written
        release.set()
        await rec.ready()
        assert len(await pending(store)) == 1
        await write_chunk(store, ds["id"], (0, 1), b"b")
        rec.written = [(0, 1)]
    await catalog.flush()
    assert await pending(store) == []
    assert set(await chunk_lines(store, ds["id"])) == {"0_1"}


async def test_an_early_recording_that_fails_before_its_intent_landed_leaves_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = await new_dataset(store, new_root_id())
    catalog = ChunkCatalog(store, autostart=False)
    release = hold_intents(store, monkeypatch)
    with pytest.raises(OSError):
        async with catalog.recording(DOMAIN, ds["id"], [(0, 0)], early=True):
            raise OSError("the body failed before placing anything")
    release.set()
    await asyncio.sleep(0.05)  # a put not cancelled would land now
    await catalog.flush()
    assert await pending(store) == []  # the intent's put was cancelled
    assert await catalog.recover(older_than=0) == 0
