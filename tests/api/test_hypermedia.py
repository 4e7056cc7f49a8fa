"""Hypermedia, headers and CORS over plain HTTP: every resource response carries the hrefs HSDS 1.0
gives it, each of them answers 200 when followed, and the URLs follow a proxy's forwarded headers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import requests
from tests.conftest import Client, auth
from tests.support.server import Server, start_server

pytestmark = pytest.mark.one_backend  # hrefs, headers and CORS of the HTTP edge, the same on every store


def rels(body: dict) -> list[str]:
    return [h["rel"] for h in body["hrefs"]]


def href(body: dict, rel: str) -> str:
    found = [h["href"] for h in body["hrefs"] if h["rel"] == rel]
    assert len(found) == 1, (rel, body["hrefs"])
    return found[0]


def follow_all(c: Client, body: dict) -> None:
    """GET every href of ``body`` as it is: each must answer 200 on this server."""
    for h in body["hrefs"]:
        assert h["href"].startswith(c.endpoint + "/"), h
        r = c.session.get(h["href"], timeout=60)
        assert r.status_code == 200, (h, r.status_code, r.text[:200])


@pytest.fixture
def tree(client: Client) -> dict[str, str]:
    """A root with a group, a small and a large dataset, a committed type, links and attributes."""
    root = client.get("/").json()["root"]
    ids = {"root": root}
    g = client.post("/groups", json={"link": {"id": root, "name": "g1"}})
    assert g.status_code == 201, g.text
    ids["group"] = g.json()["id"]
    for name, shape in (("small", [4, 5]), ("large", [40, 50])):
        r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": shape})
        assert r.status_code == 201, r.text
        ids[name] = r.json()["id"]
        assert client.put(f"/groups/{root}/links/{name}", json={"id": ids[name]}).status_code == 201
    t = client.post("/datatypes", json={"type": "H5T_IEEE_F32LE"})
    assert t.status_code == 201, t.text
    ids["type"] = t.json()["id"]
    assert client.put(f"/groups/{root}/links/t", json={"id": ids["type"]}).status_code == 201
    assert client.put(f"/groups/{root}/links/soft", json={"h5path": "/g1"}).status_code == 201
    attr = {"type": "H5T_STD_I32LE", "shape": [2], "value": [1, 2]}
    for owner in (f"/groups/{root}", f"/datasets/{ids['small']}", f"/datatypes/{ids['type']}"):
        assert client.put(owner + "/attributes/a b%c", json=attr).status_code == 201
    value = np.arange(20, dtype="<i4").reshape(4, 5)
    assert client.put(f"/datasets/{ids['small']}/value", json={"value": value.tolist()}).status_code == 200
    return ids


def test_domain_hrefs(client: Client, tree: dict[str, str]) -> None:
    body = client.get("/").json()
    assert rels(body) == ["self", "database", "groupbase", "typebase", "root", "acls", "parent"]
    assert href(body, "root").split("?")[0].endswith(f"/groups/{tree['root']}")
    assert parse_qs(urlsplit(href(body, "self")).query)["domain"] == [client.domain]
    assert parse_qs(urlsplit(href(body, "parent")).query)["domain"] == [client.domain.rsplit("/", 1)[0]]
    follow_all(client, body)


def test_folder_and_domain_list_hrefs(client: Client, tree: dict[str, str]) -> None:
    folder = client.domain.rsplit("/", 1)[0]
    body = client.get("/", params={"domain": folder}).json()
    assert rels(body) == ["self", "domains", "acls", "parent"]
    listing = client.get("/domains", params={"domain": folder}).json()
    assert rels(listing) == ["self"]
    mine = [d for d in listing["domains"] if d["name"] == client.domain]
    assert [h["rel"] for h in mine[0]["hrefs"]] == ["domain"]
    assert client.session.get(mine[0]["hrefs"][0]["href"], timeout=60).json()["root"] == tree["root"]
    follow_all(client, listing)


def test_put_domain_answers_hrefs(endpoint: str, home_folder: str) -> None:
    c = Client(endpoint, "test_user1", f"{home_folder}/created-hrefs.h5")
    r = c.put("/")
    assert r.status_code == 201
    assert "root" in rels(r.json()) and "self" in rels(r.json())
    follow_all(c, r.json())
    assert c.delete("/").status_code == 200


@pytest.mark.parametrize("collection", ["groups", "datasets", "datatypes"])
def test_collection_hrefs(client: Client, tree: dict[str, str], collection: str) -> None:
    body = client.get("/" + collection).json()
    assert rels(body) == ["self", "root", "home"]
    assert href(body, "root").split("?")[0].endswith(f"/groups/{tree['root']}")
    follow_all(client, body)


def test_object_hrefs(client: Client, tree: dict[str, str]) -> None:
    group = client.get(f"/groups/{tree['group']}").json()
    assert rels(group) == ["self", "links", "root", "home", "attributes"]
    follow_all(client, group)
    small = client.get(f"/datasets/{tree['small']}").json()
    assert rels(small) == ["self", "root", "home", "attributes", "data"]
    follow_all(client, small)
    large = client.get(f"/datasets/{tree['large']}").json()
    assert rels(large) == ["self", "root", "home", "attributes", "preview"]
    preview = client.session.get(href(large, "preview"), timeout=60).json()
    assert np.asarray(preview["value"]).shape == (10, 10)
    dtype = client.get(f"/datatypes/{tree['type']}").json()
    assert rels(dtype) == ["self", "root", "home", "attributes"]
    follow_all(client, dtype)


def test_created_objects_carry_hrefs(client: Client, tree: dict[str, str]) -> None:
    one = client.post("/groups").json()
    assert rels(one) == ["self", "links", "root", "home", "attributes"]
    many = client.post("/datasets", json=[{"type": "H5T_STD_U8LE", "shape": [3]}, {"type": "H5T_STD_U8LE"}])
    assert many.status_code == 201, many.text
    for obj in many.json()["objects"]:
        assert rels(obj)[:4] == ["self", "root", "home", "attributes"]
        follow_all(client, obj)


def test_dataset_parts_hrefs(client: Client, tree: dict[str, str]) -> None:
    dset = tree["small"]
    for part in ("type", "shape"):
        body = client.get(f"/datasets/{dset}/{part}").json()
        assert rels(body) == ["self", "owner", "root"]
        assert href(body, "self").split("?")[0].endswith(f"/datasets/{dset}/{part}")
        follow_all(client, body)
    value = client.get(f"/datasets/{dset}/value", params={"select": "[0:2,0:2]"}).json()
    assert value["value"] == [[0, 1], [5, 6]]
    assert rels(value) == ["self", "owner", "home", "root"]
    follow_all(client, value)
    resized = client.post("/datasets", json={"type": "H5T_STD_I8LE", "shape": [2], "maxdims": [10]}).json()
    r = client.put(f"/datasets/{resized['id']}/shape", json={"shape": [5]})
    assert r.status_code == 201 and rels(r.json()) == ["self", "owner", "root"]
    follow_all(client, r.json())


def test_link_hrefs(client: Client, tree: dict[str, str]) -> None:
    root = tree["root"]
    listing = client.get(f"/groups/{root}/links").json()
    assert rels(listing) == ["self", "home", "owner"]
    by_title = {link["title"]: link for link in listing["links"]}
    assert by_title["g1"]["target"].split("?")[0].endswith(f"/groups/{tree['group']}")
    assert by_title["small"]["target"].split("?")[0].endswith(f"/datasets/{tree['small']}")
    assert "target" not in by_title["soft"]
    for link in listing["links"]:
        r = client.session.get(link["href"], timeout=60)
        assert r.status_code == 200 and r.json()["link"]["title"] == link["title"]
    follow_all(client, listing)
    one = client.get(f"/groups/{root}/links/g1").json()
    assert rels(one) == ["self", "home", "owner", "target"]
    follow_all(client, one)
    soft = client.get(f"/groups/{root}/links/soft").json()
    assert rels(soft) == ["self", "home", "owner"]


def test_attribute_hrefs(client: Client, tree: dict[str, str]) -> None:
    for owner in (f"/groups/{tree['root']}", f"/datasets/{tree['small']}", f"/datatypes/{tree['type']}"):
        listing = client.get(owner + "/attributes").json()
        assert rels(listing) == ["self", "home", "owner"]
        assert href(listing, "owner").split("?")[0].endswith(owner)
        (item,) = listing["attributes"]
        assert item["href"].split("?")[0].endswith(owner + "/attributes/a%20b%25c")
        r = client.session.get(item["href"], timeout=60)
        assert r.status_code == 200 and r.json()["value"] == [1, 2]
        follow_all(client, listing)
        one = client.get(owner + "/attributes/a b%c").json()
        assert rels(one) == ["self", "home", "owner"]
        follow_all(client, one)


def test_acl_hrefs(client: Client, tree: dict[str, str]) -> None:
    listing = client.get("/acls").json()
    assert rels(listing) == ["self", "home", "owner"]
    follow_all(client, listing)
    one = client.get("/acls/test_user1").json()
    assert rels(one) == ["self", "home", "owner"]
    follow_all(client, one)
    put = client.put("/acls/test_user2", json={"read": True})
    assert put.status_code == 201 and rels(put.json()) == ["self", "home", "owner"]


def test_hrefs_follow_forwarded_headers(client: Client, tree: dict[str, str]) -> None:
    path = f"/groups/{tree['root']}"
    xf = client.get(path, headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": "lake.example.org:8443",
                                   "X-Forwarded-Prefix": "/hdf"}).json()
    assert href(xf, "self") == f"https://lake.example.org:8443/hdf{path}?domain={client.domain}"
    rfc = client.get(path, headers={"Forwarded": 'for=10.0.0.1;proto=https;host="data.example.org"'}).json()
    assert href(rfc, "self") == f"https://data.example.org{path}?domain={client.domain}"
    plain = client.get(path, headers={"Host": "alias.local:5101"}).json()
    assert href(plain, "self") == f"http://alias.local:5101{path}?domain={client.domain}"
    junk = client.get(path, headers={"X-Forwarded-Host": "evil/path?x", "X-Forwarded-Proto": "gopher"}).json()
    assert href(junk, "self") == f"{client.endpoint}{path}?domain={client.domain}"


def test_headers(client: Client, tree: dict[str, str]) -> None:
    r = client.get(f"/groups/{tree['root']}")
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    etag = r.headers["ETag"]
    assert etag.startswith('"') and int(r.headers["Content-Length"]) == len(r.content)
    assert client.get(f"/groups/{tree['root']}").headers["ETag"] == etag
    client.put(f"/groups/{tree['root']}/attributes/new", json={"type": "H5T_STD_I8LE", "value": 1})
    assert client.get(f"/groups/{tree['root']}").headers["ETag"] != etag
    packed = client.get(f"/datasets/{tree['small']}/value", headers={"Accept": "application/octet-stream"})
    assert packed.headers["Content-Type"] == "application/octet-stream"
    assert np.frombuffer(packed.content, "<i4").tolist() == list(range(20))
    assert "ETag" in packed.headers
    error = client.get("/groups/g-00000000-00000000-0000-000000-000000")
    assert error.status_code in (400, 403, 404)
    assert error.headers["Content-Type"] == "application/json; charset=utf-8"
    assert error.json()["error"]["status"] == error.status_code
    assert "Access-Control-Allow-Origin" not in r.headers
    assert client.session.options(client.endpoint + "/about").status_code == 405


@pytest.fixture(scope="module")
def cors_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(Path(tmp_path_factory.mktemp("cors")), extra=["--cors-origin", "https://app.example",
                                                                     "--cors-origin", "http://localhost:3000"])
    yield srv
    srv.stop()


def test_cors_preflight_and_headers(cors_server: Server) -> None:
    e = cors_server.endpoint
    pre = requests.options(e + "/groups/g-x", timeout=30, headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert pre.status_code == 200
    assert pre.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "PUT" in pre.headers["Access-Control-Allow-Methods"]
    assert "authorization" in pre.headers["Access-Control-Allow-Headers"].lower()
    assert pre.headers["Access-Control-Allow-Credentials"] == "true"
    r = requests.get(e + "/about", headers={"Origin": "http://localhost:3000"}, auth=auth("test_user1"), timeout=30)
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert "ETag" in r.headers["Access-Control-Expose-Headers"]
    denied = requests.get(e + "/about", headers={"Origin": "https://other.example"}, timeout=30)
    assert denied.status_code == 200 and "Access-Control-Allow-Origin" not in denied.headers
    bad_pre = requests.options(e + "/about", timeout=30, headers={
        "Origin": "https://other.example", "Access-Control-Request-Method": "GET"})
    assert bad_pre.status_code == 400 and "Access-Control-Allow-Origin" not in bad_pre.headers
    error = requests.get(e + "/", params={"domain": "/nope/x.h5"}, headers={"Origin": "https://app.example"},
                         auth=auth("test_user1"), timeout=30)
    assert error.status_code >= 400 and error.headers["Access-Control-Allow-Origin"] == "https://app.example"


def test_cors_any_origin(tmp_path: Path) -> None:
    srv = start_server(tmp_path, extra=["--cors-origin", "*"])
    try:
        pre = requests.options(srv.endpoint + "/about", timeout=30, headers={
            "Origin": "https://anything.example", "Access-Control-Request-Method": "GET"})
        assert pre.status_code == 200
        assert pre.headers["Access-Control-Allow-Origin"] in ("*", "https://anything.example")
    finally:
        srv.stop()


def test_cors_origin_setting_is_checked(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="origin"):
        start_server(tmp_path, extra=["--cors-origin", "app.example/path"], timeout=15)
