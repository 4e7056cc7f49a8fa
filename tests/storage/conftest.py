"""Fixtures for the storage contract: one ``store`` per backend, each test on a clean one.

* ``store``: parametrized ``memory`` / ``local`` / ``s3``; closed after the test.
* ``make_store``: a factory ``make_store(kind) -> Store`` for tests that need several stores
  (hypothesis examples, processes); the caller closes what it makes.
* ``s3_server`` (tests/conftest.py): the session's SeaweedFS, started only when an S3 test
  runs. S3 tests get a fresh random prefix in its bucket, which is as clean as a new bucket and
  costs nothing.
* ``expected_listing``: the reference ``list`` over a plain set of keys.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import pytest
from tests.conftest import backend_params
from tests.support.s3server import S3Server

from h5lake.storage.base import Store
from h5lake.storage.local import LocalStore
from h5lake.storage.memory import MemoryStore
from h5lake.storage.s3 import S3Store

BACKENDS = ("memory", "local", "s3")

MakeStore = Callable[[str], Store]


def s3_store(server: S3Server, **kw: object) -> S3Store:
    """A store on a fresh random prefix of the test bucket."""
    return S3Store(
        server.bucket,
        prefix=f"t-{uuid.uuid4().hex[:12]}",
        endpoint_url=server.endpoint,
        **server.credentials,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    def make(kind: str) -> Store:
        if kind == "memory":
            return MemoryStore()
        if kind == "local":
            return LocalStore(tmp_path / f"store-{uuid.uuid4().hex[:8]}")
        if kind == "s3":
            return s3_store(request.getfixturevalue("s3_server"))
        raise ValueError(kind)

    return make


@pytest.fixture(params=backend_params(BACKENDS))
async def store(request: pytest.FixtureRequest, make_store: MakeStore) -> AsyncIterator[Store]:
    backend = make_store(request.param)
    yield backend
    await backend.close()


@pytest.fixture
def expected_listing() -> Callable[..., list[str]]:
    return listing_of


def listing_of(
    keys: Iterable[str],
    prefix: str = "",
    delimiter: str | None = None,
    start_after: str | None = None,
) -> list[str]:
    """What ``Store.list`` must yield for this set of keys: the contract in ten lines."""
    entries = set()
    for key in keys:
        if not key.startswith(prefix):
            continue
        cut = key.find("/", len(prefix)) if delimiter else -1
        entries.add(key if cut < 0 else key[: cut + 1])
    return sorted(e for e in entries if start_after is None or e > start_after)
