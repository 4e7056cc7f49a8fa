"""Large attributes (values kept outside their object's document, docs/storage.md "Large
attributes") through unchanged h5pyd, versions, forks, restore, gc, export and load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import h5pyd
import numpy as np
from tests.conftest import Client, RawStore, auth
from tests.support.cli import clean_env, run_h5lake

from h5lake.model.ids import attribute_values_prefix, object_key

N = 140_000  # float64: 1.1 MB, past the 1 MiB an attribute may take inside its object's document


def _h5(client: Client, domain: str | None = None, mode: str = "r") -> h5pyd.File:
    return h5pyd.File(domain or client.domain, mode, endpoint=client.endpoint, username="test_user1",
                      password=auth("test_user1")[1])


def _values(k: float) -> np.ndarray:
    return np.arange(N, dtype="f8") * k


def test_h5pyd_writes_and_reads_a_large_attribute(client: Client, raw_store: RawStore) -> None:
    with _h5(client, mode="a") as f:
        f.attrs["big"] = _values(0.5)
        g = f.create_group("g")
        g.attrs["text"] = "x" * 1_100_000  # a string of 1.1 MB
        g.attrs["small"] = 3
    with _h5(client) as f:
        assert np.array_equal(f.attrs["big"], _values(0.5))
        assert f["g"].attrs["text"] == "x" * 1_100_000 and f["g"].attrs["small"] == 3
        assert sorted(f["g"].attrs) == ["small", "text"]
        root = f.id.uuid
    doc = raw_store.read(object_key(root))
    assert doc is not None and len(doc) < 10_000  # the value is an object of its own
    assert len(raw_store.list_keys(attribute_values_prefix(root))) == 1
    with _h5(client, mode="a") as f:  # h5pyd overwrites by a PUT of the new value
        f.attrs["big"] = _values(2.0)
    with _h5(client) as f:
        assert np.array_equal(f.attrs["big"], _values(2.0))
    assert len(raw_store.list_keys(attribute_values_prefix(root))) == 1
    assert client.delete(f"/groups/{root}/attributes/big").status_code == 200
    with _h5(client) as f:
        assert "big" not in f.attrs
    assert raw_store.list_keys(attribute_values_prefix(root)) == []


def test_versions_forks_restore_and_gc_keep_large_attributes(client: Client, raw_store: RawStore,
                                                              tmp_path: Path) -> None:
    with _h5(client, mode="a") as f:
        f.attrs["big"] = _values(1.0)
    assert client.post("/versions", json={}).status_code == 201
    with _h5(client, mode="a") as f:
        f.attrs["big"] = _values(3.0)
    diff = client.get("/versions/diff", params={"from": "v1"}).json()
    assert {c["path"]: c for c in diff["changed"]}["/"]["attributes"]["changed"] == ["big"]
    with _h5(client, client.domain + "@v1") as f:
        assert np.array_equal(f.attrs["big"], _values(1.0))
    r = client.get(f"/groups/{client.get('/').json()['root']}/attributes/big", params={"encoding": "base64"})
    assert r.status_code == 200
    # a fork of v1 reads v1's value; it writes its own without touching v1's
    fork = Client(client.endpoint, "test_user1", client.domain.replace(".h5", "-fork.h5"))
    assert fork.put("/", json={"from": client.domain + "@v1"}).status_code == 201
    with _h5(client, fork.domain, "a") as f:
        assert np.array_equal(f.attrs["big"], _values(1.0))
        f.attrs["big"] = _values(7.0)
    with _h5(client, fork.domain) as f:
        assert np.array_equal(f.attrs["big"], _values(7.0))
    # gc keeps what a live version names, however old
    env = clean_env(tmp_path)
    data = raw_store.root if hasattr(raw_store, "root") else None
    if data is not None:
        done = run_h5lake("gc", "--data", str(data), "--grace", "0", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
    with _h5(client, client.domain + "@v1") as f:
        assert np.array_equal(f.attrs["big"], _values(1.0))
    with _h5(client, fork.domain) as f:
        assert np.array_equal(f.attrs["big"], _values(7.0))
    # restore puts v1's value back in the head
    assert client.post("/versions", json={}).status_code == 201
    assert client.post("/versions/v1/restore", json={}).status_code == 200
    with _h5(client) as f:
        assert np.array_equal(f.attrs["big"], _values(1.0))
    assert client.delete("/versions/v2").status_code == 200
    root = client.get("/").json()["root"]
    assert len(raw_store.list_keys(attribute_values_prefix(root))) == 1


def test_export_and_load_keep_large_attributes(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "in.h5"
    with h5py.File(source, "w", libver="latest") as f:  # dense attribute storage: HDF5's own large attributes
        f.create_dataset("d", data=np.arange(4))
        f["d"].attrs["big"] = _values(1.5)
    env = clean_env(tmp_path, {"HS_ENDPOINT": client.endpoint, "HS_USERNAME": "test_user1",
                               "HS_PASSWORD": auth("test_user1")[1]})
    target = client.domain.replace(".h5", "-loaded.h5")
    done = run_h5lake("load", str(source), target, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    with _h5(client, target) as f:
        assert np.array_equal(f["d"].attrs["big"], _values(1.5))
    # h5pyd's copy of a domain (hscp) reads and writes it through the API
    copy = client.domain.replace(".h5", "-copy.h5")
    hscp = subprocess.run([str(Path(sys.executable).parent / "hscp"), target, copy], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert hscp.returncode == 0, hscp.stderr
    with _h5(client, copy) as f:
        assert np.array_equal(f["d"].attrs["big"], _values(1.5))
    out = tmp_path / "out.h5"
    done = run_h5lake("export", target, str(out), cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    with h5py.File(out) as f:
        assert np.array_equal(f["d"].attrs["big"], _values(1.5))
