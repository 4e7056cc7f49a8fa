"""Versions of a domain over plain HTTP and through unchanged h5pyd (docs/versions.md)."""

from __future__ import annotations

import base64
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import requests
from tests.conftest import Client, RawStore, auth
from tests.support.cli import clean_env, run_h5lake


def _h5(endpoint: str, domain: str, mode: str = "r") -> h5pyd.File:
    return h5pyd.File(domain, mode, endpoint=endpoint, username="test_user1", password=auth("test_user1")[1])


def _commit(client: Client, message: str = "", **extra: object) -> requests.Response:
    return client.post("/versions", json={"message": message, **extra})


def test_commit_then_read_old_version_with_h5pyd(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        dset = f.create_dataset("x", data=np.arange(100, dtype="f4"), chunks=(10,))
        dset.attrs["unit"] = "m"
        f.create_group("g").create_dataset("y", data=np.ones((4, 4), "i2"))
    r = _commit(client, "first", metadata={"run": 1})
    assert r.status_code == 201, r.text
    v1 = r.json()
    assert v1["id"] == "v1" and v1["parent"] is None and v1["message"] == "first"
    assert v1["author"] == "test_user1" and v1["metadata"] == {"run": 1}
    with _h5(ep, d, "a") as f:
        f["x"][5:15] = -1
        f["x"].attrs["unit"] = "km"
        f.create_dataset("z", data=[1, 2, 3])
    root = client.get("/").json()["root"]
    assert client.delete(f"/groups/{root}/links/g").status_code == 200
    with _h5(ep, d + "@v1") as f:
        assert np.array_equal(f["x"][:], np.arange(100, dtype="f4"))
        assert f["x"].attrs["unit"] == "m"
        assert np.array_equal(f["g/y"][:], np.ones((4, 4), "i2"))
        assert "z" not in f
    with _h5(ep, d) as f:
        assert f["x"][5] == -1 and "g" not in f and list(f["z"][:]) == [1, 2, 3]
    r2 = _commit(client, "second", parent="v1")
    assert r2.status_code == 201 and r2.json()["parent"] == "v1"
    with _h5(ep, d + "@~1") as f:
        assert f["x"][5] == 5
    with _h5(ep, d + "@v2") as f:
        assert f["x"][5] == -1


def test_commit_with_stale_parent_is_409_naming_latest(client: Client) -> None:
    assert _commit(client).status_code == 201
    assert _commit(client).status_code == 201
    r = _commit(client, parent="v1")
    assert r.status_code == 409 and "v2" in r.json()["error"]["message"]
    r = _commit(client, parent=None)
    assert r.status_code == 409


def test_concurrent_commits_of_one_domain_all_answer(client: Client) -> None:
    """Commit requests arriving together at one server process: each holds its domain as it
    opens it, then commits; they waited for each other's holds for ever before."""
    from concurrent.futures import ThreadPoolExecutor

    assert client.put("/", json={}).status_code in (200, 201, 409)
    with _h5(client.endpoint, client.domain, "a") as f:
        f.create_dataset("x", data=np.arange(20_000, dtype="f8"), chunks=(1000,))

    def one(i: int) -> int:
        r = requests.post(client.endpoint + "/versions", params={"domain": client.domain},
                          json={"message": f"c{i}"}, auth=auth("test_user1"), timeout=60)
        return r.status_code

    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(one, range(4)))
    assert codes == [201] * 4, codes
    listed = [v["id"] for v in client.get("/versions").json()["versions"]]
    assert sorted(listed) == ["v1", "v2", "v3", "v4"]


def test_writes_to_a_version_are_405_naming_it(client: Client) -> None:
    root = client.get("/").json()["root"]
    assert _commit(client).status_code == 201
    v = Client(client.endpoint, "test_user1", client.domain + "@v1")
    assert v.get("/").json()["root"] == root
    r = v.post("/groups", json={"link": {"id": root, "name": "new"}})
    assert r.status_code == 405 and "@v1" in r.json()["error"]["message"]
    assert v.put(f"/groups/{root}/attributes/a", json={"type": "H5T_STD_I32LE", "value": 1}).status_code == 405
    assert v.delete("/").status_code == 405
    assert client.get(f"/groups/{root}/links").json()["links"] == []


def test_unknown_and_malformed_refs(client: Client) -> None:
    assert _commit(client).status_code == 201
    for ref, status, word in (("v9", 404, "v9"), ("nosuchtag", 404, "nosuchtag"), ("~5", 404, "~5")):
        r = Client(client.endpoint, "test_user1", f"{client.domain}@{ref}").get("/")
        assert r.status_code == status and word in r.json()["error"]["message"], (ref, r.text)
    for ref in ("", "a b", "v1@v2", "!x"):
        r = Client(client.endpoint, "test_user1", f"{client.domain}@{ref}").get("/")
        assert r.status_code == 400, (ref, r.text)
    r = Client(client.endpoint, "test_user1", client.domain + "x@y").put("/")
    assert r.status_code in (400, 404)
    name = client.domain.rsplit("/", 1)[0] + "/new@name.h5"
    r = Client(client.endpoint, "test_user1", name).put("/")
    assert r.status_code == 400 and "@" in r.json()["error"]["message"]


def test_history_tags_and_time_refs(client: Client) -> None:
    ids = [_commit(client, f"m{i}").json() for i in range(3)]
    r = client.get("/versions")
    assert [v["id"] for v in r.json()["versions"]] == ["v3", "v2", "v1"]
    r = client.get("/versions", params={"Limit": 1, "Marker": "v3"})
    assert [v["id"] for v in r.json()["versions"]] == ["v2"]
    assert client.get("/versions/v2").json()["message"] == "m1"
    assert client.get("/versions/v7").status_code == 404
    assert client.get("/versions/xx").status_code == 400
    r = client.put("/versions/tags/release-1", json={"version": "v2"})
    assert r.status_code == 201 and r.json()["version"] == "v2"
    assert client.put("/versions/tags/release-1", json={"version": "v3"}).status_code == 409
    assert client.put("/versions/tags/t", json={"version": "v9"}).status_code == 404
    assert [t["name"] for t in client.get("/versions/tags").json()["tags"]] == ["release-1"]
    assert client.get("/versions/v2").json()["tags"] == ["release-1"]
    tagged = Client(client.endpoint, "test_user1", client.domain + "@release-1")
    assert tagged.get("/").status_code == 200

    when = datetime.fromtimestamp(ids[1]["created"] + 0.0001, UTC).isoformat()
    at = Client(client.endpoint, "test_user1", client.domain + "@" + when)
    assert at.get("/").json()["lastModified"] == ids[1]["created"]
    # forgetting: a tagged version is kept, an untagged one goes
    assert client.delete("/versions/v2").status_code == 409
    assert client.delete("/versions/v1").status_code == 200
    assert [v["id"] for v in client.get("/versions").json()["versions"]] == ["v3", "v2"]
    assert client.get("/versions/v1").status_code == 404
    assert client.delete("/versions/tags/release-1").status_code == 200
    assert client.get("/versions/tags/release-1").status_code == 404


def test_acls_on_versions(client: Client) -> None:
    assert _commit(client).status_code == 201
    other = Client(client.endpoint, "test_user2", client.domain)
    assert other.post("/versions", json={}).status_code == 403
    assert other.get("/versions").status_code in (200, 403)
    r = client.put("/acls/test_user2", json={"read": True, "update": False})
    assert r.status_code == 201
    assert other.get("/versions").status_code == 200
    assert Client(client.endpoint, "test_user2", client.domain + "@v1").get("/").status_code == 200
    assert other.post("/versions", json={}).status_code == 403
    assert other.put("/versions/tags/a", json={"version": "v1"}).status_code == 403
    assert other.delete("/versions/v1").status_code == 403


def test_diff_and_restore(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("x", data=np.arange(100, dtype="f4"), chunks=(10,))
        f.attrs["a"] = 1
    assert _commit(client).status_code == 201
    with _h5(ep, d, "a") as f:
        f["x"][0:25] = 7
        f.attrs["a"] = 2
        f.create_group("new")
    r = client.get("/versions/diff", params={"from": "v1"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["to"] == "head" and [a["path"] for a in body["added"]] == ["/new"]
    changed = {c["path"]: c for c in body["changed"]}
    assert changed["/x"]["chunks"] == {"count": 3, "indices": ["0", "1", "2"]}
    assert changed["/"]["attributes"]["changed"] == ["a"] and changed["/"]["links"]["added"] == ["new"]
    assert client.post("/versions/v1/restore", json={}).status_code == 409  # uncommitted changes
    assert _commit(client).status_code == 201
    r = client.get("/versions/diff", params={"from": "v1", "to": "v2", "Limit": 1})
    assert {c["path"]: c for c in r.json()["changed"]}["/x"]["chunks"] == {"count": 3, "indices": ["0"]}
    r = client.post("/versions/v1/restore", json={})
    assert r.status_code == 200, r.text
    with _h5(ep, d) as f:
        assert np.array_equal(f["x"][:], np.arange(100, dtype="f4")) and f.attrs["a"] == 1 and "new" not in f
    assert client.get("/versions/diff", params={"from": "v1"}).json()["changed"] == []
    assert client.post("/versions/v2/restore", json={}).status_code == 409  # restored, not committed
    assert _commit(client).status_code == 201
    assert client.post("/versions/v2/restore", json={}).status_code == 200
    with _h5(ep, d) as f:
        assert f["x"][0] == 7 and "new" in f


def test_chunks_are_stored_once_by_content(client: Client, raw_store: RawStore) -> None:
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        # past the compact-values limit, so the chunks are objects of their own
        f.create_dataset("x", data=np.zeros(100_000, dtype="f8"), chunks=(10_000,))
        f.create_dataset("y", data=np.arange(100_000, dtype="f8"), chunks=(10_000,))
    before = set(raw_store.list_keys())
    assert _commit(client).status_code == 201
    blobs = {k for k in set(raw_store.list_keys()) - before if k.endswith(".blob")}
    assert len(blobs) == 11  # ten chunks of y and one all-zero chunk shared by x's ten
    with _h5(ep, d, "a") as f:
        f["y"][0:50] = 0.5
    before = set(raw_store.list_keys())
    assert _commit(client).status_code == 201
    assert len({k for k in set(raw_store.list_keys()) - before if k.endswith(".blob")}) == 1


def test_fork_is_copy_on_write(client: Client, raw_store: RawStore) -> None:
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("x", data=np.arange(100, dtype="f4"), chunks=(10,))
        f.create_group("g").attrs["a"] = 3
    assert _commit(client).status_code == 201
    with _h5(ep, d, "a") as f:
        f["x"][:] = 0
    new = d.replace(".h5", "-fork.h5")
    fork = Client(ep, "test_user1", new)
    before = len(raw_store.list_keys())
    r = fork.put("/", json={"from": d + "@v1"})
    assert r.status_code == 201, r.text
    assert r.json()["root"] != client.get("/").json()["root"] and r.json()["owner"] == "test_user1"
    assert len(raw_store.list_keys()) - before <= 8  # documents and catalogs, no chunk copied
    with _h5(ep, new, "a") as f:
        assert np.array_equal(f["x"][:], np.arange(100, dtype="f4")) and f["g"].attrs["a"] == 3
        f["x"][3] = -5  # a partial write of a chunk it never wrote keeps the rest of that chunk
    with _h5(ep, new) as f:
        expect = np.arange(100, dtype="f4")
        expect[3] = -5
        assert np.array_equal(f["x"][:], expect)
    with _h5(ep, d + "@v1") as f:
        assert f["x"][3] == 3  # the source version is untouched
    assert fork.post("/versions", json={}).status_code == 201
    with _h5(ep, new + "@v1") as f:
        assert np.array_equal(f["x"][:], expect)
    # forking the head commits it first
    head_fork = Client(ep, "test_user1", d.replace(".h5", "-fork2.h5"))
    assert head_fork.put("/", json={"from": d}).status_code == 201
    assert [v["id"] for v in client.get("/versions").json()["versions"]] == ["v2", "v1"]
    with _h5(ep, head_fork.domain) as f:
        assert not f["x"][:].any()
    # a fork needs read on the source
    other = Client(ep, "test_user2", "/home/test_user2/f.h5")
    other.session.put(ep + "/", params={"domain": "/home/test_user2"}, json={"folder": True})
    assert other.put("/", json={"from": d + "@v1"}).status_code == 403


def test_hsls_and_export_of_a_tagged_version(client: Client, tmp_path: Path) -> None:
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("x", data=np.arange(50, dtype="i4"), chunks=(8,))
    assert _commit(client).status_code == 201
    assert client.put("/versions/tags/release-1", json={"version": "v1"}).status_code == 201
    with _h5(ep, d, "a") as f:
        f["x"][:] = 0
        f.create_group("later")
    env = clean_env(tmp_path, {"HS_ENDPOINT": ep, "HS_USERNAME": "test_user1", "HS_PASSWORD": auth("test_user1")[1]})
    hsls = subprocess.run([str(Path(sys.executable).parent / "hsls"), "-r", d + "@release-1"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert hsls.returncode == 0, hsls.stderr
    assert "/x" in hsls.stdout and "later" not in hsls.stdout
    out = tmp_path / "v1.h5"
    done = run_h5lake("export", d + "@release-1", str(out), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    with h5py.File(out) as f:
        assert list(f) == ["x"] and np.array_equal(f["x"][:], np.arange(50, dtype="i4"))


def test_forked_dataset_shrunk_and_grown_shows_fill(client: Client, raw_store: RawStore) -> None:
    ep, d = client.endpoint, client.domain
    n = 100_000  # past the compact-values limit: chunk objects
    with _h5(ep, d, "a") as f:
        f.create_dataset("x", data=np.arange(n, dtype="f4") + 1, chunks=(10_000,), maxshape=(None,))
    assert _commit(client).status_code == 201
    new = d.replace(".h5", "-shrunk.h5")
    fork = Client(ep, "test_user1", new)
    assert fork.put("/", json={"from": d + "@v1"}).status_code == 201
    with _h5(ep, new, "a") as f:
        f["x"].resize((25_000,))
    with _h5(ep, new, "a") as f:
        assert np.array_equal(f["x"][:], np.arange(25_000, dtype="f4") + 1)
        f["x"].resize((n,))
    expect = np.zeros(n, "f4")
    expect[:25_000] = np.arange(25_000, dtype="f4") + 1
    with _h5(ep, new) as f:
        assert np.array_equal(f["x"][:], expect)  # fill, not the source version's values
    with _h5(ep, d + "@v1") as f:
        assert np.array_equal(f["x"][:], np.arange(n, dtype="f4") + 1)  # the version is untouched
    with _h5(ep, d) as f:
        assert np.array_equal(f["x"][:], np.arange(n, dtype="f4") + 1)  # so is the source's head


def test_fork_renames_the_datasets_region_references_name(client: Client) -> None:
    """A fork gives its objects new ids and renamed them in links, types and object references,
    but not in region references (``{"id": "datasets/d-...", ...}``, nor in a blob stored in base64
    before that form was answered): the fork's region references named the source's dataset, and
    h5pyd refused them on the fork's ("Region reference must point to this dataset")."""
    ep, d = client.endpoint, client.domain
    data = np.arange(100).reshape(10, 10)
    with _h5(ep, d, "a") as f:
        dset = f.create_dataset("d", data=data)
        f.attrs["box"] = dset.regionref[1:3, 2:5]
        f.attrs["stepped"] = dset.regionref[0:10:3, 1]  # h5json's selection_dict
        source_id = dset.id.id
    blob = b'{"id":"datasets/%s","select_type":"H5S_SEL_POINTS","selection":[[9,9],[0,1]]}' % source_id.encode()
    root = client.get("/").json()["root"]
    body = {"type": {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}, "shape": "H5S_SCALAR",
            "value": base64.b64encode(blob).decode()}  # a blob as stored before, in base64
    assert client.put(f"/groups/{root}/attributes/points", json=body).status_code == 201
    assert _commit(client).status_code == 201
    fork = Client(ep, "test_user1", d.replace(".h5", "-regions.h5"))
    assert fork.put("/", json={"from": d + "@v1"}).status_code == 201
    with _h5(ep, fork.domain) as f:
        dset = f["d"]
        assert dset.id.id != source_id
        np.testing.assert_array_equal(dset[f.attrs["box"]], data[1:3, 2:5])
        np.testing.assert_array_equal(np.ravel(dset[f.attrs["stepped"]]), data[0:10:3, 1])  # (h5pyd: in its selection's shape)
        np.testing.assert_array_equal(dset[f.attrs["points"]], [99, 1])
    with _h5(ep, d + "@v1") as f:  # the source version still names its own dataset
        np.testing.assert_array_equal(f["d"][f.attrs["box"]], data[1:3, 2:5])
