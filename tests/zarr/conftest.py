"""Fixtures for the Zarr bridge: one server per store kind (local; S3 marked slow) allowed to
link the files of ``sources``, and helpers that load a file and open the domain with the real
Zarr clients."""

from __future__ import annotations

import base64
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import Backing, auth, backend_params, make_backing
from tests.support.cli import run_h5lake
from tests.support.server import Server

warnings.filterwarnings("ignore", message=".*Numcodecs codecs are not in the Zarr version 3 specification.*")
USER = "test_user1"


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zarr-sources")


@pytest.fixture(scope="module", params=backend_params(["local", "s3"]))
def zbacking(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Backing:
    return make_backing(request.param, request, tmp_path_factory.mktemp(f"zarr-{request.param}"))


@pytest.fixture(scope="module")
def zserver(zbacking: Backing, sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = zbacking.start(tmp_path_factory.mktemp("zarr-server"), extra=["--allow-source", str(sources)])
    r = requests.put(srv.endpoint + "/", params={"domain": f"/home/{USER}"}, json={"folder": True}, auth=auth(USER), timeout=30)
    assert r.status_code in (201, 409), r.text
    yield srv
    srv.stop()


@dataclass
class Zarr:
    """A domain of the Zarr test server, and the ways the clients open it."""

    endpoint: str
    domain: str

    @property
    def url(self) -> str:
        return f"{self.endpoint}/zarr{self.domain}"

    def fsspec(self, path: str = "", read_only: bool = True) -> Any:
        from zarr.storage import FsspecStore

        return FsspecStore.from_url(self.url + path, read_only=read_only,
                                    storage_options={"client_kwargs": {"headers": {"Authorization": basic()}}})

    def obstore(self, path: str = "") -> Any:
        from obstore.store import HTTPStore
        from zarr.storage import ObjectStore

        return ObjectStore(HTTPStore.from_url(self.url + path, client_options={
            "default_headers": {"Authorization": basic()}, "allow_http": True}))

    def tensorstore(self, path: str, core: bool = False) -> Any:
        import tensorstore as ts

        headers = [f"Authorization: {basic()}"] + (["X-H5lake-Zarr-Codecs: core"] if core else [])
        spec = {"driver": "zarr3", "kvstore": {"driver": "http", "base_url": self.url + "/", "path": path + "/", "headers": headers}}
        return ts.open(spec, read=True).result()

    def get(self, key: str, **kw: Any) -> requests.Response:
        return requests.get(f"{self.url}/{key}", auth=auth(USER), timeout=60, **kw)

    def put(self, key: str, **kw: Any) -> requests.Response:
        return requests.put(f"{self.url}/{key}", auth=auth(USER), timeout=60, **kw)

    def delete(self, key: str, **kw: Any) -> requests.Response:
        return requests.delete(f"{self.url}/{key}", auth=auth(USER), timeout=60, **kw)


def basic() -> str:
    user, password = auth(USER)
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def load(server: Server, source: Path, tmp: Path, *, link: bool = False) -> Zarr:
    """``h5lake load`` (``--link``) of ``source`` into a new domain."""
    domain = f"/home/{USER}/{uuid.uuid4().hex[:10]}.h5"
    args = ["load", *(["--link"] if link else []), str(source), domain, "-e", server.endpoint, "-u", USER, "-p", auth(USER)[1]]
    done = run_h5lake(*args, cwd=tmp)
    assert done.returncode == 0, done.stderr
    return Zarr(server.endpoint, domain)


def new_domain(server: Server) -> Zarr:
    domain = f"/home/{USER}/{uuid.uuid4().hex[:10]}.h5"
    r = requests.put(server.endpoint + "/", params={"domain": domain}, auth=auth(USER), timeout=30)
    assert r.status_code == 201, r.text
    return Zarr(server.endpoint, domain)
