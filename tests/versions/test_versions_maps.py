"""Versions include maps: a version reads the pairs a map had, a fork's map starts from them and
changes only its own copy (docs/versions.md, docs/maps.md)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Client

I64 = "H5T_STD_I64LE"
F64 = "H5T_IEEE_F64LE"


def _pairs(client: Client, map_id: str) -> dict[int, float]:
    r = client.get(f"/maps/{map_id}/keys", params={"domain": client.domain, "Limit": 100000, "IncludeValues": 1})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["cursor"] is None
    return dict(zip(body["keys"], body["values"], strict=True))


def _map_id(client: Client) -> str:
    r = client.get("/", params={"domain": client.domain, "getobjs": 1})
    assert r.status_code == 200, r.text
    ids = [i for i in r.json()["domain_objs"] if i.startswith("m-")]
    assert len(ids) == 1, ids
    return ids[0]


def test_versions_and_forks_keep_maps(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/maps", json={"key_type": I64, "value_type": F64, "link": {"id": root, "name": "m"},
                                   "creationProperties": {"bucketBytes": 4096}})
    assert r.status_code == 201, r.text
    map_id = r.json()["id"]
    first = {k: k / 2 for k in range(2000)}  # small buckets: the map splits into many
    assert client.put(f"/maps/{map_id}/keys", json={"keys": list(first), "values": list(first.values())}).status_code in (200, 201)
    assert client.post("/versions", json={"message": "one"}).status_code == 201

    assert client.put(f"/maps/{map_id}/keys", json={"keys": [1, 5000], "values": [-1.0, 9.0]}).status_code in (200, 201)
    assert client.delete(f"/maps/{map_id}/key/7").status_code == 200
    head = {**first, 1: -1.0, 5000: 9.0}
    del head[7]
    assert _pairs(client, map_id) == head

    old = Client(client.endpoint, "test_user1", client.domain + "@v1")
    assert _pairs(old, map_id) == first
    assert old.get(f"/maps/{map_id}/key/7").json()["value"] == 3.5
    assert old.put(f"/maps/{map_id}/key/7", json={"value": 0.0}).status_code == 405

    fork = Client(client.endpoint, "test_user1", client.domain.replace(".h5", "-mapfork.h5"))
    assert fork.put("/", json={"from": client.domain + "@v1"}).status_code == 201
    forked = _map_id(fork)
    assert forked != map_id
    assert _pairs(fork, forked) == first
    assert fork.put(f"/maps/{forked}/key/3", json={"value": 30.0}).status_code in (200, 201)
    assert fork.delete(f"/maps/{forked}/key/4").status_code == 200
    mine = {**first, 3: 30.0}
    del mine[4]
    assert _pairs(fork, forked) == mine
    # the source and its version are untouched by the fork's changes
    assert _pairs(old, map_id) == first
    assert _pairs(client, map_id) == head
