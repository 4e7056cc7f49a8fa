"""Domains, folders, ACLs and authentication over plain HTTP."""

from __future__ import annotations

import json
import re
import uuid

import requests
from tests.conftest import Client, RawStore, auth

ID_RE = re.compile(r"^g-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{6}-[0-9a-f]{6}$")


def test_about_reports_versions(endpoint: str) -> None:
    r = requests.get(endpoint + "/about")
    assert r.status_code == 200
    body = r.json()
    assert body["hsds_version"].startswith("1.0")
    assert body["h5lake_version"]
    assert body["state"] == "READY" and body["name"] and body["username"] == "anonymous"
    r = requests.get(endpoint + "/about", auth=auth("admin"))
    assert r.json()["username"] == "admin" and r.json()["isadmin"] is True
    assert requests.get(endpoint + "/info").status_code == 200


def test_wrong_password_is_401(endpoint: str) -> None:
    r = requests.get(endpoint + "/about", auth=("test_user1", "nope"))
    assert r.status_code == 401
    assert "password" in r.json()["error"]["message"]
    r = requests.get(endpoint + "/about", headers={"Authorization": "Basic !!!"})
    assert r.status_code == 401


def test_create_domain_and_root_id_form(client: Client) -> None:
    r = client.get("/")
    assert r.status_code == 200
    body = r.json()
    root = body["root"]
    assert ID_RE.match(root)
    hexd = root[2:].replace("-", "")
    assert all(int(b, 16) == (int(a, 16) + 8) % 16 for a, b in zip(hexd[:16], hexd[16:]))
    assert body["owner"] == "test_user1" and body["class"] == "domain"
    assert isinstance(body["created"], float) and "limits" in body and "compressors" in body
    # the root group exists
    r = client.get(f"/groups/{root}")
    assert r.status_code == 200 and r.json()["id"] == root


def test_create_twice_is_409_and_delete(client: Client) -> None:
    assert client.put("/").status_code == 409
    r = client.delete("/")
    assert r.status_code == 200
    assert client.get("/").status_code in (404, 410)
    assert client.put("/").status_code == 201


def test_domain_header_works_like_param(client: Client) -> None:
    r = requests.get(client.endpoint + "/", headers={"X-Hdf-domain": client.domain}, auth=auth("test_user1"))
    assert r.status_code == 200 and r.json()["root"] == client.get("/").json()["root"]


def test_missing_parent_folder_is_404(endpoint: str, home_folder: str) -> None:
    c = Client(endpoint, "test_user1", f"{home_folder}/nofolder-{uuid.uuid4().hex}/x.h5")
    assert c.put("/").status_code == 404


def test_anonymous_and_other_users(client: Client) -> None:
    anon = Client(client.endpoint, None, client.domain)
    assert anon.get("/").status_code == 401
    other = Client(client.endpoint, "test_user2", client.domain)
    r = other.get("/")
    assert r.status_code == 403 and r.json()["error"]["message"]
    assert other.delete("/").status_code == 403


def test_only_admin_makes_top_level_folders(endpoint: str) -> None:
    name = f"/top{uuid.uuid4().hex[:8]}"
    r = Client(endpoint, "test_user1", name).put("/", json={"folder": True})
    assert r.status_code == 403
    r = Client(endpoint, "admin", name).put("/", json={"folder": True})
    assert r.status_code == 201
    body = Client(endpoint, "admin", name).get("/").json()
    assert body["class"] == "folder" and "root" not in body


def test_acls(client: Client) -> None:
    r = client.get("/acls")
    assert r.status_code == 200
    users = {a["userName"]: a for a in r.json()["acls"]}
    assert users["test_user1"]["updateACL"] is True
    assert client.get("/acls/test_user2").status_code == 404
    flags = {"create": False, "read": True, "update": False, "delete": False, "readACL": False, "updateACL": False}
    r = client.put("/acls/test_user2", json=flags)
    assert r.status_code == 201
    acl = client.get("/acls/test_user2").json()["acl"]
    assert acl["read"] is True and acl["update"] is False and acl["userName"] == "test_user2"
    other = Client(client.endpoint, "test_user2", client.domain)
    assert other.get("/").status_code == 200
    root = other.get("/").json()["root"]
    assert other.post("/groups", json={}).status_code == 403
    assert other.get(f"/groups/{root}").status_code == 200
    assert other.put("/acls/test_user2", json={"create": True}).status_code == 403
    assert client.put("/acls/test_user2", json={"bogus": True}).status_code == 400


def test_list_domains_with_paging(endpoint: str, home_folder: str) -> None:
    folder = f"{home_folder}/list-{uuid.uuid4().hex[:8]}"
    c = Client(endpoint, "test_user1", folder)
    assert c.put("/", json={"folder": True}).status_code == 201
    names = [f"{folder}/d{i:02d}.h5" for i in range(7)]
    for n in names:
        assert Client(endpoint, "test_user1", n).put("/").status_code == 201
    assert Client(endpoint, "test_user1", f"{folder}/sub").put("/", json={"folder": True}).status_code == 201
    r = c.get("/domains", params={"domain": folder + "/"})
    assert r.status_code == 200
    listed = r.json()["domains"]
    assert [d["name"] for d in listed] == names + [f"{folder}/sub"]
    assert listed[-1]["class"] == "folder" and listed[0]["class"] == "domain" and listed[0]["owner"] == "test_user1"
    page1 = c.get("/domains", params={"domain": folder + "/", "Limit": 3}).json()["domains"]
    page2 = c.get("/domains", params={"domain": folder + "/", "Limit": 3, "Marker": page1[-1]["name"]}).json()["domains"]
    assert [d["name"] for d in page1 + page2] == names[:6]
    r = c.get("/domains", params={"domain": folder + "/", "pattern": "d0[12]*"})
    assert [d["name"] for d in r.json()["domains"]] == names[1:3]
    # a folder with sub-domains is not deleted
    assert c.delete("/").status_code == 409


def test_bad_domains(endpoint: str) -> None:
    for bad in ["/home/test_user1/../../etc", "/home/test_user1/a//b", "relative/../x"]:
        r = Client(endpoint, "test_user1", bad).put("/")
        assert r.status_code == 400, bad
        assert "domain" in r.json()["error"]["message"]
    r = requests.get(endpoint + "/", auth=auth("test_user1"))  # no domain: the top level (HSDS)
    assert r.status_code == 200 and "domains" in r.json()


def test_malformed_json_is_400(client: Client) -> None:
    r = client.post("/groups", data=b"{not json")
    assert r.status_code == 400
    assert "JSON" in r.json()["error"]["message"]


def test_flush_and_verbose(client: Client) -> None:
    r = client.put("/", params={"flush": 1}, data=b"null", headers={"Content-Type": "application/json"})
    assert r.status_code == 204
    r = client.get("/", params={"verbose": 1})
    body = r.json()
    assert body["num_groups"] == 1 and body["num_datasets"] == 0


def test_storage_layout_follows_seed_schema(client: Client, raw_store: RawStore) -> None:
    import hashlib

    root = client.get("/").json()["root"]
    dom = json.loads(raw_store.read(client.domain.lstrip("/") + "/.domain.json") or b"null")
    assert dom["owner"] == "test_user1" and dom["root"] == root
    assert set(dom["acls"]["test_user1"]) == {"create", "read", "update", "delete", "readACL", "updateACL"}
    assert isinstance(dom["created"], float) and isinstance(dom["lastModified"], float)
    key = hashlib.md5(root.encode()).hexdigest()[:5] + "-" + root
    group = json.loads(raw_store.read(key) or b"null")
    assert group["id"] == root and group["root"] == root
    assert group["links"] == {} and group["attributes"] == {}
    assert isinstance(group["created"], float)
