"""Two server processes on one store (a directory, or an S3 bucket on SeaweedFS) putting keys of
one map at once: nothing is lost, and racing puts of one key leave one whole value."""

from __future__ import annotations

import threading
import uuid

import numpy as np
from tests.conftest import Client
from tests.scale.conftest import StartServer

OCTET = {"Content-Type": "application/octet-stream"}
WRITERS = 6
ROUNDS = 8
PER_ROUND = 40
RACED = 8  # keys -1..-RACED: every writer puts one of them each round, its own whole value


def test_concurrent_puts_from_two_processes(start: StartServer) -> None:
    servers = [start(), start()]
    home = Client(servers[0].endpoint, "test_user1", "/home/test_user1")
    assert home.put("/", json={"folder": True}).status_code in (201, 409)
    first = Client(servers[0].endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    assert first.put("/").status_code == 201
    clients = [first, Client(servers[1].endpoint, "test_user1", first.domain)]
    # small buckets, so the race includes splits
    r = first.post("/maps", json={"key_type": "H5T_STD_I64LE", "value_type": {"class": "H5T_OPAQUE", "size": 64},
                                  "creationProperties": {"bucketBytes": 8192}})
    map_id = r.json()["id"]
    errors: list[str] = []

    def writer(w: int) -> None:
        client = clients[w % 2]
        for rnd in range(ROUNDS):
            keys = np.arange(PER_ROUND, dtype="<i8") + (w * ROUNDS + rnd) * PER_ROUND
            records = np.empty(PER_ROUND, dtype=[("k", "<i8"), ("v", "V64")])
            records["k"] = keys
            records["v"] = [bytes([w]) * 64] * PER_ROUND
            r = client.put(f"/maps/{map_id}/keys", data=records.tobytes(), headers=OCTET)
            if r.status_code != 200:
                errors.append(r.text)
            # and every writer races on the same keys -1..-RACED with its own whole value
            one = np.array([(-1 - rnd % RACED, bytes([100 + w]) * 64)], dtype=[("k", "<i8"), ("v", "V64")])
            r = client.put(f"/maps/{map_id}/keys", data=one.tobytes(), headers=OCTET)
            if r.status_code != 200:
                errors.append(r.text)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    total = WRITERS * ROUNDS * PER_ROUND
    for client in clients:  # every pair, seen through either process
        everything = np.arange(-RACED, total, dtype="<i8")
        n = len(everything)
        r = client.post(f"/maps/{map_id}/keys", data=everything.tobytes(),
                        headers={**OCTET, "Accept": "application/octet-stream"})
        found = np.frombuffer(r.content[:n], np.uint8)
        assert found.all(), f"{int((found == 0).sum())} keys lost"
        values = np.frombuffer(r.content[n:], np.uint8).reshape(n, 64)
        assert (values == values[:, :1]).all()  # no value is a mix of two writes
        owner = np.arange(total) // (ROUNDS * PER_ROUND)
        assert (values[RACED:, 0] == owner).all()
        assert set(values[:RACED, 0].tolist()) <= {100 + w for w in range(WRITERS)}
        stats = client.get(f"/maps/{map_id}", params={"verbose": 1}).json()["stats"]
        assert stats["pairCount"] == n and stats["bucketCount"] > 3
