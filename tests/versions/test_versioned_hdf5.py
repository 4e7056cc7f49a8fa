"""versioned-hdf5 files in and out: ``h5lake load`` of a file versioned-hdf5 wrote keeps every
version (data, names as tags, timestamps); ``h5lake export --all-versions`` writes a file that
versioned-hdf5 opens with the same versions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import h5py
import numpy as np
import versioned_hdf5
from tests.conftest import Client, auth
from tests.support.cli import clean_env, run_h5lake

STAMPS = [datetime(2025, 1, d, 12, 0, tzinfo=UTC) for d in (1, 2, 3)]


def expected() -> list[dict[str, np.ndarray]]:
    x = np.arange(40, dtype="f8")
    x2 = x.copy()
    x2[5] = -1
    return [
        {"x": x, "grp/y": np.array([1, 2, 3], "i4")},
        {"x": x2, "grp/y": np.array([1, 2, 3], "i4"), "z": np.ones((3, 2), "i2")},
        {"x": np.concatenate([x2, [7.0, 8.0]]), "z": np.ones((3, 2), "i2")},
    ]


def make_file(path: Path) -> None:
    with h5py.File(path, "w") as f:
        vf = versioned_hdf5.VersionedHDF5File(f)
        with vf.stage_version("r1", timestamp=STAMPS[0]) as g:
            g.create_dataset("x", data=np.arange(40, dtype="f8"), chunks=(8,), maxshape=(None,))
            g["x"].attrs["unit"] = "m"
            g.create_group("grp").create_dataset("y", data=np.array([1, 2, 3], "i4"), chunks=(2,))
        with vf.stage_version("r2", timestamp=STAMPS[1]) as g:
            g["x"][5] = -1
            g.create_dataset("z", data=np.ones((3, 2), "i2"), chunks=(2, 2))
        with vf.stage_version("r3", timestamp=STAMPS[2]) as g:
            g["x"].resize((42,))
            g["x"][40:] = [7.0, 8.0]
            del g["grp"]


def test_load_and_export_all_versions(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "versioned.h5"
    make_file(source)
    domain = client.domain.replace(".h5", "-v.h5")
    env = clean_env(tmp_path, {"HS_ENDPOINT": client.endpoint, "HS_USERNAME": "test_user1",
                               "HS_PASSWORD": auth("test_user1")[1]})
    done = run_h5lake("load", str(source), domain, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    c = Client(client.endpoint, "test_user1", domain)
    history = c.get("/versions").json()["versions"][::-1]
    assert [v["message"] for v in history] == ["r1", "r2", "r3"]
    assert [v["created"] for v in history] == [s.timestamp() for s in STAMPS]
    assert {t["name"]: t["version"] for t in c.get("/versions/tags").json()["tags"]} == {
        "r1": "v1", "r2": "v2", "r3": "v3"}
    for name, want in zip(("r1", "r2", "r3"), expected()):
        out = tmp_path / f"{name}.h5"
        done = run_h5lake("export", f"{domain}@{name}", str(out), cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        with h5py.File(out) as f:
            found = {}
            f.visititems(lambda p, o: found.__setitem__(p, o[()]) if isinstance(o, h5py.Dataset) else None)
            assert sorted(found) == sorted(want), name
            for path, values in want.items():
                assert np.array_equal(found[path], values), (name, path)
            assert f["x"].attrs["unit"] == "m"
    # and back out: a file versioned-hdf5 opens with the same versions
    target = tmp_path / "out.h5"
    done = run_h5lake("export", domain, str(target), "--all-versions", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    with h5py.File(target, "r") as f:
        vf = versioned_hdf5.VersionedHDF5File(f)
        assert list(vf.versions) == ["r1", "r2", "r3"] and vf.current_version == "r3"
        for name, want in zip(("r1", "r2", "r3"), expected()):
            group = vf[name]
            for path, values in want.items():
                assert np.array_equal(group[path][()], values), (name, path)
            assert ("grp" in group) == ("grp/y" in want)
            stamp = f[f"_version_data/versions/{name}"].attrs["timestamp"]
            assert json.dumps(str(stamp)).startswith(f'"{STAMPS[int(name[1]) - 1]:%Y-%m-%d %H:%M:%S}')
