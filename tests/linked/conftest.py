"""Fixtures for linked datasets: a server allowed to read one folder of HDF5 files.

* ``sources``: the allowed root (session-wide); tests make their own files in it.
* ``outside``: a folder that is *not* an allowed root.
* ``linked_server``: an h5lake started with ``--allow-source <sources>``.
* ``lc``: a plain HTTP client on a fresh domain of that server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Client, auth
from tests.support.server import Server, start_server


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sources")


@pytest.fixture(scope="session")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outside")


@pytest.fixture(scope="session")
def linked_server(tmp_path_factory: pytest.TempPathFactory, sources: Path) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("h5lake-linked"), extra=["--allow-source", str(sources)])
    yield srv
    srv.stop()


@pytest.fixture
def lc(linked_server: Server) -> Client:
    home = Client(linked_server.endpoint, "test_user1", "/home/test_user1")
    r = home.put("/", json={"folder": True})
    assert r.status_code in (201, 409), r.text
    c = Client(linked_server.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    r = c.put("/")
    assert r.status_code == 201, r.text
    return c


@pytest.fixture
def h5pyd_env(linked_server: Server) -> Iterator[None]:
    """HS_* variables pointing h5pyd at the linked server."""
    saved = {k: os.environ.get(k) for k in ("HS_ENDPOINT", "HS_USERNAME", "HS_PASSWORD")}
    os.environ["HS_ENDPOINT"] = linked_server.endpoint
    os.environ["HS_USERNAME"], os.environ["HS_PASSWORD"] = auth("test_user1")
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
