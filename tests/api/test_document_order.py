"""The object document an attribute or link PUT or DELETE writes holds its entries in the order
they were added (a deleted one added again comes last), whatever the request (one entry, many
at once, through the fast path or not): the server serializes remembered documents from
remembered pieces (service/documents.py), and what it writes must be the whole document's
serialization. Read from the store directly."""

from __future__ import annotations

from typing import Any

import orjson
from tests.conftest import Client, RawStore

from h5lake.model.ids import object_key

SCALAR = {"class": "H5S_SCALAR"}


def _attr(i: int) -> dict[str, Any]:
    return {"type": "H5T_STD_I32LE", "shape": SCALAR, "value": i}


def _stored(raw_store: RawStore, obj_id: str) -> dict[str, Any]:
    data = raw_store.read(object_key(obj_id))
    assert data is not None
    return orjson.loads(data)  # type: ignore[no-any-return]


def test_attributes_and_links_are_stored_in_the_order_added(client: Client, raw_store: RawStore) -> None:
    root = str(client.get("/").json()["root"])
    r = client.post("/groups", json={"link": {"id": root, "name": "g"}})
    assert r.status_code == 201, r.text
    gid = r.json()["id"]
    attrs: list[str] = []
    links: list[str] = []

    def check() -> None:
        doc = _stored(raw_store, gid)
        assert list(doc.get("attributes", {})) == attrs
        assert list(doc.get("links", {})) == links

    for name in ("z0", "a0", "m0"):  # one at a time: the server remembers the document
        assert client.put(f"/groups/{gid}/attributes/{name}", json=_attr(1)).status_code == 201
        attrs.append(name)
        check()
    many = [f"n{(i * 7) % 23:02d}" for i in range(23)]  # not sorted, not hash order
    r = client.put(f"/groups/{gid}/attributes", json={"attributes": {n: _attr(i) for i, n in enumerate(many)}})
    assert r.status_code == 201, r.text
    attrs += many
    check()
    r = client.put(f"/groups/{gid}/attributes", json={"attributes": {"a0": _attr(2), "y1": _attr(3), "b1": _attr(4)}})
    assert r.status_code == 201, r.text
    attrs += ["y1", "b1"]  # a0 replaced in place
    check()
    assert client.delete(f"/groups/{gid}/attributes/z0").status_code == 200
    attrs.remove("z0")
    check()
    assert client.put(f"/groups/{gid}/attributes/z0", json=_attr(5)).status_code == 201
    attrs.append("z0")  # back, last
    check()

    for name in ("lz", "la"):
        assert client.put(f"/groups/{gid}/links/{name}", json={"h5path": f"/{name}"}).status_code == 201
        links.append(name)
        check()
    names = [f"k{(i * 5) % 17:02d}" for i in range(17)]
    r = client.put(f"/groups/{gid}/links", json={"links": {n: {"h5path": f"/{n}"} for n in names}})
    assert r.status_code == 201, r.text
    links += names
    check()
    assert client.delete(f"/groups/{gid}/links", params={"titles": "lz/k05"}).status_code == 200
    links.remove("lz")
    links.remove("k05")
    check()
    r = client.put(f"/groups/{gid}/links", json={"links": {"k05": {"h5path": "/x"}, "lz": {"h5path": "/y"}}})
    assert r.status_code == 201, r.text
    links += ["k05", "lz"]
    check()
    assert client.get(f"/groups/{gid}/attributes/a0").json()["value"] == 2
    assert client.get(f"/groups/{gid}/links/lz").json()["link"]["h5path"] == "/y"
