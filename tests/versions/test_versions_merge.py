"""Merging a fork back into its source and cherry-picking a version, over plain HTTP and read
back through unchanged h5pyd (docs/versions.md, "Merge and cherry-pick")."""

from __future__ import annotations

import numpy as np
import requests
from tests.conftest import Client
from tests.versions.test_versions_http import _h5


def _setup(client: Client) -> Client:
    """The source at v1 (x: 0..99 in chunks of 10, group g with attribute a) and a fork of v1."""
    ep, d = client.endpoint, client.domain
    with _h5(ep, d, "a") as f:
        f.create_dataset("x", data=np.arange(100, dtype="i4"), chunks=(10,))
        g = f.create_group("g")
        g.attrs["a"] = 1
        g.attrs["b"] = 1
    assert client.post("/versions", json={"message": "v1"}).status_code == 201
    fork = Client(ep, "test_user1", d.replace(".h5", "-fork.h5"))
    r = fork.put("/", json={"from": d + "@v1"})
    assert r.status_code == 201, r.text
    return fork


def _merge(client: Client, fork: Client, **extra: object) -> requests.Response:
    return client.post("/versions/merge", json={"from": fork.domain, **extra})


def test_merge_without_conflicts_takes_each_sides_changes(client: Client) -> None:
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:  # theirs: chunk 0, attribute a, a new dataset referring to x
        f["x"][0:3] = [-1, -2, -3]
        f["g"].attrs["a"] = 2
        y = f["g"].create_dataset("y", data=np.full(5, 7, "i2"))
        y.attrs["ref"] = f["x"].ref
    with _h5(ep, d, "a") as f:  # ours: chunk 9, attribute b, a new group
        f["x"][95] = 500
        f["g"].attrs["b"] = 3
        f.create_group("h")
    r = _merge(client, fork, message="bring back")
    assert r.status_code == 201, (r.text, r.headers, r.history, r.request.url)
    out = r.json()
    assert out["message"] == "bring back" and out["conflicts"] if "conflicts" in out else True
    assert out["parents"][0] == out["parent"] and out["parents"][1].startswith(fork.domain + "@v")
    listed = client.get("/versions").json()["versions"][0]
    assert listed["id"] == out["id"] and listed["parents"] == out["parents"]
    expect = np.arange(100, dtype="i4")
    expect[0:3] = [-1, -2, -3]
    expect[95] = 500
    for name in (d, f"{d}@{out['id']}"):  # the head became the merged version
        with _h5(ep, name) as f:
            assert np.array_equal(f["x"][:], expect)
            assert f["g"].attrs["a"] == 2 and f["g"].attrs["b"] == 3
            assert "h" in f and list(f["g/y"][:]) == [7] * 5
            assert f[f["g/y"].attrs["ref"]].name == "/x"  # the reference names the target's x
            assert f["g/y"].id.id not in str(fork.get("/").json())
    with _h5(ep, f"{d}@{out['parents'][0]}") as f:  # ours, committed first
        assert f["x"][0] == 0 and f["x"][95] == 500 and "y" not in f["g"]
    with _h5(ep, out["parents"][1].replace("@", "@", 1)) as f:  # theirs, read as FORK@REF
        assert f["x"][0] == -1 and f["x"][95] == 95
