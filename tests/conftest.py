"""Shared fixtures: a real h5lake server on 127.0.0.1 and clients for it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.server import USERS, Server, start_server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("h5lake"))
    os.environ["HS_ENDPOINT"] = srv.endpoint
    os.environ["HS_USERNAME"] = "test_user1"
    os.environ["HS_PASSWORD"] = USERS["test_user1"]
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def endpoint(server: Server) -> str:
    return server.endpoint


@pytest.fixture(scope="session")
def home_folder(endpoint: str) -> str:
    """``/home/test_user1``, made by the user (a user may create their own home folder)."""
    r = requests.put(
        endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=auth("test_user1")
    )
    assert r.status_code in (201, 409), r.text
    return "/home/test_user1"


@pytest.fixture
def domain(home_folder: str) -> str:
    """A fresh, not yet created domain path for one test."""
    return f"{home_folder}/{uuid.uuid4().hex[:12]}.h5"


def auth(user: str) -> tuple[str, str]:
    return (user, USERS[user])


class Client:
    """Plain HTTP against the server, as one user, on one domain."""

    def __init__(self, endpoint: str, user: str | None, domain: str) -> None:
        self.endpoint = endpoint
        self.session = requests.Session()
        if user is not None:
            self.session.auth = auth(user)
        self.domain = domain

    def request(self, method: str, path: str, **kw: object) -> requests.Response:
        params = dict(kw.pop("params", None) or {})  # type: ignore[arg-type]
        params.setdefault("domain", self.domain)
        return self.session.request(method, self.endpoint + path, params=params, timeout=60, **kw)  # type: ignore[arg-type]

    def get(self, path: str, **kw: object) -> requests.Response:
        return self.request("GET", path, **kw)

    def put(self, path: str, **kw: object) -> requests.Response:
        return self.request("PUT", path, **kw)

    def post(self, path: str, **kw: object) -> requests.Response:
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw: object) -> requests.Response:
        return self.request("DELETE", path, **kw)


@pytest.fixture
def client(endpoint: str, domain: str) -> Client:
    """A client whose domain has been created (and so has a root group)."""
    c = Client(endpoint, "test_user1", domain)
    r = c.put("/")
    assert r.status_code == 201, r.text
    return c


@pytest.fixture
def data_root(server: Server) -> Path:
    return server.data
