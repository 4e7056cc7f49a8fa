"""The storage contract (``h5lake.storage.base``): every backend passes every test here.

The last sections test what one backend promises beyond the contract: the local directory
across processes, and S3's clean interpreter exit.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import http.server
import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar

import pytest

from tests.support.s3server import S3Server

from h5lake.errors import StorageError
from h5lake.storage.base import LATER, AnswersAtOnce, Blob, GetRanges, PreconditionFailed, Store
from h5lake.storage.local import ETAG_XATTR, LOCK_DIR, TEMP_PREFIX, LocalStore
from h5lake.storage.s3 import S3Store

Listing = Callable[..., list[str]]


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


async def collect(store: Store, prefix: str = "", **kw: str | None) -> list[str]:
    return [entry async for entry in store.list(prefix, **kw)]


async def put_all(store: Store, keys: list[str], concurrency: int = 32) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def put(key: str) -> None:
        async with gate:
            await store.put(key, key.encode())

    await asyncio.gather(*map(put, keys))


# --- reading and writing ---------------------------------------------------------------------


async def test_is_a_store(store: Store) -> None:
    assert isinstance(store, Store)


async def test_put_get_round_trip(store: Store) -> None:
    data = b"\x00hello\xffworld" * 100
    before = time.time()
    etag = await store.put("a/b/.group.json", data)
    assert etag == md5(data)  # every backend: the MD5 hex of the bytes
    blob = await store.get("a/b/.group.json")
    assert blob is not None
    assert (blob.data, blob.etag) == (data, etag)
    assert before - 5 < blob.last_modified < time.time() + 5
    info = await store.head("a/b/.group.json")
    assert info is not None
    assert (info.key, info.size, info.etag) == ("a/b/.group.json", len(data), etag)


async def test_missing_is_none(store: Store) -> None:
    assert await store.get("no/such/key") is None
    assert await store.head("no/such/key") is None
    assert await store.get_range("no/such/key", 0, 10) is None
    assert await store.get_range("no/such/key", 0, 0) is None


async def test_empty_object(store: Store) -> None:
    etag = await store.put("empty", b"")
    assert etag == md5(b"")
    blob = await store.get("empty")
    assert blob is not None and blob.data == b""
    info = await store.head("empty")
    assert info is not None and info.size == 0
    assert await store.get_range("empty", 0, 10) == b""


async def test_get_range(store: Store) -> None:
    data = bytes(range(100))
    await store.put("r", data)
    assert await store.get_range("r", 10, 5) == data[10:15]
    assert await store.get_range("r", 0, 100) == data
    assert await store.get_range("r", 95, 10) == data[95:]  # past the end: cut short
    assert await store.get_range("r", 99, 1) == data[99:]
    assert await store.get_range("r", 100, 5) == b""  # at the end: empty
    assert await store.get_range("r", 1000, 5) == b""  # beyond: empty
    assert await store.get_range("r", 50, 0) == b""
    with pytest.raises(ValueError):
        await store.get_range("r", -1, 5)
    with pytest.raises(ValueError):
        await store.get_range("r", 0, -5)


async def test_get_ranges(store: Store) -> None:
    """Several ranges of one object in one call: cut short at the end like ``get_range``."""
    assert isinstance(store, GetRanges)
    data = os.urandom(300_000)
    await store.put("rs", data)
    asked = [(10, 5), (0, 3), (299_990, 20), (300_000, 4), (7, 0), (5, 10), (150_000, 100), (400_000, 1)]
    assert await store.get_ranges("rs", asked) == [data[o : o + n] for o, n in asked]
    assert await store.get_ranges("rs", []) == []
    assert await store.get_ranges("rs", [(1000, 0)]) == [b""]
    assert await store.get_ranges("no/such/key", [(0, 10)]) is None
    assert await store.get_ranges("no/such/key", []) is None
    with pytest.raises(ValueError):
        await store.get_ranges("rs", [(0, 1), (-1, 5)])


async def test_large_object_and_range(store: Store) -> None:
    data = os.urandom(6 * 1024 * 1024 + 7)  # past S3 clients' multipart threshold
    etag = await store.put("big/chunk", data)
    assert etag == md5(data)
    blob = await store.get("big/chunk")
    assert blob is not None and blob.data == data and blob.etag == etag
    middle = await store.get_range("big/chunk", 3_000_000, 1_000_000)
    assert middle == data[3_000_000:4_000_000]


async def test_overwrite(store: Store) -> None:
    first = await store.put("k", b"one")
    second = await store.put("k", b"two")
    assert first != second
    blob = await store.get("k")
    assert blob is not None and (blob.data, blob.etag) == (b"two", second)


async def test_put_accepts_other_buffers(store: Store) -> None:
    buffer = bytearray(b"mutable")
    etag = await store.put("buf", buffer)  # type: ignore[arg-type]
    buffer[:] = b"changed"
    blob = await store.get("buf")
    assert blob is not None and (blob.data, blob.etag) == (b"mutable", etag)


async def test_delete_is_idempotent(store: Store) -> None:
    await store.put("d/k", b"x")
    await store.delete("d/k")
    assert await store.get("d/k") is None
    assert await store.head("d/k") is None
    await store.delete("d/k")
    await store.delete("never/was")
    await store.put("d/k", b"again", if_none_match=True)  # gone for create-only too


# --- conditional writes ----------------------------------------------------------------------


async def test_create_only(store: Store) -> None:
    etag = await store.put("c", b"first", if_none_match=True)
    with pytest.raises(PreconditionFailed) as failed:
        await store.put("c", b"second", if_none_match=True)
    assert failed.value.key == "c"
    blob = await store.get("c")
    assert blob is not None and (blob.data, blob.etag) == (b"first", etag)


async def test_if_match(store: Store) -> None:
    v1 = await store.put("m", b"v1")
    v2 = await store.put("m", b"v2", if_match=v1)
    with pytest.raises(PreconditionFailed):
        await store.put("m", b"v3", if_match=v1)  # stale
    blob = await store.get("m")
    assert blob is not None and (blob.data, blob.etag) == (b"v2", v2)
    v3 = await store.put("m", b"v3", if_match=v2)
    assert v3 == md5(b"v3")


async def test_if_match_on_missing_key(store: Store) -> None:
    with pytest.raises(PreconditionFailed):
        await store.put("gone", b"x", if_match=md5(b"x"))
    await store.put("gone", b"x")
    await store.delete("gone")
    with pytest.raises(PreconditionFailed):
        await store.put("gone", b"x", if_match=md5(b"x"))
    assert await store.get("gone") is None


async def test_conditions_exclude_each_other(store: Store) -> None:
    with pytest.raises(ValueError):
        await store.put("x", b"x", if_match="abc", if_none_match=True)


async def test_concurrent_if_match_writers(store: Store) -> None:
    """N read-modify-write loops on one counter: no update is lost."""
    await store.put("counter", b"0")
    writers, conflicts = 12, 0

    async def increment() -> None:
        nonlocal conflicts
        while True:
            blob = await store.get("counter")
            assert blob is not None
            try:
                await store.put("counter", b"%d" % (int(blob.data) + 1), if_match=blob.etag)
                return
            except PreconditionFailed:
                conflicts += 1
                await asyncio.sleep(0)

    await asyncio.gather(*(increment() for _ in range(writers)))
    blob = await store.get("counter")
    assert blob is not None and int(blob.data) == writers


async def test_concurrent_create_only_has_one_winner(store: Store) -> None:
    # SeaweedFS makes losers of a create race wait in 1 s steps: keep the crowd small.
    async def create(i: int) -> bool:
        try:
            await store.put("once", b"%d" % i, if_none_match=True)
            return True
        except PreconditionFailed:
            return False

    won = await asyncio.gather(*(create(i) for i in range(8)))
    assert sum(won) == 1
    blob = await store.get("once")
    assert blob is not None and blob.data == b"%d" % won.index(True)


# --- keys ------------------------------------------------------------------------------------


async def test_unicode_and_spaces(store: Store) -> None:
    key = "home/Zoë Ω/run 1 (copy)/ключ 🙂 #%+&?=.json"
    data = "données".encode()
    etag = await store.put(key, data)
    blob = await store.get(key)
    assert blob is not None and (blob.data, blob.etag) == (data, etag)
    assert await store.get_range(key, 1, 3) == data[1:4]
    assert await collect(store, "home/") == [key]
    assert await collect(store, "home/", delimiter="/") == ["home/Zoë Ω/"]
    assert await collect(store, "home/Zoë Ω/run 1 (copy)/", delimiter="/") == [key]
    await store.put(key, b"new", if_match=etag)
    await store.delete(key)
    assert await collect(store) == []


@pytest.mark.parametrize(
    "key",
    ["", "/abs", "a//b", "a/", "./a", "a/../b", "..", "a\\b", "a\x00b", "a\nb", "\ud800",
     ".h5lake-tmp-0", "a/.h5lake-locks", "x" * 256, "a/" * 600],
)  # fmt: skip
async def test_invalid_keys_are_refused(store: Store, key: str) -> None:
    with pytest.raises(ValueError):
        await store.put(key, b"x")
    with pytest.raises(ValueError):
        await store.get(key)
    with pytest.raises(ValueError):
        await store.delete(key)


async def test_invalid_list_arguments(store: Store) -> None:
    with pytest.raises(ValueError):
        await collect(store, "../")
    with pytest.raises(ValueError):
        await collect(store, "a", delimiter=",")


# --- listing ---------------------------------------------------------------------------------

# Names that sort differently in a directory walk and in byte order: "run 1", "run-1" and
# "run.h5" come before the folder "run/" (space, '-' and '.' are below '/').
TRICKY = [
    "run 1", "run-1", "run.h5/.domain.json", "run/a", "run/b/c", "run0", "runs/x", "A", "Z/z",
    "a b/c", "ab", "é/x", "z", "~",
]  # fmt: skip


async def test_list_by_prefix(store: Store, expected_listing: Listing) -> None:
    await put_all(store, TRICKY)
    for prefix in ["", "run", "run/", "run/b", "run/b/", "ru", "nope", "é", "a"]:
        assert await collect(store, prefix) == expected_listing(TRICKY, prefix), prefix


async def test_list_order_is_lexical(store: Store) -> None:
    await put_all(store, TRICKY)
    assert await collect(store) == sorted(TRICKY)


async def test_list_with_delimiter(store: Store, expected_listing: Listing) -> None:
    await put_all(store, TRICKY)
    assert await collect(store, delimiter="/") == [
        "A", "Z/", "a b/", "ab", "run 1", "run-1", "run.h5/", "run/", "run0", "runs/", "z",
        "~", "é/",
    ]  # fmt: skip
    for prefix in ["", "run", "run/", "run/b/", "run/b", "r", "Z/", "nope/"]:
        got = await collect(store, prefix, delimiter="/")
        assert got == expected_listing(TRICKY, prefix, "/"), prefix


async def test_common_prefix_only_while_a_key_lies_below(store: Store) -> None:
    await put_all(store, ["f/sub/deep/k", "f/other/k", "g"])
    assert await collect(store, delimiter="/") == ["f/", "g"]
    await store.delete("f/sub/deep/k")
    assert await collect(store, "f/", delimiter="/") == ["f/other/"]
    await store.delete("f/other/k")
    assert await collect(store, delimiter="/") == ["g"]
    assert await collect(store, "f/") == []


async def test_list_start_after(store: Store, expected_listing: Listing) -> None:
    await put_all(store, TRICKY)
    marks = ["", "run", "run/", "run/a", "run/b/", "run/b/c", "run.h5/", "run-1", "s", "~~"]
    for prefix in ["", "run", "run/"]:
        for delimiter in [None, "/"]:
            for mark in marks:
                got = await collect(store, prefix, delimiter=delimiter, start_after=mark)
                want = expected_listing(TRICKY, prefix, delimiter, mark)
                assert got == want, (prefix, delimiter, mark)


async def test_paging_with_start_after(store: Store) -> None:
    """The last entry of a page is the next page's start_after: pages add up to the listing."""
    await put_all(store, TRICKY)
    for delimiter in [None, "/"]:
        whole = await collect(store, delimiter=delimiter)
        pages: list[str] = []
        mark = None
        while True:
            page: list[str] = []
            async for entry in store.list(delimiter=delimiter, start_after=mark):
                page.append(entry)
                if len(page) == 3:
                    break
            if not page:
                break
            pages += page
            mark = page[-1]
        assert pages == whole


async def test_many_keys(store: Store, expected_listing: Listing) -> None:
    """More than one S3 page (1000) of keys, and of entries in one delimited listing."""
    keys = [f"many/f{i:04d}" for i in range(960)] + [f"many/d{i:04d}/k" for i in range(60)]
    await put_all(store, keys)
    flat = await collect(store, "many/")
    assert flat == sorted(keys)
    rolled = await collect(store, "many/", delimiter="/")
    assert len(rolled) == 1020
    assert rolled == expected_listing(keys, "many/", "/")
    assert await collect(store, delimiter="/") == ["many/"]
    tail = await collect(store, "many/", start_after="many/f0900")
    assert tail == [f"many/f{i:04d}" for i in range(901, 960)]


# --- local directory: beyond the contract ---------------------------------------------------


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalStore]:
    store = LocalStore(tmp_path / "root")
    yield store
    await store.close()


async def test_local_answers_at_once_as_get_would(tmp_path: Path) -> None:
    """``get_at_once`` answers what ``get`` answers (a small object, read lately or not, and
    after another process's store replaced it), None for a missing one, and LATER for one too
    large to read on the event loop's thread."""
    store = LocalStore(tmp_path / "root", inline_read_bytes=1024)
    other = LocalStore(tmp_path / "root")  # another process's store on the same files
    try:
        assert isinstance(store, AnswersAtOnce)
        assert store.get_at_once("a/missing") is None
        etag = await store.put("a/doc", b"one")
        for _ in range(2):  # the second from what it read lately
            now = store.get_at_once("a/doc")
            assert isinstance(now, Blob) and now.data == b"one" and now.etag == etag
        later = await other.put("a/doc", b"two!")
        now = store.get_at_once("a/doc")
        assert isinstance(now, Blob) and (now.data, now.etag) == (b"two!", later)
        await other.put("a/big", b"x" * 4096)
        assert store.get_at_once("a/big") is LATER
        got = await store.get("a/big")
        assert got is not None and got.data == b"x" * 4096
    finally:
        await store.close()
        await other.close()


async def test_local_keys_map_to_files(local: LocalStore) -> None:
    await local.put("a/b/.domain.json", b"{}")
    assert (local.root / "a/b/.domain.json").read_bytes() == b"{}"
    with pytest.raises(ValueError):
        await local.put("../escape", b"x")
    assert not (local.root.parent / "escape").exists()


async def test_local_key_cannot_also_be_a_folder(local: LocalStore) -> None:
    await local.put("a", b"file")
    with pytest.raises(ValueError):
        await local.put("a/b", b"x")
    await local.put("x/y", b"x")
    for conditions in [{}, {"if_none_match": True}]:
        with pytest.raises(ValueError):
            await local.put("x", b"x", **conditions)  # type: ignore[arg-type]
    with pytest.raises(PreconditionFailed):
        await local.put("x", b"x", if_match="abc")
    assert await local.get("x") is None  # a folder is not an object
    assert await local.head("x") is None
    assert await local.get_range("x", 0, 1) is None
    await local.delete("x")
    assert await collect(local) == ["a", "x/y"]


async def test_local_hides_temporary_and_lock_files(local: LocalStore) -> None:
    await local.put("d/k", b"x")
    fresh = local.root / "d" / (TEMP_PREFIX + "fresh")
    stale = local.root / "d" / (TEMP_PREFIX + "stale")
    fresh.write_bytes(b"half")
    stale.write_bytes(b"half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    (local.root / "only-temp").mkdir()
    (local.root / "only-temp" / (TEMP_PREFIX + "x")).write_bytes(b"half")
    assert (local.root / LOCK_DIR).is_dir()
    assert await collect(local) == ["d/k"]
    assert await collect(local, delimiter="/") == ["d/"]
    assert fresh.exists() and not stale.exists()  # stale ones are swept by list


async def test_local_failed_write_leaves_old_version(
    local: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await local.put("k", b"old")

    def crash(*args: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StorageError, match="disk on fire"):
        await local.put("k", b"new")
    monkeypatch.undo()
    blob = await local.get("k")
    assert blob is not None and blob.data == b"old"
    assert sorted(p.name for p in local.root.iterdir()) == sorted([LOCK_DIR, "k"])


async def test_local_etag_without_xattr(local: LocalStore) -> None:
    etag = await local.put("k", b"content")
    path = local.root / "k"
    os.removexattr(path, ETAG_XATTR)  # a file copied in without its attributes
    blob = await local.get("k")
    assert blob is not None and blob.etag == etag == md5(b"content")
    info = await local.head("k")
    assert info is not None and info.etag == etag
    await local.put("k", b"next", if_match=etag)
    path.write_bytes(b"edited by hand")  # same inode, new mtime: the xattr is stale
    blob = await local.get("k")
    assert blob is not None and blob.etag == md5(b"edited by hand")


async def test_local_on_a_file_system_without_xattrs(
    local: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(*args: object) -> None:
        raise OSError(errno.ENOTSUP, "Operation not supported")

    monkeypatch.setattr(os, "setxattr", unsupported)
    big = os.urandom(1 << 20)  # past inline_read_bytes: hashed on a thread
    etag = await local.put("k", big)
    assert etag == md5(big)
    assert ETAG_XATTR not in os.listxattr(local.root / "k")
    info = await local.head("k")
    assert info is not None and info.etag == etag
    blob = await local.get("k")
    assert blob is not None and blob.etag == etag
    assert await local.put("k", b"next", if_match=etag) == md5(b"next")
    with pytest.raises(PreconditionFailed):
        await local.put("k", b"lost", if_match=etag)


async def test_local_cancelled_reads_do_not_leak(local: LocalStore) -> None:
    await local.put("big", os.urandom(1 << 20))
    before = len(os.listdir("/proc/self/fd"))
    tasks = [asyncio.ensure_future(local.get("big")) for _ in range(50)]
    await asyncio.sleep(0)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(0.2)
    assert len(os.listdir("/proc/self/fd")) <= before


def _increment_in_process(root: str, key: str, times: int, start: object) -> None:
    async def run() -> None:
        store = LocalStore(Path(root))
        for _ in range(times):
            while True:
                blob = await store.get(key)
                assert blob is not None
                try:
                    await store.put(key, b"%d" % (int(blob.data) + 1), if_match=blob.etag)
                    break
                except PreconditionFailed:
                    continue
        await store.close()

    start.wait()  # type: ignore[attr-defined]
    asyncio.run(run())


def _create_in_process(root: str, keys: list[str], me: int, start: object, wins: object) -> None:
    async def run() -> int:
        store = LocalStore(Path(root))
        won = 0
        for key in keys:
            try:
                await store.put(key, b"%d" % me, if_none_match=True)
                won += 1
            except PreconditionFailed:
                pass
        await store.close()
        return won

    start.wait()  # type: ignore[attr-defined]
    wins.put((me, asyncio.run(run())))  # type: ignore[attr-defined]


def _run_processes(target: Callable[..., None], args: list[tuple[object, ...]]) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0


async def test_local_if_match_across_processes(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    store = LocalStore(root)
    await store.put("counter", b"0")
    start = multiprocessing.get_context("spawn").Event()
    processes, times = 3, 25
    run = asyncio.to_thread(
        _run_processes,
        _increment_in_process,
        [(str(root), "counter", times, start) for _ in range(processes)],
    )
    task = asyncio.ensure_future(run)
    await asyncio.sleep(0.5)
    start.set()
    await task
    blob = await store.get("counter")
    assert blob is not None and int(blob.data) == processes * times
    await store.close()


async def test_local_create_only_across_processes(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    ctx = multiprocessing.get_context("spawn")
    start, wins = ctx.Event(), ctx.Queue()
    keys = [f"race/{i}" for i in range(40)]
    processes = 4
    task = asyncio.ensure_future(
        asyncio.to_thread(
            _run_processes,
            _create_in_process,
            [(str(root), keys, me, start, wins) for me in range(processes)],
        )
    )
    await asyncio.sleep(0.5)
    start.set()
    await task
    total = sum(wins.get(timeout=5)[1] for _ in range(processes))
    assert total == len(keys)  # exactly one winner per key
    store = LocalStore(root)
    assert await collect(store, "race/") == sorted(keys)
    await store.close()


# --- S3: retries ----------------------------------------------------------------------------


class _Throttling(http.server.BaseHTTPRequestHandler):
    """Answers each PUT with the next status of ``script`` (then 200), and counts them."""

    script: ClassVar[list[int]] = []
    seen: ClassVar[list[int]] = []

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status = self.script.pop(0) if self.script else 200
        self.seen.append(status)
        self.send_response(status)
        if status == 200:
            self.send_header("ETag", '"0123456789abcdef0123456789abcdef"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("status", [429, 503])
async def test_s3_retries_throttling_and_server_errors(status: int) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Throttling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Throttling.script, _Throttling.seen = [status, status], []
    store = S3Store(
        "bucket",
        endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
        region="us-east-1",
        access_key_id="id",
        secret_access_key="secret",
    )
    try:
        assert await store.put("k", b"x", if_none_match=True) == "0123456789abcdef0123456789abcdef"
        assert _Throttling.seen == [status, status, 200]
    finally:
        await store.close()
        server.shutdown()
        server.server_close()


# --- S3: a clean interpreter exit -----------------------------------------------------------

_SHORT_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    from h5lake.storage.s3 import S3Store

    async def main(endpoint, bucket, key_id, secret, prefix, close):
        store = S3Store(bucket, prefix=prefix, endpoint_url=endpoint, region="us-east-1",
                        access_key_id=key_id, secret_access_key=secret)
        await store.put("k", b"x" * 1000)
        await asyncio.gather(*(store.get_range("k", i, 10) for i in range(20)))
        await asyncio.gather(*(store.head("k") for i in range(10)))
        if close == "close":
            await store.close()

    asyncio.run(main(*sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_s3_short_processes_exit_cleanly(s3_server: S3Server) -> None:
    """obstore's threads can abort a finishing interpreter; S3Store must prevent that.

    Without the guard, about one process in six here died of SIGABRT. Half of these runs
    close the store, half rely on the exit hook.
    """
    server = s3_server

    def one(i: int) -> subprocess.CompletedProcess[bytes]:
        args = [server.endpoint, server.bucket, server.access_key_id, server.secret_access_key]
        args += [f"exit-{i}", "close" if i % 2 else "no-close"]
        command = [sys.executable, "-c", _SHORT_PROCESS, *args]
        return subprocess.run(command, check=False, capture_output=True, timeout=60)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(30)))
    failed = [(r.returncode, r.stderr[-500:]) for r in results if r.returncode != 0]
    assert failed == []
