"""Request and answer forms HSDS serves that its REST-level test suite exercises (found by running
that suite against h5lake, dev/run_hsds_integ.sh): ``num_chunks``/``allocated_size``, flat and
one-element JSON values, one-field compound writes, 404 for ids of HSDS's form, one-group
``grp_ids``, ``GET /`` without a domain, domain queries, inherited folder ACLs, ``linked_domain``,
float32 fill values, ACL listings, ``attr_names`` on a listing, link paths holding ``/`` and
NaN in JSON answers. (``maxdims`` 0 at extent 0 and a flush in the body: test_h5pyd_legacy.py
of the h5pydt branch.)"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
import requests
from tests.api.test_h5pyd_metadata import open_file
from tests.conftest import Client, auth

pytestmark = pytest.mark.one_backend  # HSDS's request and answer forms at the HTTP edge, the same on every store

I32 = "H5T_STD_I32LE"


def test_verbose_dataset_has_hsds_keys(client: Client) -> None:
    # h5pyd after 1.0 reads Dataset.num_chunks and .allocated_size from these keys
    did = client.post("/datasets", json={"type": I32, "shape": [10], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [4]}}}).json()["id"]
    assert client.put(f"/datasets/{did}/value", json={"value": list(range(10))}).status_code == 200
    got = client.get(f"/datasets/{did}", params={"verbose": 1}).json()
    assert (got["num_chunks"], got["allocated_size"]) == (3, 48)  # chunks [0:4], [4:8], [8:12]
    assert got["stats"]["allocatedChunkCount"] == 3
    assert "num_chunks" not in client.get(f"/datasets/{did}").json()


def test_flat_and_one_element_json_values(client: Client) -> None:
    did = client.post("/datasets", json={"type": I32, "shape": [6, 6]}).json()["id"]
    # a 3x2 selection written as one flat list of its 6 elements (C order)
    r = client.put(f"/datasets/{did}/value", json={"start": [0, 1], "stop": [6, 5], "step": [2, 2], "value": [1, 2, 3, 4, 5, 6]})
    assert r.status_code == 200, r.text
    got = client.get(f"/datasets/{did}/value", params={"select": "[0:6:2,1:5:2]"}).json()["value"]
    assert got == [[1, 2], [3, 4], [5, 6]]
    # a flat list of the wrong count is still refused
    r = client.put(f"/datasets/{did}/value", json={"start": [0, 1], "stop": [6, 5], "step": [2, 2], "value": [1, 2, 3, 4, 5]})
    assert r.status_code == 400
    scalar = client.post("/datasets", json={"type": "H5T_IEEE_F32LE"}).json()["id"]
    assert client.put(f"/datasets/{scalar}/value", json={"value": [42]}).status_code == 200
    assert client.get(f"/datasets/{scalar}/value").json()["value"] == 42.0
    assert client.put(f"/datasets/{scalar}/value", json={"value": [1, 2]}).status_code == 400


def test_write_one_field_of_a_compound_with_bare_values(client: Client) -> None:
    t = {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": I32}, {"name": "b", "type": I32}]}
    did = client.post("/datasets", json={"type": t, "shape": [3]}).json()["id"]
    r = client.put(f"/datasets/{did}/value", json={"value": [7, 8, 9], "fields": "b"})
    assert r.status_code == 200, r.text
    assert client.get(f"/datasets/{did}/value").json()["value"] == [[0, 7], [0, 8], [0, 9]]


def test_object_reference_of_hsds_length(client: Client) -> None:
    root = client.get("/").json()["root"]
    ref = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ", "charSet": "H5T_CSET_ASCII", "length": 38}
    r = client.put(f"/groups/{root}/attributes/r", json={"type": ref, "shape": [1], "value": [root]})
    assert r.status_code == 201, r.text
    got = client.get(f"/groups/{root}/attributes/r").json()
    assert got["value"] == [f"groups/{root}"] or got["value"] == [root]
    ref["length"] = 7
    assert client.put(f"/groups/{root}/attributes/r2", json={"type": ref, "shape": [1], "value": [root]}).status_code == 400


def test_ids_of_hsds_form_are_not_found(client: Client) -> None:
    root = client.get("/").json()["root"]
    foreign = "g-" + str(uuid.uuid1())  # 8-4-4-4-12: HSDS takes it for an id, h5lake makes none like it
    assert client.get(f"/groups/{foreign}").status_code == 404
    assert client.put(f"/groups/{root}/links/x", json={"id": foreign}).status_code == 404
    assert client.get("/groups/foobar").status_code == 400
    assert client.put(f"/groups/{root}/links/x", json={"id": "g-nothing"}).status_code == 400


def test_links_of_one_group_by_grp_ids_are_a_list(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups", json={"link": {"id": root, "name": "g"}}).json()["id"]
    one = client.post(f"/groups/{root}/links", json={"grp_ids": [root]}).json()["links"]
    assert [link["title"] for link in one] == ["g"]
    two = client.post(f"/groups/{root}/links", json={"grp_ids": [root, g]}).json()["links"]
    assert sorted(two) == sorted([root, g]) and two[g] == []


def test_get_without_a_domain_lists_the_top_level(endpoint: str) -> None:
    for url in (endpoint, endpoint + "/"):
        r = requests.get(url, auth=auth("test_user1"), timeout=30)
        assert r.status_code == 200, r.text
        names = [d["name"] for d in r.json()["domains"]]
        assert "/home" in names


def test_domains_by_root_attribute_query(client: Client, domain: str) -> None:
    folder = domain.removesuffix(".h5")
    assert client.put("/", params={"domain": folder}, json={"folder": True}).status_code == 201
    for i in range(4):
        path = f"{folder}/d{i}.h5"
        assert client.put("/", params={"domain": path}).status_code == 201
        root = client.get("/", params={"domain": path}).json()["root"]
        attrs = {"n": {"type": I32, "value": i}, "tag": {"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                 "strPad": "H5T_STR_NULLPAD", "length": 2}, "value": f"t{i}"}}
        if i == 3:
            del attrs["tag"]
        assert client.put(f"/groups/{root}/attributes", params={"domain": path}, json={"attributes": attrs}).status_code == 201
    assert client.put("/", params={"domain": folder + "/sub"}, json={"folder": True}).status_code == 201

    def names(query: str) -> list[str]:
        r = client.get("/domains", params={"domain": folder + "/", "query": query})
        assert r.status_code == 200, r.text
        return sorted(d["name"].rsplit("/", 1)[1] for d in r.json()["domains"])

    assert names("n > 1") == ["d2.h5", "d3.h5"]
    assert names("n >= 1 AND tag != 't2'") == ["d1.h5"]  # d3 has no tag: no match
    assert names("n == 0 OR n == 3") == ["d0.h5", "d3.h5"]
    assert names("(n < 2) & ~(tag == 't0')") == ["d1.h5"]
    for bad in ("n > 1 AND", "n >> 2", ""):
        assert client.get("/domains", params={"domain": folder + "/", "query": bad}).status_code == 400


def test_new_domains_inherit_the_folders_grants(client: Client, domain: str, endpoint: str) -> None:
    folder = domain.removesuffix(".h5")
    assert client.put("/", params={"domain": folder}, json={"folder": True}).status_code == 201
    grant = {"read": True, "update": True}
    assert client.put("/acls/test_user2", params={"domain": folder}, json=grant).status_code == 201
    assert client.put("/acls/nobody", params={"domain": folder}, json={"read": False}).status_code == 201
    child = folder + "/shared.h5"
    assert client.put("/", params={"domain": child}).status_code == 201
    acls = {a["userName"]: a for a in client.get("/acls", params={"domain": child}).json()["acls"]}
    assert sorted(acls) == ["test_user1", "test_user2"]  # no entry granting nothing, no default
    # the folder lists a default entry, as HSDS's folders do, but it grants nothing here
    on_folder = {a["userName"]: a for a in client.get("/acls", params={"domain": folder}).json()["acls"]}
    assert sorted(on_folder) == ["default", "nobody", "test_user1", "test_user2"]
    assert not any(v is True for v in on_folder["default"].values())
    assert Client(endpoint, "test_user2", folder.rsplit("/", 1)[0]).get("/domains").status_code == 403
    assert {k for k, v in acls["test_user2"].items() if v is True} == {"read", "update"}
    other = Client(endpoint, "test_user2", child)
    assert other.get("/").status_code == 200
    assert other.delete("/").status_code == 403


def test_linked_domain_is_refused(client: Client, domain: str) -> None:
    r = client.put("/", params={"domain": domain + ".linked"}, json={"linked_domain": domain})
    assert r.status_code == 400 and "linked_domain" in r.json()["error"]["message"]
    assert client.get("/", params={"domain": domain + ".linked"}).status_code == 404


def test_float32_fill_value_reads_back_as_given(client: Client) -> None:
    cp = {"fillValue": 3.12}
    did = client.post("/datasets", json={"type": "H5T_IEEE_F32LE", "shape": [2], "creationProperties": cp}).json()["id"]
    assert client.get(f"/datasets/{did}").json()["creationProperties"]["fillValue"] == 3.12
    got = client.get(f"/datasets/{did}/value").json()["value"]
    assert np.array(got, dtype="f4").tolist() == np.full(2, 3.12, dtype="f4").tolist()


def test_acls_as_hsds_lists_them(client: Client, endpoint: str) -> None:
    # a new domain (the server does not make domains public) has only its owner's entry
    acls = client.get("/acls").json()["acls"]
    assert [a["userName"] for a in acls] == ["test_user1"]
    assert set(acls[0]) == {"userName", "create", "read", "update", "delete", "readACL", "updateACL"}
    assert client.get("/acls/default").status_code == 404
    # an entry set by PUT carries the domain it is of (HSDS keeps the request's domain in it)
    assert client.put("/acls/test_user2", json={"read": True, "update": True}).status_code == 201
    acl = client.get("/acls/test_user2").json()["acl"]
    assert acl["domain"] == client.domain and acl["userName"] == "test_user2"
    assert {k for k, v in acl.items() if v is True} == {"read", "update"}
    listed = {a["userName"]: a for a in client.get("/acls").json()["acls"]}
    assert listed["test_user2"] == acl and "domain" not in listed["test_user1"]
    assert Client(endpoint, "test_user2", client.domain).get("/acls/test_user2").json()["acl"] == acl
    # what was stored as "domain" is no flag: it is neither a permission nor taken in a body
    assert client.put("/acls/test_user2", json={"domain": client.domain}).status_code == 400


def test_attr_names_on_a_listing_leaves_out_missing_names(client: Client) -> None:
    root = client.get("/").json()["root"]
    assert client.put(f"/groups/{root}/attributes/a", json={"type": I32, "value": 1}).status_code == 201
    url = f"/groups/{root}/attributes"
    got = client.get(url, params={"attr_names": "a|gone", "separator": "|"}).json()["attributes"]
    assert [a["name"] for a in got] == ["a"]
    assert client.get(url, params={"attr_names": "gone"}).json()["attributes"] == []
    # a POST asks for those attributes: a missing one is 404, as in HSDS
    assert client.post(url, json={"attr_names": ["a", "gone"]}).status_code == 404


def test_a_link_path_with_a_slash_is_not_found(client: Client) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups").json()["id"]
    for method in ("PUT", "GET", "DELETE"):
        r = client.request(method, f"/groups/{root}/links/one/two", json={"id": g})
        assert r.status_code == 404 and "'/'" in r.json()["error"]["message"], (method, r.text)
    # a name in a body with '/' stays a bad request
    assert client.put(f"/groups/{root}/links", json={"links": {"one/two": {"id": g}}}).status_code == 400


def test_non_finite_floats_are_answered_as_hsds_answers_them(client: Client) -> None:
    root = client.get("/").json()["root"]
    nan, inf = float("nan"), float("inf")
    r = client.put(f"/groups/{root}/attributes/f", data=python_json({"type": "H5T_IEEE_F32LE", "shape": 3, "value": [nan, 1.0, -inf]}))
    assert r.status_code == 201, r.text
    text = {"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}}
    pair = {"class": "H5T_COMPOUND", "fields": [{"name": "x", "type": "H5T_IEEE_F64LE"}, {"name": "s", **text}]}
    assert client.put(f"/groups/{root}/attributes/c", json={"type": pair, "value": ["NaN", "NaN"]}).status_code == 201
    cp = {"fillValue": "NaN"}
    d = client.post("/datasets", json={"type": "H5T_IEEE_F32LE", "shape": 2, "creationProperties": cp, "link": {"id": root, "name": "d"}}).json()["id"]

    def raw(path: str, **params: object) -> bytes:
        r = client.get(path, params=params)
        assert r.status_code == 200, r.text
        return r.content

    # bare tokens (Python's json reads them as floats); a string field keeps its "NaN" text
    assert b'"value":[NaN,1.0,-Infinity]' in raw(f"/groups/{root}/attributes/f")
    assert raw(f"/groups/{root}/attributes/f/value").startswith(b'{"value":[NaN,1.0,-Infinity]')
    assert b'"value":[NaN,1.0,-Infinity]' in raw(f"/groups/{root}/attributes", IncludeData=1)
    assert b'"value":[NaN,"NaN"]' in raw(f"/groups/{root}/attributes/c")
    assert b'"value":[NaN,1.0,-Infinity]' in raw(f"/groups/{root}", include_attrs=1)
    assert b'"fillValue":NaN' in raw(f"/datasets/{d}")
    everything = raw("/", getobjs=1, include_attrs=1)
    assert b'"fillValue":NaN' in everything and b'"value":[NaN,1.0,-Infinity]' in everything
    assert raw(f"/datasets/{d}/value").startswith(b'{"value":[NaN,NaN]')
    several = client.post(f"/groups/{root}/attributes", json={"obj_ids": [root]})
    assert several.status_code == 200 and b'"value":[NaN,1.0,-Infinity]' in several.content
    # ignore_nan=1: null (a NaN fill value: "nan", as HSDS answers it)
    assert client.get(f"/groups/{root}/attributes/f", params={"ignore_nan": 1}).json()["value"] == [None, 1.0, None]
    assert client.get(f"/groups/{root}/attributes/c", params={"ignore_nan": 1}).json()["value"] == [None, "NaN"]
    assert client.get(f"/datasets/{d}", params={"ignore_nan": 1}).json()["creationProperties"]["fillValue"] == "nan"
    assert client.get(f"/datasets/{d}/value", params={"ignore_nan": 1}).json()["value"] == [None, None]
    # what is stored stays the strict-JSON string: a strict reader of the binary form is unaffected
    got = np.frombuffer(client.get(f"/datasets/{d}/value", headers={"Accept": "application/octet-stream"}).content, "<f4")
    assert np.isnan(got).all()


def python_json(body: object) -> bytes:
    """A JSON body with bare NaN and Infinity tokens, as Python's json (h5pyd) writes it."""
    return json.dumps(body).encode()


def test_deleted_links_and_attributes_answer_410(client: Client, endpoint: str, domain: str) -> None:
    root = client.get("/").json()["root"]
    g = client.post("/groups").json()["id"]
    links = {"a": {"id": root}, "soft": {"h5path": "x"}, "ext": {"h5path": "y", "h5domain": "/d"}}
    assert client.put(f"/groups/{g}/links", json={"links": links}).status_code == 201
    assert client.delete(f"/groups/{g}/links", params={"titles": "a:soft", "separator": ":"}).status_code == 200
    assert client.delete(f"/groups/{g}/links/ext").status_code == 200
    for title in links:
        assert client.get(f"/groups/{g}/links/{title}").status_code == 410, title
    assert client.get(f"/groups/{g}/links/never").status_code == 404
    # deleting it again succeeds, as HSDS answers (h5pyd 1.0 sends it again: test_h5pyd_forms.py)
    assert client.delete(f"/groups/{g}/links/ext").status_code == 200
    assert client.delete(f"/groups/{g}/links/never").status_code == 404
    # made again: found as usual
    assert client.put(f"/groups/{g}/links/a", json={"id": root}).status_code == 201
    assert client.get(f"/groups/{g}/links/a").status_code == 200
    attrs = {"x": {"type": I32, "value": 1}, "y": {"type": I32, "value": 2}}
    assert client.put(f"/groups/{g}/attributes", json={"attributes": attrs}).status_code == 201
    assert client.delete(f"/groups/{g}/attributes", params={"attr_names": "x|y", "separator": "|"}).status_code == 200
    for name in attrs:
        assert client.get(f"/groups/{g}/attributes/{name}").status_code == 410
        assert client.get(f"/groups/{g}/attributes/{name}/value").status_code == 410
    assert client.get(f"/groups/{g}/attributes/never").status_code == 404
    # a name deleted earlier is free to take, from JSON or packed bytes
    assert client.put(f"/groups/{g}/attributes/x", json={"type": I32, "value": 3}).status_code == 201
    assert client.get(f"/groups/{g}/attributes/x").json()["value"] == 3
    packed = np.array([5], "<i4").tobytes()
    r = client.put(f"/groups/{g}/attributes/y", data=packed, params={"type": json.dumps(I32), "shape": json.dumps([1])},
                   headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    # h5pyd reads a deleted attribute or link as absent, as with HSDS
    with open_file(endpoint, domain, "r+") as f:
        f.create_group("h").attrs["gone"] = 1
        del f["h"].attrs["gone"]
        f["h"]["l"] = f["h"]
        del f["h"]["l"]
    with open_file(endpoint, domain, "r") as f:
        assert "gone" not in f["h"].attrs and "l" not in f["h"]


def test_a_new_domain_answers_dn_ids_when_asked(endpoint: str, domain: str) -> None:
    c = Client(endpoint, "test_user1", domain)
    created = c.put("/", params={"getdnids": 1})
    assert created.status_code == 201 and created.json()["dn_ids"] == []  # no data nodes
    assert c.get("/", params={"getdnids": 1}).json()["dn_ids"] == []
    assert "dn_ids" not in c.get("/").json()


# --- forms of the suite of HSDS's h5json branch (HSDS 1.0.x) ------------------------------------


def test_group_post_refuses_a_type_and_takes_links(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/groups", json={"type": I32})  # as if committing a datatype
    assert r.status_code == 400 and "datatype" in r.json()["error"]["message"]
    targets = [client.post("/groups").json()["id"] for _ in range(3)]
    links = {f"obj_{i}": {"id": t} for i, t in enumerate(targets)}
    links["soft"] = {"h5path": "/somewhere"}
    r = client.post("/groups", json={"links": links, "link": {"id": root, "name": "g1"}})
    assert r.status_code == 201, r.text
    assert r.json()["linkCount"] == 4
    listed = client.get(f"/groups/{r.json()['id']}/links").json()["links"]
    assert [(x["title"], x["class"]) for x in listed] == [
        ("obj_0", "H5L_TYPE_HARD"), ("obj_1", "H5L_TYPE_HARD"), ("obj_2", "H5L_TYPE_HARD"), ("soft", "H5L_TYPE_SOFT")]
    assert [x["id"] for x in listed[:3]] == targets
    r = client.post("/groups", json={"links": {"bad": {"class": "nonsense"}}})
    assert r.status_code == 400


def test_dataset_post_takes_first_values(client: Client) -> None:
    r = client.post("/datasets", json={"type": I32, "shape": "H5S_SCALAR", "value": 42})
    assert r.status_code == 201, r.text
    assert client.get(f"/datasets/{r.json()['id']}/value").json()["value"] == 42
    compound = {"class": "H5T_COMPOUND", "fields": [
        {"name": "a", "type": I32},
        {"name": "b", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 1}}]}
    r = client.post("/datasets", json=[{"type": compound, "shape": [2], "value": [[42, "C"], [7, "D"]]},
                                       {"type": I32, "shape": [3], "value_base64": "AQAAAAIAAAADAAAA"}])
    assert r.status_code == 201, r.text
    first, second = (d["id"] for d in r.json()["objects"])
    assert client.get(f"/datasets/{first}/value").json()["value"] == [[42, "C"], [7, "D"]]
    assert client.get(f"/datasets/{second}/value").json()["value"] == [1, 2, 3]
    # a value that does not fit is a 400
    assert client.post("/datasets", json={"type": I32, "shape": [3], "value": [1, 2]}).status_code == 400


def test_contiguous_extendible_dataset_is_kept(client: Client) -> None:
    """HSDS refuses a contiguous layout with maxdims past the shape; h5lake takes it, as files from
    elsewhere hold such datasets (external storage, virtual datasets, other writers) and
    `h5lake load` must keep them (docs/api.md, "HSDS's REST test suite")."""
    body = {"type": I32, "shape": [10], "maxdims": [20], "creationProperties": {"layout": {"class": "H5D_CONTIGUOUS"}}}
    r = client.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    assert client.get(f"/datasets/{r.json()['id']}").json()["shape"]["maxdims"] == [20]


def test_compressors_listed_come_back_by_that_name(client: Client) -> None:
    from h5json.filters import getFilterItem

    listed = client.get("/").json()["compressors"]
    assert "deflate" in listed and "zlib" not in listed  # as HSDS lists them
    for name in listed:
        body = {"type": "H5T_IEEE_F32LE", "shape": [40, 80], "creationProperties": {
            "filters": [getFilterItem(name)], "layout": {"class": "H5D_CHUNKED", "dims": [10, 20]}}}
        r = client.post("/datasets", json=body)
        assert r.status_code == 201, (name, r.text)
        [item] = client.get(f"/datasets/{r.json()['id']}").json()["creationProperties"]["filters"]
        assert item["name"] == name or name == "deflate" and item["name"] == "gzip", (name, item)
