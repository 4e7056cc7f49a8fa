"""Listings show only what the caller may read, and a refused domain creation stores nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.security.conftest import module_on
from tests.support.server import Server

ADMIN = ("admin", "admin-pw")
USER1 = ("test_user1", "test1-pw")
USER2 = ("test_user2", "test2-pw")


@pytest.fixture(scope="module")
def srv(shared_server: Server) -> Iterator[Server]:
    with module_on(shared_server) as server:
        yield server


def put(srv: Server, domain: str, auth: tuple[str, str] | None, body: dict[str, object] | None = None) -> requests.Response:
    return requests.put(srv.endpoint + "/", params={"domain": domain}, json=body or {}, auth=auth, timeout=10)


def names(srv: Server, folder: str, auth: tuple[str, str] | None, **params: object) -> list[str]:
    reply = requests.get(srv.endpoint + "/domains", params={"domain": folder, **params}, auth=auth, timeout=10)
    assert reply.status_code == 200, reply.text
    return [d["name"] for d in reply.json()["domains"]]


def test_anonymous_top_level_listing_shows_only_public(srv: Server) -> None:
    assert put(srv, "/secret-project", ADMIN, {"folder": 1}).status_code == 201
    assert put(srv, "/public-data", ADMIN, {"folder": 1}).status_code == 201
    acl = {"read": True, "create": False, "update": False, "delete": False, "readACL": False, "updateACL": False}
    reply = requests.put(srv.endpoint + "/acls/default", params={"domain": "/public-data"}, json=acl, auth=ADMIN, timeout=10)
    assert reply.status_code in (200, 201), reply.text
    anonymous = names(srv, "/", None)
    assert "/public-data" in anonymous and "/home" in anonymous
    assert "/secret-project" not in anonymous
    assert "/secret-project" not in names(srv, "/", USER1)
    assert "/secret-project" in names(srv, "/", ADMIN)


def test_folder_listing_omits_unreadable_domains(srv: Server) -> None:
    assert put(srv, "/home/test_user1/", USER1, {"folder": 1}).status_code == 201
    acl = {"read": True, "create": False, "update": False, "delete": False, "readACL": False, "updateACL": False}
    requests.put(srv.endpoint + "/acls/default", params={"domain": "/home/test_user1/"}, json=acl, auth=USER1, timeout=10)
    for n in range(5):
        assert put(srv, f"/home/test_user1/private{n}.h5", USER1).status_code == 201
    assert put(srv, "/home/test_user1/shared.h5", USER1).status_code == 201
    requests.put(srv.endpoint + "/acls/default", params={"domain": "/home/test_user1/shared.h5"}, json=acl,
                 auth=USER1, timeout=10)
    assert names(srv, "/home/test_user1/", USER2) == ["/home/test_user1/shared.h5"]
    assert len(names(srv, "/home/test_user1/", USER1)) == 6
    # a page holds Limit readable entries when there are that many, however many are hidden
    assert len(names(srv, "/home/test_user1/", USER1, Limit=4)) == 4
    assert names(srv, "/home/test_user1/", USER2, Limit=1) == ["/home/test_user1/shared.h5"]


def test_refused_domain_creation_stores_nothing(srv: Server) -> None:
    assert put(srv, "/home/test_user2/", USER2, {"folder": 1}).status_code == 201
    assert put(srv, "/home/test_user2/taken.h5", USER2).status_code == 201

    def stored() -> list[Path]:
        return sorted(p for p in srv.data.rglob("*") if p.is_file() and ".h5lake-" not in p.as_posix())

    before = stored()
    for _ in range(25):
        assert put(srv, "/home/test_user2/taken.h5", USER2).status_code == 409
        assert put(srv, "/home/test_user2/taken.h5", USER1).status_code in (403, 409)
    assert stored() == before
