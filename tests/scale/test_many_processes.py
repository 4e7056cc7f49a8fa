"""Several identical server processes on one store: nothing lost, writes visible everywhere, one
winner per race.

Two independent ``h5lake serve`` processes on one store (the same ``--data`` directory, or the
same S3 bucket and prefix), each on its own port, and one ``--workers 2`` server, are hammered
by threads that alternate between the processes. The store is the only thing they share.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
from tests.conftest import Client
from tests.scale.conftest import StartServer
from tests.support.procgroup import group_pids, worker_pids
from tests.support.server import Server

pytestmark = pytest.mark.slow  # many server processes on one store: minutes, left to CI by -m "not slow"

THREADS = 8
ELEMENTS = 64  # all in one chunk
OCTET = {"Content-Type": "application/octet-stream"}


def new_domain(endpoint: str) -> Client:
    """A created domain in the user's home folder, as a client of ``endpoint``."""
    home = Client(endpoint, "test_user1", "/home/test_user1")
    r = home.put("/", json={"folder": True})
    assert r.status_code in (201, 409), r.text
    c = Client(endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    r = c.put("/")
    assert r.status_code == 201, r.text
    return c


def on(client: Client, endpoint: str) -> Client:
    """The same user and domain through another server process."""
    return Client(endpoint, "test_user1", client.domain)


def run_all(tasks: Sequence[Callable[[], None]], threads: int = THREADS) -> None:
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(t) for t in tasks]:
            future.result()  # re-raises a failed assertion of any task


def hammer(endpoints: Sequence[str]) -> None:
    """Concurrent writers of different elements of one chunk, of links in one group and of
    attributes on one object, each through one process and checked through another."""
    first = new_domain(endpoints[0])
    root = first.get("/").json()["root"]
    body = {"type": "H5T_STD_I32LE", "shape": [ELEMENTS],
            "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [ELEMENTS]}}}
    r = first.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    local = threading.local()

    def clients(k: int) -> tuple[Client, Client]:
        """(writer, reader) for task ``k``: different processes, when there are several."""
        if not hasattr(local, "by_endpoint"):
            local.by_endpoint = {ep: on(first, ep) for ep in endpoints}
        pair = local.by_endpoint
        return pair[endpoints[k % len(endpoints)]], pair[endpoints[(k + 1) % len(endpoints)]]

    def task(k: int) -> None:
        w, r = clients(k)
        value = np.array([1000 + k], "<i4").tobytes()
        got = w.put(f"/datasets/{did}/value", params={"select": f"[{k}:{k + 1}]"}, data=value, headers=OCTET)
        assert got.status_code == 200, got.text
        read = r.get(f"/datasets/{did}/value", params={"select": f"[{k}:{k + 1}]"}).json()["value"]
        assert read == [1000 + k], f"element {k} written through one process, read {read} through another"

        got = w.post("/groups", json={"link": {"id": root, "name": f"g{k}"}})
        assert got.status_code == 201, got.text
        gid = got.json()["id"]
        link = r.get(f"/groups/{root}/links/g{k}")
        assert link.status_code == 200 and link.json()["link"]["id"] == gid, link.text

        got = w.put(f"/groups/{root}/attributes/a{k}", json={"type": "H5T_STD_I32LE", "shape": [], "value": k})
        assert got.status_code == 201, got.text
        attr = r.get(f"/groups/{root}/attributes/a{k}")
        assert attr.status_code == 200 and attr.json()["value"] == k, attr.text

    run_all([lambda k=k: task(k) for k in range(ELEMENTS)])

    for ep in endpoints:  # every process sees every change
        c = on(first, ep)
        assert c.get(f"/datasets/{did}/value").json()["value"] == [1000 + k for k in range(ELEMENTS)]
        links = c.get(f"/groups/{root}/links").json()["links"]
        assert sorted(link["title"] for link in links) == sorted(f"g{k}" for k in range(ELEMENTS))
        attrs = c.get(f"/groups/{root}/attributes").json()["attributes"]
        assert sorted(a["name"] for a in attrs) == sorted(f"a{k}" for k in range(ELEMENTS))


def race(calls: Sequence[Callable[[], requests.Response]]) -> list[int]:
    """Run ``calls`` at the same moment (as near as threads allow); their status codes."""
    barrier = threading.Barrier(len(calls))
    out: list[int] = [0] * len(calls)

    def one(i: int) -> None:
        barrier.wait()
        out[i] = calls[i]().status_code

    run_all([lambda i=i: one(i) for i in range(len(calls))], threads=len(calls))
    return out


def exactly_one_wins(endpoints: Sequence[str], rounds: int = 4, racers: int = 6) -> None:
    first = new_domain(endpoints[0])
    root = first.get("/").json()["root"]
    sessions = [on(first, endpoints[i % len(endpoints)]) for i in range(racers)]
    for n in range(rounds):
        # One link name, a different target each.
        targets = [first.post("/groups").json()["id"] for _ in range(racers)]
        codes = race([lambda i=i, n=n, targets=targets: sessions[i].put(f"/groups/{root}/links/x{n}",
                                                                        json={"id": targets[i]})
                      for i in range(racers)])
        assert sorted(codes) == [201] + [409] * (racers - 1), codes
        winner = targets[codes.index(201)]
        for s in sessions[:2]:
            assert s.get(f"/groups/{root}/links/x{n}").json()["link"]["id"] == winner
        # An identical repeat is not a conflict.
        again = sessions[1].put(f"/groups/{root}/links/x{n}", json={"id": winner})
        assert again.status_code in (200, 201), again.text

        # One domain path.
        path = f"/home/test_user1/race-{uuid.uuid4().hex[:8]}.h5"
        codes = race([lambda i=i, path=path: Client(sessions[i].endpoint, "test_user1", path).put("/")
                      for i in range(racers)])
        assert sorted(codes) == [201] + [409] * (racers - 1), codes
        roots = {Client(ep, "test_user1", path).get("/").json()["root"] for ep in endpoints}
        assert len(roots) == 1


def test_two_processes_lose_nothing(pair: tuple[Server, Server]) -> None:
    a, b = pair
    hammer([a.endpoint, b.endpoint])


def test_two_processes_exactly_one_wins(pair: tuple[Server, Server]) -> None:
    a, b = pair
    exactly_one_wins([a.endpoint, b.endpoint])


def test_workers_share_one_port(start: StartServer) -> None:
    srv = start(extra=["--workers", "2"])
    assert len(worker_pids(srv.process.pid)) == 2
    endpoints = [srv.endpoint, srv.endpoint]
    hammer(endpoints)
    exactly_one_wins(endpoints, rounds=2)
    # the supervisor killed outright (SIGKILL, the OOM killer): its workers end with it, none
    # is left serving the port
    os.kill(srv.process.pid, signal.SIGKILL)
    srv.process.wait(timeout=10)
    deadline = time.monotonic() + 15  # a worker finishes what it was answering first
    while group_pids(srv.process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_pids(srv.process.pid) == []
    with pytest.raises(requests.ConnectionError):
        requests.get(srv.endpoint + "/about", timeout=5)
