"""Write intents under races and crashes between processes (docs/storage.md, "Crashes and
races"); the randomized driver that looks for such races is dev/race_drive.py.

A write intent (``.h5lake/pending/``) names the chunks a write is about to store until they are
in the dataset's chunk catalog; reads of many chunks, shrinks and version commits trust the
catalog and the intents. Another process merges and deletes an intent it finds older than
``--catalog-stale-after`` as a dead process's: it must not do that to the intent of a write
still running in a live process, or the chunks that write stores afterwards are in neither.

A restore of a version is fenced against other processes' writes as a commit is; a tag and a
forget of one version racing are not both acknowledged.
"""

from __future__ import annotations

import base64
import http.client
import signal
import threading
import time
from urllib.parse import urlencode, urlsplit

import numpy as np
import pytest
from tests.conftest import Client, auth
from tests.scale.conftest import StartServer
from tests.scale.test_many_processes import new_domain, on
from tests.support.server import Server

pytestmark = pytest.mark.slow  # server processes killed, a slow client: left to CI by -m "not slow"

N = 16 * 1024 * 1024  # float32: 64 MiB, two streamed blocks of 32 MiB (the first noted when stored,
# the last with the intent, when the write ends)
CHUNK = 32 * 1024  # 512 chunks: a whole read skips chunks the catalog and intents do not name
OCTET = {"Content-Type": "application/octet-stream"}
QUICK = {"H5LAKE_CATALOG_STALE_AFTER": "1", "H5LAKE_CATALOG_RECOVER_EVERY": "0.2"}


def slow_put(c: Client, path: str, params: dict[str, str], body: bytes, first: int, pause: float) -> int:
    """PUT ``body``, its first ``first`` bytes, then (after ``pause`` s) the rest: a slow client."""
    url = urlsplit(c.endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    user, password = auth("test_user1")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    conn.putrequest("PUT", f"{path}?{urlencode({'domain': c.domain, **params})}")
    for name, value in (("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body))),
                        ("Authorization", f"Basic {token}")):
        conn.putheader(name, value)
    conn.endheaders()
    view = memoryview(body)
    conn.send(view[:first])
    time.sleep(pause)
    conn.send(view[first:])
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def test_a_long_write_keeps_its_intent_while_another_process_recovers(start: StartServer) -> None:
    # Both find intents stale after 1 s (the writer says it is alive every 0.25 s), and the
    # client pauses 3 s in the middle of the body.
    writer = start(env=QUICK)
    other = start(env=QUICK)
    c = new_domain(writer.endpoint)
    root = c.get("/").json()["root"]
    body = {"type": "H5T_IEEE_F32LE", "shape": [N], "link": {"id": root, "name": "x"},
            "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [CHUNK]}}}
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    values = np.arange(N, dtype="<f4")
    status = slow_put(c, f"/datasets/{did}/value", {"select": f"[0:{N}]"}, values.tobytes(),
                      first=40 * 1024 * 1024, pause=3.0)
    assert status == 200
    writer.stop(signal.SIGKILL)  # before its catalog flush (half a second after the write)
    # one element of each chunk: a read of more than 256 chunks reads only those the catalog
    # and the pending intents name (docs/security.md, "Sparse reads")
    got = on(c, other.endpoint).get(f"/datasets/{did}/value", params={"select": f"[0:{N}:{CHUNK}]"},
                                    headers={"Accept": "application/octet-stream"})
    assert got.status_code == 200
    read = np.frombuffer(got.content, "<f4")
    missing = np.flatnonzero(read != values[::CHUNK])
    assert missing.size == 0, f"{missing.size} acknowledged chunks read as fill, from chunk {missing[0]}"


def test_a_write_racing_a_restore_from_another_process_is_wholly_in_or_out(pair: tuple[Server, Server]) -> None:
    """A restore (``force``) puts the version's chunks back; a write of every chunk sent
    through another process while it runs lands wholly before it (the version's values) or
    wholly after (the write's). The restore held back only its own process's changes, so the
    write's chunks and the restore's interleaved: most rounds ended half one, half the other."""
    n, chunk = 1024 * 1024, 1024  # 1024 chunks for the restore to put back
    a, b = pair
    c = new_domain(a.endpoint)
    root = c.get("/").json()["root"]
    body = {"type": "H5T_IEEE_F32LE", "shape": [n], "link": {"id": root, "name": "x"},
            "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [chunk]}}}
    did = c.post("/datasets", json=body).json()["id"]
    other = on(c, b.endpoint)

    def write(client: Client, value: float) -> None:
        r = client.put(f"/datasets/{did}/value", data=np.full(n, value, "<f4").tobytes(), headers=OCTET)
        assert r.status_code == 200, r.text

    write(c, 1.0)
    assert c.post("/versions", json={"message": "ones"}).status_code == 201
    for value in (2.0, 3.0, 4.0):
        write(c, 100.0 + value)  # every chunk differs from the version's: all are put back
        codes: list[int] = []
        restoring = threading.Thread(
            target=lambda codes=codes: codes.append(c.post("/versions/v1/restore", json={"force": True}).status_code))
        restoring.start()
        time.sleep(0.1)  # the restore under way
        write(other, value)
        restoring.join()
        assert codes == [200]
        got = c.get(f"/datasets/{did}/value", params={"select": f"[0:{n}:{chunk}]"},
                    headers={"Accept": "application/octet-stream"})
        seen = set(np.frombuffer(got.content, "<f4").tolist())
        assert seen in ({1.0}, {value}), f"a write racing a restore left {sorted(seen)} (chunk by chunk)"


def test_a_tag_and_a_forget_of_one_version_racing_are_not_both_acknowledged(pair: tuple[Server, Server]) -> None:
    """``DELETE /versions/{id}`` is refused while a tag names the version; a tag made through
    another process at the same moment must not slip past that check. Both were acknowledged
    in most rounds: the tag then named a forgotten version (404 through it, chunks left to gc)."""
    a, b = pair
    c = new_domain(a.endpoint)
    other = on(c, b.endpoint)
    for n in range(10):
        r = c.post("/versions", json={"message": str(n)})
        assert r.status_code == 201, r.text
        vid = r.json()["id"]
        codes: dict[str, int] = {}
        barrier = threading.Barrier(2)

        def tag(n: int = n, vid: str = vid, codes: dict[str, int] = codes, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            codes["tag"] = c.put(f"/versions/tags/t{n}", json={"version": vid}).status_code

        def forget(vid: str = vid, codes: dict[str, int] = codes, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            codes["forget"] = other.delete(f"/versions/{vid}").status_code

        racers = [threading.Thread(target=f) for f in (tag, forget)]
        for t in racers:
            t.start()
        for t in racers:
            t.join()
        assert codes["tag"] in (201, 404) and codes["forget"] in (200, 409), codes
        assert not (codes["tag"] == 201 and codes["forget"] == 200), f"round {n}: both acknowledged"
        through_tag = Client(a.endpoint, "test_user1", f"{c.domain}@t{n}").get("/")
        assert through_tag.status_code == (200 if codes["tag"] == 201 else 404), (codes, through_tag.text[:200])
        listed = {v["id"] for v in c.get("/versions").json()["versions"]}
        assert (vid in listed) == (codes["forget"] != 200), (codes, listed)
