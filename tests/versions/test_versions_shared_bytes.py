"""A version's blobs and the head's chunks share their bytes where the store can (a hard link
on a local directory, docs/versions.md "Storage, measured"); what must never follow from it:
a later write of the head changing a version, gc of a blob taking the head's chunk, a restored
head's write changing the version it was restored from. Run on every backend (on S3 the two are
separate objects, and the same must hold)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from h5lake.model.ids import blob_key
from h5lake.storage.local import LocalStore
from h5lake.storage.md5 import md5_hex
from h5lake.storage.memory import MemoryStore
from h5lake.versions import content as cas
from h5lake.versions.content import ContentStore, sha256
from tests.conftest import Backing, Client
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain
from tests.support.cli import clean_env, run_h5lake
from tests.versions.test_versions_processes import CHUNK, N, make_dataset, read, write

CHUNKS = N // CHUNK


def at(c: Client, ref: str) -> Client:
    return Client(c.endpoint, "test_user1", f"{c.domain}@{ref}")


def shared_chunks(backing: Backing) -> int:
    """How many head chunk files share their inode with a blob (local directory only)."""
    files = [p for p in backing.data.iterdir() if p.is_file()]
    blobs = {(s.st_dev, s.st_ino) for s in (p.stat() for p in files if p.name.endswith(".blob"))}
    return sum((s.st_dev, s.st_ino) in blobs for s in (p.stat() for p in files if "-c-" in p.name))


def write_distinct(c: Client, did: str) -> np.ndarray:
    """Chunks of different bytes, none all fill; returns the values."""
    for i in range(CHUNKS):
        write(c, did, float(i + 1), i * CHUNK, (i + 1) * CHUNK)
    return np.repeat(np.arange(1, CHUNKS + 1, dtype="<f4"), CHUNK)


def gc(backing: Backing, tmp_path: Path) -> dict[str, int]:
    args = backing.args or ["--data", str(backing.data)]
    done = run_h5lake("gc", *args, "--grace", "0", "--json", cwd=tmp_path, env=clean_env(tmp_path, backing.env))
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_writing_the_head_after_a_commit_keeps_the_version(start: StartServer, store_backing: Backing) -> None:
    srv = start()
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    v1 = write_distinct(c, did)
    assert c.post("/versions", json={}).status_code == 201
    if store_backing.kind == "local":
        assert shared_chunks(store_backing) == CHUNKS  # the hazard is real: one file, two names
    write(c, did, -2.0, 5, 10)  # part of chunk 0: read, changed, written back
    write(c, did, -3.0, CHUNK, 2 * CHUNK)  # chunk 1 whole
    assert np.array_equal(read(at(c, "v1"), did), v1)
    assert c.delete(f"/datasets/{did}").status_code == 200  # the dataset and its chunks gone from the head
    assert np.array_equal(read(at(c, "v1"), did), v1)
    if store_backing.kind == "local":
        blobs = sorted(np.frombuffer(p.read_bytes(), "<f4")[0] for p in store_backing.data.glob("*.blob"))
        assert blobs == list(range(1, CHUNKS + 1))


def test_gc_of_a_shared_blob_leaves_the_head(start: StartServer, store_backing: Backing, tmp_path: Path) -> None:
    srv = start()
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    values = write_distinct(c, did)
    assert c.post("/versions", json={}).status_code == 201
    assert c.delete("/versions/v1").status_code == 200
    if store_backing.kind == "local":
        assert shared_chunks(store_backing) == CHUNKS
    assert gc(store_backing, tmp_path)["blobs_deleted"] == CHUNKS
    assert np.array_equal(read(c, did), values)
    if store_backing.kind == "local":
        assert shared_chunks(store_backing) == 0
    assert c.post("/versions", json={}).status_code == 201  # the bytes are kept again
    write(c, did, -4.0, 0, CHUNK)
    assert np.array_equal(read(at(c, "v2"), did), values)


def test_restore_then_write_keeps_the_version(start: StartServer, store_backing: Backing, tmp_path: Path) -> None:
    srv = start()
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    v1 = write_distinct(c, did)
    assert c.post("/versions", json={}).status_code == 201
    write(c, did, -1.0)
    assert c.post("/versions", json={}).status_code == 201
    assert c.post("/versions/v1/restore", json={}).status_code == 200
    assert np.array_equal(read(c, did), v1)
    if store_backing.kind == "local":  # the restored chunks are the version's blobs, linked
        assert shared_chunks(store_backing) == CHUNKS
    write(c, did, 9.0, 3, CHUNK + 3)  # chunk 0 and part of chunk 1
    head = v1.copy()
    head[3 : CHUNK + 3] = 9.0
    assert np.array_equal(read(c, did), head)
    assert np.array_equal(read(at(c, "v1"), did), v1)
    assert np.all(read(at(c, "v2"), did) == -1.0)
    fork = Client(srv.endpoint, "test_user1", c.domain.replace(".h5", "-fork.h5"))
    assert fork.put("/", json={"from": c.domain + "@v1"}).status_code == 201
    fid = fork.get(f"/groups/{fork.get('/').json()['root']}/links/x").json()["link"]["id"]
    write(fork, fid, 7.0, 0, 2 * CHUNK)
    assert np.array_equal(read(at(c, "v1"), did), v1)
    assert c.delete(f"/datasets/{did}").status_code == 200
    assert c.post("/versions", json={}).status_code == 201  # v3 without x: v1 and v2 keep theirs
    assert gc(store_backing, tmp_path)["blobs_deleted"] == 0
    assert np.array_equal(read(at(c, "v1"), did), v1)
    expect = v1.copy()
    expect[: 2 * CHUNK] = 7.0
    assert np.array_equal(read(fork, fid), expect)



@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_content_store_makes_blobs_as_copies(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore() if kind == "memory" else LocalStore(tmp_path / "store")
    content = ContentStore(store)
    data = b"chunk bytes " * 1000
    etag = await store.put("head-c-0", data)
    await content.copy_blob("head-c-0", etag, data, sha256(data))
    assert (content.linked, content.written) == (len(data), 0)
    assert (await store.get(blob_key(sha256(data)))).data == data  # type: ignore[union-attr]
    await content.copy_blob("head-c-0", etag, data, sha256(data))  # exists, young: left alone
    assert (content.linked, content.written) == (len(data), 0)
    monkeypatch.setattr(cas, "REFRESH_AFTER", -1.0)  # old enough for gc: made again, as a copy
    await content.copy_blob("head-c-0", etag, data, sha256(data))
    assert (content.linked, content.written) == (2 * len(data), 0)
    await store.put("head-c-0", b"written since the commit read it")
    other = b"what the commit read " * 100
    await content.copy_blob("head-c-0", md5_hex(other), other, sha256(other))
    assert content.written == len(other)
    assert (await store.get(blob_key(sha256(other)))).data == other  # type: ignore[union-attr]
    await store.close()
