"""The local store's shared folder fsync (group commit) and its whole-object read into a buffer.

Concurrent puts into one folder share folder fsyncs, yet none returns before an fsync of the
folder that *began after its own rename* has finished: the real ``os.replace`` and fsync run,
and are only timed on the way through.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from h5lake.storage import local as local_module
from h5lake.storage import posix as posix_module
from h5lake.storage.local import LocalStore

PUTS = 64


async def test_concurrent_puts_share_folder_fsyncs_and_wait_for_one_after_their_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path / "root", max_threads=16)
    renamed: dict[str, int] = {}  # key's file name -> when its rename finished
    syncs: list[tuple[int, int]] = []  # (start, end) of every folder fsync
    lock = threading.Lock()
    real_replace: Callable[..., Any] = os.replace
    real_fsync_dir: Callable[[str], None] = posix_module.fsync_dir

    def timed_replace(src: str, dst: str) -> None:
        real_replace(src, dst)
        with lock:
            renamed[os.path.basename(dst)] = time.monotonic_ns()

    def timed_fsync_dir(folder: str) -> None:
        start = time.monotonic_ns()
        real_fsync_dir(folder)
        with lock:
            syncs.append((start, time.monotonic_ns()))

    monkeypatch.setattr(local_module.os, "replace", timed_replace)
    monkeypatch.setattr(posix_module, "fsync_dir", timed_fsync_dir)
    try:
        await store.put("warm", b"x")  # the root's lock folder and first fsync out of the way
        syncs.clear()

        async def put(i: int) -> tuple[str, int]:
            await store.put(f"k{i}", os.urandom(4096))
            return f"k{i}", time.monotonic_ns()

        returned = await asyncio.gather(*(put(i) for i in range(PUTS)))
    finally:
        await store.close()
    for key, done in returned:
        covering = [s for s in syncs if s[0] >= renamed[key] and s[1] <= done]
        assert covering, f"put of {key} returned before a folder fsync begun after its rename ended"
    assert len(syncs) < PUTS, f"{len(syncs)} folder fsyncs for {PUTS} concurrent puts: none shared"


async def test_read_into_fills_the_buffer_or_reports_the_size(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root", inline_read_bytes=1024)
    try:
        for size in (100, 5000):  # inline and on a thread
            data = os.urandom(size)
            await store.put(f"o{size}", data)
            buffer = bytearray(size)
            assert await store.read_into(f"o{size}", memoryview(buffer)) == size
            assert bytes(buffer) == data
            assert await store.read_into(f"o{size}", memoryview(bytearray(size + 1))) == size  # wrong size: reported
        assert await store.read_into("missing", memoryview(bytearray(10))) is None
    finally:
        await store.close()


async def test_read_into_from_the_page_cache_inline_or_from_the_disk_on_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole-object read above the inline size is done on the event loop's thread only when
    every byte is in the page cache (RWF_NOWAIT); evicted bytes are read on a thread. Either
    way the buffer holds the object."""
    store = LocalStore(tmp_path / "root", inline_read_bytes=1024)
    try:
        data = os.urandom(3 * 1024 * 1024 + 17)
        await store.put("big", data)
        on_loop = threading.get_ident()
        readers: list[int] = []
        real_preadv = os.preadv

        def recording_preadv(*args: Any) -> int:
            readers.append(threading.get_ident())
            return real_preadv(*args)

        monkeypatch.setattr(os, "preadv", recording_preadv)
        buffer = bytearray(len(data))
        assert await store.read_into("big", memoryview(buffer)) == len(data)
        assert bytes(buffer) == data
        if hasattr(os, "RWF_NOWAIT") and store._nowait:
            assert readers[0] == on_loop  # just written: cached, read inline
        fd = os.open(tmp_path / "root" / "big", os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # evict (the file is fsync'ed: clean)
        finally:
            os.close(fd)
        readers.clear()
        buffer = bytearray(len(data))
        assert await store.read_into("big", memoryview(buffer)) == len(data)
        assert bytes(buffer) == data
        assert readers[-1] != on_loop  # not cached: the full read ran on a thread
    finally:
        await store.close()


async def test_put_hashed_keeps_the_given_md5_as_the_etag(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    try:
        data = os.urandom(70_000)
        md5 = hashlib.md5(data).hexdigest()
        assert await store.put_hashed("k", memoryview(data), md5) == md5
        blob = await store.get("k")
        assert blob is not None and blob.data == data and blob.etag == md5
        info = await store.head("k")
        assert info is not None and info.etag == md5
    finally:
        await store.close()


async def test_put_hashed_many_is_durable_on_return_with_one_folder_fsync_for_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks of a window: each written, fsync'ed and renamed, then their folder fsync'ed
    once, begun after the last rename and finished before the call returns."""
    store = LocalStore(tmp_path / "root", max_threads=8)
    renamed: dict[str, int] = {}
    syncs: list[tuple[str, int, int]] = []
    fsynced_files: list[int] = []
    lock = threading.Lock()
    real_replace: Callable[..., Any] = os.replace
    real_fsync_dir: Callable[[str], None] = posix_module.fsync_dir
    real_fsync: Callable[[int], None] = os.fsync

    def timed_replace(src: str, dst: str) -> None:
        real_replace(src, dst)
        with lock:
            renamed[os.path.basename(dst)] = time.monotonic_ns()

    def timed_fsync_dir(folder: str) -> None:
        start = time.monotonic_ns()
        real_fsync_dir(folder)
        with lock:
            syncs.append((folder, start, time.monotonic_ns()))

    def counted_fsync(fd: int) -> None:
        real_fsync(fd)
        with lock:
            fsynced_files.append(fd)

    items = [(f"k{i}", memoryview(os.urandom(5000 + i)), "") for i in range(PUTS)]
    items = [(key, data, hashlib.md5(data).hexdigest()) for key, data, _ in items]
    try:
        await store.put("warm", b"x")  # the lock folder and first fsync out of the way
        monkeypatch.setattr(local_module.os, "replace", timed_replace)
        monkeypatch.setattr(local_module.os, "fsync", counted_fsync)
        monkeypatch.setattr(posix_module, "fsync_dir", timed_fsync_dir)
        await store.put_hashed_many(items)
        returned = time.monotonic_ns()
        monkeypatch.undo()
        for key, data, md5 in items:
            blob = await store.get(key)
            assert blob is not None and blob.data == bytes(data) and blob.etag == md5
    finally:
        await store.close()
    assert len(fsynced_files) == PUTS + len(syncs)  # every file's bytes, and the folder (os.fsync too)
    assert len(syncs) == 1, f"{len(syncs)} folder fsyncs for {PUTS} puts in one folder"
    folder, start, end = syncs[0]
    assert folder == str(tmp_path / "root")
    assert start >= max(renamed[key] for key, _, _ in items) and end <= returned


async def test_put_hashed_many_reports_a_failed_put(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    try:
        await store.put("a/b", b"x")  # "a" is a folder of other keys: a put of "a" fails
        with pytest.raises(ValueError):
            await store.put_hashed_many([("c", b"1", hashlib.md5(b"1").hexdigest()), ("a", b"2", hashlib.md5(b"2").hexdigest())])
    finally:
        await store.close()


async def test_a_remembered_object_is_read_again_when_another_writer_or_an_edit_changed_it(tmp_path: Path) -> None:
    """Small objects read lately are answered from memory while their file's stat and ETag
    attribute are unchanged; a replace by another store on the same folder (another process),
    a delete, or an edit in place by hand (same size, no new attribute) is seen at once."""
    mine, other = LocalStore(tmp_path / "root"), LocalStore(tmp_path / "root")
    try:
        await mine.put("d/doc", b"version-1")
        first = await mine.get("d/doc")
        assert first is not None and first.data == b"version-1"
        again = await mine.get("d/doc")
        assert again is not None and again.data == b"version-1" and again.etag == first.etag
        for n in range(2, 6):  # same size each time: only the identity and the attribute tell
            await other.put("d/doc", f"version-{n}".encode())
            got = await mine.get("d/doc")
            assert got is not None and got.data == f"version-{n}".encode()
            assert got.etag == (await other.head("d/doc")).etag  # type: ignore[union-attr]
        path = tmp_path / "root" / "d" / "doc"
        stamp = os.stat(path)
        with open(path, "r+b") as f:  # by hand, in place: the stored attribute goes stale
            f.write(b"VERSION")
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # even with the old mtime
        got = await mine.get("d/doc")
        assert got is not None and got.data == b"VERSION-5"
        await other.delete("d/doc")
        assert await mine.get("d/doc") is None
    finally:
        await mine.close()
        await other.close()


async def test_concurrent_deletes_in_one_folder_all_succeed(tmp_path: Path) -> None:
    """Deletes of every object of a folder at once (a domain's history reclaimed): the first to
    find the folder empty removes it, and the others' fsync of the gone folder is no failure."""
    store = LocalStore(tmp_path / "root", max_threads=16)
    for round_ in range(20):
        keys = [f"d{round_}/h/k{i}" for i in range(16)]
        await asyncio.gather(*(store.put(k, b"x") for k in keys))
        await asyncio.gather(*(store.delete(k) for k in keys))
        assert not (tmp_path / "root" / f"d{round_}").exists()


async def test_a_put_whose_folder_is_removed_while_being_made_tries_again(tmp_path: Path) -> None:
    """A delete that empties a folder removes it (and its emptied parents) while a put may be
    making a subfolder in it: the put's ``mkdir`` then finds no parent. The put makes the whole
    path again instead of failing (a 503 once, in a map update beside deletes)."""
    root = tmp_path / "root"
    store = LocalStore(root)
    await store.put("p/z", b"old")
    make_folder = store._make_folder
    removed = []

    def racing_delete_then_make(key: str, folder: str) -> None:
        if not removed:  # the other request's delete of p/z and its tidying of p, just before our mkdir
            os.unlink(root / "p" / "z")
            os.rmdir(root / "p")
            removed.append(folder)
            os.mkdir(folder)  # what our mkdir of p/q meets: no p
        make_folder(key, folder)

    store._make_folder = racing_delete_then_make  # type: ignore[method-assign]
    await store.put("p/q/r", b"new")
    assert removed and (await store.get("p/q/r")).data == b"new"


def test_the_key_lock_excludes_threads_of_one_store_and_other_stores(tmp_path: Path) -> None:
    """A key's lock is held by one holder at a time, whether the others are threads of the
    same store (which share its kept-open lock file) or other stores of the folder (other
    processes' open files); it is taken again after each release, and after the store closed."""
    stores = [LocalStore(tmp_path / "shared"), LocalStore(tmp_path / "shared")]
    inside = 0
    most = 0
    guard = threading.Lock()

    def hold(store: LocalStore) -> None:
        nonlocal inside, most
        for _ in range(200):
            with store._locked("db/objects/g-1.json"):
                with guard:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0)  # let another thread try meanwhile
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=hold, args=(stores[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1 and inside == 0
    for store in stores:
        asyncio.run(store.close())
    with stores[0]._locked("db/objects/g-1.json"):  # a closed store's lock file opens again
        pass
    asyncio.run(stores[0].close())


def _temps(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(posix_module.TEMP_PREFIX + "*")]


async def test_put_hashed_many_fsyncs_each_folder_after_its_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in two folders (and one folder made by the call): each folder is fsync'ed once,
    begun after the last rename into it and finished before the call returns."""
    store = LocalStore(tmp_path / "root", max_threads=4)
    renamed: dict[str, int] = {}
    syncs: list[tuple[str, int, int]] = []
    lock = threading.Lock()
    real_replace: Callable[..., Any] = os.replace
    real_fsync_dir: Callable[[str], None] = posix_module.fsync_dir

    def timed_replace(src: str, dst: str) -> None:
        real_replace(src, dst)
        with lock:
            renamed[dst] = time.monotonic_ns()

    def timed_fsync_dir(folder: str) -> None:
        start = time.monotonic_ns()
        real_fsync_dir(folder)
        with lock:
            syncs.append((folder, start, time.monotonic_ns()))

    items = [(f"{'ab'[i % 2]}/k{i}", os.urandom(100 + i), "") for i in range(20)]
    items = [(key, data, hashlib.md5(data).hexdigest()) for key, data, _ in items]
    try:
        await store.put("a/warm", b"x")  # folder a exists; folder b is made by the call
        monkeypatch.setattr(local_module.os, "replace", timed_replace)
        monkeypatch.setattr(posix_module, "fsync_dir", timed_fsync_dir)
        await store.put_hashed_many(items)
        returned = time.monotonic_ns()
        monkeypatch.undo()
        for key, data, md5 in items:
            blob = await store.get(key)
            assert blob is not None and blob.data == data and blob.etag == md5
    finally:
        await store.close()
    root = tmp_path / "root"
    for folder in ("a", "b"):
        path = str(root / folder)
        last = max(t for dst, t in renamed.items() if os.path.dirname(dst) == path)
        assert any(f == path and start >= last and end <= returned for f, start, end in syncs), folder
    assert _temps(root) == []


async def test_put_hashed_many_reports_an_os_error_after_the_others_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One put fails with an OSError (a full disk, say): the call raises a StorageError, once
    every other put has ended; no temporary file is left, the others are whole."""
    store = LocalStore(tmp_path / "root", max_threads=4)
    real_replace: Callable[..., Any] = os.replace

    def failing_replace(src: str, dst: str) -> None:
        if dst.endswith("/k3"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    items = [(f"d/k{i}", os.urandom(1000), "") for i in range(8)]
    items = [(key, data, hashlib.md5(data).hexdigest()) for key, data, _ in items]
    try:
        await store.put("d/warm", b"x")
        monkeypatch.setattr(local_module.os, "replace", failing_replace)
        with pytest.raises(local_module.StorageError, match="No space left"):
            await store.put_hashed_many(items)
        monkeypatch.undo()
        assert _temps(tmp_path / "root") == []
        for key, data, _ in items:
            blob = await store.get(key)
            assert (blob is None) if key == "d/k3" else (blob is not None and blob.data == data), key
    finally:
        await store.close()


async def test_put_hashed_many_cancelled_leaves_whole_objects_and_no_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled (the client went away) while puts are running: the call ends at once; the
    puts begun end on their threads, each object is then absent or whole, and no temporary
    file is left."""
    store = LocalStore(tmp_path / "root", max_threads=2)
    real_replace: Callable[..., Any] = os.replace
    blocked, release = threading.Event(), threading.Event()

    def held_replace(src: str, dst: str) -> None:
        if dst.endswith("/k0"):
            blocked.set()
            release.wait(10)
        real_replace(src, dst)

    items = [(f"d/k{i}", os.urandom(50_000), "") for i in range(12)]
    items = [(key, data, hashlib.md5(data).hexdigest()) for key, data, _ in items]
    try:
        await store.put("d/warm", b"x")
        monkeypatch.setattr(local_module.os, "replace", held_replace)
        task = asyncio.ensure_future(store.put_hashed_many(items))
        while not blocked.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
    finally:
        release.set()
        await store.close()  # the threads end the puts they began
    monkeypatch.undo()
    assert _temps(tmp_path / "root") == []
    store = LocalStore(tmp_path / "root")
    try:
        present = 0
        for key, data, md5 in items:
            blob = await store.get(key)
            if blob is not None:
                present += 1
                assert blob.data == data and blob.etag == md5, key
        assert present >= 1  # k0 was being renamed when cancelled: it ends in place
    finally:
        await store.close()


async def test_a_put_into_a_folder_it_did_not_make_makes_the_folder_durable_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder found already there may be one another request just made and has not yet
    fsync'ed into its parent, or one left by a process that died between its ``mkdir`` and the
    fsync. The first put into it from this process fsyncs the folder's parents (each folder's
    name durable in its parent) before returning; later puts do not pay that again."""
    root = tmp_path / "root"
    store = LocalStore(root)
    await store.put("warm", b"x")
    os.makedirs(root / "a" / "b")  # made by "someone else", never fsync'ed into its parent
    syncs: list[tuple[str, int, int]] = []
    real_fsync_dir: Callable[[str], None] = posix_module.fsync_dir

    def timed_fsync_dir(folder: str) -> None:
        start = time.monotonic_ns()
        real_fsync_dir(folder)
        syncs.append((folder, start, time.monotonic_ns()))

    monkeypatch.setattr(posix_module, "fsync_dir", timed_fsync_dir)
    try:
        began = time.monotonic_ns()
        await store.put("a/b/k1", b"one")
        returned = time.monotonic_ns()
        for parent in (root, root / "a"):  # the names a and a/b
            assert any(f == str(parent) and began <= start and end <= returned for f, start, end in syncs), parent
        syncs.clear()
        await store.put("a/b/k2", b"two")
        assert [f for f, _, _ in syncs] == [str(root / "a" / "b")]  # only the new key's name
    finally:
        await store.close()
    syncs.clear()
    again = LocalStore(root)  # another process: it has not seen a/b made durable itself
    try:
        await again.put("a/b/k3", b"three")
        assert {str(root), str(root / "a")} <= {f for f, _, _ in syncs}
        assert [(await again.get(k)).data for k in ("a/b/k1", "a/b/k2", "a/b/k3")] == [b"one", b"two", b"three"]
    finally:
        await again.close()


async def test_a_folder_removed_and_made_again_by_another_process_is_made_durable_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders this process deleted (emptied by its deletes) are forgotten as durable: a later
    put into the same path, made again by anyone, fsyncs the parent once more."""
    root = tmp_path / "root"
    store = LocalStore(root)
    syncs: list[str] = []
    real_fsync_dir: Callable[[str], None] = posix_module.fsync_dir

    def counted_fsync_dir(folder: str) -> None:
        real_fsync_dir(folder)
        syncs.append(folder)

    try:
        await store.put("p/q/k", b"x")
        await store.delete("p/q/k")  # empties and removes p/q and p
        assert not (root / "p").exists()
        os.makedirs(root / "p" / "q")  # another process made them again, not yet fsync'ed
        monkeypatch.setattr(posix_module, "fsync_dir", counted_fsync_dir)
        await store.put("p/q/k", b"y")
        assert str(root) in syncs and str(root / "p") in syncs
        assert (await store.get("p/q/k")).data == b"y"
    finally:
        await store.close()


async def test_a_copy_into_a_folder_whose_known_parent_another_process_removed(tmp_path: Path) -> None:
    """The parent of a copy's new folder was made durable by this process, then emptied and
    removed by another's delete: the copy makes both again (as a put does) instead of failing
    on the missing parent."""
    root = tmp_path / "root"
    store, other = LocalStore(root), LocalStore(root)
    try:
        etag = await store.put("src", b"payload")
        await store.put("a/x", b"x")  # this process now knows a/ as durable
        await other.delete("a/x")  # another process empties and removes a/
        assert not (root / "a").exists()
        assert await store.copy("src", "a/b/y", source_etag=etag) == etag
        assert (await store.get("a/b/y")).data == b"payload"
    finally:
        await store.close()
        await other.close()


@pytest.mark.parametrize("how", ["put", "put_hashed_many", "copy"])
async def test_a_put_whose_key_a_delete_removes_before_its_folder_fsync_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A delete of the same key (here another process's) lands between a put's rename and its
    folder fsync, empties the folder and removes it: the put happened and was then deleted, as
    if one came after the other, so it succeeds (the fsync found no folder: a 503)."""
    root = tmp_path / "root"
    store, other = LocalStore(root), LocalStore(root)
    real_fsync_dir: Callable[[str], None] = posix_module.fsync_dir
    deletes = [("a/b/k", str(root / "a" / "b" / "k"))]  # once, before the put's folder fsync

    def fsync_dir_after_a_delete(folder: str) -> None:
        if folder == str(root / "a" / "b") and deletes:
            other._delete(*deletes.pop())  # the other process's delete, now (its own fsync: real)
        real_fsync_dir(folder)

    try:
        etag = await store.put("src", b"payload")
        monkeypatch.setattr(posix_module, "fsync_dir", fsync_dir_after_a_delete)
        if how == "put":
            await store.put("a/b/k", b"one")
        elif how == "put_hashed_many":
            await store.put_hashed_many([("a/b/k", b"one", hashlib.md5(b"one").hexdigest())])
        else:
            await store.copy("src", "a/b/k", source_etag=etag)
        assert await store.get("a/b/k") is None and not (root / "a" / "b").exists()
        await store.put("a/b/k", b"two")  # the folder is made again
        assert (await other.get("a/b/k")).data == b"two"
    finally:
        await store.close()
        await other.close()


async def test_a_folder_removed_between_a_mkdir_that_found_it_and_its_check_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mkdir`` finds the folder there (another process made it), and before the put checks it is
    a folder a delete empties and removes it: the put makes it again (it was refused as a key
    colliding with a folder of other keys)."""
    root = tmp_path / "root"
    store, other = LocalStore(root), LocalStore(root)
    real_mkdir: Callable[..., None] = os.mkdir
    deletes = [("a/b/old", str(root / "a" / "b" / "old"))]

    def mkdir_then_a_delete(path: Any, *args: Any, **kw: Any) -> None:
        try:
            real_mkdir(path, *args, **kw)
        except FileExistsError:
            if str(path) == str(root / "a" / "b") and deletes:
                other._delete(*deletes.pop())  # empties a/b and a: both removed
            raise

    try:
        await other.put("a/b/old", b"x")
        monkeypatch.setattr(os, "mkdir", mkdir_then_a_delete)
        await store.put("a/b/k", b"one")
        assert not deletes and (await other.get("a/b/k")).data == b"one"
    finally:
        await store.close()
        await other.close()


async def test_a_copy_whose_folder_is_removed_and_made_again_around_its_link_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's link finds no folder (a delete removed it) and another put makes it again before
    the copy looks: the source is still there, so the copy tries again (it was a
    PreconditionFailed on the source)."""
    root = tmp_path / "root"
    store, other = LocalStore(root), LocalStore(root)
    real_link: Callable[..., None] = os.link
    races = [1]

    def link_around_a_delete_and_a_put(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
        if str(dst).startswith(str(root / "a" / "b")) and races:
            races.pop()
            other._delete("a/b/old", str(root / "a" / "b" / "old"))  # a/b removed
            try:
                real_link(src, dst, *args, **kw)
            finally:
                os.makedirs(root / "a" / "b")  # another put makes it again
        real_link(src, dst, *args, **kw)

    try:
        etag = await store.put("src", b"payload")
        await store.put("a/b/old", b"x")
        monkeypatch.setattr(os, "link", link_around_a_delete_and_a_put)
        assert await store.copy("src", "a/b/k", source_etag=etag) == etag
        assert not races and (await other.get("a/b/k")).data == b"payload"
    finally:
        await store.close()
        await other.close()
