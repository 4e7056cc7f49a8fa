"""Names, encodings and smuggling: domain names that lie among h5lake's own keys, JSON strings that are no
Unicode, names HDF5 cannot hold, a field named twice, and HTTP heads that try to smuggle a second
request. Each gets a JSON 4xx (never a 500) while another client is served (the watchdog of
``conftest.py``), and the server's log holds no traceback."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import orjson
import pytest
import requests

from h5lake.api.http import lone_surrogate
from tests.security.conftest import module_on
from tests.support.server import Server

A = ("admin", "admin-pw")
DOMAIN = "/home/admin/pass5.h5"
JSON_HEADERS = {"Content-Type": "application/json"}


class Target:
    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.ep = srv.endpoint
        requests.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        made = requests.put(self.ep + "/", params={"domain": DOMAIN}, auth=A, timeout=10)
        assert made.status_code == 201, made.text
        self.root: str = made.json()["root"]

    def domain(self, method: str, path: str, **kw: object) -> requests.Response:
        return requests.request(method, self.ep + "/", params={"domain": path}, auth=A, timeout=10, **kw)  # type: ignore[arg-type]

    def send(self, method: str, path: str, body: bytes, **params: str) -> requests.Response:
        return requests.request(method, self.ep + path, params={"domain": DOMAIN, **params}, data=body, auth=A,
                                headers=JSON_HEADERS, timeout=10)


@pytest.fixture(scope="module")
def target(shared_server: Server) -> Iterator[Target]:
    with module_on(shared_server) as srv:
        yield Target(srv)


def _refused(reply: requests.Response, words: str, status: int = 400) -> None:
    assert reply.status_code == status, (reply.status_code, reply.text[:300])
    assert words in reply.json()["error"]["message"], reply.text[:300]


def test_domain_names_among_h5lakes_own_keys_are_refused(target: Target) -> None:
    """A sub-domain named ``.domain.gone`` sat where its folder's deletion marker goes: once it
    was deleted, deleting the folder was a 500 and the folder could never be deleted. One named
    ``.gone/<id>`` under a domain met an object's tombstone (a 500 on local storage)."""
    folder = "/home/admin/f5"
    assert target.domain("PUT", folder, json={"folder": 1}).status_code == 201
    for name in (".domain.gone", ".gone", ".domain.json.x", ".history"):
        for method in ("PUT", "GET", "DELETE"):
            _refused(target.domain(method, f"{folder}/{name}"), "is reserved")
        _refused(target.domain("PUT", f"{DOMAIN}/{name}"), "is reserved")
    assert target.domain("PUT", f"{folder}/.gone.h5").status_code == 201  # only the exact names are taken
    assert target.domain("DELETE", f"{folder}/.gone.h5").status_code == 200
    assert target.domain("DELETE", folder).status_code == 200
    assert target.domain("GET", folder).status_code == 410


@pytest.mark.parametrize(
    "path, body",
    [
        ("/groups", b'{"link": {"id": "ROOT", "name": "\\ud800"}}'),
        ("/groups/ROOT/links", b'{"links": {"\\udc00": {"h5path": "/x"}}}'),
        ("/datasets", b'{"type": {"class": "H5T_COMPOUND", "fields": [{"name": "\\ud800", "type": "H5T_STD_I8LE"}]}, "shape": [1]}'),
        ("/datasets", b'{"type": {"class": "H5T_ENUM", "base": "H5T_STD_I8LE", "members": [{"name": "\\ud83d", "value": 1}]}, "shape": [1]}'),
        ("/groups/ROOT/links/soft", b'{"h5path": "/\\ud800"}'),
        ("/groups/ROOT/links/ext", b'{"h5path": "/", "h5domain": "/home/\\ud800"}'),
        # a NaN token sends the body to the standard library's parser even when the escape comes later
        ("/groups/ROOT/attributes/s", (b'{"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", '
                                       b'"length": "H5T_VARIABLE"}, "shape": [2], "value": ["\\ud800", "NaN"], "x": NaN}')),
    ],
)
def test_json_strings_that_are_no_unicode_are_refused(target: Target, path: str, body: bytes) -> None:
    """A lone surrogate escape (``"\\ud800"``) is refused by orjson, but the standard library's
    parser, which h5lake falls back to for NaN tokens, made it a ``str`` that no later step could
    encode: 500s for link names, field and member names, soft and external link paths, string values."""
    method = "POST" if path in ("/groups", "/datasets") else "PUT"
    _refused(target.send(method, path.replace("ROOT", target.root), body.replace(b"ROOT", target.root.encode())),
             "lone surrogate")


def test_surrogate_pairs_are_still_read(target: Target) -> None:
    """Python's ``json.dumps`` (h5pyd) writes a character beyond the BMP as an escaped pair."""
    made = target.send("PUT", f"/groups/{target.root}/links/pair", b'{"h5path": "/\\ud83d\\ude00", "x": NaN}')
    assert made.status_code == 201, made.text
    got = requests.get(f"{target.ep}/groups/{target.root}/links/pair", params={"domain": DOMAIN}, auth=A, timeout=10)
    assert got.json()["link"]["h5path"] == "/\U0001f600"


@pytest.mark.parametrize(
    "text, lone",
    [(rb'"\ud800"', True), (rb'"\udc00"', True), (rb'"\ud83d\ude00"', False), (rb'"\\ud800"', False),
     (rb'"\\\ud800"', True), (rb'"\ud83d\\ude00"', True), (rb'"\ud83dx\ude00"', True), (rb'"\u00e9"', False)],
)
def test_lone_surrogate_reads_escapes_as_json_does(text: bytes, lone: bool) -> None:
    assert lone_surrogate(text) is lone


def test_names_hdf5_cannot_hold_are_refused(target: Target) -> None:
    """A NUL in a link, attribute, field or member name was stored; HDF5 keeps names as C
    strings, so ``h5lake export`` of the domain then failed ("name parameter cannot be an empty string")."""
    link = requests.put(f"{target.ep}/groups/{target.root}/links/a%00b", params={"domain": DOMAIN}, json={"h5path": "/x"},
                        auth=A, timeout=10)
    _refused(link, "NUL")
    attr = requests.put(f"{target.ep}/groups/{target.root}/attributes/%00", params={"domain": DOMAIN},
                        json={"type": "H5T_STD_I8LE", "shape": [1], "value": [1]}, auth=A, timeout=10)
    _refused(attr, "NUL")
    field = {"class": "H5T_COMPOUND", "fields": [{"name": "a\x00b", "type": "H5T_STD_I8LE"}]}
    _refused(target.send("POST", "/datasets", orjson.dumps({"type": field, "shape": [1]})), "NUL")
    enum = {"class": "H5T_ENUM", "base": "H5T_STD_I8LE", "members": [{"name": "\x00", "value": 1}]}
    _refused(target.send("POST", "/datasets", orjson.dumps({"type": enum, "shape": [1]})), "NUL")
    names = requests.get(f"{target.ep}/groups/{target.root}/links", params={"domain": DOMAIN}, auth=A, timeout=10).json()
    assert all("\x00" not in link["title"] for link in names["links"])


def test_a_field_named_twice_is_refused(target: Target) -> None:
    """``fields=a:a`` was a 500 (numpy refuses a view naming a field twice)."""
    compound = {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I8LE"}, {"name": "b", "type": "H5T_IEEE_F64LE"}]}
    made = target.send("POST", "/datasets", orjson.dumps({"type": compound, "shape": [3]}))
    assert made.status_code == 201, made.text
    url = f"{target.ep}/datasets/{made.json()['id']}/value"
    for fields in ("a:a", "b:a:b", ":".join(["a"] * 5000)):
        _refused(requests.get(url, params={"domain": DOMAIN, "fields": fields}, auth=A, timeout=10), "more than once")
        _refused(requests.put(url, params={"domain": DOMAIN, "fields": fields}, json={"value": [[1, 1]] * 3}, auth=A, timeout=10),
                 "more than once")
    assert requests.get(url, params={"domain": DOMAIN, "fields": "b:a"}, auth=A, timeout=10).json()["value"] == [[0.0, 0]] * 3


def _raw(t: Target, request: bytes) -> bytes:
    """The answers to ``request`` on a connection of its own, up to the server's closing it (each
    request here ends with one the server closes after: refused, HTTP/1.0 or ``Connection: close``)."""
    host, port = t.ep.removeprefix("http://").split(":")
    answer = b""
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(request)
        while piece := sock.recv(65536):
            answer += piece
    return answer


@pytest.mark.parametrize(
    "name, head, body",
    [
        ("Content-Length and Transfer-Encoding", b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n"),
        ("two Content-Lengths", b"Content-Length: 2\r\nContent-Length: 7\r\n", b"{}"),
        ("a signed Content-Length", b"Content-Length: +2\r\n", b"{}"),
        ("a Content-Length past 2**64", b"Content-Length: 99999999999999999999999\r\n", b"{}"),
        ("Transfer-Encoding not ending in chunked", b"Transfer-Encoding: chunked, identity\r\n", b"0\r\n\r\n"),
        ("a space before the colon", b"Transfer-Encoding : chunked\r\n", b"0\r\n\r\n"),
        ("a folded header", b"Transfer-Encoding: identity\r\n chunked\r\n", b"0\r\n\r\n"),
        ("a chunk size past 2**64", b"Transfer-Encoding: chunked\r\n", b"FFFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n"),
    ],
)
def test_smuggling_heads_are_refused_whole(target: Target, name: str, head: bytes, body: bytes) -> None:
    """A head a proxy and h5lake could read differently is one 400 and a closed connection: the
    request hidden after it is never answered."""
    hidden = b"DELETE /?domain=" + DOMAIN.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    answer = _raw(target, b"POST /groups HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n" + body + hidden)
    assert answer.startswith(b"HTTP/1.1 400 "), (name, answer[:300])
    assert answer.count(b"HTTP/1.1 ") == 1, (name, answer[:600])
    assert b"application/json" in answer.split(b"\r\n\r\n")[0]
    assert target.domain("GET", DOMAIN).status_code == 200


def test_old_and_pipelined_requests_are_answered(target: Target) -> None:
    """HTTP/1.0 without a Host header is answered (and closed); three pipelined requests get three
    answers in order."""
    old = _raw(target, b"GET /about HTTP/1.0\r\n\r\n")
    assert old.startswith(b"HTTP/1.1 200 ") and b'"h5lake"' in old
    about = b"GET /about HTTP/1.1\r\nHost: x\r\n\r\n"
    missing = b"GET /groups/g-0?domain=" + DOMAIN.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    last = about.replace(b"Host: x", b"Host: x\r\nConnection: close")
    answers = _raw(target, about + missing + last)
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", answers) == [b"200", b"400", b"200"], answers[:1000]


def test_urls_that_do_not_decode_into_utf8_are_refused(target: Target) -> None:
    """``domain=/home/admin/a%ff.h5`` made a domain named ``a\\ufffd.h5`` (the server decodes with
    replacement characters), and a link ``%C3%28`` was kept as ``\\ufffd(``: names the caller never
    sent, and several different requests named the same one."""
    for url in (f"{target.ep}/?domain=/home/admin/a%ff.h5", f"{target.ep}/?domain=/home/admin/%ED%A0%80.h5"):
        _refused(requests.put(url, auth=A, timeout=10), "does not percent-decode into UTF-8")
    link = f"{target.ep}/groups/{target.root}/links/a%C3%28?domain={DOMAIN}"
    _refused(requests.put(link, json={"h5path": "/x"}, auth=A, timeout=10), "path does not percent-decode")
    _refused(requests.get(link, auth=A, timeout=10), "path does not percent-decode")
    listed = requests.get(f"{target.ep}/domains", params={"domain": "/home/admin/"}, auth=A, timeout=10).json()["domains"]
    assert not [d["name"] for d in listed if "\ufffd" in d["name"]]
    fine = requests.put(f"{target.ep}/?domain=/home/admin/%C3%A9t%C3%A9.h5", auth=A, timeout=10)  # été.h5
    assert fine.status_code == 201 and fine.json()["domain"] == "/home/admin/\u00e9t\u00e9.h5"


def test_error_messages_quote_long_parameters_briefly(target: Target) -> None:
    reply = requests.get(f"{target.ep}/groups/{target.root}/links", params={"domain": DOMAIN, "Limit": "9x" * 20_000},
                         auth=A, timeout=10)
    _refused(reply, "must be an integer")
    assert len(reply.content) < 300


def test_a_body_orjson_refuses_is_not_parsed_again(target: Target) -> None:
    """A body orjson refused was parsed again by the standard library (for NaN tokens), one call
    holding the interpreter: a 90-96 MB one (within the 100 MiB JSON limit) with a lone surrogate
    escape at its end held another client 1.8-2.3 s (0.7 s now, most of it the upload;
    docs/security.md). Only a body with NaN or Infinity tokens (at most 8 MiB) is parsed again,
    which this shows without timing anything: ``1e400``, which only the standard library reads
    (as infinity), is refused unless the body has such a token."""
    url = f"/groups/{target.root}/attributes/big"
    strings = b'"aaaaaaa",' * 100_000
    for tail in (b"1e400]}", b"1,]}", b'"\\ud800"]}'):
        body = b'{"type": "H5T_IEEE_F64LE", "shape": [1], "value": [1], "pad": [' + strings + tail
        _refused(target.send("PUT", url, body), "not valid JSON")
    with_nan = b'{"type": "H5T_IEEE_F64LE", "shape": [2], "value": [1e400, NaN]}'
    assert target.send("PUT", url, with_nan).status_code == 201
    got = requests.get(f"{target.ep}{url}", params={"domain": DOMAIN}, auth=A, timeout=10).json()["value"]
    assert got == ["Infinity", "NaN"] or (got[0] == float("inf") and got[1] != got[1]), got


def test_several_authorization_headers_are_refused(target: Target) -> None:
    """The first of two ``Authorization`` headers was taken; a proxy in front that adds its own
    might read the other. Both ways in (the fast reads and the whole application) refuse them."""
    bob, admin = b"Basic dGVzdF91c2VyMTp0ZXN0MS1wdw==", b"Basic YWRtaW46YWRtaW4tcHc="  # test_user1, admin
    for path in (b"/about", b"/groups/" + target.root.encode() + b"?domain=" + DOMAIN.encode(), b"/?domain=" + DOMAIN.encode()):
        answer = _raw(target, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nAuthorization: " + bob + b"\r\nAuthorization: " + admin
                      + b"\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 401 "), (path, answer[:300])
        assert b"2 Authorization headers" in answer, answer[-200:]
