"""The local store's ``create_many`` (storage/batches.py): a batch's objects made durable
together, each whole or absent after the process is killed in the middle of the batch."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from h5lake.storage import batches as batches_module
from h5lake.storage.local import LocalStore

BATCH = 40


def _items(tag: str, count: int = BATCH) -> list[tuple[str, bytes]]:
    return [(f"k{i:03d}", f"{tag}:{i}:".encode() * (i + 1)) for i in range(count)]


async def test_a_batch_makes_new_objects_and_leaves_existing_ones(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    try:
        await store.put("k005", b"there before")
        items = _items("a")
        made = await store.create_many(items)
        for (key, data), etag in zip(items, made, strict=True):
            blob = await store.get(key)
            assert blob is not None
            if key == "k005":
                assert etag is None and blob.data == b"there before"
            else:
                assert etag == hashlib.md5(data).hexdigest() and blob.data == data and blob.etag == etag
        assert [k async for k in store.list()] == [k for k, _ in items]  # no temporary file left
    finally:
        await store.close()


async def test_names_appear_only_after_a_flush_and_the_call_returns_after_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order that makes each object whole or absent: every temporary file written (not
    fsync'ed one by one), one flush, the links, one flush, then the return."""
    store = LocalStore(tmp_path / "root")
    events: list[tuple[str, Any]] = []
    lock = threading.Lock()
    real_sync, real_link, real_fsync = batches_module.sync_filesystem, os.link, os.fsync

    def sync(fd: int) -> None:
        real_sync(fd)
        with lock:
            events.append(("sync", None))

    def link(src: str, dst: str) -> None:
        real_link(src, dst)
        with lock:
            events.append(("link", os.path.basename(dst)))

    def fsync(fd: int) -> None:
        with lock:
            events.append(("fsync", None))
        real_fsync(fd)

    monkeypatch.setattr(batches_module, "sync_filesystem", sync)
    monkeypatch.setattr(batches_module.os, "link", link)
    monkeypatch.setattr(os, "fsync", fsync)
    try:
        made = await store.create_many(_items("b"))
        events.append(("returned", None))
    finally:
        await store.close()
    assert all(made)
    kinds = [kind for kind, _ in events]
    assert kinds == ["sync"] + ["link"] * BATCH + ["sync", "returned"], kinds


_CHILD = """
import asyncio, sys
from pathlib import Path
from h5lake.storage.local import LocalStore

async def main():
    store = LocalStore(Path(sys.argv[1]))
    items = [(f"k{i:03d}", f"c:{i}:".encode() * (i + 1)) for i in range(int(sys.argv[2]))]
    await store.create_many(items)
    print("finished")

asyncio.run(main())
"""


@pytest.mark.parametrize("kill_before", [1, 17])
async def test_a_batch_killed_midway_leaves_each_object_whole_or_absent_and_a_resend_completes_it(
    tmp_path: Path, kill_before: int
) -> None:
    root = tmp_path / "root"
    env = dict(os.environ, H5LAKE_TEST_KILL_BEFORE_CREATE=str(kill_before))
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", _CHILD, str(root), str(BATCH)], env=env,
                                   capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == -9, done.stderr  # killed by SIGKILL, as the fault point says
    assert "finished" not in done.stdout
    items = dict(_items("c"))
    store = LocalStore(root)
    try:
        present = [k async for k in store.list()]
        assert present == sorted(items)[: kill_before - 1]  # made in order up to the kill; no temporary file listed
        for key in present:
            blob = await store.get(key)
            assert blob is not None and blob.data == items[key]
            assert blob.etag == hashlib.md5(items[key]).hexdigest()
        made = await store.create_many(list(items.items()))  # the resent batch
        assert [etag is None for etag in made] == [k in present for k in sorted(items)]
        for key, data in items.items():
            blob = await store.get(key)
            assert blob is not None and blob.data == data
    finally:
        await store.close()
