"""The read fast path (`api/fast.py`) answers exactly as the whole application does.

Two applications on one store folder, one with the fast path and one without (``create_app(...,
fast=False)``), get the same broad set of requests: every hot route, with and without each
query parameter it takes (good and bad values), bad ids, missing and malformed domains, no,
wrong and other users' credentials, HEAD, and with CORS on, requests with and without an
``Origin`` header. Status, headers and body must be the same byte for byte; the fast path must
have answered most of them itself (else the comparison proves nothing).
"""

from __future__ import annotations

import base64
import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send
from tests.support.server import USERS, write_passwd

from h5lake.api.app import App, create_app
from h5lake.api.fast import FastReads
from h5lake.config import Settings

OWNER = "test_user1"
DOMAIN = f"/home/{OWNER}/fast.h5"


class Counted:
    """The app's fast path, counting the requests it answered itself."""

    def __init__(self, fast: FastReads) -> None:
        self.fast = fast
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> bool:
        taken = await self.fast(scope, receive, send)
        self.answered += taken
        return taken


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def build(client: TestClient) -> dict[str, str]:
    """A domain with groups, a dataset, a committed type, links of each class and attributes."""
    h = basic(OWNER, USERS[OWNER])
    q = {"domain": DOMAIN}
    assert client.put("/", params={"domain": f"/home/{OWNER}"}, json={"folder": True}, headers=h).status_code in (201, 409)
    assert client.put("/", params=q, headers=h).status_code == 201
    root = client.get("/", params=q, headers=h).json()["root"]
    ids = {"root": root}

    def post(kind: str, body: dict[str, Any]) -> str:
        r = client.post(f"/{kind}", params=q, json=body, headers=h)
        assert r.status_code == 201, r.text
        return str(r.json()["id"])

    ids["sub"] = post("groups", {"link": {"id": root, "name": "sub"}})
    ids["deep"] = post("groups", {"link": {"id": ids["sub"], "name": "deep"}})
    ids["dset"] = post("datasets", {"type": "H5T_STD_I32LE", "shape": [10], "link": {"id": root, "name": "d"}})
    ids["big"] = post("datasets", {"type": "H5T_IEEE_F32LE", "shape": [40, 50], "link": {"id": root, "name": "big"}})
    ids["type"] = post("datatypes", {"type": "H5T_IEEE_F64LE", "link": {"id": root, "name": "t"}})
    for name, link in (
        ("soft", {"h5path": "/sub/deep"}),
        ("dangling", {"h5path": "/nowhere"}),
        ("ext", {"h5path": "/x", "h5domain": "/home/other.h5"}),
        ("a b%c", {"id": ids["sub"]}),
    ):
        r = client.put(f"/groups/{root}/links/{quote(name, safe='')}", params=q, json=link, headers=h)
        assert r.status_code == 201, r.text
    attrs: dict[str, dict[str, Any]] = {
        "int": {"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 7},
        "floats": {"type": "H5T_IEEE_F64LE", "shape": [4], "value": [1.5, "NaN", "Infinity", -2.0]},
        "text": {"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}, "shape": "H5S_SCALAR", "value": "héllo"},
        "nothing": {"type": "H5T_STD_I32LE", "shape": "H5S_NULL"},
        "a b%c/d": {"type": "H5T_STD_U8LE", "shape": [3], "value": [1, 2, 3]},
    }
    for owner in (f"/groups/{root}", f"/datasets/{ids['dset']}", f"/datatypes/{ids['type']}"):
        for name, attr in attrs.items():
            r = client.put(f"{owner}/attributes/{quote(name, safe='')}", params=q, json=attr, headers=h)
            assert r.status_code == 201, r.text
    # a domain only its owner reads (the default), and one in another folder
    assert client.put("/", params={"domain": f"/home/{OWNER}/private.h5"}, headers=h).status_code == 201
    return ids


def paths(ids: dict[str, str]) -> list[str]:
    """Path and query of every request sent (the domain given several ways, or not at all)."""
    root, sub, dset, dtype = ids["root"], ids["sub"], ids["dset"], ids["type"]
    d = "domain=" + quote(DOMAIN, safe="/")
    out = [
        f"/?{d}", "/", "/?domain=/home", f"/?domain=/home/{OWNER}", "/?domain=relative.h5",
        "/?host=fast.hdfgroup.org", f"/?domain=/home/{OWNER}/missing.h5", f"/?domain=/home/{OWNER}/private.h5",
        f"/?domain=hdf5:/{DOMAIN}", f"/?{d}&h5path=/sub", f"/?{d}&h5path=/sub/deep&include_attrs=1",
        f"/?{d}&h5path=/soft&follow_soft_links=1", f"/?{d}&h5path=/missing", f"/?{d}&h5path=sub&parent_id={root}",
        f"/?{d}&include_links=1&include_attrs=true", f"/?{d}&verbose=1", f"/?{d}&getdnids=1", f"/?{d}&getobjs=1",
        f"/?{d}&include_links=maybe", f"/?{d}&verbose=2", f"/?{d}&verbose=no", "/?domain=/&Limit=1", "/?Limit=0",
        "/?domain=/home&pattern=test*", f"/?{d}&domain=/home", f"/?{d}&{d}", "/?domain=",
    ]  # fmt: skip
    for kind, oid in (("groups", root), ("groups", sub), ("datasets", dset), ("datatypes", dtype), ("datasets", ids["big"])):
        me = f"/{kind}/{oid}"
        out += [
            f"{me}?{d}", me, f"{me}?{d}&include_links=1", f"{me}?{d}&include_attrs=1", f"{me}?{d}&include_links=1&include_attrs=1",
            f"{me}?{d}&verbose=1", f"{me}?{d}&getalias=1", f"{me}?{d}&getalias=T", f"{me}?{d}&include_attrs=x",
            f"{me}?{d}&h5path=sub", f"{me}?{d}&h5path=/d", f"{me}?{d}&h5path=nope", f"{me}?domain=/home/{OWNER}/private.h5",
            f"{me}/attributes?{d}", f"{me}/attributes?{d}&IncludeData=1", f"{me}/attributes?{d}&IncludeData=0",
            f"{me}/attributes?{d}&CreateOrder=1", f"{me}/attributes?{d}&Limit=2", f"{me}/attributes?{d}&Limit=2&Marker=int",
            f"{me}/attributes?{d}&Limit=0", f"{me}/attributes?{d}&Limit=x", f"{me}/attributes?{d}&pattern=*t*",
            f"{me}/attributes?{d}&IncludeData=1&encoding=base64", f"{me}/attributes?{d}&IncludeData=1&max_data_size=4",
            f"{me}/attributes?{d}&IncludeData=1&ignore_nan=1", f"{me}/attributes?{d}&attr_names=int/text",
            f"{me}/attributes?{d}&attr_names=int;text&separator=;", f"{me}/attributes?{d}&attr_names=int&separator=",
            f"{me}/attributes?{d}&follow_links=1", f"{me}/attributes?{d}&follow_links=1&IncludeData=1&Limit=1",
            f"{me}/attributes/int?{d}", f"{me}/attributes/floats?{d}", f"{me}/attributes/floats?{d}&ignore_nan=1",
            f"{me}/attributes/text?{d}&IncludeData=0", f"{me}/attributes/text?{d}&encoding=base64",
            f"{me}/attributes/nothing?{d}", f"{me}/attributes/nothing/value?{d}", f"{me}/attributes/int/value?{d}",
            f"{me}/attributes/floats/value?{d}&ignore_nan=1", f"{me}/attributes/a%20b%25c%2Fd?{d}",
            f"{me}/attributes/a%20b%25c%2Fd/value?{d}", f"{me}/attributes/missing?{d}", f"{me}/attributes/?{d}",
            f"{me}/attributes/missing/value?{d}", f"{me}/attributes?{d}&IncludeData=1&ignore_nan=bad",
        ]  # fmt: skip
    g = f"/groups/{root}"
    out += [
        f"{g}/links?{d}", f"{g}/links?{d}&Limit=2", f"{g}/links?{d}&Limit=2&Marker=d", f"{g}/links?{d}&CreateOrder=1",
        f"{g}/links?{d}&pattern=s*", f"{g}/links?{d}&titles=sub/d", f"{g}/links?{d}&titles=sub;d&separator=;",
        f"{g}/links?{d}&follow_links=1", f"{g}/links?{d}&Limit=0", f"{g}/links?{d}&Limit=-1", f"{g}/links?{d}&separator=",
        f"{g}/links?{d}&titles=a&separator=", f"/groups/{sub}/links?{d}", f"/groups/{dset}/links?{d}",
        f"{g}/links/sub?{d}", f"{g}/links/soft?{d}", f"{g}/links/dangling?{d}", f"{g}/links/ext?{d}", f"{g}/links/d?{d}",
        f"{g}/links/t?{d}", f"{g}/links/a%2Fb?{d}", f"{g}/links/a%20b%25c?{d}", f"{g}/links/missing?{d}", f"{g}/links/?{d}", f"{g}/links/sub/deep?{d}",
        f"{g}/links/sub", f"/groups/{sub}/links/deep?{d}",
        # ids that are not, or not of this kind or domain; other paths near the hot ones
        f"/groups/g-nothing?{d}", f"/groups/{dset}?{d}", f"/datasets/{root}?{d}", f"/datatypes/{dset}?{d}",
        f"/groups/g-00000000-00000000-0000-000000-000000?{d}", f"/groups/{root}/?{d}", f"/groups/?{d}&h5path=/sub",
        f"/groups?{d}", f"/datasets/{dset}/value?{d}", f"/datasets/{dset}/shape?{d}", f"/maps/{root}/attributes?{d}",
        f"/things/{root}/attributes?{d}", f"/groups/{root}/acls?{d}", f"/groups/{root}/attrs?{d}", f"//groups?{d}",
        f"/groups/{root}//attributes?{d}", f"/groups/x%2Fy?{d}", f"/groups/{root}?{d}&domain=relative",
        f"{g}/links/sub%0A?{d}", f"{g}/links/s%0Aub?{d}", f"{g}/attributes/int%0A?{d}", f"/groups/{root}%0A?{d}",
    ]  # fmt: skip
    return out


USERS_SENT: dict[str, dict[str, str]] = {
    "owner": basic(OWNER, USERS[OWNER]),
    "other": basic("test_user2", USERS["test_user2"]),
    "admin": basic("admin", USERS["admin"]),
    "anonymous": {},
    "wrong": basic(OWNER, "not-the-password"),
    "unknown": basic("nobody", "x"),
    "garbled": {"Authorization": "Basic %%%"},
    "bearer": {"Authorization": "Bearer abc.def.ghi"},
}


@pytest.fixture
def apps(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient, Counted]]:
    settings = Settings(data=tmp_path / "data", passwd=write_passwd(tmp_path / "passwd"))
    fast_app, full_app = create_app(settings), create_app(settings, fast=False)
    assert isinstance(fast_app, App) and isinstance(full_app, App) and full_app.fast is None
    assert fast_app.fast is not None
    counted = Counted(fast_app.fast)
    fast_app.fast = counted  # type: ignore[assignment]
    with TestClient(fast_app) as fast, TestClient(full_app) as full:
        yield fast, full, counted


_ids = itertools.count()


def same(fast: TestClient, full: TestClient, method: str, url: str, headers: dict[str, str]) -> None:
    # one request id for both (each would make its own, api/observe.py)
    headers = {"X-Request-Id": f"same-{next(_ids)}", **headers}
    a = fast.request(method, url, headers=headers, follow_redirects=False)
    b = full.request(method, url, headers=headers, follow_redirects=False)
    where = (method, url, headers)
    assert a.status_code == b.status_code, (where, a.status_code, b.status_code, a.text[:300], b.text[:300])
    assert a.content == b.content, (where, a.text[:300], b.text[:300])
    assert a.headers.multi_items() == b.headers.multi_items(), where
    assert a.status_code < 500, (where, a.text[:300])


def test_the_fast_path_answers_as_the_application(apps: tuple[TestClient, TestClient, Counted]) -> None:
    fast, full, counted = apps
    ids = build(fast)
    urls = paths(ids)
    sent = 0
    for url in urls:
        for method in ("GET", "HEAD"):
            same(fast, full, method, url, USERS_SENT["owner"])
            sent += 1
    for who, headers in USERS_SENT.items():
        if who == "owner":
            continue
        # a refused password costs a full hash (~0.5 s) each time: a few requests of those
        for url in urls[::9] if who not in ("wrong", "unknown") else urls[::53]:
            same(fast, full, "GET", url, headers)
            sent += 1
    # the domain named in a header, other Accept headers, forwarded base URLs
    for url in (f"/groups/{ids['root']}", f"/groups/{ids['root']}/links/sub", f"/groups/{ids['root']}/attributes/int", "/"):
        for extra in (
            {"X-Hdf-domain": DOMAIN},
            {"X-Hdf-domain": "relative"},
            {"X-Hdf-domain": DOMAIN, "Accept": "application/octet-stream"},
            {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "lake.example:8443", "X-Forwarded-Prefix": "/api"},
            {"Forwarded": 'proto=https;host="h.example"', "X-Hdf-domain": DOMAIN},
        ):
            same(fast, full, "GET", url, USERS_SENT["owner"] | extra)
            sent += 1
    for name in ("int", "floats", "nothing", "a%20b%25c%2Fd"):
        for suffix in ("", "/value"):
            url = f"/datasets/{ids['dset']}/attributes/{name}{suffix}?domain={DOMAIN}"
            same(fast, full, "GET", url, USERS_SENT["owner"] | {"Accept": "application/octet-stream"})
            sent += 1
    # methods it never takes, on its paths
    for method in ("PUT", "POST", "DELETE", "OPTIONS", "PATCH"):
        same(fast, full, method, f"/groups/g-nothing/attributes/x?domain={DOMAIN}", USERS_SENT["other"])
    assert counted.answered > 0.8 * sent, (counted.answered, sent)


def test_with_cors_the_application_answers_everything(tmp_path: Path) -> None:
    """The CORS middleware adds ``Vary: Origin`` (and with an ``Origin`` the allow headers) to
    every reply, so with CORS on there is no fast path; the replies stay those of the stack."""
    settings = Settings(data=tmp_path / "data", passwd=write_passwd(tmp_path / "passwd"), cors_origin=("https://app.example",))
    fast_app, full_app = create_app(settings), create_app(settings, fast=False)
    assert isinstance(fast_app, App) and fast_app.fast is None
    with TestClient(fast_app) as fast, TestClient(full_app) as full:
        ids = build(fast)
        d = f"?domain={DOMAIN}"
        for url in (f"/{d}", f"/groups/{ids['root']}{d}", f"/datasets/{ids['dset']}/attributes/int{d}", f"/groups/bad{d}"):
            for origin in ({}, {"Origin": "https://app.example"}, {"Origin": "https://elsewhere.example"}):
                r = fast.get(url, headers=USERS_SENT["owner"] | origin)
                assert "Origin" in r.headers["vary"]
                same(fast, full, "GET", url, USERS_SENT["owner"] | origin)


# --- PUTs of one attribute or one link ---------------------------------------------------------


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient, Counted, dict[str, str]]]:
    """Two stores in the same state (one built, then copied: same ids), the app with the fast
    path on one and the app without it on the other, so each PUT can be sent to both."""
    passwd = write_passwd(tmp_path / "passwd")
    with TestClient(create_app(Settings(data=tmp_path / "a", passwd=passwd))) as builder:
        ids = build(builder)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    fast_app = create_app(Settings(data=tmp_path / "a", passwd=passwd))
    full_app = create_app(Settings(data=tmp_path / "b", passwd=passwd), fast=False)
    assert isinstance(fast_app, App) and fast_app.fast is not None
    counted = Counted(fast_app.fast)
    fast_app.fast = counted  # type: ignore[assignment]
    with TestClient(fast_app) as fast, TestClient(full_app) as full:
        yield fast, full, counted, ids


def same_put(fast: TestClient, full: TestClient, url: str, headers: dict[str, str], body: bytes) -> int:
    headers = {"X-Request-Id": f"same-{next(_ids)}", **headers}
    a = fast.put(url, headers=headers, content=body)
    b = full.put(url, headers=headers, content=body)
    where = (url, headers, body[:200])
    assert a.status_code == b.status_code, (where, a.status_code, b.status_code, a.text[:300], b.text[:300])
    assert a.content == b.content, (where, a.text[:300], b.text[:300])
    assert a.headers.multi_items() == b.headers.multi_items(), where
    assert a.status_code < 500, (where, a.text[:300])
    return a.status_code


def _timeless(value: Any) -> Any:
    """``value`` without the clock readings the server adds (``created``, ``lastModified``)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("created", "lastModified")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_puts_of_one_attribute_or_link_answer_as_the_application(
    twins: tuple[TestClient, TestClient, Counted, dict[str, str]],
) -> None:
    fast, full, counted, ids = twins
    root, sub, dset, dtype = ids["root"], ids["sub"], ids["dset"], ids["type"]
    d = "domain=" + quote(DOMAIN, safe="/")
    owner, js = USERS_SENT["owner"], {"Content-Type": "application/json"}
    now = 1.7e9  # replaced by the server's clock: the replies carry none, the state is compared without

    def attr(value: Any, type_: Any = "H5T_STD_I32LE", shape: Any = "H5S_SCALAR", **more: Any) -> bytes:
        import json as _json

        return _json.dumps({"type": type_, "shape": shape, "value": value, **more}).encode()

    cases: list[tuple[str, dict[str, str], bytes]] = []
    for kind, oid in (("groups", root), ("groups", sub), ("datasets", dset), ("datatypes", dtype)):
        me = f"/{kind}/{oid}/attributes"
        cases += [
            (f"{me}/new?{d}", js, attr(1)),  # created
            (f"{me}/new?{d}", js, attr(1)),  # all there: 200
            (f"{me}/new?{d}", js, attr(2)),  # replaced
            (f"{me}/int?{d}", js, attr(7)),  # as built
            (f"{me}/vec?{d}", js, attr([1.5, "NaN", 3.0], "H5T_IEEE_F64LE", [3])),
            (f"{me}/s?{d}", js, attr("héllo", {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"})),
            (f"{me}/b64?{d}&encoding=base64", js, attr("AQAAAA==")),
            (f"{me}/when?{d}", js, attr(3, created=now)),
            (f"{me}/a%20b%25c%2Fd?{d}", js, attr(4)),
            (f"{me}/int/value?{d}", js, b'{"value": 9}'),  # HSDS: the value of "int"
            (f"{me}/new/value?{d}", js, b"[5]"),
            (f"{me}/packed?{d}&type=H5T_STD_U8LE&shape=[2]", {"Content-Type": "application/octet-stream"}, b"\x01\x02"),
            (f"{me}/int?{d}", {"Content-Type": "application/octet-stream"}, b"\x05\x00\x00\x00"),
            (f"{me}/bad?{d}", js, b"{not json"),
            (f"{me}/bad?{d}", js, b"[1, 2]"),
            (f"{me}/bad?{d}", js, b'{"shape": "H5S_SCALAR"}'),
            (f"{me}/bad?{d}", js, attr(1, "H5T_NOPE")),
            (f"{me}/bad?{d}", js, attr(1, shape=[-1])),
            (f"{me}/bad?{d}", js, attr(300, "H5T_STD_U8LE")),
            (f"{me}/bad?{d}", js, b""),
            (f"{me}/?{d}", js, attr(1)),
            (f"{me}/x?domain=/home/{OWNER}/missing.h5", js, attr(1)),
            (f"{me}/x?domain=relative.h5", js, attr(1)),
            (f"{me}/x", js, attr(1)),
            (f"{me}/x?domain=hdf5:/{DOMAIN}", js, attr(1)),
            (f"{me}/x?domain=/home/{OWNER}/private.h5", js, attr(1)),
            (f"{me}/x?domain=a@b", js, attr(1)),
            (f"{me}/x?{d}&encoding=base64", js, attr("%%%")),
        ]  # fmt: skip
    cases += [
        (f"/groups/g-nothing/attributes/x?{d}", js, attr(1)),
        (f"/groups/g-00000000-00000000-0000-000000-000000/attributes/x?{d}", js, attr(1)),
        (f"/groups/{dset}/attributes/x?{d}", js, attr(1)),
        (f"/groups/{root}/attributes/hdr", js | {"X-Hdf-domain": DOMAIN}, attr(1)),
        (f"/groups/{root}/attributes/gz?{d}", js | {"Content-Encoding": "gzip"}, attr(1)),
        (f"/groups/{root}/attributes/nl%0A?{d}", js, attr(1)),
    ]
    g = f"/groups/{root}/links"
    cases += [
        (f"{g}/h1?{d}", js, f'{{"id": "{sub}"}}'.encode()),  # created
        (f"{g}/h1?{d}", js, f'{{"id": "{sub}"}}'.encode()),  # all there: 200
        (f"{g}/h1?{d}", js, f'{{"id": "{dset}"}}'.encode()),  # another target: 409
        (f"{g}/h1?{d}&replace=1", js, f'{{"id": "{dset}"}}'.encode()),
        (f"{g}/s1?{d}", js, b'{"h5path": "/sub/deep"}'),
        (f"{g}/e1?{d}", js, b'{"h5path": "/x", "h5domain": "/home/other.h5"}'),
        (f"{g}/a%2Fb?{d}", js, f'{{"id": "{sub}"}}'.encode()),
        (f"{g}/a%20b?{d}", js, f'{{"id": "{sub}"}}'.encode()),
        (f"{g}/bad?{d}", js, b'{"id": "g-nothing"}'),
        (f"{g}/bad?{d}", js, b"{}"),
        (f"{g}/bad?{d}", js, b"nope"),
        (f"{g}/bad?{d}&replace=maybe", js, f'{{"id": "{sub}"}}'.encode()),
        (f"{g}/?{d}", js, f'{{"id": "{sub}"}}'.encode()),
        (f"{g}/x?domain=/home/{OWNER}/private.h5", js, f'{{"id": "{sub}"}}'.encode()),
        (f"/groups/{dset}/links/x?{d}", js, f'{{"id": "{sub}"}}'.encode()),
        (f"/groups/{sub}/links/back?{d}", js, f'{{"id": "{root}"}}'.encode()),
        (f"/datasets/{dset}/links/x?{d}", js, f'{{"id": "{sub}"}}'.encode()),  # not a link route
    ]
    sent = 0
    for url, extra, body in cases:
        same_put(fast, full, url, owner | extra, body)
        sent += 1
    for who, headers in USERS_SENT.items():  # refused or not, as the stack refuses
        if who in ("owner", "wrong", "unknown"):
            continue
        for url, extra, body in cases[:: 11]:
            same_put(fast, full, url, headers | extra, body)
            sent += 1
    for url, extra, body in cases[:3]:  # a refused password costs a full hash: two of those
        same_put(fast, full, url, USERS_SENT["wrong"] | extra, body)
        sent += 1
    assert counted.answered > 0.8 * sent, (counted.answered, sent)
    # and the two stores now hold the same attributes and links
    for kind, oid in (("groups", root), ("groups", sub), ("datasets", dset), ("datatypes", dtype)):
        for url in (f"/{kind}/{oid}/attributes?{d}&IncludeData=1", f"/{kind}/{oid}?{d}"):
            a, b = fast.get(url, headers=owner), full.get(url, headers=owner)
            assert a.status_code == b.status_code == 200
            assert _timeless(a.json()) == _timeless(b.json()), url
    for gid in (root, sub):
        a, b = fast.get(f"/groups/{gid}/links?{d}", headers=owner), full.get(f"/groups/{gid}/links?{d}", headers=owner)
        assert _timeless(a.json()) == _timeless(b.json())
