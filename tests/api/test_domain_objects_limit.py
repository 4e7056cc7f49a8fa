"""`GET /?getobjs=1` lists a domain's objects in ``domain_objs`` only up to
``--domain-objects-limit`` of them (HSDS: ``domain_req_max_objects_limit``); a larger domain's
answer leaves it out, and h5pyd then reads each object it uses with its own GET."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import h5pyd
import numpy as np
import pytest
import requests
from tests.support.server import USERS, Server, start_server

USER = "test_user1"
LIMIT = 4


@pytest.fixture(scope="module")
def small_limit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(Path(tmp_path_factory.mktemp("objlimit")), extra=["--domain-objects-limit", str(LIMIT)])
    try:
        yield srv
    finally:
        srv.stop()


def make(srv: Server, name: str, groups: int) -> str:
    """A domain of the root and ``groups`` groups under it, each with an attribute."""
    home = requests.put(srv.endpoint + "/", params={"domain": f"/home/{USER}"}, json={"folder": True},
                        auth=(USER, USERS[USER]), timeout=30)
    assert home.status_code in (201, 409), home.text
    domain = f"/home/{USER}/{name}.h5"
    with h5pyd.File(domain, "w", endpoint=srv.endpoint, username=USER, password=USERS[USER]) as f:
        for i in range(groups):
            g = f.create_group(f"g{i}")
            g.attrs["index"] = np.int32(i)
    return domain


def getobjs(srv: Server, domain: str) -> dict[str, object]:
    r = requests.get(srv.endpoint + "/", params={"domain": domain, "getobjs": 1}, auth=(USER, USERS[USER]), timeout=30)
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


def test_a_domain_at_the_limit_is_listed_whole(small_limit: Server) -> None:
    domain = make(small_limit, "at", LIMIT - 1)  # with the root: LIMIT objects
    body = getobjs(small_limit, domain)
    objs = body["domain_objs"]
    assert isinstance(objs, dict) and len(objs) == LIMIT
    assert body["root"] in objs
    assert sorted(objs[body["root"]]["links"]) == [f"g{i}" for i in range(LIMIT - 1)]


def test_a_larger_domain_leaves_domain_objs_out_and_h5pyd_reads_it_all(small_limit: Server) -> None:
    domain = make(small_limit, "over", LIMIT)  # LIMIT + 1 objects
    body = getobjs(small_limit, domain)
    assert "domain_objs" not in body
    assert isinstance(body["root"], str)  # the rest of the answer as before
    with h5pyd.File(domain, "r", endpoint=small_limit.endpoint, username=USER, password=USERS[USER]) as f:
        assert sorted(f.keys()) == [f"g{i}" for i in range(LIMIT)]
        assert [int(f[f"g{i}"].attrs["index"]) for i in range(LIMIT)] == list(range(LIMIT))


def test_a_limit_of_zero_never_lists(small_limit: Server, tmp_path: Path) -> None:
    srv = start_server(tmp_path, extra=["--domain-objects-limit", "0"])
    try:
        domain = make(srv, "none", 0)
        assert "domain_objs" not in getobjs(srv, domain)
    finally:
        srv.stop()


def test_a_listing_follows_every_change_between_opens(small_limit: Server) -> None:
    """Each open describes every object as it is stored now, though a process remembers the
    descriptions it gave (by the document's ETag): changes by a writer between two opens all
    show in the next listing."""
    domain = make(small_limit, "changes", 2)
    opts = {"endpoint": small_limit.endpoint, "username": USER, "password": USERS[USER]}
    for _ in range(2):  # remembered after the first
        with h5pyd.File(domain, "r", **opts) as f:
            assert f["g1"].attrs["index"] == 1 and sorted(f) == ["g0", "g1"]
    with h5pyd.File(domain, "a", **opts) as f:
        f["g1"].attrs["index"] = np.int32(41)
        f["g0"].attrs["note"] = "added"
        f.create_group("g2")
    body = getobjs(small_limit, domain)
    objs = body["domain_objs"]
    assert isinstance(objs, dict) and len(objs) == 4
    with h5pyd.File(domain, "r", **opts) as f:
        assert sorted(f) == ["g0", "g1", "g2"]
        assert f["g1"].attrs["index"] == 41 and f["g0"].attrs["note"] == "added"


def test_listed_objects_carry_their_id_and_leave_out_the_rest(small_limit: Server) -> None:
    """Each object of ``domain_objs`` carries its ``id`` (equal to its key), as HSDS's do: h5pyd
    0.24 opens a file in ``r`` mode from the root's entry and refuses one without ``id``
    ("Unexpected Error"). Root, domain and counts are left out (the reply's own, or those of the
    ``links`` and ``attributes`` shown); h5pyd reads the domain through it as through GETs."""
    domain = f"/home/{USER}/forms.h5"
    opts = {"endpoint": small_limit.endpoint, "username": USER, "password": USERS[USER]}
    with h5pyd.File(domain, "w", **opts) as f:
        f["t"] = np.dtype("<i2")
        d = f.create_dataset("d", data=np.arange(6.0), chunks=(3,))
        d.attrs["a"] = 1.5
        f.create_dataset("typed", shape=(2,), dtype=f["t"])
    objs = getobjs(small_limit, domain)["domain_objs"]
    assert isinstance(objs, dict) and len(objs) == 4
    for obj_id, obj in objs.items():
        assert obj.get("id") == obj_id, (obj_id, sorted(obj))
        assert not {"root", "domain", "linkCount", "attributeCount"} & set(obj), (obj_id, sorted(obj))
        assert "attributes" in obj
    root = getobjs(small_limit, domain)["root"]
    assert sorted(objs[root]["links"]) == ["d", "t", "typed"]
    with h5pyd.File(domain, "r", **opts) as f:
        assert sorted(f) == ["d", "t", "typed"]
        assert f["d"].shape == (6,) and f["d"].chunks == (3,) and f["d"].attrs["a"] == 1.5
        assert list(f["d"][:]) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert isinstance(f["t"], h5pyd.Datatype) and f["t"].dtype == np.dtype("<i2")
        assert f["typed"].dtype == np.dtype("<i2")


def test_a_listing_sees_what_another_process_wrote(small_limit: Server, tmp_path: Path) -> None:
    """A server that listed a domain (and remembers what it derived from each document, by
    ETag) lists it as another server on the same data left it: changed attributes, a group
    added under a listed group, a link removed."""
    domain = make(small_limit, "shared", 2)
    other = start_server(tmp_path / "other", data=small_limit.data, extra=["--domain-objects-limit", str(LIMIT)])
    try:
        mine = {"endpoint": small_limit.endpoint, "username": USER, "password": USERS[USER]}
        theirs = {"endpoint": other.endpoint, "username": USER, "password": USERS[USER]}
        for _ in range(2):  # remembered after the first
            with h5pyd.File(domain, "r", **mine) as f:
                assert sorted(f) == ["g0", "g1"] and f["g1"].attrs["index"] == 1
        with h5pyd.File(domain, "a", **theirs) as f:
            f["g1"].attrs["index"] = np.int32(7)
            f["g0"].create_group("inner").attrs["deep"] = np.int32(3)
        for _ in range(2):
            with h5pyd.File(domain, "r", **mine) as f:
                assert sorted(f) == ["g0", "g1"] and sorted(f["g0"]) == ["inner"]
                assert f["g1"].attrs["index"] == 7 and f["g0/inner"].attrs["deep"] == 3
        root = getobjs(other, domain)["root"]
        r = requests.delete(f"{other.endpoint}/groups/{root}/links/g1", params={"domain": domain},
                            auth=(USER, USERS[USER]), timeout=30)
        assert r.status_code == 200, r.text
        with h5pyd.File(domain, "a", **theirs) as f:
            f["g0/inner"].attrs["deep"] = np.int32(4)
        objs = getobjs(small_limit, domain)["domain_objs"]
        assert isinstance(objs, dict) and len(objs) == 3
        with h5pyd.File(domain, "r", **mine) as f:
            assert sorted(f) == ["g0"] and f["g0/inner"].attrs["deep"] == 4
    finally:
        other.stop()
