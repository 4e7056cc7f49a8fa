"""A server killed in the middle of writing a version to the head (a merge, a restore) at named
steps (`h5lake.service.faults`: ``H5LAKE_CRASH_AT``, the process ends with ``os._exit`` there, as
a kill -9 would): after a restart the head is wholly what it was or wholly the new version, never
between (docs/versions.md, "Writing a version to the head")."""

from __future__ import annotations

import numpy as np
import pytest
import requests
from tests.conftest import BACKENDS, Client
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain
from tests.support.server import Server
from tests.versions.test_versions_processes import N, make_dataset, read, write

from h5lake.service.faults import CRASH_ENV, CRASH_STATUS

State = tuple[list[float], dict[str, int], list[str]]
# a dead writer's mark lapses after 1 s (10 s by default), its chunk intents after 2 s (30 s)
LEASE = {"H5LAKE_COMMIT_LEASE": "1", "H5LAKE_CATALOG_STALE_AFTER": "2", "H5LAKE_CATALOG_RECOVER_EVERY": "0.5"}


def _state(c: Client, did: str) -> State:
    """What the test compares: x's values, the root's attributes and its links."""
    root = c.get("/").json()["root"]
    attrs = {a["name"]: a["value"] for a in c.get(f"/groups/{root}/attributes", params={"IncludeData": 1}).json()["attributes"]}
    links = sorted(link["title"] for link in c.get(f"/groups/{root}/links").json()["links"])
    return read(c, did).tolist(), attrs, links


def _attr(c: Client, name: str, value: int) -> None:
    root = c.get("/").json()["root"]
    r = c.put(f"/groups/{root}/attributes/{name}", json={"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": value})
    assert r.status_code in (200, 201), r.text


def _crashed(srv: Server, send: object) -> None:
    """``send()`` makes the server reach its crash point: no reply, and it ended there."""
    with pytest.raises(requests.ConnectionError):
        send()  # type: ignore[operator]
    assert srv.process.wait(timeout=60) == CRASH_STATUS


def _fork_with_changes(srv: Server) -> tuple[Client, Client, str]:
    """A target (x: N floats in chunks; root attribute a) at v1, a fork of v1 that rewrote x's
    first half, set a and made group h, and the target's own acknowledged write of x's second
    half: the merge writes several documents and chunks to the head."""
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    write(c, did, 1.0)
    _attr(c, "a", 1)
    assert c.post("/versions", json={}).status_code == 201
    fork = Client(srv.endpoint, "test_user1", c.domain.replace(".h5", "-f.h5"))
    assert fork.put("/", json={"from": c.domain + "@v1"}).status_code == 201
    fdid = fork.get("/", params={"h5path": "/x"}).json()["id"]
    write(fork, fdid, 2.0, 0, N // 2)
    _attr(fork, "a", 2)
    froot = fork.get("/").json()["root"]
    assert fork.post("/groups", json={"link": {"id": froot, "name": "h"}}).status_code == 201
    write(c, did, 3.0, N // 2, N)  # acknowledged before the merge
    return c, fork, did


MERGED_X = [2.0] * (N // 2) + [3.0] * (N - N // 2)


POINTS = ["apply-intent", "merge-record", "apply-chunk#3", "apply-object#2", "apply-done"]
# Every point on the local store; on S3 (a restart there costs a commit lease and every request a
# round trip) one point on each side of the commit point: the undone merge and the finished one.
S3_POINTS = ("apply-intent", "apply-chunk#3")
CASES = [pytest.param(kind, point, marks=pytest.mark.slow, id=f"{kind}-{point}")
         for kind in BACKENDS for point in POINTS if kind != "s3" or point in S3_POINTS]


@pytest.mark.slow
@pytest.mark.parametrize(("store_backing", "point"), CASES, indirect=["store_backing"])
def test_merge_killed_at_a_step_leaves_the_head_before_or_after(start: StartServer, point: str) -> None:
    """Killed before its commit point the merge never happens (undone: the head as before, no
    version); after it, the next request finishes it (the head wholly the merge version). The
    target's acknowledged write is kept either way, and merging again succeeds."""
    srv = start(env={CRASH_ENV: point, **LEASE})
    c, fork, did = _fork_with_changes(srv)
    before = _state(c, did)
    assert before == ([1.0] * (N // 2) + [3.0] * (N - N // 2), {"a": 1}, ["x"])
    _crashed(srv, lambda: c.post("/versions/merge", json={"from": fork.domain}))

    srv = start(env=LEASE)
    c, fork = Client(srv.endpoint, "test_user1", c.domain), Client(srv.endpoint, "test_user1", fork.domain)
    after = _state(c, did)  # the first request finishes (or undoes) the dead merge
    merges = [v for v in c.get("/versions").json()["versions"] if v.get("merged")]
    if point == "apply-intent":  # before the commit point: no merge version, the head untouched
        assert merges == [] and after == before
    else:
        assert len(merges) == 1
        assert after == (MERGED_X, {"a": 2}, ["h", "x"])
        version = Client(srv.endpoint, "test_user1", f"{c.domain}@{merges[0]['id']}")
        assert _state(version, did) == after  # the version reads whole, as the head does
    write(c, did, 9.0, N - 1, N)  # the domain takes writes again, and a retried merge succeeds
    r = c.post("/versions/merge", json={"from": fork.domain})
    assert r.status_code == 201, r.text
    assert _state(c, did) == ([*MERGED_X[:-1], 9.0], {"a": 2}, ["h", "x"])
    assert c.post("/versions", json={}).status_code in (201, 409)  # no mark left behind


@pytest.mark.slow
@pytest.mark.parametrize("point", ["apply-chunk#2"])
def test_restore_killed_part_way_is_finished_by_the_next_request(start: StartServer, point: str) -> None:
    srv = start(env={CRASH_ENV: point, **LEASE})
    c = new_domain(srv.endpoint)
    did = make_dataset(c)
    write(c, did, 1.0)
    _attr(c, "a", 1)
    assert c.post("/versions", json={}).status_code == 201  # v1
    write(c, did, 5.0, 0, N // 2)
    _attr(c, "a", 5)
    root = c.get("/").json()["root"]
    assert c.post("/groups", json={"link": {"id": root, "name": "h"}}).status_code == 201
    assert c.post("/versions", json={}).status_code == 201  # v2
    v1 = _state(Client(srv.endpoint, "test_user1", f"{c.domain}@v1"), did)
    _crashed(srv, lambda: c.post("/versions/v1/restore", json={}))

    srv = start(env=LEASE)
    c = Client(srv.endpoint, "test_user1", c.domain)
    assert _state(c, did) == v1 == ([1.0] * N, {"a": 1}, ["x"])
    write(c, did, 7.0, 0, 1)
    assert np.array_equal(read(c, did)[:2], [7.0, 1.0])
