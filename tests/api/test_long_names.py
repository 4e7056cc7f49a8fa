"""Long and odd names are refused with a 400 naming the limit, never a 500 (issue: a domain of
625 characters, 1,225 UTF-8 bytes, was ``500 internal error: ValueError``).

Seed 001 limits storage keys to 1,024 bytes; h5lake keeps keys up to `ids.DOMAIN_KEY_ROOM` bytes
longer than a domain's path under it, so a domain path may have `ids.MAX_DOMAIN_BYTES` bytes:
one that long works for every kind of key kept under it, one byte more is refused, in every
route that takes a domain."""

from __future__ import annotations

import pytest
import requests
from tests.conftest import Client, auth

from h5lake.model.ids import MAX_DOMAIN_BYTES

pytestmark = pytest.mark.one_backend  # the HTTP edge's answer, the same on every store

LONG = "/home/test_user1" + ("/" + "é" * 60) * 10 + "/x.h5"  # 626 characters, 1,226 bytes


def _routes(endpoint: str) -> list[tuple[str, str]]:
    spec = requests.get(endpoint + "/openapi.json", timeout=30).json()
    found = []
    for template, ops in spec["paths"].items():
        for method, op in ops.items():
            names = [p.get("name") for p in op.get("parameters", [])]
            if "domain" in names:
                path = template.replace("{collection}", "groups")
                kind = template.split("/")[1][:1] if template.startswith(("/groups", "/datasets", "/datatypes", "/maps")) else "g"
                path = path.replace("{id}", f"{kind}-50e453c0-4717c741-d86c-db48cf-9f4fc9")  # well formed, absent
                for name in ("user", "title", "name", "key", "vid"):
                    path = path.replace("{" + name + "}", "v1" if name == "vid" else "x")
                found.append((method.upper(), path))
    return found


@pytest.mark.parametrize("user", [None, "test_user1"])
def test_a_domain_too_long_for_its_keys_is_400_in_every_route(endpoint: str, user: str | None) -> None:
    routes = _routes(endpoint)
    assert len(routes) > 50
    session = requests.Session()
    if user is not None:
        session.auth = auth(user)
    other = []
    for method, path in routes:
        for domain in (LONG, LONG + "@v1", LONG + "@" + "t" * 100):
            r = session.request(method, endpoint + path, params={"domain": domain}, json={}, timeout=30)
            assert r.status_code == 400, (method, path, domain[-8:], r.status_code, r.text[:200])
            message = r.json()["error"]["message"]
            if domain == LONG and (f"limit of {MAX_DOMAIN_BYTES}" not in message or "1024" not in message):
                other.append((method, path, message))
    # a request may be refused for its other parameters (an empty body, no h5path) first
    named = {(m, p) for m, p in routes} - {(m, p) for m, p, _ in other}
    dset = "/datasets/d-50e453c0-4717c741-d86c-db48cf-9f4fc9"
    assert {("GET", "/"), ("PUT", "/"), ("DELETE", "/"), ("GET", "/groups/g-50e453c0-4717c741-d86c-db48cf-9f4fc9"),
            ("GET", dset + "/value"),
            ("GET", "/versions"), ("GET", "/domains")} <= named, sorted(named)


def test_a_domain_at_the_limit_keeps_every_key(client: Client) -> None:
    """Folders, a domain whose path is exactly the limit, its dataset's chunk catalog, a version
    with a tag of the longest name, an object's tombstone: all fit; one byte more is refused."""
    home = "/home/test_user1"
    folders = [f"{home}/{'a' * 250}", f"{home}/{'a' * 250}/{'b' * 250}", f"{home}/{'a' * 250}/{'b' * 250}/{'é' * 120}"]
    s = client.session
    for folder in folders:
        r = s.put(client.endpoint + "/", params={"domain": folder}, json={"folder": True}, timeout=30)
        assert r.status_code in (201, 409), r.text
    stem = folders[-1] + "/"
    name = "c" * (MAX_DOMAIN_BYTES - len(stem.encode()) - 3) + ".h5"  # each part within 255 bytes
    at_limit = Client(client.endpoint, "test_user1", stem + name)
    assert len(at_limit.domain.encode()) == MAX_DOMAIN_BYTES
    assert at_limit.put("/").status_code == 201
    root = at_limit.get("/").json()["root"]
    r = at_limit.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [4], "link": {"id": root, "name": "d"}})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    assert at_limit.put(f"/datasets/{did}/value", json={"value": [1, 2, 3, 4]}).status_code == 200
    r = at_limit.post("/versions", json={"message": "first"})
    assert r.status_code == 201, r.text
    r = at_limit.put("/versions/tags/" + "t" * 100, json={"version": r.json()["id"]})
    assert r.status_code in (200, 201), r.text
    tagged = Client(client.endpoint, "test_user1", at_limit.domain + "@" + "t" * 100)
    assert tagged.get(f"/datasets/{did}/value").json()["value"] == [1, 2, 3, 4]
    assert at_limit.delete(f"/datasets/{did}").status_code == 200
    assert at_limit.get(f"/datasets/{did}").status_code == 410  # its tombstone was kept
    over = Client(client.endpoint, "test_user1", stem + "c" + name)
    r = over.put("/")
    assert r.status_code == 400 and f"limit of {MAX_DOMAIN_BYTES}" in r.json()["error"]["message"], r.text


@pytest.mark.parametrize("h5path", ["/", ".", "/./", "//"])
def test_an_h5path_naming_no_link_is_400(client: Client, h5path: str) -> None:
    """Before: 500 IndexError."""
    r = client.post("/groups", json={"h5path": h5path})
    assert r.status_code == 400, r.text
