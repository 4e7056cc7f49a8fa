"""A domain deleted and made again at the same path is a new domain: it shows none of the
deleted domain's versions, and the deleted domain's clean-up (run in the background by the
process that deleted it) takes none of the new domain's versions, tags or deletion marks away.

docs/storage.md, "Crashes and races": the path-level state of a domain (``.history/``, the
domain catalogs, ``.gone/``) would outlive its deletion until the background reclaim reached it
(never, after ``keep_root=1`` or a crash), so the new domain would read the old one's versions
(``D@v1`` showing the deleted data, to whoever made the path again); and a reclaim still running
when the path is made again must not delete the new domain's versions.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from h5lake.model.ids import object_key
from tests.conftest import Backing, Client
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain, on
from tests.support.cli import clean_env, run_h5lake
from tests.versions.test_versions_processes import _dataset, make_dataset, read, write

pytestmark = pytest.mark.slow  # several server processes on one store

GRID = 100_000  # chunks a deleted dataset's reclaim deletes blindly (catalog.catalogs.GRID_PROBE_LIMIT)


def attribute(c: Client, root: str, name: str, value: int) -> None:
    r = c.put(f"/groups/{root}/attributes/{name}", json={"type": "H5T_STD_I32LE", "shape": [], "value": value})
    assert r.status_code == 201, r.text


def test_a_domain_made_again_shows_none_of_the_deleted_ones_versions(start: StartServer) -> None:
    srv = start()
    old = new_domain(srv.endpoint)
    attribute(old, old.get("/").json()["root"], "secret", 42)
    r = old.post("/versions", json={"message": "old"})
    assert r.status_code == 201, r.text
    assert old.put("/versions/tags/release", json={"version": "v1"}).status_code == 201
    # the objects kept: nothing reclaims the deleted domain's path (as after a crash)
    assert old.delete("/", params={"keep_root": 1}).status_code == 200

    again = on(old, srv.endpoint)
    assert again.put("/").status_code == 201
    assert again.get("/versions").json()["versions"] == []
    for ref in ("v1", "release", "~0"):
        r = Client(srv.endpoint, "test_user1", f"{old.domain}@{ref}").get("/")
        assert r.status_code == 404, (ref, r.status_code, r.text[:200])
    # its first version is v1 of its own
    root = again.get("/").json()["root"]
    attribute(again, root, "mine", 7)
    r = again.post("/versions", json={"message": "new"})
    assert r.status_code == 201, r.text
    v1 = Client(srv.endpoint, "test_user1", f"{old.domain}@{r.json()['id']}")
    names = {a["name"] for a in v1.get(f"/groups/{root}/attributes").json()["attributes"]}
    assert names == {"mine"}


def test_a_reclaim_running_late_leaves_the_new_domains_versions(start: StartServer, store_backing: Backing) -> None:
    a, b = start(), start()
    old = new_domain(a.endpoint)
    old_root = old.get("/").json()["root"]
    # their grids are deleted blindly: the reclaim runs for a while (S3's deletes are slower)
    grid, count = (GRID, 3) if store_backing.kind == "local" else (GRID // 10, 1)
    for n in range(count):
        body = {"type": "H5T_STD_I8LE", "shape": [grid], "link": {"id": old_root, "name": f"big{n}"},
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1]}}}
        assert old.post("/datasets", json=body).status_code == 201
    assert old.delete("/").status_code == 200

    again = on(old, b.endpoint)
    assert again.put("/").status_code == 201
    root = again.get("/").json()["root"]
    attribute(again, root, "mine", 7)
    r = again.post("/versions", json={"message": "new"})
    assert r.status_code == 201, r.text
    assert again.put("/versions/tags/release", json={"version": "v1"}).status_code == 201
    deleted = again.post("/groups").json()["id"]
    assert again.delete(f"/groups/{deleted}").status_code == 200
    assert again.get(f"/groups/{deleted}").status_code == 410

    raw = store_backing.raw()
    marker = object_key(old_root)  # the reclaim deletes the objects' documents last, then the path's state
    assert raw.read(marker) is not None, "the reclaim had ended before the domain was made again"
    deadline = time.monotonic() + 300
    while raw.read(marker) is not None:
        assert time.monotonic() < deadline, "the reclaim of the deleted domain did not end"
        time.sleep(0.2)
    time.sleep(1.0)  # its last steps (a few listings and deletes) after that one

    for c in (again, on(old, a.endpoint)):
        assert [v["id"] for v in c.get("/versions").json()["versions"]] == ["v1"]
        assert c.get("/versions/tags/release").status_code == 200
        assert c.get(f"/groups/{deleted}").status_code == 410
        v1 = Client(c.endpoint, "test_user1", f"{old.domain}@v1")
        assert v1.get(f"/groups/{root}/attributes/mine").json()["value"] == 7


def test_forks_racing_for_one_path_keep_the_winners_source_from_gc(start: StartServer, store_backing: Backing,
                                                                    tmp_path: Path) -> None:
    """Two forks of different versions race for one new path through two processes: the one
    that made the domain keeps its own source's chunks alive. (The loser's fork base replaced
    the winner's in most rounds; gc then deleted the winner's chunks once its source was
    forgotten, and the fork read fill.)"""
    a, b = start(), start()
    rounds: list[tuple[str, float]] = []
    for n in range(5):
        sources = []
        for value in (2.0 * n + 1, 2.0 * n + 2):  # chunks of their own: one blob each, per round
            c = new_domain(a.endpoint)
            write(c, make_dataset(c), value)
            assert c.post("/versions", json={"message": str(value)}).status_code == 201
            sources.append((c, value))
        path = f"{sources[0][0].domain[:-3]}-fork.h5"
        codes = [0, 0]
        barrier = threading.Barrier(2)

        def fork(i: int, path: str = path, codes: list[int] = codes, barrier: threading.Barrier = barrier,
                 sources: list[tuple[Client, float]] = sources) -> None:
            barrier.wait()
            forker = Client((a, b)[i].endpoint, "test_user1", path)
            codes[i] = forker.put("/", json={"from": f"{sources[i][0].domain}@v1"}).status_code

        racers = [threading.Thread(target=fork, args=(i,)) for i in range(2)]
        for t in racers:
            t.start()
        for t in racers:
            t.join()
        assert sorted(codes) == [201, 409], codes
        rounds.append((path, sources[codes.index(201)][1]))
        for c, _ in sources:  # the sources' versions forgotten: only the fork keeps its chunks
            assert c.delete("/versions/v1").status_code == 200
    env = clean_env(tmp_path, store_backing.env)
    done = run_h5lake("gc", *(store_backing.args or ["--data", str(store_backing.data)]), "--grace", "0", "--json",
                      cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["blobs_deleted"] == len(rounds)  # the losers' sources'
    for path, value in rounds:
        got = read(Client(a.endpoint, "test_user1", path), _dataset(a.endpoint, path))
        assert np.all(got == value), (path, value, got[:4])
