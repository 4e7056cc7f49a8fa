"""Durable small writes from many clients at once share their fsyncs (the local store's folder
fsync is one per batch of concurrent renames, not one per put) and still acknowledge nothing
before it is durable: the server's whole process group is killed (SIGKILL) in the middle of a
burst of concurrent attribute PUTs, link PUTs and group creations, restarted on the same store,
and every write it acknowledged is there.

A write that was not acknowledged may or may not be there; what matters is that the answer
"201 Created" is never given for a write a crash can take back.
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain, on

pytestmark = pytest.mark.slow  # servers killed and restarted; about 15 s, left to CI by -m "not slow"

WRITERS = 24
KILL_AFTER = 150  # acknowledged writes before the kill (with more under way)
PER_WRITER = 400  # far more than a writer gets through before the kill


def test_sigkill_during_concurrent_small_writes_keeps_every_acknowledged_write(start: StartServer) -> None:
    srv = start()
    c = new_domain(srv.endpoint)
    root = c.get("/").json()["root"]
    groups = []
    for w in range(WRITERS):  # one group per writer: no writer waits on another's document
        r = c.post("/groups", json={"link": {"id": root, "name": f"w{w}"}})
        assert r.status_code == 201, r.text
        groups.append(r.json()["id"])
    acked: list[tuple[str, int, int, str]] = []  # (kind, writer, i, created id)
    lock = threading.Lock()
    enough = threading.Event()
    killed = threading.Event()

    def writer(w: int) -> None:
        s = on(c, srv.endpoint)
        gid = groups[w]
        for i in range(PER_WRITER):
            kind = ("attr", "link", "group")[i % 3]
            try:
                if kind == "attr":
                    r = s.put(f"/groups/{gid}/attributes/a{i}", json={"type": "H5T_STD_I32LE", "shape": [], "value": i})
                elif kind == "link":
                    r = s.put(f"/groups/{gid}/links/soft{i}", json={"h5path": f"/target/{w}/{i}"})
                else:
                    r = s.post("/groups", json={"link": {"id": gid, "name": f"g{i}"}})
            except requests.RequestException:  # the server was killed under this request
                assert killed.is_set()
                return
            if killed.is_set():
                return  # an answer racing the kill: it may still count, but need not
            assert r.status_code == 201, r.text
            with lock:
                acked.append((kind, w, i, r.json()["id"] if kind == "group" else ""))
                if len(acked) >= KILL_AFTER:
                    enough.set()

    with ThreadPoolExecutor(WRITERS) as pool:
        futures = [pool.submit(writer, w) for w in range(WRITERS)]
        assert enough.wait(120), "no writes acknowledged"
        with lock:  # every write acknowledged up to the kill is checked, none after it
            killed.set()
            srv.stop(signal.SIGKILL)
            checked = list(acked)
        for f in futures:
            f.result()
    assert len(checked) < WRITERS * PER_WRITER, "every write finished before the kill: nothing was cut off"

    again = start()
    c2 = on(c, again.endpoint)
    for w, gid in enumerate(groups):
        attrs = c2.get(f"/groups/{gid}/attributes", params={"IncludeData": 1, "Limit": 10000}).json()["attributes"]
        values = {a["name"]: a["value"] for a in attrs}
        links = {link["title"]: link for link in c2.get(f"/groups/{gid}/links", params={"Limit": 10000}).json()["links"]}
        for kind, writer_no, i, created in checked:
            if writer_no != w:
                continue
            if kind == "attr":
                assert values.get(f"a{i}") == i, f"acknowledged attribute a{i} of writer {w} lost"
            elif kind == "link":
                assert links.get(f"soft{i}", {}).get("h5path") == f"/target/{w}/{i}", f"acknowledged link soft{i} of writer {w} lost"
            else:
                assert links.get(f"g{i}", {}).get("id") == created, f"acknowledged link to group g{i} of writer {w} lost"
                r = c2.get(f"/groups/{created}")
                assert r.status_code == 200, f"acknowledged group {created} of writer {w} lost: {r.status_code}"
