"""Versions with several server processes on one store, a server killed mid-commit, the
``h5lake version`` and ``h5lake gc`` commands, on every backend."""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import requests
from tests.conftest import Backing, Client
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain, on
from tests.support.cli import clean_env, run_h5lake
from tests.support.server import Server

N, CHUNK = 32768, 2048  # 128 KiB: past the compact-values limit, chunks are objects
OCTET = {"Content-Type": "application/octet-stream"}


def make_dataset(c: Client) -> str:
    root = c.get("/").json()["root"]
    body = {"type": "H5T_IEEE_F32LE", "shape": [N], "link": {"id": root, "name": "x"},
            "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [CHUNK]}}}
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def write(c: Client, did: str, value: float, lo: int = 0, hi: int = N) -> None:
    data = np.full(hi - lo, value, "<f4").tobytes()
    r = c.put(f"/datasets/{did}/value", params={"select": f"[{lo}:{hi}]"}, data=data, headers=OCTET)
    assert r.status_code == 200, r.text


def read(c: Client, did: str) -> np.ndarray:
    r = c.get(f"/datasets/{did}/value", headers={"Accept": "application/octet-stream"})
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, "<f4")


def test_two_processes_racing_commits_one_wins_per_parent(pair: tuple[Server, Server]) -> None:
    a, b = pair
    ca = new_domain(a.endpoint)
    cb = on(ca, b.endpoint)
    did = make_dataset(ca)
    assert ca.post("/versions", json={"message": "base"}).status_code == 201
    for round_no in range(1, 5):
        write(ca, did, float(round_no), 0, CHUNK)
        parent = f"v{round_no}"
        results: list[requests.Response] = []
        barrier = threading.Barrier(2)

        def go(c: Client, who: str, parent: str, barrier: threading.Barrier, results: list[requests.Response]) -> None:
            barrier.wait()
            results.append(c.post("/versions", json={"message": who, "parent": parent}))

        threads = [threading.Thread(target=go, args=(c, w, parent, barrier, results)) for c, w in ((ca, "a"), (cb, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(r.status_code for r in results)
        assert statuses == [201, 409], [r.text for r in results]
        loser = next(r for r in results if r.status_code == 409)
        assert f"v{round_no + 1}" in loser.json()["error"]["message"]
    assert [v["id"] for v in ca.get("/versions").json()["versions"]] == ["v5", "v4", "v3", "v2", "v1"]


def test_commit_in_one_process_sees_writes_acknowledged_by_another(pair: tuple[Server, Server]) -> None:
    a, b = pair
    ca = new_domain(a.endpoint)
    cb = on(ca, b.endpoint)
    did = make_dataset(ca)
    for k in range(1, 4):
        write(ca, did, float(k), 0, N)  # acknowledged by a; a's catalog flush lags
        r = cb.post("/versions", json={})  # committed by b at once
        assert r.status_code == 201, r.text
        version = Client(b.endpoint, "test_user1", f"{ca.domain}@{r.json()['id']}")
        assert np.all(read(version, did) == k)


def test_a_write_by_another_process_during_a_commit_is_wholly_in_or_out(pair: tuple[Server, Server]) -> None:
    a, b = pair
    ca = new_domain(a.endpoint)
    cb = on(ca, b.endpoint)
    did = make_dataset(ca)
    stop = threading.Event()
    values: list[float] = [0.0]

    def writer() -> None:
        while not stop.is_set():
            write(ca, did, values[-1] + 1.0)  # one request over all 16 chunks
            values.append(values[-1] + 1.0)

    thread = threading.Thread(target=writer)
    thread.start()
    made = []
    try:
        for _ in range(3):
            r = cb.post("/versions", json={})
            assert r.status_code == 201, r.text
            made.append(r.json()["id"])
    finally:
        stop.set()
        thread.join()
    for vid in made:
        data = read(Client(b.endpoint, "test_user1", f"{ca.domain}@{vid}"), did)
        assert np.all(data == data[0]), (vid, np.unique(data))


def commit_within(c: Client, message: str, seconds: float) -> requests.Response:
    return c.session.post(c.endpoint + "/versions", params={"domain": c.domain}, json={"message": message},
                          timeout=seconds)


@pytest.mark.slow
def test_server_killed_during_commits_leaves_versions_whole(start: StartServer, store_backing: Backing) -> None:
    rng = random.Random(12)
    srv = start()
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    acknowledged: dict[str, float] = {}
    written: list[float] = []
    value = 0.0
    for _ in range(2):  # two kills (each costs a restart, and on S3 a commit lease)
        for _ in range(3):
            value += 1.0
            write(c, did, value, 0, N)
            written.append(value)
            try:
                r = commit_within(c, str(value), 0.5 + rng.random())
                if r.status_code == 201:
                    acknowledged[r.json()["id"]] = value
            except requests.RequestException:
                pass
        # kill while a commit is in flight
        killer = threading.Timer(rng.uniform(0.0, 0.05), lambda s=srv: s.stop(signal.SIGKILL))
        killer.start()
        try:
            commit_within(c, "killed", 5)
        except requests.RequestException:
            pass
        killer.join()
        srv.stop(signal.SIGKILL)
        srv = start()
        c = Client(srv.endpoint, "test_user1", c.domain)
    versions = c.get("/versions").json()["versions"]
    ids = [v["id"] for v in versions]
    assert set(acknowledged) <= set(ids)
    for v in versions:
        data = read(Client(srv.endpoint, "test_user1", f"{c.domain}@{v['id']}"), did)
        assert data[0] in written and np.all(data == data[0]), v  # whole: one write's value
        if v["id"] in acknowledged:
            assert data[0] == acknowledged[v["id"]]
    assert np.all(read(c, did) == value)


def test_cli_versions_and_gc(start: StartServer, store_backing: Backing, tmp_path: Path) -> None:
    srv = start()
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    write(c, did, 1.0)
    env = clean_env(tmp_path, {"HS_ENDPOINT": srv.endpoint, "HS_USERNAME": "test_user1", "HS_PASSWORD": "test1-pw"})
    env.update(store_backing.env)

    def cli(*args: str) -> str:
        done = run_h5lake(*args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert cli("version", "commit", c.domain, "-m", "one").startswith("v1 ")
    write(c, did, 2.0, 0, CHUNK)
    import json

    out = json.loads(cli("version", "commit", c.domain, "-m", "two", "--metadata", '{"k": 1}', "--json"))
    assert out["id"] == "v2" and out["metadata"] == {"k": 1}
    log = cli("version", "log", c.domain)
    assert log.splitlines()[0].startswith("v2 ") and "one" in log
    assert "chunk" in cli("version", "diff", c.domain, "v1", "v2")
    assert "release -> v1" in cli("version", "tag", c.domain, "release", "v1")
    fork = c.domain.replace(".h5", "-f.h5")
    cli("version", "fork", c.domain + "@release", fork)
    assert np.all(read(Client(srv.endpoint, "test_user1", fork), _dataset(srv.endpoint, fork)) == 1)
    cli("version", "tag", c.domain, "release", "--delete")
    write(c, did, 3.0)
    assert "restored v1" in cli("version", "restore", c.domain, "v1", "--force")
    assert np.all(read(c, did) == 1)
    cli("version", "delete", c.domain, "v2")
    bad = run_h5lake("version", "delete", c.domain, "v9", cwd=tmp_path, env=env)
    assert bad.returncode != 0 and "v9" in bad.stderr
    store_args = store_backing.args or ["--data", str(store_backing.data)]
    before = json.loads(cli("gc", *store_args, "--json", "--dry-run"))
    assert before["blobs_deleted"] == 0 and before["young_kept"] >= 1  # v2's chunk: unreferenced, young
    done = json.loads(cli("gc", *store_args, "--grace", "0", "--json"))
    assert done["blobs_deleted"] == 1  # v2's one changed chunk; v1 and the fork keep theirs
    assert np.all(read(Client(srv.endpoint, "test_user1", c.domain + "@v1"), did) == 1)
    assert np.all(read(Client(srv.endpoint, "test_user1", fork), _dataset(srv.endpoint, fork)) == 1)


def _dataset(endpoint: str, domain: str) -> str:
    c = Client(endpoint, "test_user1", domain)
    root = c.get("/").json()["root"]
    return str(c.get(f"/groups/{root}/links/x").json()["link"]["id"])


