"""Fixtures for the raw-data storage kinds: a second server that keeps no values in documents.

* ``chunks_server`` (session): ``h5lake serve --compact-max-bytes 0`` on a local directory, so
  every dataset's values live in chunk objects, however small.
* ``kind_client``: a plain HTTP client on a fresh domain, once on the session server (small
  datasets keep their values in their documents) and once on ``chunks_server``.
* ``kind_raw``: the store of the server ``kind_client`` talks to.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import Client, LocalRaw, RawStore
from tests.support.server import Server, start_server


@pytest.fixture(scope="session")
def chunks_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("h5lake-chunks"), extra=["--compact-max-bytes", "0"])
    yield srv
    srv.stop()


def _fresh(endpoint: str) -> Client:
    home = Client(endpoint, "test_user1", "/home/test_user1")
    r = home.put("/", json={"folder": True})
    assert r.status_code in (201, 409), r.text
    c = Client(endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    assert c.put("/").status_code == 201
    return c


@pytest.fixture(params=["compact", "chunks"])
def storage_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def kind_client(storage_kind: str, client: Client, request: pytest.FixtureRequest) -> Client:
    if storage_kind == "chunks":
        return _fresh(request.getfixturevalue("chunks_server").endpoint)
    return client


@pytest.fixture
def kind_raw(storage_kind: str, raw_store: RawStore, request: pytest.FixtureRequest) -> RawStore:
    if storage_kind == "chunks":
        return LocalRaw(request.getfixturevalue("chunks_server").data)
    return raw_store


def all_keys(raw: RawStore) -> list[str]:
    """Every key of the store. A local listing walks folders the server may be removing
    meanwhile (its write intents'): such a walk is tried again."""
    for _ in range(20):
        try:
            return raw.list_keys()
        except FileNotFoundError:
            continue
    return raw.list_keys()
