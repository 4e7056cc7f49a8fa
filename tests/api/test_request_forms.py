"""Request forms of the HDF REST API documentation (HDFGroup/hdf-rest-api, one page per
operation) and HSDS 1.0 that h5pyd never sends, over plain HTTP: value selections in JSON
bodies, paired coordinate lists, ``element_count``, creation with a link, an ``h5path`` or
inline attributes, initializers, GET by ``h5path``, 410 Gone, and domain names."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest
from tests.conftest import Client

pytestmark = pytest.mark.one_backend  # request forms at the HTTP edge, the same on every store

I32 = "H5T_STD_I32LE"


def new_dataset(c: Client, shape: object, **extra: object) -> str:
    r = c.post("/datasets", json={"type": I32, "shape": shape, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def value(c: Client, did: str, **params: object) -> object:
    r = c.get(f"/datasets/{did}/value", params=params)
    assert r.status_code == 200, r.text
    return r.json()["value"]


# --- PUT_Value / POST_Value / GET_Value ------------------------------------------------------


def test_put_value_start_stop_step_in_the_body(client: Client) -> None:
    d = new_dataset(client, 10)  # "shape" as a plain integer (POST_Dataset sample)
    assert client.get(f"/datasets/{d}/shape").json()["shape"]["dims"] == [10]
    r = client.put(f"/datasets/{d}/value", json={"start": 5, "stop": 10, "value": [13, 17, 19, 23, 29]})
    assert r.status_code == 200, r.text
    assert value(client, d) == [0, 0, 0, 0, 0, 13, 17, 19, 23, 29]
    r = client.put(f"/datasets/{d}/value", json={"start": [0], "stop": [6], "step": [2], "value": [1, 2, 3]})
    assert r.status_code == 200, r.text
    assert value(client, d)[:6] == [1, 0, 2, 0, 3, 13]
    d2 = new_dataset(client, [4, 6])
    r = client.put(f"/datasets/{d2}/value", json={"start": [1, 2], "stop": [3, 6], "step": [1, 2], "value": [[1, 2], [3, 4]]})
    assert r.status_code == 200, r.text
    assert value(client, d2, select="[1:3,2:6:2]") == [[1, 2], [3, 4]]
    assert value(client, d2, select="[0:1,:]") == [[0] * 6]
    # only stop: from 0
    assert client.put(f"/datasets/{d2}/value", json={"stop": [1, 2], "value": [[7, 8]]}).status_code == 200
    assert value(client, d2, select="[0:1,0:3]") == [[7, 8, 0]]
    for bad in (
        {"start": 5, "stop": 11, "value": [1] * 6},  # stop past the extent
        {"start": 10, "stop": 10, "value": []},  # start past the last index
        {"start": [0, 0], "stop": [1, 1], "value": [[1]]},  # wrong rank
        {"start": -1, "stop": 2, "value": [1, 2, 3]},
        {"start": 0, "stop": 4, "step": 0, "value": [1]},
        {"start": 0, "stop": 2, "points": [1], "value": [1]},
        {"start": 0, "stop": 3, "value": [1, 2]},  # count does not match
    ):
        r = client.put(f"/datasets/{d}/value", json=bad)
        assert r.status_code == 400, (bad, r.text)
        assert "message" in r.json()["error"]


def test_post_value_start_stop_and_points(client: Client) -> None:
    d = new_dataset(client, [10])
    client.put(f"/datasets/{d}/value", json={"value": [i * i for i in range(10)]})
    r = client.post(f"/datasets/{d}/value", json={"start": 2, "stop": 8, "step": 3})
    assert r.status_code == 200 and r.json()["value"] == [4, 25]
    # POST_Value sample: 1-D points as bare integers, any order
    r = client.post(f"/datasets/{d}/value", json={"points": [9, 7, 5, 3, 2, 2]})
    assert r.status_code == 200 and r.json()["value"] == [81, 49, 25, 9, 4, 4]
    assert client.post(f"/datasets/{d}/value", json={"start": 0, "stop": 11}).status_code == 400
    assert client.post(f"/datasets/{d}/value", json={"select": "[0:2]", "start": 0}).status_code == 400
    assert client.post(f"/datasets/{d}/value", json={"nothing": 1}).status_code == 400


def test_selection_out_of_range_is_400(client: Client) -> None:
    d = new_dataset(client, [4, 5])
    for select in ("[0:5,:]", "[0:4,0:6]", "[4:5,:]", "[0:99999999999999999999999,:]", "[[0,4],:]", "[0:2,[5]]"):
        r = client.get(f"/datasets/{d}/value", params={"select": select})
        assert r.status_code == 400, select
    # next to a coordinate list a long stop is clamped: h5pyd sends d[0:100, [1]] unclamped
    assert np.array(value(client, d, select="[0:100,[1]]")).shape == (4, 1)


def test_fancy_selections_unsorted_repeated_and_paired(client: Client) -> None:
    arr = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    d = new_dataset(client, list(arr.shape))
    assert client.put(f"/datasets/{d}/value", json={"value": arr.tolist()}).status_code == 200
    # one list, any order, repeats: values in the requested order
    assert value(client, d, select="[2,[3,0,3,1],1:3]") == arr[2:3, [3, 0, 3, 1], 1:3].tolist()
    # several lists pair up (HSDS and numpy), the paired dimension where the first list is
    for select, key in (
        ("[[2,0,2],1:3,[4,0,0]]", ([2, 0, 2], slice(1, 3), [4, 0, 0])),
        ("[:,[3,1],[0,4]]", (slice(None), [3, 1], [0, 4])),
        ("[[1,0],[2,2],[3,3]]", ([1, 0], [2, 2], [3, 3])),
    ):
        assert value(client, d, select=select) == arr[key].tolist(), select
    # binary answer too
    r = client.get(f"/datasets/{d}/value", params={"select": "[[2,0],1:3,[4,0]]"}, headers={"Accept": "application/octet-stream"})
    assert r.status_code == 200
    assert np.frombuffer(r.content, "<i4").tolist() == arr[[2, 0], 1:3, [4, 0]].reshape(-1).tolist()
    assert client.get(f"/datasets/{d}/value", params={"select": "[[0,1],:,[0,1,2]]"}).status_code == 400
    # writes through paired lists, and an unsorted list
    r = client.put(f"/datasets/{d}/value", params={"select": "[[0,2],0:2,[1,3]]"}, json={"value": [[-1, -2], [-3, -4]]})
    assert r.status_code == 200, r.text
    arr[[0, 2], 0:2, [1, 3]] = [[-1, -2], [-3, -4]]
    r = client.put(f"/datasets/{d}/value", params={"select": "[1,[3,0],0:1]"}, json={"value": [[[7], [8]]]})
    assert r.status_code == 200, r.text
    arr[1:2, [3, 0], 0:1] = [[[7], [8]]]
    assert value(client, d) == arr.tolist()


def test_element_count_broadcasts_in_2d_and_3d(client: Client) -> None:
    d2 = new_dataset(client, [3, 4])
    r = client.put(f"/datasets/{d2}/value", json={"value": [1, 2, 3, 4], "element_count": 4})
    assert r.status_code == 200, r.text
    assert value(client, d2) == [[1, 2, 3, 4]] * 3
    r = client.put(f"/datasets/{d2}/value", params={"element_count": 1, "select": "[1:3,0:2]"}, json={"value": [9]})
    assert r.status_code == 200, r.text
    assert value(client, d2, select="[1:3,0:2]") == [[9, 9], [9, 9]]
    d3 = new_dataset(client, [2, 3, 4])
    row = np.arange(12, dtype="<i4")
    r = client.put(
        f"/datasets/{d3}/value",
        params={"element_count": 12},
        data=row.tobytes(),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    assert value(client, d3) == np.broadcast_to(row.reshape(3, 4), (2, 3, 4)).tolist()
    r = client.put(
        f"/datasets/{d3}/value",
        params={"element_count": 4, "select": "[1,1:3,:]"},
        data=np.array([5, 6, 7, 8], "<i4").tobytes(),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    assert value(client, d3, select="[1,1:3,:]") == [[[5, 6, 7, 8], [5, 6, 7, 8]]]
    for bad in (5, 0, "x"):
        r = client.put(f"/datasets/{d3}/value", json={"value": [1] * 5, "element_count": bad})
        assert r.status_code == 400, bad


# --- POST_Dataset / POST_Group / POST_Datatype -------------------------------------------------


def test_create_with_link_h5path_and_inline_attributes(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/groups", json={"link": {"id": root, "name": "g"}, "attributes": {"n": {"type": I32, "value": 3}}})
    assert r.status_code == 201, r.text
    g = r.json()["id"]
    assert r.json()["attributeCount"] == 1
    assert client.get(f"/groups/{g}/attributes/n").json()["value"] == 3
    # h5path, absolute and relative to parent_id
    r = client.post("/datasets", json={"type": I32, "shape": [3], "h5path": "/g/d"})
    assert r.status_code == 201, r.text
    d = r.json()["id"]
    r = client.post("/groups", json={"h5path": "sub", "parent_id": g, "creationProperties": {"CreateOrder": 1}})
    assert r.status_code == 201, r.text
    sub = r.json()["id"]
    assert client.get(f"/groups/{sub}").json()["creationProperties"] == {"CreateOrder": 1}
    r = client.post(
        "/datatypes",
        json={"type": "H5T_IEEE_F64LE", "h5path": "/g/sub/t", "attributes": [{"name": "a", "type": I32, "shape": [2], "value": [1, 2]}]},
    )
    assert r.status_code == 201, r.text
    t = r.json()["id"]
    assert client.get(f"/datatypes/{t}/attributes/a").json()["value"] == [1, 2]
    links = client.get(f"/groups/{g}/links").json()["links"]
    assert {lk["title"]: lk["id"] for lk in links} == {"d": d, "sub": sub}
    # an existing name is 409, a missing parent 404, link and h5path together 400
    assert client.post("/groups", json={"h5path": "/g/d"}).status_code == 409
    assert client.post("/groups", json={"h5path": "/nope/x"}).status_code == 404
    assert client.post("/groups", json={"h5path": "/g/d/x"}).status_code in (400, 404)
    assert client.post("/groups", json={"h5path": "/x", "link": {"id": root, "name": "x"}}).status_code == 400
    assert client.post("/groups", json={"attributes": {"bad": {"value": 1}}}).status_code == 400
    assert client.get(f"/groups/{root}/links/x").status_code == 404  # nothing made by a refusal
    # implicit=1 (HSDS) makes the missing groups on the way
    r = client.post("/datasets", params={"implicit": 1}, json={"type": I32, "shape": [1], "h5path": "/g/p/q/dd"})
    assert r.status_code == 201, r.text
    assert client.get("/datasets/", params={"h5path": "/g/p/q/dd"}).json()["id"] == r.json()["id"]
    assert client.get("/groups/", params={"h5path": "/g/p/q"}).status_code == 200


def test_get_object_by_h5path(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    d = client.post("/datasets", json={"type": I32, "shape": [2], "link": {"id": g, "name": "d"}}).json()["id"]
    t = client.post("/datatypes", json={"type": I32, "link": {"id": g, "name": "t"}}).json()["id"]
    client.put(f"/groups/{root}/links/soft", json={"h5path": "/g/d"})
    assert client.get("/groups/", params={"h5path": "/g"}).json()["id"] == g
    assert client.get("/datasets/", params={"h5path": "/g/d"}).json()["id"] == d
    assert client.get("/datasets/", params={"h5path": "/soft"}).status_code == 400  # as HSDS
    assert client.get("/datasets/", params={"h5path": "/soft", "follow_soft_links": 1}).json()["id"] == d
    assert client.get("/datatypes/", params={"h5path": "/g/t"}).json()["id"] == t
    assert client.get(f"/groups/{g}", params={"h5path": "d"}).status_code == 404  # a dataset, not a group
    assert client.get(f"/datasets/{d}", params={"h5path": "d"}).status_code == 400  # not a group id
    r = client.get(f"/groups/{root}", params={"h5path": "g", "include_links": 1})
    assert r.json()["id"] == g and set(r.json()["links"]) == {"d", "t"}
    assert client.get("/datasets/", params={"h5path": "/g/none"}).status_code == 404
    assert client.get("/datasets/", params={"h5path": "g/d"}).status_code == 400  # relative, no parent
    assert client.get("/groups").json()["groups"] == [g]  # the listing is unchanged


def test_dataset_initializer_and_fill_values(client: Client) -> None:
    props = {"layout": {"class": "H5D_CHUNKED", "dims": [4]}, "initializer": ["arange", "--start=10", "--step=2"]}
    d = new_dataset(client, [10], creationProperties=props)
    assert value(client, d) == list(range(10, 30, 2))
    r = client.post("/datasets", json={"type": "H5T_IEEE_F32LE", "shape": [3], "creationProperties": {"initializer": ["arange"]}})
    assert r.status_code == 201
    assert value(client, r.json()["id"]) == [0.0, 1.0, 2.0]
    for bad in (["nope"], ["arange", "--stop=3"], ["arange", "--start=x"], "arange"):
        r = client.post("/datasets", json={"type": I32, "shape": [4], "creationProperties": {"initializer": bad}})
        assert r.status_code == 400, bad
    assert client.post("/datasets", json={"type": I32, "shape": [2, 2], "creationProperties": {"initializer": ["arange"]}}).status_code == 400
    # fill values: base64-encoded (HSDS's fillValue_encoding), NaN, compound
    fill = base64.b64encode(np.array([-7], "<i4").tobytes()).decode()
    d = new_dataset(client, [3], creationProperties={"fillValue": fill, "fillValue_encoding": "base64"})
    assert value(client, d) == [-7, -7, -7]
    # answered in the form given, as HSDS echoes it (the HDF5 REST VOL connector reads no other)
    shown = client.get(f"/datasets/{d}").json()["creationProperties"]
    assert (shown["fillValue"], shown["fillValue_encoding"]) == (fill, "base64")
    r = client.post("/datasets", json={"type": "H5T_IEEE_F64LE", "shape": [2], "creationProperties": {"fillValue": "NaN"}})
    assert r.status_code == 201
    assert all(isinstance(v, float) and math.isnan(v) for v in value(client, r.json()["id"]))
    compound = {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": I32}, {"name": "b", "type": "H5T_IEEE_F32LE"}]}
    r = client.post("/datasets", json={"type": compound, "shape": [2], "creationProperties": {"fillValue": [1, 2.5]}})
    assert r.status_code == 201, r.text
    assert value(client, r.json()["id"]) == [[1, 2.5], [1, 2.5]]
    bad = {"fillValue": "!!", "fillValue_encoding": "base64"}
    assert client.post("/datasets", json={"type": I32, "shape": [2], "creationProperties": bad}).status_code == 400
    bad = {"fillValue": 1, "fillValue_encoding": "rot13"}
    assert client.post("/datasets", json={"type": I32, "shape": [2], "creationProperties": bad}).status_code == 400


def test_string_fill_value_bytes_not_utf8_are_kept(client: Client) -> None:
    """A fixed-string fill value whose bytes are not UTF-8, given as packed bytes (HSDS's
    ``fillValue_encoding``, the HDF5 REST VOL connector's form, or h5lake's ``fillValue_base64``):
    kept byte for byte. It was kept as JSON, where they became U+FFFD: a 1-byte string was
    refused (400, three bytes of U+FFFD do not fit) and a longer one filled with other bytes."""
    for length, raw in ((1, b"\xff"), (8, b"a\xe9b\xffcd\x00\x00")):
        t = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": length}
        given = base64.b64encode(raw).decode()
        for props in ({"fillValue": given, "fillValue_encoding": "base64"}, {"fillValue": "?", "fillValue_base64": given}):
            r = client.post("/datasets", json={"type": t, "shape": [3], "creationProperties": props})
            assert r.status_code == 201, r.text
            d = r.json()["id"]
            got = client.get(f"/datasets/{d}/value", headers={"Accept": "application/octet-stream"})
            assert got.status_code == 200 and got.content == raw * 3
            shown = client.get(f"/datasets/{d}").json()["creationProperties"]
            if "fillValue_encoding" in props:
                assert (shown["fillValue"], shown["fillValue_encoding"]) == (given, "base64")
            else:  # JSON as attributes show such bytes, the exact bytes beside it
                assert shown["fillValue"] == raw.rstrip(b"\0").decode("utf-8", "replace")
                assert shown["fillValue_base64"] == given
    t = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 2}
    for bad in ({"fillValue_base64": "!!"}, {"fillValue_base64": base64.b64encode(b"abc").decode()},
                {"fillValue": "AA==", "fillValue_encoding": "base64", "fillValue_base64": "AAA="},
                {"fillValue": None, "fillValue_base64": "AAA="}):
        r = client.post("/datasets", json={"type": t, "shape": [3], "creationProperties": bad})
        assert r.status_code == 400, (bad, r.text)
    vstr = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}
    r = client.post("/datasets", json={"type": vstr, "shape": [3], "creationProperties": {"fillValue_base64": "/w=="}})
    assert r.status_code == 400, r.text


def test_null_space_dataset_and_attribute_shapes(client: Client) -> None:
    r = client.post("/datasets", json={"type": I32, "shape": "H5S_NULL"})
    assert r.status_code == 201
    d = r.json()["id"]
    assert client.get(f"/datasets/{d}").json()["shape"]["class"] == "H5S_NULL"
    # no values to read (HSDS: 400), as a JSON or binary GET and a POST
    for headers in ({}, {"Accept": "application/octet-stream"}):
        r = client.get(f"/datasets/{d}/value", headers=headers)
        assert r.status_code == 400 and "null dataspace" in r.json()["error"]["message"], r.text
    assert client.post(f"/datasets/{d}/value", json={"select": "[0:1]"}).status_code == 400
    root = client.get("/").json()["root"]
    # no shape: scalar; a null shape; no value: the type's zeros (HSDS keeps null)
    assert client.put(f"/groups/{root}/attributes/s", json={"type": I32, "value": 4}).status_code == 201
    a = client.get(f"/groups/{root}/attributes/s").json()
    assert a["shape"]["class"] == "H5S_SCALAR" and a["value"] == 4
    assert client.put(f"/groups/{root}/attributes/n", json={"type": I32, "shape": "H5S_NULL"}).status_code == 201
    assert client.get(f"/groups/{root}/attributes/n").json()["value"] is None
    assert client.put(f"/groups/{root}/attributes/z", json={"type": I32, "shape": [2]}).status_code == 201
    assert client.get(f"/groups/{root}/attributes/z").json()["value"] == [0, 0]


# --- DELETE_* (410 Gone) and domain names ------------------------------------------------------


def test_deleted_objects_answer_410(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    d = new_dataset(client, [2])
    t = client.post("/datatypes", json={"type": I32}).json()["id"]
    for col, oid in (("groups", g), ("datasets", d), ("datatypes", t)):
        assert client.delete(f"/{col}/{oid}").status_code == 200
        assert client.get(f"/{col}/{oid}").status_code == 410
        assert client.get(f"/{col}/{oid}/attributes").status_code == 410
        assert client.delete(f"/{col}/{oid}").status_code == 410
    assert client.get(f"/datasets/{d}/value").status_code == 410
    never = root[:19] + "-0000-000000-000000"
    assert client.get(f"/groups/{never}").status_code == 404  # never existed
    assert client.get("/groups/g-00000000-00000000-0000-000000-000001").status_code == 404  # nowhere
    other = Client(client.endpoint, "test_user1", client.domain + ".other")
    assert other.put("/").status_code == 201
    elsewhere = other.get("/").json()["root"]
    assert client.get(f"/groups/{elsewhere}").status_code == 400  # another domain's object (HSDS)
    assert client.put(f"/groups/{elsewhere}/attributes/a", json={"type": I32, "value": 1}).status_code == 400


def test_domain_names_must_be_absolute(client: Client) -> None:
    relative = client.domain.lstrip("/")
    r = client.get("/", params={"domain": relative})
    assert r.status_code == 400 and "absolute" in r.json()["error"]["message"]
    assert client.get("/", params={"domain": "nodots"}).status_code == 400
    assert client.get("/", params={"domain": "hdf5:/" + client.domain}).status_code == 200
    assert client.get("/", headers={"X-Hdf-domain": relative}, params={"domain": ""}).status_code == 400
    assert client.get("/", params={"domain": "", "host": client.domain}).status_code == 400  # HSDS: deprecated


def test_deleted_domains_answer_410_until_made_again(client: Client) -> None:
    root = client.get("/").json()["root"]
    assert client.delete("/").status_code == 200
    assert client.get("/").status_code == 410
    assert client.get(f"/groups/{root}").status_code == 410
    assert client.delete("/").status_code == 410
    assert client.put("/").status_code == 201
    assert client.get("/").status_code == 200
    sibling = Client(client.endpoint, "test_user1", client.domain + ".never")
    assert sibling.get("/").status_code == 404


# --- GET_ACLs / GET_ACL / PUT_ACL on objects; /about and /info --------------------------------


def test_object_acls(client: Client, endpoint: str) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    d = new_dataset(client, [2], link={"id": root, "name": "d"})
    t = client.post("/datatypes", json={"type": I32}).json()["id"]
    other = Client(endpoint, "test_user2", client.domain)
    # the domain lets everyone read; the objects say nothing yet
    assert client.put("/acls/default", json={"read": True}).status_code == 201
    assert other.get(f"/datasets/{d}").status_code == 200
    for col, oid in (("groups", g), ("datasets", d), ("datatypes", t)):
        r = client.get(f"/{col}/{oid}/acls")
        assert r.status_code == 200
        names = [a["userName"] for a in r.json()["acls"]]
        assert "default" in names and "test_user1" in names  # the effective ACL: the domain's
        r = client.put(f"/{col}/{oid}/acls/test_user2", json={"read": False, "readACL": True})
        assert r.status_code == 201, r.text
        acl = r.json()["acl"]
        assert acl["userName"] == "test_user2" and acl["readACL"] and not acl["read"] and not acl["update"]
        assert client.get(f"/{col}/{oid}/acls/test_user2").json()["acl"] == acl
        assert other.get(f"/{col}/{oid}").status_code == 403  # the object's ACL narrows the domain's
        assert other.get(f"/{col}/{oid}/attributes").status_code == 403
        assert other.get(f"/{col}/{oid}/acls").status_code == 403  # the domain grants no readACL
        assert client.get(f"/{col}/{oid}").status_code == 200  # the owner is not bound
        assert "acls" not in client.get(f"/{col}/{oid}").json()
    assert other.get(f"/datasets/{d}/value").status_code == 403
    assert other.get(f"/groups/{root}").status_code == 200  # other objects: the domain's ACL
    # an object ACL never widens the domain's: no update on the domain, none on the object
    client.put(f"/datasets/{d}/acls/test_user2", json={"read": True, "update": True})
    assert other.put(f"/datasets/{d}/value", json={"value": [1, 2]}).status_code == 403
    assert other.put(f"/datasets/{d}/acls/test_user2", json={"updateACL": True}).status_code == 403
    assert client.get(f"/datasets/{d}/acls/nobody").status_code == 404
    assert client.put(f"/datasets/{d}/acls/test_user2", json={"read": "yes"}).status_code == 400
    assert client.put(f"/datasets/{d}/acls/test_user2", json={"fly": True}).status_code == 400
    assert client.get(f"/groups/{d}/acls").status_code == 400  # a dataset id under /groups
    assert client.get("/acls").json()["acls"][0]["userName"] == "default"


def test_about_and_info_fields(client: Client) -> None:
    about = client.get("/about").json()
    for key in ("name", "state", "username", "isadmin", "hsds_version", "node_count", "start_time", "greeting", "about", "dn_urls", "dn_ids"):
        assert key in about, key
    assert about["username"] == "test_user1" and about["state"] == "READY"
    info = client.get("/info").json()
    assert {"id", "type", "state", "start_time", "node_count"} <= set(info["node"])
    assert info["cpu"]["cores"] >= 1


# --- GET_Attributes / GET_Links listing forms; PUT_Link / DELETE_Link batches ------------------


def test_attribute_and_link_listing_with_pattern_and_follow_links(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    d = new_dataset(client, [2], link={"id": g, "name": "d"})
    for oid, col, names in ((root, "groups", ["alpha", "beta", "alps"]), (g, "groups", ["al"]), (d, "datasets", ["x", "alt"])):
        for n in names:
            assert client.put(f"/{col}/{oid}/attributes/{n}", json={"type": I32, "value": 1}).status_code == 201
    r = client.get(f"/groups/{root}/attributes", params={"pattern": "al*"})
    assert [a["name"] for a in r.json()["attributes"]] == ["alpha", "alps"]
    r = client.get(f"/groups/{root}/attributes", params={"follow_links": 1, "pattern": "al*", "IncludeData": 1})
    assert r.status_code == 200, r.text
    found = r.json()["attributes"]
    assert {k: [a["name"] for a in v] for k, v in found.items()} == {root: ["alpha", "alps"], g: ["al"], d: ["alt"]}
    assert found[d][0]["value"] == 1
    assert client.get(f"/datasets/{d}/attributes", params={"follow_links": 1}).status_code == 400
    client.put(f"/groups/{root}/links/gamma", json={"h5path": "/g"})
    r = client.get(f"/groups/{root}/links", params={"pattern": "g*"})
    assert [lk["title"] for lk in r.json()["links"]] == ["g", "gamma"]
    r = client.get(f"/groups/{root}/links", params={"Marker": "g", "Limit": 1})
    assert [lk["title"] for lk in r.json()["links"]] == ["gamma"]
    assert client.get(f"/groups/{root}/links", params={"Marker": "nope"}).status_code == 404  # HSDS
    r = client.get(f"/groups/{root}/attributes", params={"Marker": "alpha"})
    assert [a["name"] for a in r.json()["attributes"]] == ["alps", "beta"]
    assert client.get(f"/groups/{root}/attributes", params={"Marker": "nope"}).status_code == 404
    r = client.get(f"/groups/{root}/links", params={"follow_links": 1})
    assert set(r.json()["links"]) == {root, g} and [lk["title"] for lk in r.json()["links"][g]] == ["d"]


def test_multi_link_put_and_delete_with_timestamps(client: Client) -> None:
    root = client.get("/").json()["root"]
    a = client.post("/groups").json()["id"]
    b = client.post("/groups").json()["id"]
    t0 = client.get(f"/groups/{root}").json()["created"]
    links = {"s": {"h5path": "/x", "created": t0 + 1.5}, "h": {"id": a, "created": t0 + 2.5}}
    r = client.put(f"/groups/{root}/links", json={"grp_ids": [a, b], "links": links})  # multicast (HSDS)
    assert r.status_code == 201, r.text
    for gid in (a, b):
        got = {lk["title"]: lk for lk in client.get(f"/groups/{gid}/links").json()["links"]}
        assert got["s"]["created"] == t0 + 1.5 and got["h"]["created"] == t0 + 2.5 and got["h"]["id"] == a
    got = client.get(f"/groups/{a}/links", params={"CreateOrder": 1}).json()["links"]
    assert [lk["title"] for lk in got] == ["s", "h"]
    # a different target under the same name: 409, or replaced with replace=1 (HSDS)
    assert client.put(f"/groups/{a}/links/s", json={"h5path": "/y"}).status_code == 409
    assert client.put(f"/groups/{a}/links/s", params={"replace": 1}, json={"h5path": "/y"}).status_code == 201
    assert client.get(f"/groups/{a}/links/s").json()["link"]["h5path"] == "/y"
    r = client.delete(f"/groups/{b}/links", params={"titles": "s|h", "separator": "|"})
    assert r.status_code == 200 and client.get(f"/groups/{b}/links").json()["links"] == []
    assert client.delete(f"/groups/{a}/links", params={"titles": "s/nope"}).status_code == 404
    assert len(client.get(f"/groups/{a}/links").json()["links"]) == 2  # nothing deleted
    assert client.put(f"/groups/{root}/links", json={"grp_ids": [a], "links": "no"}).status_code == 400


def test_soft_and_external_link_traversal(client: Client, endpoint: str) -> None:
    other = Client(endpoint, "test_user1", client.domain.rsplit("/", 1)[0] + "/ext-" + client.domain.rsplit("/", 1)[1])
    assert other.put("/").status_code == 201
    oroot = other.get("/").json()["root"]
    od = other.post("/datasets", json={"type": I32, "shape": [3], "link": {"id": oroot, "name": "target"}}).json()["id"]
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    client.put(f"/groups/{root}/links/soft", json={"h5path": "g"})  # relative
    client.put(f"/groups/{g}/links/up", json={"h5path": "/g"})
    relative = other.domain.rsplit("/", 1)[1]
    client.put(f"/groups/{g}/links/ext", json={"h5path": "target", "h5domain": relative})
    client.put(f"/groups/{root}/links/ext_abs", json={"h5path": "/target", "h5domain": other.domain})
    soft = {"follow_soft_links": 1}
    assert client.get("/", params={"h5path": "/soft/up/up"}).status_code == 400  # not followed unless asked
    r = client.get("/", params={"h5path": "/soft/up/up", **soft})
    assert r.json()["id"] == g and r.json()["class"] == "group"
    assert client.get("/", params={"h5path": "/g/ext"}).status_code == 400  # not followed unless asked
    r = client.get("/", params={"h5path": "/soft/ext", "follow_external_links": 1, **soft})
    assert r.status_code == 200 and r.json()["id"] == od and r.json()["domain"] == other.domain
    assert r.json()["class"] == "dataset"
    r = client.post("/", params={"follow_external_links": 1, **soft}, json={"h5paths": ["/soft/ext", "/g"]})
    assert {k: v["id"] for k, v in r.json()["h5paths"].items()} == {"/soft/ext": od, "/g": g}
    r = client.get("/datasets/", params={"h5path": "/ext_abs", "follow_external_links": 1})
    assert r.status_code == 200 and r.json()["id"] == od
    client.put(f"/groups/{root}/links/dangling", json={"h5path": "/x", "h5domain": "/home/nobody/none.h5"})
    assert client.get("/", params={"h5path": "/dangling", "follow_external_links": 1}).status_code in (403, 404)


def test_string_values_fixed_utf8_and_raw_bytes(client: Client) -> None:
    u8 = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": 6, "strPad": "H5T_STR_NULLPAD"}
    d = new_dataset(client, [2], type=u8)
    assert client.put(f"/datasets/{d}/value", json={"value": ["ü€", "ab"]}).status_code == 200
    assert value(client, d) == ["ü€", "ab"]
    assert client.put(f"/datasets/{d}/value", json={"value": ["ü€ü€", "ab"]}).status_code == 400  # 10 bytes
    s4 = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": 4, "strPad": "H5T_STR_NULLPAD"}
    raw = b"\xff\xfeab\x80\x00\x00\x00"  # not UTF-8: kept exactly in binary
    d = new_dataset(client, [2], type=s4)
    assert client.put(f"/datasets/{d}/value", json={"value_base64": base64.b64encode(raw).decode()}).status_code == 200
    r = client.get(f"/datasets/{d}/value", headers={"Accept": "application/octet-stream"})
    assert r.content == raw
    root = client.get("/").json()["root"]
    body = {"type": s4, "shape": [1], "value_base64": base64.b64encode(b"\xff\xfe\x00\x00").decode()}
    assert client.put(f"/groups/{root}/attributes/nb", json=body).status_code == 201
    r = client.get(f"/groups/{root}/attributes/nb", params={"encoding": "base64"})
    assert base64.b64decode(r.json()["value"]) == b"\xff\xfe\x00\x00"
    # names with characters that need escaping travel percent-encoded
    assert client.put(f"/groups/{root}/attributes/a%2Fb%3F%23%25", json={"type": I32, "value": 1}).status_code == 201
    assert client.get(f"/groups/{root}/attributes/a%2Fb%3F%23%25").json()["name"] == "a/b?#%"
    assert client.put(f"/groups/{root}/links/x%3F%23%25%20y", json={"h5path": "/z"}).status_code == 201
    assert client.get(f"/groups/{root}/links/x%3F%23%25%20y").json()["link"]["title"] == "x?#% y"


def test_attribute_value_get_and_put(client: Client) -> None:
    root = client.get("/").json()["root"]
    assert client.put(f"/groups/{root}/attributes/a", json={"type": I32, "shape": [3], "value": [1, 2, 3]}).status_code == 201
    r = client.get(f"/groups/{root}/attributes/a/value")
    assert r.status_code == 200 and r.json()["value"] == [1, 2, 3]
    r = client.get(f"/groups/{root}/attributes/a/value", headers={"Accept": "application/octet-stream"})
    assert np.frombuffer(r.content, "<i4").tolist() == [1, 2, 3]
    assert client.put(f"/groups/{root}/attributes/a/value", json={"value": [4, 5, 6]}).status_code == 200
    assert client.get(f"/groups/{root}/attributes/a").json()["value"] == [4, 5, 6]
    packed = np.array([7, 8, 9], "<i4").tobytes()
    r = client.put(f"/groups/{root}/attributes/a/value", data=packed, headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200
    assert client.get(f"/groups/{root}/attributes/a").json()["value"] == [7, 8, 9]
    b64 = base64.b64encode(np.array([1, 1, 1], "<i4").tobytes()).decode()
    assert client.put(f"/groups/{root}/attributes/a/value", json={"value": b64, "encoding": "base64"}).status_code == 200
    assert client.get(f"/groups/{root}/attributes/a").json()["value"] == [1, 1, 1]
    assert client.put(f"/groups/{root}/attributes/a/value", json={"value": [1, 2]}).status_code == 400
    assert client.put(f"/groups/{root}/attributes/a/value", json={"nothing": 1}).status_code == 400
    assert client.get(f"/groups/{root}/attributes/none/value").status_code == 404
    client.put(f"/groups/{root}/attributes/null", json={"type": I32, "shape": "H5S_NULL"})
    assert client.get(f"/groups/{root}/attributes/null/value").status_code == 400  # as HSDS
    assert client.put(f"/groups/{root}/attributes/n2", json={"type": I32, "shape": "H5S_NULL", "value": 4}).status_code == 400


# --- HSDS request parameters: getalias, parent_id, reduce_dim, ignore_nan, max_data_size ------


def test_hsds_parameters(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    sub = client.post("/groups", json={"link": {"id": g, "name": "sub"}}).json()["id"]
    d = new_dataset(client, [2, 3], link={"id": sub, "name": "d"})
    lone = new_dataset(client, [1])
    assert client.get(f"/datasets/{d}", params={"getalias": 1}).json()["alias"] == ["/g/sub/d"]
    assert client.get(f"/groups/{root}", params={"getalias": 1}).json()["alias"] == ["/"]
    assert client.get(f"/datasets/{lone}", params={"getalias": 1}).json()["alias"] == []
    assert client.get("/", params={"h5path": "sub/d", "parent_id": g}).json()["id"] == d
    r = client.post("/", params={"parent_id": g}, json={"h5paths": ["sub/d", "nope"]})
    assert r.status_code == 200 and set(r.json()["h5paths"]) == {"sub/d"}
    client.put(f"/datasets/{d}/value", json={"value": [[1, 2, 3], [4, 5, 6]]})
    assert value(client, d, select="[1:2,0:3]") == [[4, 5, 6]]
    assert value(client, d, select="[1:2,0:3]", reduce_dim=1) == [4, 5, 6]
    assert value(client, d, select="[1:2,2:3]", reduce_dim=1) == 6
    f = client.post("/datasets", json={"type": "H5T_IEEE_F64LE", "shape": [3]}).json()["id"]
    client.put(f"/datasets/{f}/value", json={"value": ["NaN", 1.5, "-Infinity"]})
    # HSDS's answer: bare NaN and -Infinity tokens, which Python's json reads as floats
    assert client.get(f"/datasets/{f}/value").content.startswith(b'{"value":[NaN,1.5,-Infinity]')
    got = value(client, f)
    assert math.isnan(got[0]) and got[1:] == [1.5, -math.inf]
    assert value(client, f, ignore_nan=1) == [None, 1.5, None]
    client.put(f"/groups/{root}/attributes/fl", json={"type": "H5T_IEEE_F32LE", "shape": [2], "value": ["NaN", 2.0]})
    client.put(f"/groups/{root}/attributes/big", json={"type": I32, "shape": [100], "value": list(range(100))})
    for url in (f"/groups/{root}/attributes/fl", f"/groups/{root}/attributes/fl/value"):
        assert client.get(url, params={"ignore_nan": 1}).json()["value"] == [None, 2.0]
        got = client.get(url).json()["value"]
        assert math.isnan(got[0]) and got[1] == 2.0
    listed = client.get(f"/groups/{root}/attributes", params={"IncludeData": 1, "max_data_size": 10, "ignore_nan": 1}).json()
    by_name = {a["name"]: a for a in listed["attributes"]}
    assert "value" not in by_name["big"] and by_name["fl"]["value"] == [None, 2.0]
    listed = client.get(f"/groups/{root}/attributes", params={"IncludeData": 1, "max_data_size": 0}).json()
    assert all("value" in a for a in listed["attributes"])
    # a name sent with an unencoded '#' arrives empty: 404, as HSDS answers
    assert client.put(f"/groups/{root}/attributes/#a", json={"type": I32, "value": 1}).status_code == 404
    assert client.get(f"/groups/{root}/links/").status_code == 404


def test_queries_in_hsds_forms(client: Client) -> None:
    stock = {
        "class": "H5T_COMPOUND",
        "fields": [
            {"name": "symbol", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": 4, "strPad": "H5T_STR_NULLPAD"}},
            {"name": "open", "type": I32},
        ],
    }
    d = new_dataset(client, [5], type=stock)
    rows = [["AAPL", 3000], ["EBAY", 5000], ["GOOG", 100], ["AAPL", 5000], ["EBAY", 10]]
    assert client.put(f"/datasets/{d}/value", json={"value": rows}).status_code == 200
    r = client.get(f"/datasets/{d}/value", params={"query": "open < 4000 where symbol in (b'AAPL', b'EBAY')"})
    assert r.status_code == 200 and r.json()["index"] == [0, 4]
    r = client.get(f"/datasets/{d}/value", params={"query": "where symbol in (b'AAPL', b'EBAY')"})
    assert r.json()["index"] == [0, 1, 3, 4]
    assert client.get(f"/datasets/{d}/value", params={"query": "open < 3 where"}).status_code == 400
    # a query update with HSDS's bare {field: value} body answers the changed rows
    r = client.put(f"/datasets/{d}/value", params={"query": "symbol == b'AAPL'"}, json={"open": 999})
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [0, 3] and r.json()["value"] == [[0, "AAPL", 999], [3, "AAPL", 999]]
    r = client.put(f"/datasets/{d}/value", params={"query": "symbol == b'EBAY'", "Limit": 1}, json={"value": {"open": 1}})
    assert r.json()["value"] == [[1, "EBAY", 1]]
    assert value(client, d) == [["AAPL", 999], ["EBAY", 1], ["GOOG", 100], ["AAPL", 999], ["EBAY", 10]]
    assert client.put(f"/datasets/{d}/value", params={"query": "open > 0"}, json={"nope": 1}).status_code == 400


def test_select_as_json_list_and_fields_in_the_body(client: Client) -> None:
    d = new_dataset(client, [10])
    client.put(f"/datasets/{d}/value", json={"value": list(range(10))})
    r = client.post(f"/datasets/{d}/value", json={"select": [[0, 1, 3, 7]]})
    assert r.status_code == 200 and r.json()["value"] == [0, 1, 3, 7]
    assert client.post(f"/datasets/{d}/value", json={"select": ["2:5"]}).json()["value"] == [2, 3, 4]
    assert client.post(f"/datasets/{d}/value", json={"select": [3]}).json()["value"] == [3]
    assert client.post(f"/datasets/{d}/value", json={"select": "[2:18]"}).status_code == 400
    assert client.post(f"/datasets/{d}/value", json={"select": [{"a": 1}]}).status_code == 400
    pair = {"class": "H5T_COMPOUND", "fields": [{"name": "x1", "type": I32}, {"name": "x2", "type": I32}]}
    c = new_dataset(client, [4], type=pair)
    for field, k in (("x1", 1), ("x2", 2)):
        r = client.put(f"/datasets/{c}/value", json={"value": [[k * i] for i in range(4)], "fields": field})
        assert r.status_code == 200, r.text
    assert value(client, c) == [[0, 0], [1, 2], [2, 4], [3, 6]]
    r = client.post(f"/datasets/{c}/value", json={"points": [3, 1], "fields": "x2"})
    assert r.status_code == 200 and r.json()["value"] == [[6], [2]]
    r = client.post(f"/datasets/{c}/value", json={"select": "[1:3]", "fields": "x1"})
    assert r.json()["value"] == [[1], [2]]
    assert client.post(f"/datasets/{c}/value", json={"points": [0], "fields": "nope"}).status_code == 400


def test_resize_statuses_and_relative_h5path_with_grpid(client: Client) -> None:
    fixed = new_dataset(client, 10)
    assert client.put(f"/datasets/{fixed}/shape", json={"extend": 5}).status_code == 400  # not extensible
    grow = new_dataset(client, 10, maxdims=20)
    assert client.put(f"/datasets/{grow}/shape", json={"shape": 15}).status_code == 201
    assert client.put(f"/datasets/{grow}/shape", json={"shape": 25}).status_code == 409  # past maxdims (HSDS)
    assert client.put(f"/datasets/{grow}/shape", json={"extend": 10}).status_code == 409
    two = new_dataset(client, [10, 20], maxdims=[0, 20])
    assert client.put(f"/datasets/{two}/shape", json={"extend": 5, "extend_dim": 0}).status_code == 201
    assert client.put(f"/datasets/{two}/shape", json={"extend": 5, "extend_dim": 1}).status_code == 409
    assert client.get(f"/datasets/{two}/shape").json()["shape"]["dims"] == [15, 20]
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    client.put(f"/groups/{g}/links/d", json={"id": two})
    assert client.get("/datasets/", params={"h5path": "g/d", "grpid": root}).json()["id"] == two
    assert client.get("/datasets/", params={"h5path": "d", "parent_id": g}).json()["id"] == two
    assert client.get("/datasets/", params={"h5path": "/g"}).status_code == 404  # a group
    assert client.post("/datasets", json={"type": I32, "shape": "H5S_SCALAR"}).status_code == 201
    r = client.post("/datasets", json={"type": I32, "shape": []})
    assert r.status_code == 201 and client.get(f"/datasets/{r.json()['id']}").json()["shape"]["class"] == "H5S_SCALAR"


def test_append_given_in_the_json_body(client: Client) -> None:
    d = new_dataset(client, [0], maxdims=["H5S_UNLIMITED"], creationProperties={"layout": {"class": "H5D_CHUNKED", "dims": [8]}})
    assert client.put(f"/datasets/{d}/value", json={"value": list(range(10)), "append": 10}).status_code == 200
    assert client.put(f"/datasets/{d}/value", json={"value": list(range(10, 20)), "append": 10}).status_code == 200
    assert client.get(f"/datasets/{d}/shape").json()["shape"]["dims"] == [20]
    assert value(client, d) == list(range(20))
    assert client.put(f"/datasets/{d}/value", json={"value": [1, 2], "append": 3}).status_code == 400  # mismatch
    assert client.put(f"/datasets/{d}/value", json={"value": [1], "append": "x"}).status_code == 400
