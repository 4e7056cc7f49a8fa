"""An optional package that is not installed (h5pyd, versioned-hdf5: the ``client`` extra) is the
user's install, not a bug: the real command says in one line which extra to install.

The missing package is simulated by a folder first on ``PYTHONPATH`` holding a package of that
name whose import raises ``ModuleNotFoundError`` as a missing one does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import versioned_hdf5
from tests.conftest import Client, auth
from tests.support.cli import clean_env, one_error_line, run_h5lake

pytestmark = pytest.mark.one_backend  # the command line's message, the same on every store

INSTALL = "pip install 'h5lake[client]'"


def without(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment in which ``modules`` cannot be imported."""
    stub = tmp_path / "missing"
    for name in modules:
        (stub / name).mkdir(parents=True, exist_ok=True)
        (stub / name / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\", name='{name}')\n")
    paths = [str(stub), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {"PYTHONPATH": os.pathsep.join(paths)}


def versioned_file(path: Path) -> Path:
    with h5py.File(path, "w") as f, versioned_hdf5.VersionedHDF5File(f).stage_version("r1") as g:
        g.create_dataset("x", data=np.arange(4.0), chunks=(2,))
    return path


@pytest.mark.parametrize("missing", ["versioned_hdf5", "h5pyd"])
def test_load_of_a_versioned_file_names_the_extra(client: Client, tmp_path: Path, missing: str) -> None:
    """Before: "unexpected ModuleNotFoundError ... (a bug in h5lake: please report it ...)"."""
    source = versioned_file(tmp_path / "v.h5")
    env = {"HS_ENDPOINT": client.endpoint, "HS_USERNAME": "test_user1", "HS_PASSWORD": auth("test_user1")[1],
           **without(tmp_path, missing)}
    line = one_error_line(run_h5lake("load", str(source), client.domain.replace(".h5", "-v.h5"), cwd=tmp_path, env=env))
    assert INSTALL in line and "bug" not in line, line
    package = "versioned-hdf5" if missing == "versioned_hdf5" else "h5pyd"
    assert package in line, line


def test_export_all_versions_names_the_extra(client: Client, tmp_path: Path) -> None:
    env = {"HS_ENDPOINT": client.endpoint, "HS_USERNAME": "test_user1", "HS_PASSWORD": auth("test_user1")[1],
           **without(tmp_path, "versioned_hdf5")}
    line = one_error_line(run_h5lake("export", "--all-versions", client.domain, str(tmp_path / "out.h5"), cwd=tmp_path, env=env))
    assert INSTALL in line and "versioned-hdf5" in line, line


def test_the_map_client_names_the_extra(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from h5lake.client import Map"], env=clean_env(tmp_path, without(tmp_path, "h5pyd")),
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "ImportError" in last or "MissingExtra" in last, done.stderr
    assert INSTALL in last and "h5pyd" in last, last
