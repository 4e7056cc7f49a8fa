"""Groups, links, attributes, datatypes and datasets (as objects) over plain HTTP."""

from __future__ import annotations

import base64

import numpy as np
from tests.conftest import Client


def new_group(c: Client, parent: str | None = None, name: str | None = None) -> str:
    body = {} if parent is None else {"link": {"id": parent, "name": name}}
    r = c.post("/groups", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def test_group_with_link_and_listing(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = new_group(client, root, "g1")
    assert g[:19] == "g-" + root[2:19]
    r = client.get(f"/groups/{root}", params={"include_links": 1})
    links = r.json()["links"]
    assert links["g1"]["class"] == "H5L_TYPE_HARD" and links["g1"]["id"] == g
    assert r.json()["linkCount"] == 1
    r = client.get(f"/groups/{root}/links/g1")
    assert r.status_code == 200 and r.json()["link"]["id"] == g and r.json()["link"]["title"] == "g1"
    assert client.get("/groups").json()["groups"] == [g]
    r = client.get("/", params={"h5path": "/g1"})
    assert r.status_code == 200 and r.json()["id"] == g


def test_client_ids_batch_and_errors(client: Client) -> None:
    root = client.get("/").json()["root"]
    prefix = root[:19]
    ids = [f"{prefix}-{i:04x}-{i:06x}-{i:06x}" for i in range(1, 4)]
    r = client.post("/groups", json=[{"id": i, "creationProperties": {}} for i in ids])
    assert r.status_code == 201
    assert [o["id"] for o in r.json()["objects"]] == ids
    # wrong collection prefix, wrong domain, garbage
    bad = ["d" + ids[0][1:], "g-00000000-00000000-0000-000000-000001", "g-zzz"]
    for b in bad:
        r = client.post("/groups", json=[{"id": b}])
        assert r.status_code == 400, b
    assert client.get("/groups/not-an-id").status_code == 400
    assert client.get(f"/groups/{prefix}-9999-999999-999999").status_code == 404


def test_links_batch_conflict_and_delete(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = new_group(client)
    body = {
        "grp_ids": {
            root: {"links": {"a": {"class": "H5L_TYPE_HARD", "id": g}, "soft": {"class": "H5L_TYPE_SOFT", "h5path": "/a"}}},
            g: {"links": {"ext": {"class": "H5L_TYPE_EXTERNAL", "h5path": "/x", "h5domain": "other.h5"}}},
        }
    }
    assert client.put(f"/groups/{root}/links", json=body).status_code == 201
    assert client.put(f"/groups/{root}/links", json=body).status_code == 200  # identical again
    clash = {"links": {"a": {"class": "H5L_TYPE_SOFT", "h5path": "/elsewhere"}}}
    assert client.put(f"/groups/{root}/links", json=clash).status_code == 409
    r = client.get(f"/groups/{g}/links/ext").json()["link"]
    assert r["h5domain"] == "other.h5" and r["file"] == "other.h5" and r["h5path"] == "/x"
    listed = client.get(f"/groups/{root}/links").json()["links"]
    assert [l["title"] for l in listed] == ["a", "soft"]
    assert client.get(f"/groups/{root}/links", params={"Limit": 1, "Marker": "a"}).json()["links"][0]["title"] == "soft"
    r = client.post(f"/groups/{root}/links", json={"grp_ids": [root, g]})
    assert set(r.json()["links"]) == {root, g}
    assert client.delete(f"/groups/{root}/links", params={"titles": "a/soft"}).status_code == 200
    assert client.get(f"/groups/{root}/links").json()["links"] == []
    assert client.delete(f"/groups/{root}/links/nope").status_code == 404
    r = client.put(f"/groups/{root}/links/bad%2Fname", json={"id": g})
    assert r.status_code in (400, 404)
    assert client.put(f"/groups/{root}/links/x", json={"h5domain": 3}).status_code == 400


def test_link_creation_order(client: Client) -> None:
    root = client.get("/").json()["root"]
    for i, name in enumerate(["zeta", "alpha", "mid"]):
        r = client.put(f"/groups/{root}/links/{name}", json={"h5path": f"/p{i}"})
        assert r.status_code == 201
    by_name = [l["title"] for l in client.get(f"/groups/{root}/links").json()["links"]]
    by_order = [l["title"] for l in client.get(f"/groups/{root}/links", params={"CreateOrder": 1}).json()["links"]]
    assert by_name == ["alpha", "mid", "zeta"] and by_order == ["zeta", "alpha", "mid"]


def test_attributes_json_and_binary(client: Client) -> None:
    root = client.get("/").json()["root"]
    attr = {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I16BE"}, "shape": [2, 3], "value": [[1, 2, 3], [4, 5, 6]]}
    assert client.put(f"/groups/{root}/attributes/a1", json=attr).status_code == 201
    assert client.put(f"/groups/{root}/attributes/a1", json=attr).status_code == 200
    r = client.get(f"/groups/{root}/attributes/a1")
    assert r.json()["value"] == [[1, 2, 3], [4, 5, 6]] and r.json()["shape"]["dims"] == [2, 3]
    r = client.get(f"/groups/{root}/attributes/a1", headers={"Accept": "application/octet-stream"})
    assert r.headers["content-type"] == "application/octet-stream"
    assert np.frombuffer(r.content, ">i2").tolist() == [1, 2, 3, 4, 5, 6]
    r = client.get(f"/groups/{root}/attributes/a1", params={"encoding": "base64"})
    assert np.frombuffer(base64.b64decode(r.json()["value"]), ">i2").tolist() == [1, 2, 3, 4, 5, 6]
    raw = base64.b64encode(np.array([1.5, 2.5], "<f8").tobytes()).decode()
    b64 = {"type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}, "shape": [2], "value": raw}
    assert client.put(f"/groups/{root}/attributes/f", json=b64, params={"encoding": "base64"}).status_code == 201
    assert client.get(f"/groups/{root}/attributes/f").json()["value"] == [1.5, 2.5]
    null = {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}, "shape": {"class": "H5S_NULL"}}
    assert client.put(f"/groups/{root}/attributes/n", json=null).status_code == 201
    n = client.get(f"/groups/{root}/attributes/n").json()
    assert n["shape"]["class"] == "H5S_NULL" and n["value"] is None
    names = [a["name"] for a in client.get(f"/groups/{root}/attributes").json()["attributes"]]
    assert names == ["a1", "f", "n"]
    r = client.post(f"/groups/{root}/attributes", json={"attr_names": ["f", "a1"]})
    assert [a["name"] for a in r.json()["attributes"]] == ["f", "a1"]
    assert r.json()["attributes"][0]["value"] == [1.5, 2.5]
    assert client.delete(f"/groups/{root}/attributes", params={"attr_names": "f|n", "separator": "|"}).status_code == 200
    assert client.get(f"/groups/{root}/attributes/f").status_code == 410  # deleted (HSDS: 410)


def test_attribute_bad_input(client: Client) -> None:
    root = client.get("/").json()["root"]
    cases = [
        {"type": {"class": "H5T_NOPE"}, "shape": [1], "value": [1]},
        {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "shape": [2], "value": [1, 2, 3]},
        {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "shape": [1], "value": [1000]},
        {"shape": [1], "value": [1]},
        "just a string",
    ]
    for body in cases:
        r = client.put(f"/groups/{root}/attributes/bad", json=body)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["message"]
    assert client.get(f"/groups/{root}/attributes/bad").status_code == 404


def test_committed_type_and_dataset_objects(client: Client) -> None:
    root = client.get("/").json()["root"]
    t = {"class": "H5T_COMPOUND", "fields": [{"name": "x", "type": "H5T_STD_I32LE"}, {"name": "y", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32BE"}}]}
    r = client.post("/datatypes", json={"type": t, "link": {"id": root, "name": "mytype"}})
    assert r.status_code == 201
    tid = r.json()["id"]
    assert client.get(f"/datatypes/{tid}").json()["type"]["class"] == "H5T_COMPOUND"
    r = client.post("/datasets", json={"type": tid, "shape": [10], "maxdims": ["H5S_UNLIMITED"], "link": {"id": root, "name": "d"}})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    d = client.get(f"/datasets/{did}").json()
    assert d["shape"] == {"class": "H5S_SIMPLE", "dims": [10], "maxdims": ["H5S_UNLIMITED"]}
    assert d["type"]["fields"][0]["name"] == "x"
    assert d["layout"]["class"] == "H5D_CHUNKED" and len(d["layout"]["dims"]) == 1
    assert client.get(f"/datasets/{did}/type").json()["type"]["class"] == "H5T_COMPOUND"
    r = client.put(f"/datasets/{did}/shape", json={"shape": [25]})
    assert r.status_code == 201
    assert client.get(f"/datasets/{did}/shape").json()["shape"]["dims"] == [25]
    assert client.put(f"/datasets/{did}/shape", json={"shape": [5]}).status_code == 201  # shrinks (HDF5, HSDS)
    assert client.get(f"/datasets/{did}/shape").json()["shape"]["dims"] == [5]
    assert client.put(f"/datasets/{did}/attributes/units", json={"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}, "shape": {"class": "H5S_SCALAR"}, "value": "m/s"}).status_code == 201
    assert client.get(f"/datasets/{did}/attributes/units").json()["value"] == "m/s"
    assert client.delete(f"/datasets/{did}").status_code == 200
    assert client.get(f"/datasets/{did}").status_code == 410  # Gone, as HSDS answers
    assert client.delete(f"/groups/{root}").status_code == 403


def test_dataset_bad_input(client: Client) -> None:
    cases = [
        {"shape": [10]},
        {"type": "H5T_STD_I32LE", "shape": [-1]},
        {"type": "H5T_STD_I32LE", "shape": [10], "maxdims": [5]},
        {"type": "H5T_STD_I32LE", "shape": [10], "creationProperties": {"filters": [{"class": "H5Z_FILTER_UNKNOWN", "id": 65000}]}},
        {"type": "H5T_STD_I32LE", "shape": [10], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [0]}}},
        {"type": "H5T_STD_I32LE", "shape": [10], "creationProperties": {"fillValue": "abc"}},
    ]
    for body in cases:
        r = client.post("/datasets", json=body)
        assert r.status_code == 400, (body, r.text)


def test_binary_attribute_put(client: Client) -> None:
    root = client.get("/").json()["root"]
    octet = {"Content-Type": "application/octet-stream"}
    data = np.array([[1.5, 2.5, 3.5]], "<f4")
    r = client.put(f"/groups/{root}/attributes/b", data=data.tobytes(), headers=octet,
                   params={"type": "H5T_IEEE_F32LE", "shape": "[1, 3]"})
    assert r.status_code == 201, r.text
    assert client.get(f"/groups/{root}/attributes/b").json()["value"] == [[1.5, 2.5, 3.5]]
    # replace the value, keeping type and shape
    r = client.put(f"/groups/{root}/attributes/b", data=(data * 2).tobytes(), headers=octet)
    assert r.status_code == 201
    assert client.get(f"/groups/{root}/attributes/b").json()["value"] == [[3.0, 5.0, 7.0]]
    r = client.put(f"/groups/{root}/attributes/b", data=b"\x00" * 5, headers=octet)
    assert r.status_code == 400
    r = client.put(f"/groups/{root}/attributes/new", data=b"\x00" * 4, headers=octet)
    assert r.status_code == 404
