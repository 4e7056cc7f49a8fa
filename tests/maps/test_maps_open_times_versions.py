"""Gaps closed between seed 002 (section 1.6) and what was built: a map opened through its link
from a group handle (``group["name"]``), pair writes moving the map's ``lastModified``, a map's
``verbose`` stats read through a version, links to maps copied by a client, and batch reads of
buckets read in part (the indexed leaves of docs/maps.md, "Storage")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import h5pyd
import numpy as np
import pytest
from tests.conftest import USERS, Client

from h5lake.client import Map

OCTET = "application/octet-stream"


@pytest.fixture
def h5file(endpoint: str, domain: str, home_folder: str) -> Iterator[Any]:
    f = h5pyd.File(domain, "w", endpoint=endpoint, username="test_user1", password=USERS["test_user1"])
    yield f
    f.close()


def _reopen(endpoint: str, domain: str, mode: str = "r") -> Any:
    return h5pyd.File(domain, mode, endpoint=endpoint, username="test_user1", password=USERS["test_user1"])


def test_a_map_opens_through_its_link_from_a_group(h5file: Any, endpoint: str, domain: str) -> None:
    g = h5file.create_group("g")
    made = Map.create(g, "ids", key_dtype="i8", value_dtype="f8")
    made[7] = 0.5
    # the file that made it sees the link at once
    assert "ids" in g and list(g) == ["ids"]
    assert isinstance(g["ids"], Map) and g["ids"].id == made.id
    m = Map(g["ids"])
    assert m.id == made.id and m[7] == 0.5
    m[8] = 1.5  # a map opened that way writes too
    assert made[8] == 1.5
    with _reopen(endpoint, domain) as f:
        assert Map(f["g"]["ids"]).id == made.id
        assert f["g/ids"].id == made.id and f["/g/ids"][7] == 0.5
        assert dict(f["g"].items())["ids"].id == made.id
        assert f[made.id].id == made.id and f["g"][made.id][8] == 1.5  # by id, as the seed opens a map
        with pytest.raises(KeyError):
            f["m-00000000-00000000-0000-000000-000000"]
        ro = Map(f["g"]["ids"])
        with pytest.raises(OSError):
            ro[9] = 2.0  # opened from a read-only file
        with pytest.raises(KeyError):
            f["g"]["nothing"]  # other names are still h5pyd's
        assert isinstance(f["g"], h5pyd.Group)
        # what a map is, asked as h5pyd asks it of any link; other names answer as before
        assert f["g"].get("ids", getclass=True) is Map
        assert f.get("g", getclass=True) is h5pyd.Group and f["g"].get("none", getclass=True) is None
        assert isinstance(f["g"].get("ids", getlink=True), h5pyd.SoftLink) and f["g"].get("ids").id == made.id
    with pytest.raises(TypeError):
        Map(m, "ids")
    named_like_an_id = Map.create(h5file, "m-ids", key_dtype="i2", value_dtype="i2")
    assert h5file["m-ids"].id == named_like_an_id.id  # a link name, though it starts as a map id does


def test_a_copied_link_to_a_map_is_a_link_to_the_map(client: Client) -> None:
    endpoint, domain = client.endpoint, client.domain
    with _reopen(endpoint, domain, "a") as h5file:
        m = Map.create(h5file, "m", key_dtype="i4", value_dtype="i4")
        m[1] = 10
        shown = h5file.get("m", getlink=True)
        assert isinstance(shown, h5pyd.SoftLink) and shown.path == f"/.maps/{m.id}"
        h5file["alias"] = shown  # what a client copying the link it was shown writes
    with _reopen(endpoint, domain) as f:
        assert f["alias"].id == m.id and f["alias"][1] == 10
    root = client.get("/").json()["root"]
    link = client.get(f"/groups/{root}/links/alias").json()["link"]
    assert link["map_id"] == m.id and link["collection"] == "maps"
    # a soft link to /.maps/ with something else than a map id stays a plain soft link
    r = client.put(f"/groups/{root}/links/plain", json={"h5path": "/.maps/nothing"})
    assert r.status_code == 201, r.text
    assert client.get(f"/groups/{root}/links/plain").json()["link"]["h5path"] == "/.maps/nothing"


def test_pair_writes_move_last_modified(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/maps", json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE",
                                   "link": {"id": root, "name": "m"}})
    assert r.status_code == 201, r.text
    m = r.json()["id"]

    def stamp() -> float:
        return float(client.get(f"/maps/{m}").json()["lastModified"])

    created = stamp()
    steps = [
        lambda: client.put(f"/maps/{m}/key/1", json={"value": 1.0}),
        lambda: client.put(f"/maps/{m}/key/1", json={"value": 2.0}),  # a replaced value
        lambda: client.put(f"/maps/{m}/keys", json={"keys": [2, 3], "values": [2.0, 3.0]}),
        lambda: client.put(f"/maps/{m}/keys", data=np.array([(4, 4.0)], dtype=[("k", "<i8"), ("v", "<f8")]).tobytes(),
                           headers={"Content-Type": OCTET}),
        lambda: client.delete(f"/maps/{m}/key/1"),
        lambda: client.delete(f"/maps/{m}/keys", json=[2, 99]),
    ]
    last = created
    for step in steps:
        time.sleep(0.02)
        r = step()
        assert r.status_code in (200, 201), r.text
        now = stamp()
        assert now > last, r.request.method
        last = now
    time.sleep(0.02)
    assert client.delete(f"/maps/{m}/keys", json=[98, 99]).json()["deleted"] == 0  # changes nothing
    assert client.request("HEAD", f"/maps/{m}/key/3").status_code == 200
    assert client.post(f"/maps/{m}/keys", json=[3]).status_code == 200  # reads change nothing
    assert stamp() == last
    assert client.get(f"/maps/{m}").json()["created"] == created


def test_verbose_stats_of_a_map_read_through_a_version(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/maps", json={"key_type": "H5T_STD_I32LE", "value_type": "H5T_STD_I64LE",
                                   "creationProperties": {"bucketBytes": 4096}, "link": {"id": root, "name": "m"}})
    m = r.json()["id"]
    keys = np.arange(2000, dtype="<i4")
    records = np.empty(len(keys), dtype=[("k", "<i4"), ("v", "<i8")])
    records["k"], records["v"] = keys, keys * 3
    assert client.put(f"/maps/{m}/keys", data=records.tobytes(), headers={"Content-Type": OCTET}).status_code == 200
    v1_stats = client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]
    assert v1_stats["pairCount"] == 2000 and v1_stats["bucketCount"] > 3  # split into several buckets
    assert client.post("/versions", json={"message": "v1"}).status_code == 201
    # the head changes afterwards: more pairs, then fewer
    more = records.copy()
    more["k"] += 5000
    client.put(f"/maps/{m}/keys", data=more.tobytes(), headers={"Content-Type": OCTET})
    client.delete(f"/maps/{m}/keys", json=list(range(500)))
    head = client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]
    assert head["pairCount"] == 3500
    versioned = Client(client.endpoint, "test_user1", client.domain + "@v1")
    got = versioned.get(f"/maps/{m}", params={"verbose": 1})
    assert got.status_code == 200, got.text
    assert got.json()["stats"] == v1_stats
    assert versioned.post(f"/maps/{m}/keys", json=[0, 499, 5000]).json()["found"] == [True, True, False]
    # after the map is deleted at the head, the version still has it whole
    assert client.delete(f"/maps/{m}").status_code == 200
    assert versioned.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"] == v1_stats


def test_batch_reads_of_large_buckets_read_in_part(client: Client) -> None:
    """Buckets larger than a first read (64 KiB) are read in part: the key section, kept by the
    server, then the blocks wanted; the answers stay right while buckets change and split."""
    root = client.get("/").json()["root"]
    r = client.post("/maps", json={"key_type": {"class": "H5T_OPAQUE", "size": 16},
                                   "value_type": {"class": "H5T_OPAQUE", "size": 300},
                                   "creationProperties": {"bucketBytes": 1 << 20, "filters": [{"class": "H5Z_FILTER_DEFLATE", "level": 1}]},
                                   "link": {"id": root, "name": "m"}})
    assert r.status_code == 201, r.text
    m = r.json()["id"]
    rng = np.random.default_rng(3)
    n = 3000
    keys = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    values = np.repeat(rng.integers(0, 4, (n, 1), dtype=np.uint8), 300, axis=1)  # compressible
    values[: n // 2] = rng.integers(0, 256, (n // 2, 300), dtype=np.uint8)  # and not
    model = {bytes(k): bytes(v) for k, v in zip(keys, values)}

    def put(ks: np.ndarray[Any, Any], vs: np.ndarray[Any, Any]) -> None:
        rec = np.empty(len(ks), dtype=[("k", "V16"), ("v", "V300")])
        rec["k"] = ks.view("V16").ravel()
        rec["v"] = vs.view("V300").ravel()
        assert client.put(f"/maps/{m}/keys", data=rec.tobytes(), headers={"Content-Type": OCTET}).status_code == 200
        model.update({bytes(k): bytes(v) for k, v in zip(ks, vs)})

    def check() -> None:
        absent = rng.integers(0, 256, (50, 16), dtype=np.uint8)
        probe = np.concatenate([keys[rng.integers(0, len(keys), 400)], absent])
        reply = client.post(f"/maps/{m}/keys", data=probe.tobytes(),
                            headers={"Content-Type": OCTET, "Accept": OCTET})
        assert reply.status_code == 200, reply.text
        found = np.frombuffer(reply.content[: len(probe)], dtype=np.uint8).astype(bool)
        got = np.frombuffer(reply.content[len(probe) :], dtype="V300")
        for k, f, v in zip(probe, found, got):
            want = model.get(bytes(k))
            assert f == (want is not None)
            assert bytes(v) == (want if want is not None else bytes(300))

    put(keys, values)
    assert client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]["bucketCount"] == 1
    check()
    check()  # the server now holds the key section
    values2 = values[::-1].copy()
    put(keys[:1000], values2[:1000])  # the same bucket, rewritten: a new generation
    check()
    extra = rng.integers(0, 256, (2000, 16), dtype=np.uint8)
    put(extra, np.ones((2000, 300), dtype=np.uint8))  # past 1 MiB: the bucket splits
    keys = np.concatenate([keys, extra])
    assert client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]["bucketCount"] > 1
    check()
    single = client.get(f"/maps/{m}/keys", params={"Limit": 100000, "IncludeValues": 1}, headers={"Accept": OCTET})
    records = np.frombuffer(single.content, dtype=[("k", "V16"), ("v", "V300")])
    assert {bytes(k): bytes(v) for k, v in zip(records["k"], records["v"])} == model


def test_batch_reads_across_many_buckets(client: Client) -> None:
    """A batch read of many keys of a map split many times (routed through a table of its
    leaves) finds exactly the keys there, before and after more splits."""
    root = client.get("/").json()["root"]
    r = client.post("/maps", json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_STD_I64LE",
                                   "creationProperties": {"bucketBytes": 4096}, "link": {"id": root, "name": "m"}})
    m = r.json()["id"]
    rng = np.random.default_rng(11)
    present: set[int] = set()
    for _ in range(2):
        keys = rng.integers(-(10**9), 10**9, 15_000).astype("<i8")
        records = np.empty(len(keys), dtype=[("k", "<i8"), ("v", "<i8")])
        records["k"], records["v"] = keys, keys * 7
        assert client.put(f"/maps/{m}/keys", data=records.tobytes(), headers={"Content-Type": OCTET}).status_code == 200
        present |= set(keys.tolist())
        assert client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]["bucketCount"] > 100
        probe = np.concatenate([rng.choice(np.array(sorted(present), dtype="<i8"), 3000),
                                rng.integers(-(10**9), 10**9, 2000).astype("<i8")])
        reply = client.post(f"/maps/{m}/keys", data=probe.tobytes(), headers={"Content-Type": OCTET, "Accept": OCTET})
        found = np.frombuffer(reply.content[: len(probe)], dtype=np.uint8).astype(bool)
        values = np.frombuffer(reply.content[len(probe) :], dtype="<i8")
        assert found.tolist() == [int(k) in present for k in probe]
        assert (values[found] == probe[found] * 7).all() and not values[~found].any()
