"""HDF5 Map objects over plain HTTP: the map object, single keys, batches (JSON and packed),
pages, links, attributes, ACLs, and refusals that leave the map unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any
from urllib.parse import quote

import h5pyd
import numpy as np
import pytest
from tests.conftest import USERS, Client, RawStore

OCTET = "application/octet-stream"
I64 = "H5T_STD_I64LE"
F64 = "H5T_IEEE_F64LE"
VSTR = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}


def new_map(client: Client, key_type: Any = I64, value_type: Any = F64, name: str | None = "m",
            **props: Any) -> str:
    body: dict[str, Any] = {"key_type": key_type, "value_type": value_type}
    if name is not None:
        body["link"] = {"id": client.get("/").json()["root"], "name": name}
    if props:
        body["creationProperties"] = props
    r = client.post("/maps", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["id"].startswith("m-")
    return str(r.json()["id"])


def everything(client: Client, map_id: str, page: int = 1000) -> list[tuple[Any, Any]]:
    """All pairs, page by page, following the cursor."""
    out: list[tuple[Any, Any]] = []
    params: dict[str, Any] = {"Limit": page, "IncludeValues": 1}
    while True:
        r = client.get(f"/maps/{map_id}/keys", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        out += list(zip(body["keys"], body["values"]))
        if body["cursor"] is None:
            return out
        params["Cursor"] = body["cursor"]


def test_single_keys(client: Client) -> None:
    m = new_map(client)
    r = client.put(f"/maps/{m}/key/42", json={"value": 2.5})
    assert r.status_code == 201, r.text
    assert client.put(f"/maps/{m}/key/42", json={"value": 3.5}).status_code == 200  # replaced
    assert client.put(f"/maps/{m}/key/-7", json={"value": -1}).status_code == 201
    assert client.get(f"/maps/{m}/key/42").json()["value"] == 3.5
    assert client.get(f"/maps/{m}/key/-7").json()["value"] == -1.0
    assert client.request("HEAD", f"/maps/{m}/key/42").status_code == 200
    assert client.request("HEAD", f"/maps/{m}/key/43").status_code == 404
    r = client.get(f"/maps/{m}/key/43")
    assert r.status_code == 404 and "43" in r.json()["error"]["message"]
    r = client.get(f"/maps/{m}/key/42", headers={"Accept": OCTET})
    assert r.headers["Content-Type"] == OCTET and np.frombuffer(r.content, "<f8").tolist() == [3.5]
    r = client.put(f"/maps/{m}/key/9", data=np.array([9.25], "<f8").tobytes(), headers={"Content-Type": OCTET})
    assert r.status_code == 201
    assert client.get(f"/maps/{m}/key/9").json()["value"] == 9.25
    assert client.delete(f"/maps/{m}/key/42").status_code == 200
    assert client.delete(f"/maps/{m}/key/42").status_code == 404
    assert sorted(everything(client, m)) == [(-7, -1.0), (9, 9.25)]
    info = client.get(f"/maps/{m}", params={"verbose": 1}).json()
    assert info["stats"]["pairCount"] == 2 and info["stats"]["allocatedSize"] > 0
    assert info["key_type"]["base"] == I64 and info["value_type"]["base"] == F64


def test_string_keys_in_the_path(client: Client) -> None:
    m = new_map(client, VSTR, VSTR)
    names = ["plain", "with space", "slash/in/it", "é ü 中", "q?x#y%z", ""]
    for i, name in enumerate(names[:-1]):
        r = client.put(f"/maps/{m}/key/{quote(name, safe='')}", json={"value": f"v{i}"})
        assert r.status_code == 201, (name, r.text)
    for i, name in enumerate(names[:-1]):
        assert client.get(f"/maps/{m}/key/{quote(name, safe='')}").json()["value"] == f"v{i}"
    # the empty key: in batches only (an empty path segment names no key)
    assert client.put(f"/maps/{m}/keys", json={"keys": [""], "values": ["empty"]}).status_code == 200
    r = client.post(f"/maps/{m}/keys", json={"keys": ["", "slash/in/it", "absent"]})
    assert r.json()["values"] == ["empty", "v2", None] and r.json()["found"] == [True, True, False]
    assert sorted(k for k, _ in everything(client, m)) == sorted(names)


def test_batches_json_and_packed(client: Client) -> None:
    m = new_map(client)
    keys = list(range(0, 3000, 3))
    r = client.put(f"/maps/{m}/keys", json={"keys": keys, "values": [k / 4 for k in keys]})
    assert r.status_code == 200 and r.json()["added"] == len(keys)
    # packed (key, value) records; keys 0..2999 overlap with the JSON ones
    more = np.empty(3000, dtype=[("k", "<i8"), ("v", "<f8")])
    more["k"], more["v"] = np.arange(3000), -np.arange(3000.0)
    r = client.put(f"/maps/{m}/keys", data=more.tobytes(), headers={"Content-Type": OCTET})
    assert r.status_code == 200 and r.json()["added"] == 2000
    want = np.array([5, 2999, 3000, 6, -1], "<i8")
    r = client.post(f"/maps/{m}/keys", data=want.tobytes(), headers={"Content-Type": OCTET, "Accept": OCTET})
    assert r.headers["Content-Type"] == OCTET
    found = np.frombuffer(r.content[:5], np.uint8).tolist()
    assert found == [1, 1, 0, 1, 0]
    assert np.frombuffer(r.content[5:], "<f8").tolist() == [-5.0, -2999.0, 0.0, -6.0, 0.0]
    r = client.request("DELETE", f"/maps/{m}/keys", json={"keys": [1, 2, 5000]})
    assert r.json()["deleted"] == 2
    r = client.request("DELETE", f"/maps/{m}/keys", data=np.array([3, 4], "<i8").tobytes(),
                       headers={"Content-Type": OCTET})
    assert r.json()["deleted"] == 2
    pairs = dict(everything(client, m, page=777))
    assert len(pairs) == 2996 and pairs[0] == 0.0 and pairs[2998] == -2998.0 and 3 not in pairs


def test_pages_are_stable_and_complete(client: Client) -> None:
    m = new_map(client, bucketBytes=4096)  # small buckets: many splits
    keys = list(range(5000))
    client.put(f"/maps/{m}/keys", json={"keys": keys, "values": [float(k) for k in keys]})
    info = client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]
    assert info["pairCount"] == 5000 and info["bucketCount"] > 8
    paged = [k for k, _ in everything(client, m, page=333)]
    assert sorted(paged) == keys and len(paged) == 5000
    assert [k for k, _ in everything(client, m, page=5000)] == paged  # one order, whatever the page size
    # a Marker (a key, as in a URL path) resumes after that key
    r = client.get(f"/maps/{m}/keys", params={"Marker": str(paged[99]), "Limit": 10})
    assert r.json()["keys"] == paged[100:110]
    # keys written between pages never make a page repeat or skip what was there
    first = client.get(f"/maps/{m}/keys", params={"Limit": 2500}).json()
    client.put(f"/maps/{m}/keys", json={"keys": list(range(5000, 9000)), "values": [0.0] * 4000})
    rest: list[int] = []
    cursor = first["cursor"]
    while cursor is not None:
        page = client.get(f"/maps/{m}/keys", params={"Limit": 1000, "Cursor": cursor}).json()
        rest += page["keys"]
        cursor = page["cursor"]
    seen = first["keys"] + rest
    assert len(seen) == len(set(seen)) and set(keys) <= set(seen)


def test_compound_keys_and_variable_values(client: Client) -> None:
    key_type = {"class": "H5T_COMPOUND", "fields": [
        {"name": "x", "type": "H5T_STD_I32LE"}, {"name": "tag", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                                                        "strPad": "H5T_STR_NULLPAD", "length": 4}}]}
    value_type = {"class": "H5T_VLEN", "base": "H5T_STD_I16LE"}
    m = new_map(client, key_type, value_type)
    r = client.put(f"/maps/{m}/keys", json={"keys": [[1, "ab"], [2, "abcd"], [1, "ab"]],
                                            "values": [[1, 2, 3], [], [7]]})
    assert r.status_code == 200 and r.json()["added"] == 2, r.text
    r = client.post(f"/maps/{m}/keys", json={"keys": [[1, "ab"], [2, "abcd"], [3, "x"]]})
    assert r.json()["values"] == [[7], [], None]
    r = client.put(f"/maps/{m}/key/1", json={"value": [1]})
    assert r.status_code == 400 and "batch" in r.json()["error"]["message"]


def test_opaque_keys_packed(client: Client) -> None:
    m = new_map(client, {"class": "H5T_OPAQUE", "size": 32}, {"class": "H5T_OPAQUE", "size": 1024}, bucketBytes=65536)
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 256, (300, 32), dtype=np.uint8)
    values = rng.integers(0, 256, (300, 1024), dtype=np.uint8)
    records = np.concatenate([keys, values], axis=1)
    r = client.put(f"/maps/{m}/keys", data=records.tobytes(), headers={"Content-Type": OCTET})
    assert r.json()["added"] == 300
    r = client.post(f"/maps/{m}/keys", data=keys[::-1].tobytes(), headers={"Content-Type": OCTET, "Accept": OCTET})
    assert r.content[:300] == b"\x01" * 300
    assert r.content[300:] == values[::-1].tobytes()
    assert client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]["bucketCount"] > 1


def test_bad_input_leaves_the_map_unchanged(client: Client) -> None:
    m = new_map(client)
    client.put(f"/maps/{m}/keys", json={"keys": [1, 2, 3], "values": [1.0, 2.0, 3.0]})
    before = sorted(everything(client, m))
    bad: list[tuple[str, str, dict[str, Any], int]] = [
        ("PUT", f"/maps/{m}/key/abc", {"json": {"value": 1.0}}, 400),  # not an integer key
        ("PUT", f"/maps/{m}/key/99999999999999999999999", {"json": {"value": 1.0}}, 400),  # out of range
        ("PUT", f"/maps/{m}/key/4", {"json": {"value": "text"}}, 400),  # not a float
        ("PUT", f"/maps/{m}/key/4", {"json": {"nope": 1}}, 400),
        ("PUT", f"/maps/{m}/key/4", {"data": b"\0" * 7, "headers": {"Content-Type": OCTET}}, 400),
        ("PUT", f"/maps/{m}/keys", {"json": {"keys": [4, 5], "values": [1.0]}}, 400),  # counts differ
        ("PUT", f"/maps/{m}/keys", {"json": {"keys": [4, "x"], "values": [1.0, 2.0]}}, 400),
        ("PUT", f"/maps/{m}/keys", {"json": {"keys": [4, 5], "values": [1.0, [2.0]]}}, 400),
        ("PUT", f"/maps/{m}/keys", {"data": b"\0" * 17, "headers": {"Content-Type": OCTET}}, 400),
        ("PUT", f"/maps/{m}/keys", {"json": [1, 2]}, 400),
        ("POST", f"/maps/{m}/keys", {"json": {"keys": "1"}}, 400),
        ("DELETE", f"/maps/{m}/keys", {"json": {"keys": [1.5]}}, 400),
        ("DELETE", f"/maps/{m}/keys", {"data": b"\0" * 9, "headers": {"Content-Type": OCTET}}, 400),
        ("GET", f"/maps/{m}/keys", {"params": {"Limit": 1_000_000}}, 413),
        ("GET", f"/maps/{m}/keys", {"params": {"Cursor": "!!!"}}, 400),
        ("PUT", f"/maps/{m}/keys", {"data": b"\0" * 16 * 1_000_001, "headers": {"Content-Type": OCTET}}, 413),
        ("POST", f"/maps/{m}/keys", {"data": b"\0" * 8 * 1_000_001, "headers": {"Content-Type": OCTET}}, 413),
    ]
    for method, path, kw, status in bad:
        r = client.request(method, path, **kw)
        assert r.status_code == status, (method, path, r.status_code, r.text[:200])
        assert r.json()["error"]["message"]
    assert sorted(everything(client, m)) == before
    unknown = m[:-6] + ("0" * 6 if m[-6:] != "0" * 6 else "1" * 6)
    for method, path in (("GET", f"/maps/{unknown}"), ("GET", f"/maps/{unknown}/key/1"),
                         ("PUT", f"/maps/{unknown}/keys"), ("GET", f"/maps/{unknown}/keys")):
        r = client.request(method, path, json={"keys": [1], "values": [1.0]})
        assert r.status_code == 404, (method, path, r.text)
    assert client.get("/maps/not-an-id").status_code == 400
    for body in ({"key_type": "H5T_STD_I64LE"}, {"key_type": {"class": "H5T_VLEN", "base": I64}, "value_type": F64},
                 {"key_type": I64, "value_type": F64, "creationProperties": {"bucketBytes": 10}},
                 {"key_type": I64, "value_type": F64, "creationProperties": {"filters": [{"id": 99999}]}}):
        r = client.post("/maps", json=body)
        assert r.status_code == 400, (body, r.text)


def test_map_objects_links_attributes_acls(client: Client, endpoint: str, raw_store: RawStore) -> None:
    m = new_map(client, name="numbers")
    client.put(f"/maps/{m}/keys", json={"keys": [1, 2], "values": [1.0, 2.0]})
    root = client.get("/").json()["root"]
    assert client.get("/maps").json()["maps"] == [m]
    # the link: a soft link in form, naming the map
    link = client.get(f"/groups/{root}/links/numbers").json()["link"]
    assert link["class"] == "H5L_TYPE_SOFT" and link["map_id"] == m and link["collection"] == "maps"
    # the web view and h5grove list it by name (as an object of kind "other") without failing
    r = client.session.get(f"{client.endpoint}/view/api/object", params={"domain": client.domain, "path": "/"})
    assert r.status_code == 200 and {"name": "numbers", "path": "/numbers", "kind": "other"} in r.json()["children"]
    r = client.session.get(f"{client.endpoint}/h5grove/meta", params={"file": client.domain, "path": "/numbers"})
    assert r.status_code == 200 and r.json()["kind"] == "other"
    by_path = client.get("/", params={"h5path": "/numbers"}).json()
    assert by_path["id"] == m and by_path["class"] == "map" and by_path["key_type"]["base"] == I64
    objs = client.get("/", params={"getobjs": 1}).json()["domain_objs"]
    assert objs[m]["key_type"]["base"] == I64 and objs[root]["links"]["numbers"]["map_id"] == m
    # attributes and ACLs like any object
    r = client.put(f"/maps/{m}/attributes/units", json={"type": "H5T_STD_I32LE", "shape": [2], "value": [1, 2]})
    assert r.status_code == 201, r.text
    assert client.get(f"/maps/{m}/attributes/units").json()["value"] == [1, 2]
    assert client.get(f"/maps/{m}").json()["attributeCount"] == 1
    r = client.put(f"/maps/{m}/acls/test_user2", json={"read": True, "update": False})
    assert r.status_code == 201, r.text
    assert client.get(f"/maps/{m}/acls").status_code == 200
    other = Client(client.endpoint, "test_user2", client.domain)
    assert other.put(f"/maps/{m}/key/3", json={"value": 3.0}).status_code == 403
    # delete: gone, and its buckets reclaimed
    assert client.delete(f"/maps/{m}").status_code == 200
    assert client.get(f"/maps/{m}").status_code in (404, 410)
    deadline = time.monotonic() + 10
    prefix = m.replace("m-", "")
    while time.monotonic() < deadline and any(prefix in k for k in raw_store.list_keys("")):
        time.sleep(0.2)
    assert not [k for k in raw_store.list_keys("") if "-c-" + m in k]


def test_h5pyd_and_hsls_tolerate_maps(client: Client, endpoint: str, tmp_path: Any) -> None:
    root = client.get("/").json()["root"]
    client.post("/groups", json={"link": {"id": root, "name": "g"}})
    gid = client.get(f"/groups/{root}/links/g").json()["link"]["id"]
    r = client.post("/maps", json={"key_type": I64, "value_type": F64, "link": {"id": gid, "name": "lookup"}})
    m = r.json()["id"]
    client.put(f"/maps/{m}/keys", json={"keys": [1], "values": [1.0]})
    client.post("/datasets", json={"type": I64, "shape": [3], "link": {"id": gid, "name": "d"}})
    opts = {"endpoint": endpoint, "username": "test_user1", "password": USERS["test_user1"]}
    with h5pyd.File(client.domain, "r", **opts) as f:
        seen: list[str] = []
        f.visititems(lambda name, obj: seen.append(name))
        assert sorted(seen) == ["g", "g/d"]
        assert sorted(f["g"]) == ["d", "lookup"]
        assert isinstance(f["g"].get("lookup", getlink=True), h5pyd.SoftLink)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HS_")}
    env.update(HS_ENDPOINT=endpoint, HS_USERNAME="test_user1", HS_PASSWORD=USERS["test_user1"])
    hsls = shutil.which("hsls")
    assert hsls is not None
    proc = subprocess.run([hsls, "-r", client.domain], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "SoftLink" in listed["/g/lookup"] and m in listed["/g/lookup"], proc.stdout
    assert "Dataset" in listed["/g/d"], proc.stdout


def test_packed_pages(client: Client) -> None:
    m = new_map(client, bucketBytes=4096)
    keys = np.arange(3000, dtype="<i8")
    client.put(f"/maps/{m}/keys", json={"keys": keys.tolist(), "values": (keys * 0.5).tolist()})
    json_order = [k for k, _ in everything(client, m, page=1000)]
    records: list[Any] = []
    params: dict[str, Any] = {"Limit": 700, "IncludeValues": 1}
    while True:
        r = client.get(f"/maps/{m}/keys", params=params, headers={"Accept": OCTET})
        assert r.headers["Content-Type"] == OCTET
        records += np.frombuffer(r.content, dtype=[("k", "<i8"), ("v", "<f8")]).tolist()
        if "X-H5Lake-Cursor" not in r.headers:
            break
        params["Cursor"] = r.headers["X-H5Lake-Cursor"]
    assert [k for k, _ in records] == json_order and all(v == k * 0.5 for k, v in records)
    r = client.get(f"/maps/{m}/keys", params={"Limit": 5}, headers={"Accept": OCTET})
    assert np.frombuffer(r.content, "<i8").tolist() == json_order[:5]
    s = new_map(client, VSTR, VSTR, name="s")
    client.put(f"/maps/{s}/keys", json={"keys": ["a", "bé"], "values": ["", "xyz"]})
    r = client.get(f"/maps/{s}/keys", params={"IncludeValues": 1}, headers={"Accept": OCTET})
    pairs = dict(everything(client, s))
    expected = b"".join(len(k.encode()).to_bytes(4, "little") + k.encode() + len(v.encode()).to_bytes(4, "little")
                        + v.encode() for k, v in pairs.items())
    assert sorted(pairs) == ["a", "bé"] and len(r.content) == len(expected)


def test_catalogs_list_maps_and_buckets(client: Client, raw_store: RawStore) -> None:
    m = new_map(client, bucketBytes=4096)
    client.put(f"/maps/{m}/keys", json={"keys": list(range(3000)), "values": [0.5] * 3000})
    stats = client.get(f"/maps/{m}", params={"verbose": 1}).json()["stats"]
    prefix = client.domain.lstrip("/") + "/"
    deadline = time.monotonic() + 15
    while True:
        maps_txt = raw_store.read(prefix + ".maps.txt") or b""
        chunks_txt = raw_store.read(prefix + f".{m}.chunks.txt") or b""
        lines = chunks_txt.decode().splitlines()
        line = next((x.split() for x in maps_txt.decode().splitlines() if x.startswith(m)), None)
        if line is not None and len(lines) >= stats["bucketCount"] and int(line[4]) >= stats["bucketCount"]:
            break
        assert time.monotonic() < deadline, (maps_txt, chunks_txt[:300])
        time.sleep(0.2)
    # every bucket reachable from the root is listed, with its stored size
    listed = {int(x.split()[0]): int(x.split()[3]) for x in lines}
    assert sum(listed.values()) >= stats["allocatedSize"]
    assert int(line[5]) == sum(listed.values())


def test_float_and_big_endian_keys(client: Client) -> None:
    m = new_map(client, "H5T_IEEE_F32BE", "H5T_STD_U16BE")
    r = client.put(f"/maps/{m}/keys", json={"keys": [0.0, -0.0, 1.5, "NaN", "Infinity"], "values": [1, 2, 3, 4, 5]})
    assert r.json()["added"] == 5  # 0.0 and -0.0 differ in their bytes: two keys
    r = client.post(f"/maps/{m}/keys", json={"keys": [-0.0, 0.0, "Infinity", 2.5]})
    assert r.json()["values"] == [2, 1, 5, None]
    packed = np.array([1.5, -0.0], ">f4").tobytes()
    r = client.post(f"/maps/{m}/keys", data=packed, headers={"Content-Type": OCTET, "Accept": OCTET})
    assert r.content[:2] == b"\x01\x01" and np.frombuffer(r.content[2:], ">u2").tolist() == [3, 2]
    assert client.put(f"/maps/{m}/key/1.5", json={"value": 1}).status_code == 400  # not a path key type
    b = new_map(client, "H5T_STD_I32BE", "H5T_STD_I8LE", name="be")
    assert client.put(f"/maps/{b}/key/-3", json={"value": -1}).status_code == 201
    r = client.post(f"/maps/{b}/keys", data=np.array([-3], ">i4").tobytes(), headers={"Content-Type": OCTET})
    assert r.json()["values"] == [-1]
