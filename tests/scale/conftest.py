"""Fixtures for many server processes on one store.

* ``store_backing``: a fresh, empty store per test, parametrized ``local`` / ``s3`` (a new
  directory, or a new prefix in the session's SeaweedFS bucket).
* ``start``: ``start(extra=[...], env={...})`` runs one more ``h5lake serve`` on that store, on
  a port of its own; every server it started is stopped after the test.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import BACKENDS, Backing, backend_params, make_backing
from tests.support.server import Server

StartServer = Callable[..., Server]


@pytest.fixture(params=backend_params(BACKENDS))
def store_backing(request: pytest.FixtureRequest, tmp_path: Path) -> Backing:
    return make_backing(request.param, request, tmp_path)


@pytest.fixture
def start(store_backing: Backing, tmp_path: Path) -> Iterator[StartServer]:
    started: list[Server] = []

    def run(extra: list[str] | None = None, env: dict[str, str] | None = None, **kw: object) -> Server:
        srv = store_backing.start(tmp_path / f"srv-{len(started)}", extra, env=env or {}, **kw)
        started.append(srv)
        return srv

    yield run
    for srv in started:
        srv.stop(signal.SIGTERM)
