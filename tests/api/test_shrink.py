"""Shrinking a dataset (``PUT /datasets/{id}/shape`` to a smaller extent, h5pyd ``resize``) with
HDF5's semantics: the cut-off elements are gone, growing again shows fill (service/datasets/shrink.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import h5pyd
import numpy as np
import requests
from tests.api.test_h5pyd_metadata import open_file
from tests.conftest import Client, RawStore, auth
from tests.support.server import start_server

from h5lake.model.ids import chunk_key, object_key

BIG = 100_000  # elements: past the compact-values limit, so chunks are objects of their own
OCTET = {"Accept": "application/octet-stream"}
PUT_OCTET = {"Content-Type": "application/octet-stream"}


def _dataset(c: Client, shape: list[int], chunks: list[int], fill: float | None = None, name: str = "d") -> str:
    root = c.get("/").json()["root"]
    props: dict[str, object] = {"layout": {"class": "H5D_CHUNKED", "dims": chunks}}
    if fill is not None:
        props["fillValue"] = fill
    r = c.post("/datasets", json={
        "type": "H5T_IEEE_F64LE", "shape": shape, "maxdims": [0] * len(shape), "creationProperties": props,
        "link": {"id": root, "name": name},
    })
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _put(c: Client, did: str, select: str, values: np.ndarray) -> None:
    r = c.put(f"/datasets/{did}/value", params={"select": select}, data=values.astype("<f8").tobytes(), headers=PUT_OCTET)
    assert r.status_code == 200, r.text


def _get(c: Client, did: str, shape: tuple[int, ...]) -> np.ndarray:
    r = c.get(f"/datasets/{did}/value", headers=OCTET)
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, "<f8").reshape(shape)


def _resize(c: Client, did: str, shape: list[int]) -> dict[str, object]:
    r = c.put(f"/datasets/{did}/shape", json={"shape": shape})
    assert r.status_code == 201, r.text
    assert c.get(f"/datasets/{did}/shape").json()["shape"]["dims"] == shape
    out: dict[str, object] = r.json()
    return out


def test_shrink_then_grow_shows_fill_and_prunes_chunks(client: Client, raw_store: RawStore) -> None:
    n = BIG
    did = _dataset(client, [n], [1000], fill=-1.0)
    data = np.arange(n, dtype="f8")
    _put(client, did, f"[0:{n}]", data)
    assert raw_store.read(chunk_key(did, (99,))) is not None
    assert _resize(client, did, [2500])["selection"] == f"[2500:{n}]"
    assert np.array_equal(_get(client, did, (2500,)), data[:2500])
    # chunks wholly outside the new extent are gone; the one it crosses stays
    assert raw_store.read(chunk_key(did, (2,))) is not None
    assert all(raw_store.read(chunk_key(did, (i,))) is None for i in (3, 50, 99))
    # and leave the chunk catalog (merged in the background)
    catalog = client.domain.lstrip("/") + f"/.{did}.chunks.txt"
    deadline = time.monotonic() + 10
    names: list[str] = []
    while time.monotonic() < deadline:
        names = [line.split()[0] for line in (raw_store.read(catalog) or b"").decode().splitlines()]
        if names == ["0", "1", "2"]:
            break
        time.sleep(0.1)
    assert names == ["0", "1", "2"]
    _resize(client, did, [n])
    expect = np.full(n, -1.0)
    expect[:2500] = data[:2500]
    assert np.array_equal(_get(client, did, (n,)), expect)
    # to 0 and back: all fill, no chunk left
    _resize(client, did, [0])
    assert client.get(f"/datasets/{did}").json()["shape"]["dims"] == [0]
    assert all(raw_store.read(chunk_key(did, (i,))) is None for i in range(3))
    _resize(client, did, [3000])
    assert np.array_equal(_get(client, did, (3000,)), np.full(3000, -1.0))


def test_mixed_grow_and_shrink_in_one_request(client: Client) -> None:
    did = _dataset(client, [400, 300], [64, 64])
    data = np.arange(400 * 300, dtype="f8").reshape(400, 300) + 1
    _put(client, did, "[0:400,0:300]", data)
    _resize(client, did, [150, 500])  # rows cut, columns added
    expect = np.zeros((150, 500))
    expect[:, :300] = data[:150]
    assert np.array_equal(_get(client, did, (150, 500)), expect)
    _resize(client, did, [400, 100])
    expect = np.zeros((400, 100))
    expect[:150] = data[:150, :100]
    assert np.array_equal(_get(client, did, (400, 100)), expect)


def test_rules_kept(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [10], "link": {"id": root, "name": "fixed"}})
    fixed = r.json()["id"]
    r = client.put(f"/datasets/{fixed}/shape", json={"shape": [5]})
    assert r.status_code == 400 and "not extensible" in r.json()["error"]["message"]
    did = _dataset(client, [10], [4], name="ext")
    assert client.put(f"/datasets/{did}/shape", json={"shape": [-1]}).status_code == 400
    assert client.put(f"/datasets/{did}/shape", json={"extend": -2}).status_code == 400


def test_compact_dataset(client: Client) -> None:
    did = _dataset(client, [100], [8], fill=7.0)
    assert client.get(f"/datasets/{did}", params={"verbose": 1}).json()["stats"]["storage"] == "compact"
    data = np.arange(100, dtype="f8")
    _put(client, did, "[0:100]", data)
    _resize(client, did, [21])
    stats = client.get(f"/datasets/{did}", params={"verbose": 1}).json()["stats"]
    assert stats["storage"] == "compact" and stats["allocatedChunkCount"] == 3  # chunks 3.. dropped
    assert np.array_equal(_get(client, did, (21,)), data[:21])
    _resize(client, did, [100])
    expect = np.full(100, 7.0)
    expect[:21] = data[:21]
    assert np.array_equal(_get(client, did, (100,)), expect)


def test_prepended_dataset(client: Client, raw_store: RawStore) -> None:
    n = BIG
    did = _dataset(client, [n], [1000])
    data = np.arange(n, dtype="f8") + 1
    _put(client, did, f"[0:{n}]", data)
    assert client.put(f"/datasets/{did}/shape", json={"prepend": 1500}).status_code == 201
    _put(client, did, "[0:1500]", -np.arange(1500, dtype="f8") - 1)
    full = np.concatenate([-np.arange(1500, dtype="f8") - 1, data])
    assert np.array_equal(_get(client, did, (n + 1500,)), full)
    # keep 1200 elements: chunk -2 holds elements 0..499, chunk -1 500..1499 (crossed at 1200)
    _resize(client, did, [1200])
    assert np.array_equal(_get(client, did, (1200,)), full[:1200])
    assert raw_store.read(chunk_key(did, (0,))) is None and raw_store.read(chunk_key(did, (-1,))) is not None
    _resize(client, did, [3000])
    expect = np.zeros(3000)
    expect[:1200] = full[:1200]
    assert np.array_equal(_get(client, did, (3000,)), expect)


def test_h5pyd_resize_smaller(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("x", data=np.arange(60, dtype="i4").reshape(6, 10), maxshape=(None, None), chunks=(4, 4))
        words = np.array([f"w{i}" * (i % 4 + 1) for i in range(9)], dtype=object)
        f.create_dataset("s", data=words, dtype=h5pyd.string_dtype(), maxshape=(None,), chunks=(4,))
    with open_file(endpoint, domain, "a") as f:
        f["x"].resize((3, 7))
        f["s"].resize((5,))
    with open_file(endpoint, domain, "a") as f:  # variable-length strings: cut ones read as empty
        f["s"].resize((9,))
    with open_file(endpoint, domain, "r") as f:
        got = [v.decode() if isinstance(v, bytes) else v for v in f["s"][...]]
        assert got == [f"w{i}" * (i % 4 + 1) for i in range(5)] + [""] * 4
    with open_file(endpoint, domain, "a") as f:  # h5pyd keeps the old shape in the session
        d = f["x"]
        assert d.shape == (3, 7)
        assert np.array_equal(d[...], np.arange(60, dtype="i4").reshape(6, 10)[:3, :7])
        d.resize((6, 10))
    with open_file(endpoint, domain, "r") as f:
        expect = np.zeros((6, 10), "i4")
        expect[:3, :7] = np.arange(60, dtype="i4").reshape(6, 10)[:3, :7]
        assert np.array_equal(f["x"][...], expect)


def test_a_crash_before_the_cleaning_never_shows_stale_values(tmp_path: Path) -> None:
    """The state a crash between the two steps leaves (smaller shape stored with its mark, the
    cut-off chunks still there), made on a server's own files: reads stay within the new
    extent, and the next growth finishes the cleaning before it shows anything."""
    srv = start_server(tmp_path)
    try:
        requests.put(srv.endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=auth("test_user1"))
        c = Client(srv.endpoint, "test_user1", "/home/test_user1/crash.h5")
        assert c.put("/").status_code == 201
        n = BIG
        did = _dataset(c, [n], [1000])
        data = np.arange(n, dtype="f8") + 1
        _put(c, did, f"[0:{n}]", data)
        stale = {i: (srv.data / chunk_key(did, (i,))).read_bytes() for i in (2, 3, 99)}
        _resize(c, did, [2500])
        doc_path = srv.data / object_key(did)
        doc = json.loads(doc_path.read_bytes())
        assert "shrinking" not in doc  # cleaned and unmarked
        for i, blob in stale.items():  # as if the cleaning never ran
            (srv.data / chunk_key(did, (i,))).write_bytes(blob)
        doc["shrinking"] = {"keep": [2500], "upto": [n]}
        doc_path.write_bytes(json.dumps(doc).encode())
        assert np.array_equal(_get(c, did, (2500,)), data[:2500])
        _resize(c, did, [n])
        expect = np.zeros(n)
        expect[:2500] = data[:2500]
        assert np.array_equal(_get(c, did, (n,)), expect)
        assert "shrinking" not in json.loads(doc_path.read_bytes())
        assert not (srv.data / chunk_key(did, (99,))).exists()
    finally:
        srv.stop()
