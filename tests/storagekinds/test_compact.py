"""Compact values: small datasets keep their values in their document (no chunk objects), and
move to chunk objects when they grow past the limit, transparently and without losing writes.
Plain HTTP, h5pyd, the raw store, and concurrent clients."""

from __future__ import annotations

import json
import threading

import numpy as np

from h5lake.model.ids import object_key
from tests.api.test_h5pyd_metadata import open_file
from tests.conftest import Client, RawStore
from tests.storagekinds.conftest import all_keys

OCTET = {"Accept": "application/octet-stream"}
PUT_OCTET = {"Content-Type": "application/octet-stream"}
LIMIT = 64 * 1024  # the server's default --compact-max-bytes


def make(c: Client, shape: list[int], dtype: object = "H5T_IEEE_F64LE", name: str = "d", **extra: object) -> str:
    root = c.get("/").json()["root"]
    body = {"type": dtype, "shape": shape, "link": {"id": root, "name": name}, **extra}
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def chunk_keys(raw: RawStore, did: str) -> list[str]:
    return [k for k in all_keys(raw) if f"-c-{did[2:]}_" in k]


def stored_doc(raw: RawStore, did: str) -> dict[str, object]:
    return json.loads(raw.read(object_key(did)) or b"{}")  # type: ignore[no-any-return]


def read(c: Client, did: str, dtype: str = "<f8", select: str | None = None) -> np.ndarray:
    params = {"select": select} if select else {}
    r = c.get(f"/datasets/{did}/value", headers=OCTET, params=params)
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, dtype=dtype)


def test_small_dataset_keeps_values_in_its_document(client: Client, raw_store: RawStore) -> None:
    did = make(client, [10, 10], creationProperties={"layout": {"class": "H5D_CONTIGUOUS"}, "fillValue": 2.5})
    np.testing.assert_array_equal(read(client, did), np.full(100, 2.5))
    data = np.arange(100, dtype="<f8")
    assert client.put(f"/datasets/{did}/value", data=data.tobytes(), headers=PUT_OCTET).status_code == 200
    r = client.put(f"/datasets/{did}/value", json={"start": [3, 0], "stop": [4, 10], "value": list(range(10))})
    assert r.status_code == 200, r.text
    r = client.put(f"/datasets/{did}/value", json={"points": [[9, 9], [0, 0]], "value": [-1, -2]})
    assert r.status_code == 200, r.text
    expect = data.reshape(10, 10).copy()
    expect[3] = np.arange(10)
    expect[9, 9], expect[0, 0] = -1, -2
    np.testing.assert_array_equal(read(client, did).reshape(10, 10), expect)
    np.testing.assert_array_equal(read(client, did, select="[2:5,1:8:3]").reshape(3, 3), expect[2:5, 1:8:3])
    # no chunk object: the values are in the dataset's document
    assert chunk_keys(raw_store, did) == []
    assert "compact" in stored_doc(raw_store, did)
    shown = client.get(f"/datasets/{did}").json()
    assert "compact" not in shown
    assert shown["creationProperties"]["layout"] == {"class": "H5D_CONTIGUOUS"}  # what the client asked
    stats = client.get(f"/datasets/{did}", params={"verbose": 1}).json()["stats"]
    assert stats["storage"] == "compact" and stats["allocatedChunkCount"] == 1 and stats["allocatedSize"] == 800
    summary = client.get("/", params={"verbose": 1}).json()
    assert summary["num_chunks"] == 1 and summary["allocated_bytes"] == 800


def test_resize_past_the_limit_moves_values_to_chunks(client: Client, raw_store: RawStore) -> None:
    did = make(client, [50], maxdims=["H5S_UNLIMITED"], creationProperties={"layout": {"class": "H5D_CHUNKED", "dims": [1000]}})
    data = np.arange(50, dtype="<f8")
    assert client.put(f"/datasets/{did}/value", data=data.tobytes(), headers=PUT_OCTET).status_code == 200
    assert chunk_keys(raw_store, did) == []
    # 9 chunks of 8000 bytes: past 64 KiB
    assert client.put(f"/datasets/{did}/shape", json={"shape": [9000]}).status_code == 201
    assert "compact" not in stored_doc(raw_store, did)
    assert len(chunk_keys(raw_store, did)) == 1
    expect = np.concatenate([data, np.zeros(8950)])
    np.testing.assert_array_equal(read(client, did), expect)
    assert client.put(f"/datasets/{did}/value", params={"select": "[8990:9000]"}, data=np.ones(10).tobytes(), headers=PUT_OCTET).status_code == 200
    expect[8990:] = 1
    np.testing.assert_array_equal(read(client, did), expect)
    assert len(chunk_keys(raw_store, did)) == 2
    assert client.get(f"/datasets/{did}", params={"verbose": 1}).json()["stats"]["storage"] == "chunks"


def test_write_too_large_for_the_document_moves_values(client: Client, raw_store: RawStore) -> None:
    vlen = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}
    did = make(client, [8], vlen)
    small = [f"s{i}" for i in range(8)]
    assert client.put(f"/datasets/{did}/value", json={"value": small}).status_code == 200
    assert chunk_keys(raw_store, did) == [] and "compact" in stored_doc(raw_store, did)
    big = "x" * 20_000
    r = client.put(f"/datasets/{did}/value", json={"start": 2, "stop": 6, "value": [big] * 4})
    assert r.status_code == 200, r.text
    assert "compact" not in stored_doc(raw_store, did) and len(chunk_keys(raw_store, did)) == 1
    assert client.get(f"/datasets/{did}/value").json()["value"] == small[:2] + [big] * 4 + small[6:]


def test_concurrent_writers_of_one_compact_dataset_lose_nothing(client: Client, raw_store: RawStore) -> None:
    did = make(client, [2, 60], "H5T_STD_I32LE", creationProperties={"fillValue": -1})
    errors: list[str] = []

    def writer(row: int) -> None:
        c = Client(client.endpoint, "test_user1", client.domain)
        for j in range(60):
            r = c.put(f"/datasets/{did}/value", json={"start": [row, j], "stop": [row + 1, j + 1], "value": [[row * 100 + j]]})
            if r.status_code != 200:
                errors.append(r.text)

    threads = [threading.Thread(target=writer, args=(row,)) for row in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = read(client, did, "<i4").reshape(2, 60)
    np.testing.assert_array_equal(got, np.arange(60)[None, :] + np.array([[0], [100]]))
    assert chunk_keys(raw_store, did) == []


def test_writes_racing_a_move_lose_nothing(client: Client, raw_store: RawStore) -> None:
    """Writers of single elements while another client grows the dataset past the limit: every
    element written is there afterwards, whichever side of the move each write landed on."""
    did = make(client, [40], "H5T_STD_I64LE", maxdims=["H5S_UNLIMITED"], creationProperties={"layout": {"class": "H5D_CHUNKED", "dims": [4096]}})
    errors: list[str] = []
    start = threading.Barrier(3)

    def writer(first: int) -> None:
        c = Client(client.endpoint, "test_user1", client.domain)
        start.wait()
        for j in range(first, 40, 2):
            r = c.put(f"/datasets/{did}/value", json={"start": j, "stop": j + 1, "value": [j + 1000]})
            if r.status_code != 200:
                errors.append(r.text)

    def grower() -> None:
        c = Client(client.endpoint, "test_user1", client.domain)
        start.wait()
        for n in (1000, 5000, 12000):  # 3 chunks of 32 KiB: past the limit
            r = c.put(f"/datasets/{did}/shape", json={"shape": [n]})
            if r.status_code != 201:
                errors.append(r.text)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)] + [threading.Thread(target=grower)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = read(client, did, "<i8")
    assert got.shape == (12000,)
    np.testing.assert_array_equal(got[:40], np.arange(40) + 1000)
    assert not got[40:].any()
    assert "compact" not in stored_doc(raw_store, did) and len(chunk_keys(raw_store, did)) == 1


def test_h5pyd_small_datasets(endpoint: str, domain: str, raw_store: RawStore) -> None:
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("small", data=np.arange(100, dtype="f8"))
        g = f.create_dataset("grow", (10, 4), maxshape=(None, 4), dtype="i2", chunks=(5000, 4), fillvalue=7)
        g[2:4, 1:3] = 5
        s = f.create_dataset("scalar", data=3.5)
        ids = d.id.id, g.id.id, s.id.id
    with open_file(endpoint, domain, "r+") as f:
        np.testing.assert_array_equal(f["small"][...], np.arange(100.0))
        assert f["scalar"][()] == 3.5
        f["small"][10:20] = -1
        f["grow"].resize((20000, 4))  # 4 chunks of 40000 bytes: past the limit
    expect = np.full((20000, 4), 7, "i2")
    expect[2:4, 1:3] = 5
    with open_file(endpoint, domain, "r") as f:
        small = np.arange(100.0)
        small[10:20] = -1
        np.testing.assert_array_equal(f["small"][...], small)
        np.testing.assert_array_equal(f["grow"][...], expect)
        assert f["grow"].chunks == (5000, 4)
    assert chunk_keys(raw_store, ids[0]) == [] and chunk_keys(raw_store, ids[2]) == []
    assert len(chunk_keys(raw_store, ids[1])) == 1
