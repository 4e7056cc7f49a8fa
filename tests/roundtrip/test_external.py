"""External File List datasets through ``h5lake load`` and ``export`` (issue 15): raw files
found as HDF5 finds them (beside the file, or under an external-file prefix), missing ones
named before anything is sent, and export writing them inline or, with --keep-external, again
as raw files."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
import requests
from click.testing import CliRunner

from h5lake.cli.command import main
from h5lake.client.h5source import working_directory
from h5lake.client.rest import Settings
from tests.roundtrip.compare import compare_files


def _striped(folder: Path, raw_folder: Path, stem: str) -> Path:
    """Two datasets striped over three raw files in ``raw_folder``, named relative to it."""
    path = folder / f"{stem}.h5"
    folder.mkdir(parents=True, exist_ok=True)
    raw_folder.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        ext = [(f"{stem}_a.raw", 0, 40), (f"{stem}_b.raw", 16, 24), (f"{stem}_c.raw", 0, 16)]
        d = f.create_dataset("striped", shape=(10,), dtype="<i8", external=ext, efile_prefix=str(raw_folder))
        d[...] = np.arange(10) * 7
        e = f.create_dataset("grid", shape=(3, 4), dtype=">f4", external=[(f"{stem}_grid.raw", 8, 48)], efile_prefix=str(raw_folder))
        e[...] = np.arange(12, dtype=">f4").reshape(3, 4) / 4
    return path


def _run(settings: Settings, *args: str) -> tuple[int, str]:
    creds = ["-e", settings.endpoint, "-u", settings.username, "-p", settings.password]
    result = CliRunner().invoke(main, [*args, *creds])
    return result.exit_code, result.output


def _h5diff(a: Path, b: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("h5diff") is None:
        pytest.skip("h5diff not installed")
    return subprocess.run(["h5diff", "-c", str(a), str(b)], capture_output=True, text=True, cwd=cwd, check=False, env={"HDF5_EXTFILE_PREFIX": "${ORIGIN}", "PATH": "/usr/bin:/bin"})


def test_raw_files_beside_the_file(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    source = _striped(tmp_path / "in", tmp_path / "in", "beside")
    domain = new_domain("ext")
    code, out = _run(settings, "load", str(source), domain)
    assert code == 0, out
    assert "external file(s) copied in" in out
    inline, kept = tmp_path / "inline" / "beside.h5", tmp_path / "kept" / "beside.h5"
    for target in (inline, kept):
        target.parent.mkdir()
    code, out = _run(settings, "export", domain, str(inline))
    assert code == 0 and "--keep-external" in out, out
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the raw files go beside the file, whatever the working directory
    code, out = _run(settings, "export", domain, str(kept), "--keep-external")
    assert code == 0, out
    assert list(elsewhere.iterdir()) == []
    with h5py.File(inline, "r") as f:
        assert f["striped"].id.get_create_plist().get_external_count() == 0
        np.testing.assert_array_equal(f["striped"][...], np.arange(10) * 7)
        np.testing.assert_array_equal(f["grid"][...], np.arange(12).reshape(3, 4) / 4)
    assert sorted(p.name for p in kept.parent.iterdir()) == ["beside.h5", "beside_a.raw", "beside_b.raw", "beside_c.raw", "beside_grid.raw"]
    assert compare_files(str(source), str(kept)) == []
    run = _h5diff(source, kept, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    # plain HTTP sees the values
    auth = (settings.username, settings.password)
    root = requests.get(f"{settings.endpoint}/", params={"domain": domain}, auth=auth, timeout=30).json()["root"]
    link = requests.get(f"{settings.endpoint}/groups/{root}/links/striped", params={"domain": domain}, auth=auth, timeout=30).json()["link"]
    value = requests.get(f"{settings.endpoint}/datasets/{link['id']}/value", params={"domain": domain}, auth=auth, timeout=30).json()["value"]
    assert value == [i * 7 for i in range(10)]


def test_raw_files_under_a_prefix(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    source = _striped(tmp_path / "in", tmp_path / "raw", "prefixed")
    domain = new_domain("ext")
    code, out = _run(settings, "load", str(source), domain)
    assert code != 0
    for name in ("prefixed_a.raw", "prefixed_b.raw", "prefixed_c.raw", "prefixed_grid.raw", "/striped", "/grid", "--external-prefix"):
        assert name in out, out
    # the streaming load found the missing files on its way and deleted the domain (410 Gone)
    assert requests.get(f"{settings.endpoint}/", params={"domain": domain}, auth=(settings.username, settings.password), timeout=30).status_code in (404, 410)
    code, out = _run(settings, "load", str(source), domain, "--external-prefix", str(tmp_path / "raw"))
    assert code == 0, out
    target = tmp_path / "out" / "prefixed.h5"
    target.parent.mkdir()
    code, out = _run(settings, "export", domain, str(target), "--keep-external")
    assert code == 0, out
    with working_directory(str(target.parent)), h5py.File(target, "r") as f:  # HDF5 looks in the working directory
        assert f["striped"].id.get_create_plist().get_external_count() == 3
        np.testing.assert_array_equal(f["striped"][...], np.arange(10) * 7)


def test_one_missing_file_is_named(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    source = _striped(tmp_path, tmp_path, f"one-{uuid.uuid4().hex[:6]}")
    (tmp_path / f"{source.stem}_b.raw").unlink()
    code, out = _run(settings, "load", str(source), new_domain("ext"))
    assert code != 0
    assert f"dataset /striped: {source.stem}_b.raw" in out, out
    assert f"{source.stem}_a.raw" not in out
