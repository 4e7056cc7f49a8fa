"""The root ``zarr.json`` kept whole under the domain's metadata change token (docs/zarr.md,
"Opening a domain"): an ETag and 304s, a new answer after every kind of metadata change made
by this process or another, and the copy kept in the store used by a process that did not make
it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5pyd
import numpy as np
import pytest
import requests

from tests.conftest import auth, make_backing
from tests.support.server import Server
from tests.zarr.conftest import USER, Zarr, new_domain


def _h5pyd(z: Zarr, endpoint: str | None = None) -> Any:
    user, password = auth(USER)
    return h5pyd.File(z.domain, "a", endpoint=endpoint or z.endpoint, username=user, password=password)


def _root(z: Zarr, etag: str | None = None) -> requests.Response:
    r = z.get("zarr.json", headers={"If-None-Match": etag} if etag else {})
    assert r.status_code in (200, 304), r.text
    return r


def _flat(r: requests.Response) -> dict[str, Any]:
    return dict(r.json()["consolidated_metadata"]["metadata"])


def _seed(z: Zarr, endpoint: str | None = None) -> None:
    with _h5pyd(z, endpoint) as f:
        g = f.create_group("g")
        g.create_dataset("a", shape=(4,), maxshape=(None,), chunks=(2,), dtype="i4")
        g.create_dataset("b", shape=(3,), dtype="f8")


# each change made through h5pyd, and what the root's consolidated metadata shows after it
def _delete(f: Any, path: str) -> None:
    """A DELETE through the REST API: h5pyd 1.0's ``del`` of an attribute or link left it in place."""
    r = requests.delete(f"{_ENDPOINT[0]}/{path}", params={"domain": f.filename}, auth=auth(USER), timeout=30)
    assert r.status_code == 200, r.text


CHANGES: list[tuple[str, Callable[[Any], None], Callable[[dict[str, Any], dict[str, Any]], bool]]] = [
    ("group attribute", lambda f: f["g"].attrs.__setitem__("units", "m"),
     lambda root, flat: flat["g"]["attributes"].get("units") == "m"),
    ("root attribute", lambda f: f.attrs.__setitem__("title", "t"),
     lambda root, flat: root["attributes"].get("title") == "t"),
    ("dataset attribute deleted", lambda f: _delete(f, f"datasets/{f['g/a'].id.id}/attributes/x"),
     lambda root, flat: "x" not in flat["g/a"]["attributes"]),
    ("resize", lambda f: f["g/a"].resize((9,)),
     lambda root, flat: flat["g/a"]["shape"] == [9]),
    ("group made", lambda f: f.create_group("h"),
     lambda root, flat: flat.get("h", {}).get("node_type") == "group"),
    ("dataset made", lambda f: f["h"].create_dataset("c", data=np.arange(3, dtype="u2")),
     lambda root, flat: flat.get("h/c", {}).get("data_type") == "uint16"),
    ("hard link", lambda f: f["h"].__setitem__("b2", f["g/b"]),
     lambda root, flat: flat.get("h/b2", {}).get("shape") == [3]),
    ("link deleted", lambda f: _delete(f, f"groups/{f['h'].id.id}/links/b2"),
     lambda root, flat: "h/b2" not in flat),
    ("committed type", lambda f: f.__setitem__("t", np.dtype("<i8")),
     lambda root, flat: "t" in root["attributes"].get("_h5lake_omitted", {})),
    ("dataset deleted", lambda f: _delete(f, f"datasets/{f['g/b'].id.id}"),
     lambda root, flat: "g/b" not in flat and flat["g"]["attributes"]["_h5lake_omitted"]["b"] == "dangling link"),
]


_ENDPOINT = [""]  # where the changes are made


def _follows_every_change(z: Zarr, endpoint: str | None) -> None:
    """Each change (made through ``endpoint``'s process) is in the next root answer, under a new ETag."""
    _ENDPOINT[0] = endpoint or z.endpoint
    with _h5pyd(z, endpoint) as f:
        f["g/a"].attrs["x"] = 1
    first = _root(z)
    etag = first.headers["ETag"]
    assert _root(z, etag).status_code == 304  # kept: unchanged
    for name, change, shown in CHANGES:
        with _h5pyd(z, endpoint) as f:
            change(f)
        r = _root(z, etag)
        assert r.status_code == 200, f"{name}: the old answer was still current"
        assert r.headers["ETag"] != etag, name
        assert shown(r.json(), _flat(r)), f"{name}: not in the root's consolidated metadata"
        etag = r.headers["ETag"]
        assert _root(z, etag).status_code == 304, name


def test_root_answer_is_kept_and_follows_every_metadata_change(zserver: Server) -> None:
    z = new_domain(zserver)
    _seed(z)
    _follows_every_change(z, None)


@pytest.mark.slow
def test_root_answer_follows_changes_made_by_another_process(zbacking: Any, zserver: Server, tmp_path: Path) -> None:
    """The root is read through this server, the changes are made through a second one."""
    other = zbacking.start(tmp_path / "second")
    try:
        z = new_domain(zserver)
        _seed(z, other.endpoint)
        _follows_every_change(z, other.endpoint)
    finally:
        other.stop()


@pytest.mark.slow
def test_a_process_uses_the_root_answer_another_kept(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The copy kept in the store is served by a process that never made it, and only under
    the current token: after a change it is made again."""
    backing = make_backing("local", request, tmp_path)
    first = backing.start(tmp_path / "first")
    try:
        r = requests.put(first.endpoint + "/", params={"domain": f"/home/{USER}"}, json={"folder": True}, auth=auth(USER), timeout=30)
        assert r.status_code in (201, 409), r.text
        z = new_domain(first)
        _seed(z)
        made = _root(z)
        kept = [k for k in backing.raw().list_keys(".h5lake/zarr/") if k.endswith(".all.bin")]
        assert len(kept) == 1, kept
        path = backing.data / kept[0]
        header, _, body = path.read_bytes().partition(b"\n")
        assert body == made.content
        marked = body.replace(b'"node_type":"group"', b'"node_type":"group","_kept":1', 1)
        path.write_bytes(header + b"\n" + marked)  # what a process reading it serves, told apart
    finally:
        first.stop()
    second = backing.start(tmp_path / "second")
    try:
        there = Zarr(second.endpoint, z.domain)
        got = _root(there)
        assert got.content == marked and got.headers["ETag"] == made.headers["ETag"]
        with _h5pyd(there) as f:
            f["g"].attrs["n"] = 2
        fresh = _root(there)
        assert b"_kept" not in fresh.content and _flat(fresh)["g"]["attributes"]["n"] == 2
    finally:
        second.stop()


def test_an_object_acl_hides_the_object_from_that_user_alone(zserver: Server) -> None:
    """A member whose own ACL denies the caller is left out of that caller's consolidated
    metadata, with the reason, and shown to the others (the answer then depends on the caller)."""
    z = new_domain(zserver)
    _seed(z)
    with _h5pyd(z) as f:
        hidden = f["g/b"].id.id
    owner = auth(USER)
    params = {"domain": z.domain}
    assert requests.put(f"{z.endpoint}/acls/default", params=params, json={"read": True}, auth=owner, timeout=30).status_code == 201
    r = requests.put(f"{z.endpoint}/datasets/{hidden}/acls/test_user2", params=params, json={"read": False}, auth=owner, timeout=30)
    assert r.status_code == 201, r.text
    theirs = requests.get(f"{z.url}/zarr.json", auth=auth("test_user2"), timeout=60)
    assert theirs.status_code == 200, theirs.text
    assert "g/b" not in _flat(theirs) and "g/a" in _flat(theirs)
    assert theirs.json()["consolidated_metadata"]["metadata"]["g"]["attributes"]["_h5lake_omitted"]["b"] == "not readable by this user"
    mine = _root(z)
    assert "g/b" in _flat(mine) and mine.headers["ETag"] != theirs.headers["ETag"]
