"""Every response a test sees from an h5lake on loopback, checked against ``/openapi.json``.

``watch()`` wraps ``requests``' transport (which h5pyd uses too), so plain HTTP tests and h5pyd
runs alike are checked: a JSON response must match the schema the document gives its operation
and status (errors: the error body), a packed response must say exactly
``application/octet-stream``, JSON must say ``charset=utf-8``. Paths the document does not
describe (other modules' pages) are left alone. Problems are collected, and the test that caused
them fails at its end (``tests/conftest.py``), so a client's own error handling cannot hide them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import orjson
import requests
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from h5lake.api.routes.openapi import document

BASE = "urn:h5lake-openapi"
MAX_CHECKED_BYTES = 8 * 1024 * 1024
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    spec: dict[str, Any]


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _group(m: re.Match[str]) -> str:
    """A path parameter as a named group: names may hold slashes, ids may not."""
    name = m.group(1)
    return f"(?P<{name}>{'.+' if name in ('title', 'name', 'path') else '[^/]+'})"


@cache
def operations() -> tuple[Operation, ...]:
    doc = document()
    ops = []
    for template, item in doc["paths"].items():
        regex = re.sub(r"\\\{(\w+)\\\}", _group, re.escape(template))
        for method, spec in item.items():
            ops.append(Operation(method.upper(), template, re.compile(f"^{regex}$"), spec))
    # fixed paths before templated ones ("/datasets/{id}" must not take "/groups/.../links")
    ops.sort(key=lambda o: (o.template.count("{"), -len(o.template)))
    return tuple(ops)


@cache
def _registry() -> Registry:
    return Registry().with_resource(BASE, Resource.from_contents(document(), default_specification=DRAFT202012))


@cache
def _validator(template: str, method: str, status: str) -> Draft202012Validator:
    ref = f"{BASE}#/" + _pointer("paths", template, method.lower(), "responses", status, "content",
                                 "application/json", "schema")
    return Draft202012Validator({"$ref": ref}, registry=_registry())


def find(method: str, path: str) -> Operation | None:
    for op in operations():
        if op.method == method and op.pattern.match(path):
            return op
    return None


def problems_of(method: str, url: str, status: int, headers: Any, body: bytes | None) -> list[str]:
    """What is wrong with one response, by the document ([] when nothing is, or it is not ours)."""
    path = urlsplit(url).path
    op = find(method, path)
    if op is None:
        return []
    where = f"{method} {path} -> {status}"
    ctype = headers.get("content-type", "")
    responses = op.spec["responses"]
    key = str(status) if str(status) in responses else "default"
    if key == "default" and status < 400:
        return [f"{where}: status {status} is not documented"]
    reply = responses[key]
    if "content" not in reply:
        return [] if not body else [f"{where}: documented without a body, got {len(body)} bytes"]
    if ctype.startswith("application/octet-stream"):
        if ctype != "application/octet-stream":
            return [f"{where}: binary Content-Type must be exactly application/octet-stream, got {ctype!r}"]
        if "application/octet-stream" not in reply["content"]:
            return [f"{where}: a binary reply is not documented"]
        return []
    if ctype.startswith("text/plain") and "text/plain" in reply["content"]:
        return []
    if ctype != "application/json; charset=utf-8":
        return [f"{where}: Content-Type {ctype!r}, expected application/json; charset=utf-8"]
    if body is None:
        return []
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:  # NaN and Infinity are answered as bare tokens, as HSDS does (docs/api.md)
            data = json.loads(body)
        except ValueError:
            return [f"{where}: body is not JSON"]
    seen = (op.template, method, key, hashlib.blake2b(body, digest_size=16).digest())
    found = _checked.get(seen)
    if found is None:
        errors = sorted(_validator(op.template, method, key).iter_errors(data), key=lambda e: list(e.path))
        found = tuple(f"{'/'.join(map(str, e.path)) or '(body)'}: {e.message[:300]}" for e in errors[:5])
        _checked[seen] = found
        if len(_checked) > MAX_REMEMBERED:
            _checked.popitem(last=False)
    return [f"{where}: {problem}" for problem in found]


# What the schema said of a body already checked, by operation, status and the body's digest:
# the same reply (an object read again, a poll answered the same) is validated once. Validating
# is most of this module's cost (~0.8 ms a reply, interpreted jsonschema against $refs).
MAX_REMEMBERED = 50_000
_checked: OrderedDict[tuple[str, str, str, bytes], tuple[str, ...]] = OrderedDict()


class Watcher:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.checked = 0

    def observe(self, response: requests.Response) -> None:
        request = response.request
        host = urlsplit(response.url).hostname
        if host not in _LOOPBACK or request.method is None:
            return
        ctype = response.headers.get("content-type", "")
        body: bytes | None = None
        size = response.headers.get("content-length")
        if ctype.startswith("application/json") and size is not None and int(size) <= MAX_CHECKED_BYTES:
            body = response.content  # buffered: requests serves later reads from it
        found = problems_of(request.method, response.url, response.status_code, response.headers, body)
        self.checked += 1
        self.problems.extend(found)

    def take(self) -> list[str]:
        out, self.problems = self.problems, []
        return out


@contextmanager
def watch() -> Iterator[Watcher]:
    """Check every response ``requests`` receives in this process while the block runs."""
    watcher = Watcher()
    original = requests.adapters.HTTPAdapter.send

    def send(self: requests.adapters.HTTPAdapter, request: requests.PreparedRequest, **kw: Any) -> Any:
        response = original(self, request, **kw)
        try:
            watcher.observe(response)
        except requests.RequestException:
            raise  # the transport broke reading the body (a server killed mid-reply): the caller's, as without the watcher
        except Exception as exc:  # noqa: BLE001 -- a checker bug must not look like a server bug
            watcher.problems.append(f"conformance check failed on {request.method} {request.url}: {exc!r}")
        return response

    requests.adapters.HTTPAdapter.send = send  # type: ignore[method-assign]
    try:
        yield watcher
    finally:
        requests.adapters.HTTPAdapter.send = original  # type: ignore[method-assign]
