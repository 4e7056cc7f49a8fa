"""What a listing says of a domain (``GET /domains``, h5pyd's ``Folder`` that hsls reads, the
web view's folder page): its last change follows writes below the domain document, and its size
counts a map's pairs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import h5pyd
import numpy as np
import requests
from tests.conftest import Client, auth
from tests.support.server import USERS


def _folder_times(endpoint: str, folder: str, name: str) -> dict[str, float]:
    """The domain's ``lastModified`` in each listing: h5pyd's Folder (as ``hsls`` and
    ``hsls -v`` ask), and the web view's folder page."""
    out = {}
    for verbose in (False, True):
        with h5pyd.Folder(folder + "/", endpoint=endpoint, username="test_user1",
                          password=USERS["test_user1"], verbose=verbose) as f:
            out[f"folder verbose={verbose}"] = float(f[name.rsplit("/", 1)[1]]["lastModified"])
    r = requests.get(endpoint + "/view/api/folder", params={"folder": folder}, auth=auth("test_user1"), timeout=30)
    assert r.status_code == 200, r.text
    [entry] = [e for e in r.json()["entries"] if e["name"] == name]
    out["view"] = float(entry["lastModified"])
    return out


def _until(check: Callable[[], bool], what: str) -> None:
    """Wait (at most 20 s) for the catalog flusher to catch up with a write."""
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_listed_last_change_follows_writes(endpoint: str, home_folder: str) -> None:
    folder = f"{home_folder}/times-{uuid.uuid4().hex[:8]}"
    assert Client(endpoint, "test_user1", folder).put("/", json={"folder": True}).status_code == 201
    name = f"{folder}/d.h5"
    client = Client(endpoint, "test_user1", name)
    assert client.put("/").status_code == 201
    created = client.get("/").json()["created"]
    assert set(_folder_times(endpoint, folder, name).values()) == {created}

    time.sleep(1.1)  # hsls shows whole seconds: a change a second later shows
    with h5pyd.File(name, "r+", endpoint=endpoint, username="test_user1", password=USERS["test_user1"]) as f:
        dset = f.create_dataset("v", shape=(100,), dtype="i4")
        f.attrs["a"] = 1  # the root group's document; the domain document is not rewritten
    _until(lambda: min(_folder_times(endpoint, folder, name).values()) >= created + 1,
           "the listings' lastModified after new objects")
    first = _folder_times(endpoint, folder, name)

    time.sleep(1.1)
    before = time.time()
    with h5pyd.File(name, "r+", endpoint=endpoint, username="test_user1", password=USERS["test_user1"]) as f:
        f["v"][:] = np.arange(100)  # values only: no document changes
    del dset
    _until(lambda: min(_folder_times(endpoint, folder, name).values()) >= before - 0.01,
           f"the listings' lastModified after a value write (were {first})")
    after = _folder_times(endpoint, folder, name)
    assert max(after.values()) <= time.time()
    # GET /?verbose=1 says the same
    assert client.get("/", params={"verbose": 1}).json()["lastModified"] == after["folder verbose=True"]


def test_listed_size_counts_map_pairs(endpoint: str, home_folder: str) -> None:
    folder = f"{home_folder}/sizes-{uuid.uuid4().hex[:8]}"
    assert Client(endpoint, "test_user1", folder).put("/", json={"folder": True}).status_code == 201
    name = f"{folder}/m.h5"
    client = Client(endpoint, "test_user1", name)
    assert client.put("/").status_code == 201
    root = client.get("/").json()["root"]
    r = client.post("/maps", json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE",
                                   "link": {"id": root, "name": "m"}})
    assert r.status_code == 201, r.text
    map_id = r.json()["id"]
    values = np.random.default_rng(7).random(20_000)  # random: lz4 leaves them about as long
    # (the keys 0..19999 compress to little)
    r = client.put(f"/maps/{map_id}/keys", json={"keys": list(range(20_000)), "values": values.tolist()})
    assert r.status_code == 200, r.text
    value_bytes = 20_000 * 8

    def listed() -> int:
        r = requests.get(endpoint + "/domains", params={"domain": folder + "/", "verbose": 1},
                         auth=auth("test_user1"), timeout=30)
        [entry] = [d for d in r.json()["domains"] if d["name"] == name]
        return int(entry["total_size"])

    _until(lambda: listed() > value_bytes * 0.9, "the map's pairs in the listed size")
    assert client.get("/", params={"verbose": 1}).json()["total_size"] == listed()
    r = requests.get(endpoint + "/view/api/folder", params={"folder": folder}, auth=auth("test_user1"), timeout=30)
    [entry] = [e for e in r.json()["entries"] if e["name"] == name]
    assert entry["size"] == listed()
