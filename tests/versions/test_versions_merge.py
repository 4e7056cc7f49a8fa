"""Merging a fork back into its source and cherry-picking a version, over plain HTTP and read
back through unchanged h5pyd (docs/versions.md, "Merge and cherry-pick")."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import requests
from tests.conftest import Client, auth
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain
from tests.support.cli import clean_env, run_h5lake
from tests.versions.test_versions_processes import N, make_dataset, read, write
from tests.versions.test_versions_http import _h5


def _setup(client: Client) -> Client:
    """The source at v1 (x: 0..99 in chunks of 10, group g with attribute a) and a fork of v1."""
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("x", data=np.arange(100, dtype="i4"), chunks=(10,))
        g = f.create_group("g")
        g.attrs["a"] = 1
        g.attrs["b"] = 1
    assert client.post("/versions", json={"message": "v1"}).status_code == 201
    fork = Client(ep, "test_user1", d.replace(".h5", "-fork.h5"))
    r = fork.put("/", json={"from": d + "@v1"})
    assert r.status_code == 201, r.text
    return fork


def _merge(client: Client, fork: Client, **extra: object) -> requests.Response:
    return client.post("/versions/merge", json={"from": fork.domain, **extra})


def test_merge_without_conflicts_takes_each_sides_changes(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:  # theirs: chunk 0, attribute a, a new dataset referring to x
        f["x"][0:3] = [-1, -2, -3]
        f["g"].attrs["a"] = 2
        y = f["g"].create_dataset("y", data=np.full(5, 7, "i2"))
        y.attrs["ref"] = f["x"].ref
    with _h5(ep, d, "a") as f:  # ours: chunk 9, attribute b, a new group
        f["x"][95] = 500
        f["g"].attrs["b"] = 3
        f.create_group("h")
    r = _merge(client, fork, message="bring back")
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["message"] == "bring back" and out["elementwise"] == 0
    assert out["parents"][0] == out["parent"] and out["parents"][1].startswith(fork.domain + "@v")
    listed = client.get("/versions").json()["versions"][0]
    assert listed["id"] == out["id"] and listed["parents"] == out["parents"]
    expect = np.arange(100, dtype="i4")
    expect[0:3] = [-1, -2, -3]
    expect[95] = 500
    for name in (d, f"{d}@{out['id']}"):  # the head became the merged version
        with _h5(ep, name) as f:
            assert np.array_equal(f["x"][:], expect)
            assert f["g"].attrs["a"] == 2 and f["g"].attrs["b"] == 3
            assert "h" in f and list(f["g/y"][:]) == [7] * 5
            assert f[f["g/y"].attrs["ref"]].name == "/x"  # the reference names the target's x
            assert f["g/y"].id.id not in str(fork.get("/").json())
    with _h5(ep, f"{d}@{out['parents'][0]}") as f:  # ours, committed first
        assert f["x"][0] == 0 and f["x"][95] == 500 and "y" not in f["g"]
    with _h5(ep, out["parents"][1]) as f:  # theirs, read as FORK@REF
        assert f["x"][0] == -1 and f["x"][95] == 95


def _conflicting(client: Client) -> Client:
    """Both sides change attribute g.a, chunk 0 of x (the same element) and the shape of z."""
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("z", data=np.zeros(4, "i4"), maxshape=(None,), chunks=(4,))
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:
        f["x"][1] = 1000
        f["g"].attrs["a"] = 20
        f["z"].resize((6,))
    with _h5(ep, d, "a") as f:
        f["x"][1] = 2000
        f["g"].attrs["a"] = 30
        f["z"].resize((8,))
    return fork


def test_conflicts_are_refused_listing_each_then_resolved_each_way(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    fork = _conflicting(client)
    r = _merge(client, fork)
    assert r.status_code == 409, r.text
    found = {(c["path"], c["kind"], c.get("name")): c for c in r.json()["conflicts"]}
    assert set(found) == {("/g", "attribute", "a"), ("/x", "chunk", None), ("/z", "shape", "shape")}, found
    assert found[("/x", "chunk", None)]["chunks"] == ["0"]
    assert found[("/g", "attribute", "a")]["ours"]["value"] == 30 and found[("/g", "attribute", "a")]["theirs"]["value"] == 20
    assert r.json()["count"] == 3
    page = client.post("/versions/merge", json={"from": fork.domain}, params={"Limit": 2, "Marker": 2})
    assert page.status_code == 409 and len(page.json()["conflicts"]) == 1 and "nextMarker" not in page.json()
    first = client.post("/versions/merge", json={"from": fork.domain}, params={"Limit": 2})
    assert first.json()["nextMarker"] == 2 and len(first.json()["conflicts"]) == 2
    versions = client.get("/versions").json()["versions"]
    with _h5(ep, d) as f:  # nothing changed: the head is ours (committed first, as for a fork)
        assert f["x"][1] == 2000 and f["g"].attrs["a"] == 30 and f["z"].shape == (8,)
    assert all("merged" not in v for v in versions)

    r = _merge(client, fork, resolve={"/g": "theirs", "*": "ours"})
    assert r.status_code == 201, r.text
    assert r.json()["resolved"] == {"ours": 2, "theirs": 1}
    with _h5(ep, d) as f:
        assert f["x"][1] == 2000 and f["g"].attrs["a"] == 20 and f["z"].shape == (8,)

    r = _merge(client, fork, resolve="theirs")  # again, against the same base: theirs for all
    assert r.status_code == 201, r.text
    with _h5(ep, d) as f:
        assert f["x"][1] == 1000 and f["g"].attrs["a"] == 20 and f["z"].shape == (6,)
        assert np.array_equal(f["x"][2:], np.arange(2, 100))


def test_disjoint_edits_of_one_chunk_are_merged_element_wise(client: Client) -> None:
    """x's values are kept in its document (compact), big's in chunk objects (deflated)."""
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("big", data=np.arange(200_000, dtype="f8"), chunks=(50_000,), compression="gzip")
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:
        f["x"][11] = -11
        f["x"][13] = -13
        f["big"][60_000] = -1
    with _h5(ep, d, "a") as f:
        f["x"][12] = -12
        f["x"][13] = -13  # the same change on both sides is no conflict
        f["big"][60_001] = -2
    r = _merge(client, fork)
    assert r.status_code == 201, r.text
    assert r.json()["elementwise"] == 2
    big = np.arange(200_000, dtype="f8")
    big[60_000:60_002] = [-1, -2]
    with _h5(ep, d) as f:
        assert np.array_equal(f["big"][:], big)
    expect = np.arange(100, dtype="i4")
    expect[11:14] = [-11, -12, -13]
    with _h5(ep, d) as f:
        assert np.array_equal(f["x"][:], expect)
    with _h5(ep, f"{d}@{r.json()['id']}") as f:
        assert np.array_equal(f["x"][:], expect)


def test_bad_merges_are_clear_4xx(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    other = Client(ep, "test_user1", d.replace(".h5", "-other.h5"))
    assert other.put("/").status_code == 201
    cases = [
        ({"from": d.replace(".h5", "-none.h5")}, 404),
        ({"from": other.domain}, 400),  # not a fork
        ({"from": "relative"}, 400),
        ({"from": fork.domain, "resolve": "mine"}, 400),
        ({"from": fork.domain, "resolve": {"/g": 1}}, 400),
        ({"from": fork.domain, "resolve": ["ours"]}, 400),
        ([1], 400),
    ]
    for body, status in cases:
        r = client.post("/versions/merge", json=body)
        assert r.status_code == status, (body, r.text)
        assert r.json()["error"]["message"]
    r = client.post("/versions/merge", json={"from": fork.domain}, params={"domain": d + "@v1"})
    assert r.status_code == 400 and "version" in r.json()["error"]["message"]
    # a fork of another domain is another lineage
    third = Client(ep, "test_user1", d.replace(".h5", "-third.h5"))
    assert third.put("/", json={"from": other.domain}).status_code == 201
    r = client.post("/versions/merge", json={"from": third.domain})
    assert r.status_code == 400 and other.domain in r.json()["error"]["message"]
    # read on the source, update on the target
    stranger = Client(ep, "test_user2", d)
    assert stranger.post("/versions/merge", json={"from": fork.domain}).status_code == 403


def test_cherry_pick_applies_one_versions_change(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:
        f["x"][50] = -50
    assert fork.post("/versions", json={"message": "fix 50"}).status_code == 201  # fork v1
    with _h5(ep, fork.domain, "a") as f:
        f["x"][60] = -60
        f["g"].attrs["a"] = 9
    assert fork.post("/versions", json={"message": "more"}).status_code == 201  # fork v2
    with _h5(ep, d, "a") as f:
        f["x"][0] = 7
    r = client.post("/versions/cherry-pick", json={"from": fork.domain + "@v2"})
    assert r.status_code == 201, r.text
    assert r.json()["cherryPicked"] == fork.domain + "@v2" and len(r.json()["parents"]) == 1
    with _h5(ep, d) as f:  # v2's change only: not v1's
        assert f["x"][60] == -60 and f["g"].attrs["a"] == 9 and f["x"][50] == 50 and f["x"][0] == 7
    # within one domain: undoing and picking again
    pick = r.json()["id"]
    with _h5(ep, d, "a") as f:
        f["x"][70] = -70
    made = client.post("/versions", json={"message": "70"}).json()["id"]
    assert client.post(f"/versions/{pick}/restore", json={"force": True}).status_code == 200
    r = client.post("/versions/cherry-pick", json={"from": f"{d}@{made}"})
    assert r.status_code == 201, r.text
    with _h5(ep, d) as f:
        assert f["x"][70] == -70 and f["x"][60] == -60
    assert client.post("/versions/cherry-pick", json={"from": d}).status_code == 400


def test_merge_racing_a_writer_loses_no_acknowledged_write(client: Client) -> None:
    """Writes to the target while merges run: each acknowledged before a merge was sent is in
    that merge's version, and every one is in the head afterwards (a write lands wholly before
    the merge, and is in ours, or wholly after it)."""
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:
        f["x"][0] = -1
    acked: list[int] = []
    done = threading.Event()
    x_id = client.get("/", params={"h5path": "/x"}).json()["id"]

    def write() -> None:  # plain HTTP: h5pyd buffers writes until a flush
        writer = Client(ep, "test_user1", d)
        for k in range(10, 90):
            r = writer.put(f"/datasets/{x_id}/value", json={"start": [k], "stop": [k + 1], "value": [-k]})
            assert r.status_code == 200, r.text
            acked.append(k)
            if done.is_set():
                break

    writer = threading.Thread(target=write)
    writer.start()
    merges = []
    try:
        while writer.is_alive() and len(merges) < 3:
            before = list(acked)
            r = _merge(client, fork)
            assert r.status_code == 201, r.text
            merges.append((r.json()["id"], before))
    finally:
        done.set()
        writer.join()
    for vid, before in merges:
        with _h5(ep, f"{d}@{vid}") as f:
            x = f["x"][:]
            assert x[0] == -1 and all(x[k] == -k for k in before)
    with _h5(ep, d) as f:
        x = f["x"][:]
        assert x[0] == -1 and all(x[k] == -k for k in acked)


def test_command_line_merge_and_cherry_pick(client: Client, tmp_path: Path) -> None:
    ep, d = client.endpoint, client.domain
    fork = _conflicting(client)
    env = clean_env(tmp_path, {"HS_ENDPOINT": ep, "HS_USERNAME": "test_user1", "HS_PASSWORD": auth("test_user1")[1]})
    refused = run_h5lake("version", "merge", d, fork.domain, "--json", cwd=tmp_path, env=env)
    assert refused.returncode != 0 and json.loads(refused.stderr[refused.stderr.index("{"):])["count"] == 3
    done = run_h5lake("version", "merge", d, fork.domain, "--resolve", '{"*": "theirs"}', "-m", "cli", "--json",
                      cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["message"] == "cli" and out["resolved"] == {"ours": 0, "theirs": 3}
    log = run_h5lake("version", "log", d, cwd=tmp_path, env=env)
    assert log.returncode == 0 and f"parents {out['parents'][0]} + {fork.domain}@v1" in log.stdout, log.stdout
    with _h5(ep, fork.domain, "a") as f:
        f["g"].attrs["c"] = 5
    assert fork.post("/versions", json={}).status_code == 201
    picked = run_h5lake("version", "cherry-pick", d, fork.domain + "@v2", cwd=tmp_path, env=env)
    assert picked.returncode == 0, picked.stderr
    with _h5(ep, d) as f:
        assert f["g"].attrs["c"] == 5


@pytest.mark.slow
def test_server_killed_during_merges_leaves_no_half_version(start: StartServer) -> None:
    """Kill -9 at moments during merges: every merge version that exists reads whole (the fork's
    half and the target's half), and merging again afterwards gives that head."""
    srv = start()
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    write(c, did, 1.0)
    assert c.post("/versions", json={}).status_code == 201
    fork = Client(srv.endpoint, "test_user1", c.domain.replace(".h5", "-f.h5"))
    assert fork.put("/", json={"from": c.domain + "@v1"}).status_code == 201
    fdid = fork.get("/", params={"h5path": "/x"}).json()["id"]
    write(fork, fdid, 2.0, 0, N // 2)
    write(c, did, 3.0, N // 2, N)
    expect = np.concatenate([np.full(N // 2, 2.0, "f4"), np.full(N - N // 2, 3.0, "f4")])
    for delay in (0.0, 0.03, 0.1):
        killer = threading.Timer(delay, lambda s=srv: s.stop(signal.SIGKILL))
        killer.start()
        with contextlib.suppress(requests.RequestException):
            c.session.post(c.endpoint + "/versions/merge", params={"domain": c.domain}, json={"from": fork.domain},
                           timeout=10)
        killer.join()
        srv.stop(signal.SIGKILL)
        srv = start()
        c, fork = Client(srv.endpoint, "test_user1", c.domain), Client(srv.endpoint, "test_user1", fork.domain)
    for v in c.get("/versions").json()["versions"]:
        if v.get("merged"):
            assert np.array_equal(read(Client(srv.endpoint, "test_user1", f"{c.domain}@{v['id']}"), did), expect), v
    r = c.post("/versions/merge", json={"from": fork.domain})
    assert r.status_code == 201, r.text
    assert np.array_equal(read(c, did), expect)
