"""Fixtures for many server processes on one store.

* ``store_backing``: a fresh, empty store per test, parametrized ``local`` / ``s3`` (a new
  directory, or a new prefix in the session's SeaweedFS bucket).
* ``start``: ``start(extra=[...], env={...})`` runs one more ``h5lake serve`` on that store, on
  a port of its own; every server it started is stopped after the test.
* ``pair``: two ``h5lake serve`` processes of default options on one store (``pair_backing``,
  parametrized as ``store_backing``), shared by the tests of a module that need two processes
  and nothing else of their own (no options, no kill, no store-wide count such as gc's): each
  keeps to domains it makes. Starting a server costs ~1.4 CPU-s, most of it imports.
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


@pytest.fixture(scope="module", params=backend_params(BACKENDS))
def pair_backing(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Backing:
    return make_backing(request.param, request, tmp_path_factory.mktemp(f"pair-{request.param}"))


@pytest.fixture(scope="module")
def pair(pair_backing: Backing, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    work = tmp_path_factory.mktemp("pair")
    a = pair_backing.start(work / "srv-0")
    try:
        b = pair_backing.start(work / "srv-1")
    except BaseException:
        a.stop()
        raise
    yield a, b
    alive = [srv.process.poll() is None for srv in (a, b)]
    for srv in (a, b):
        srv.stop(signal.SIGTERM)
    assert all(alive), "a server of the pair died while the module ran"


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
