"""The parts around the round trip: the comparer notices what it must, settings resolve as in
h5pyd, and the ``h5lake load``/``export`` commands work end to end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from h5py import h5t

from h5lake.cli.command import main
from h5lake.client.rest import resolve_settings
from tests.roundtrip.compare import compare_files
from tests.roundtrip.corpus import raw_attr, string_type
from tests.support.server import USERS, Server


def _base(path: Path, *, pad: int = h5t.STR_NULLPAD, fill: float = 1.0, chunks: tuple[int, ...] = (2,),
          order: tuple[str, ...] = ("b", "a"), value: float = np.nan, shared: bool = True) -> None:
    with h5py.File(path, "w", track_order=True) as f:
        f["t"] = np.dtype("<i4")
        for name in order:
            f.create_group(name)
        raw_attr(f, "s", string_type(4, pad), (), b"ab\0\0")
        f.create_dataset("d", data=np.array([value, 2.0, 3.0]), chunks=chunks, fillvalue=fill)
        f.create_dataset("c", shape=(2,), dtype=f["t"] if shared else np.dtype("<i4"))
        f["b"]["link"] = f["a"]


CHANGES: dict[str, tuple[dict[str, object], str]] = {
    "string padding": ({"pad": h5t.STR_NULLTERM}, "/@s: type differs"),
    "fill value": ({"fill": 2.0}, "/d: fill value differs"),
    "chunk shape": ({"chunks": (3,)}, "/d: chunk shape differs"),
    "link order": ({"order": ("a", "b")}, "/: link order differs"),
    "a value": ({"value": 1.0}, "/d: values differs"),
    "committed type": ({"shared": False}, "/c: type committed differs"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_compare_notices(change: str, tmp_path: Path) -> None:
    kwargs, expected = CHANGES[change]
    _base(tmp_path / "a.h5")
    _base(tmp_path / "b.h5")
    _base(tmp_path / "c.h5", **kwargs)  # type: ignore[arg-type]
    assert compare_files(str(tmp_path / "a.h5"), str(tmp_path / "b.h5")) == []  # NaN == NaN
    diffs = compare_files(str(tmp_path / "a.h5"), str(tmp_path / "c.h5"))
    assert any(d.startswith(expected) for d in diffs), diffs


def test_compare_notices_hard_link_topology(tmp_path: Path) -> None:
    """Two names for one group, against two groups with those names."""
    for name, same in (("one.h5", True), ("two.h5", False)):
        with h5py.File(tmp_path / name, "w") as f:
            f.create_group("x")
            if same:
                f["y"] = f["x"]
            else:
                f.create_group("y")
    diffs = compare_files(str(tmp_path / "one.h5"), str(tmp_path / "two.h5"))
    assert any(d.startswith("/y: link differs") for d in diffs), diffs


def test_settings_like_h5pyd(tmp_path: Path) -> None:
    cfg = tmp_path / "hscfg"
    cfg.write_text("# h5pyd config\nhs_endpoint = http://cfg:1\nhs_username = cfg_user\nhs_password = cfg_pw\n")
    from_file = resolve_settings(environ={}, config_file=cfg)
    assert (from_file.endpoint, from_file.username, from_file.password) == ("http://cfg:1", "cfg_user", "cfg_pw")
    env = {"HS_ENDPOINT": "http://env:2/", "HS_USERNAME": "env_user"}
    from_env = resolve_settings(environ=env, config_file=cfg)
    assert (from_env.endpoint, from_env.username, from_env.password) == ("http://env:2", "env_user", "cfg_pw")
    given = resolve_settings("http://opt:3", "opt_user", "opt_pw", environ=env, config_file=cfg)
    assert (given.endpoint, given.username, given.password) == ("http://opt:3", "opt_user", "opt_pw")


def test_cli_load_and_export(corpus: dict[str, Path], server: Server, new_domain: Callable[[str], str], tmp_path: Path) -> None:
    runner = CliRunner()
    domain = new_domain("cli")
    creds = ["-e", server.endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    loaded = runner.invoke(main, ["load", str(corpus["external_storage"]), domain, *creds])
    assert loaded.exit_code == 0, loaded.output
    assert "note: dataset /external: values from 2 external file(s) copied in" in loaded.output
    assert f"into {domain}: 1 groups, 1 datasets" in loaded.output and "MiB/s" in loaded.output

    target = tmp_path / "out.h5"
    exported = runner.invoke(main, ["export", domain, str(target), *creds])
    assert exported.exit_code == 0, exported.output
    assert "external storage written as an ordinary dataset" in exported.output
    assert f"exported {domain} to {target}" in exported.output and "objects/s" in exported.output
    with h5py.File(target, "r") as f:
        assert f["external"][...].tolist() == [0, 11, 22, 33, 44]

    again = runner.invoke(main, ["export", domain, str(target), *creds])
    assert again.exit_code == 1 and "exists (use --overwrite" in again.output

    refused = runner.invoke(main, ["load", str(corpus["empty"]), domain, *creds])
    assert refused.exit_code == 1 and "already exists" in refused.output


def test_cli_refuses_a_non_hdf5_file(tmp_path: Path, server: Server, new_domain: Callable[[str], str]) -> None:
    text = tmp_path / "notes.h5"
    text.write_text("not HDF5")
    result = CliRunner().invoke(main, ["load", str(text), new_domain("text"), "-e", server.endpoint, "-u", "test_user1", "-p", USERS["test_user1"]])
    assert result.exit_code == 1
    assert f"Error: {text} is not an HDF5 file" in result.output
