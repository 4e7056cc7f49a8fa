"""The README's linking commands, run as the real ``h5lake`` command in a subprocess (issue 17,
item 9: the README sent users to ``hsload --link``, which h5pyd 1.0 cannot do)."""

from __future__ import annotations

import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.conftest import Client
from tests.linked.test_load_link import REF_CLASSES, _day, _h5pyd, _layouts, _mixed, _same
from tests.support.cli import one_error_line, run_h5lake
from tests.support.server import USERS

CREDS = ["-u", "test_user1", "-p", USERS["test_user1"]]


@pytest.fixture
def fresh(lc: Client) -> Client:
    return Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")


def test_load_link(fresh: Client, sources: Path, tmp_path: Path) -> None:
    path = _mixed(sources)
    result = run_h5lake("load", "--link", str(path), fresh.domain, "-e", fresh.endpoint, *CREDS, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "linked" in result.stdout and "note: dataset /names copied" in result.stderr
    with h5py.File(path) as src, _h5pyd(fresh) as out:
        _same(src, out)
    assert _layouts(fresh)["/grid/gz"] in REF_CLASSES


def test_load_append_extend(fresh: Client, sources: Path, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    days = [_day(sources, tag, d) for d in range(3)]
    remote = ["-e", fresh.endpoint, *CREDS]
    first = run_h5lake("load", "--append", "--extend", "time", str(days[0]), fresh.domain, *remote, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    rest = run_h5lake("load", "--append", "--extend", "time", str(days[1]), str(days[2]), fresh.domain, *remote, cwd=tmp_path)
    assert rest.returncode == 0, rest.stderr
    with _h5pyd(fresh) as out:
        assert out["temp"].shape == (72, 20, 30)
        assert np.array_equal(out["time"][...], np.arange(72, dtype="<f8"))


def test_link_outside_the_allowed_folders_says_what_to_do(fresh: Client, outside: Path, tmp_path: Path) -> None:
    path = _mixed(outside)
    line = one_error_line(run_h5lake("load", "--link", str(path), fresh.domain, "-e", fresh.endpoint, *CREDS, cwd=tmp_path))
    assert "start the server with --allow-source" in line and "without --link" in line
