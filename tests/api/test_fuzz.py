"""Fuzzing: every operation of ``/openapi.json`` (and, below, of the web view and h5grove) driven
with generated requests (schemathesis) against a real server, as an ordinary user on a domain of
its own.

Asserted for every response: no 5xx, it conforms to the document (schema, status, content type),
and it comes within the request timeout. A domain another user wrote before the fuzzing reads
back byte for byte the same after it. Path ids are real ids of the fuzzed domain most of the
time (else nearly every request would stop at "invalid id"); the domain is always the fuzzed one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig
from tests.conftest import auth
from tests.support.server import Server, start_server

# generated cases per operation: every case is drawn from the schema in this process (~40 ms of
# CPU each, most of the test's time), 8 + 4 for each of the ~80 operations
EXAMPLES = {GenerationMode.POSITIVE: 8, GenerationMode.NEGATIVE: 4}
# Generated strings are short: some requests take a long one instead, for a name in the path, or
# for the domain (its keys past the 1,024-byte key limit of seed 001). Each must be refused as a 4xx.
LONG_DOMAIN = "/home/test_user1" + ("/" + "é" * 60) * 10 + "/x.h5"  # 626 characters, 1,226 bytes
LONG = [*[None] * 12, "é" * 300, "x/" * 600, "\U0001f600" * 300, LONG_DOMAIN, LONG_DOMAIN + "@v1"]
TIMEOUT = 30.0
FUZZ = "/home/test_user1/fuzz.h5"
GOLDEN = "/home/test_user2/golden.h5"
ROOT = Path(__file__).resolve().parents[2]


def _load_schema(document: dict[str, Any], scratch: Path) -> Any:
    """The schema, with schemathesis's own files (its request cache, otherwise
    ``./.schemathesis``) kept in ``scratch``, out of the checkout."""
    config = SchemathesisConfig.from_dict({"cache": {"directory": str(scratch / "schemathesis-cache")}})
    return schemathesis.openapi.from_dict(document, config=config)


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(Path(tmp_path_factory.mktemp("fuzz")))
    yield srv
    srv.stop()


def _session(user: str) -> requests.Session:
    s = requests.Session()
    s.auth = auth(user)
    return s


def _ok(r: requests.Response, *codes: int) -> dict[str, Any]:
    assert r.status_code in (codes or (200, 201)), (r.request.method, r.url, r.status_code, r.text[:300])
    return r.json() if r.content and r.headers["Content-Type"].startswith("application/json") else {}


def _populate(e: str, s: requests.Session, domain: str) -> dict[str, list[str]]:
    """A domain with a group, a committed type, three datasets (one resizable), a map, links,
    attributes."""
    p = {"domain": domain}
    root = _ok(s.put(e + "/", params=p, json={}), 201)["root"]
    group = _ok(s.post(e + "/groups", params=p, json={}))["id"]
    dtype = _ok(s.post(e + "/datatypes", params=p, json={"type": "H5T_STD_I16LE"}))["id"]
    dset = _ok(s.post(e + "/datasets", params=p, json={"type": "H5T_IEEE_F64LE", "shape": [6, 4]}))["id"]
    grow = _ok(s.post(e + "/datasets", params=p, json={"type": "H5T_STD_U8LE", "shape": [3], "maxdims": [0]}))["id"]
    cmpd = {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I32LE"},
                                                  {"name": "b", "type": "H5T_IEEE_F32LE"}]}
    table = _ok(s.post(e + "/datasets", params=p, json={"type": cmpd, "shape": [5]}))["id"]
    lookup = _ok(s.post(e + "/maps", params=p, json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE"}))["id"]
    _ok(s.put(e + f"/maps/{lookup}/keys", params=p, json={"keys": [0, 1, 2, 3], "values": [0.0, 0.5, 1.0, 1.5]}))
    links = {"g": {"id": group}, "t": {"id": dtype}, "d": {"id": dset}, "grow": {"id": grow},
             "table": {"id": table}, "soft": {"h5path": "/g"}, "lookup": {"id": lookup}}
    _ok(s.put(e + f"/groups/{root}/links", params=p, json={"links": links}))
    _ok(s.put(e + f"/datasets/{dset}/value", params=p, json={"value": np.arange(24.0).reshape(6, 4).tolist()}))
    _ok(s.put(e + f"/datasets/{table}/value", params=p, json={"value": [[i, i / 2] for i in range(5)]}))
    for owner in (f"/groups/{root}", f"/groups/{group}", f"/datasets/{dset}", f"/datatypes/{dtype}"):
        _ok(s.put(e + owner + "/attributes/units", params=p,
                  json={"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"},
                        "shape": {"class": "H5S_SCALAR"}, "value": "m/s"}))
    return {"groups": [root, group], "datasets": [dset, grow, table], "datatypes": [dtype], "maps": [lookup]}


def _snapshot(e: str, s: requests.Session, domain: str, ids: dict[str, list[str]]) -> list[tuple[str, bytes]]:
    """The bytes of every read of the golden domain: objects with links and attributes, values packed."""
    p = {"domain": domain}
    out = []
    for collection, found in ids.items():
        for obj_id in found:
            r = s.get(e + f"/{collection}/{obj_id}", params={**p, "include_links": 1, "include_attrs": 1})
            out.append((r.url, _ok(r, 200) and r.content))
            if collection == "datasets":
                r = s.get(e + f"/datasets/{obj_id}/value", params=p, headers={"Accept": "application/octet-stream"})
                out.append((r.url, r.content))
                assert r.status_code == 200
            if collection == "maps":
                r = s.get(e + f"/maps/{obj_id}/keys", params={**p, "IncludeValues": 1})
                out.append((r.url, _ok(r, 200) and r.content))
    out.append(("links", s.get(e + f"/groups/{ids['groups'][0]}/links", params=p).content))
    return out


def _domain_given(document: dict[str, Any]) -> dict[str, Any]:
    """The document with the ``domain`` query parameter one value, the fuzzed domain: every case
    names its domain itself (``_drive``), and drawing values of that parameter's pattern (its
    look-aheads make hypothesis draw and filter) took nearly half of the drawing's CPU time, for
    values then replaced. The replies are checked against the document as served (its responses
    are untouched)."""

    def one(param: dict[str, Any]) -> None:
        if param.get("in") == "query" and param.get("name") == "domain":
            param["schema"] = {"type": "string", "enum": [FUZZ]}

    given = copy.deepcopy(document)
    for operations in given["paths"].values():
        for key, operation in operations.items():
            params = operation if key == "parameters" else operation.get("parameters", []) if isinstance(operation, dict) else []
            for param in params:
                one(param)
    for param in given.get("components", {}).get("parameters", {}).values():
        one(param)
    return given


def _operations(schema: Any) -> list[Any]:
    ops = [result.ok() for result in schema.get_all_operations()]
    # deletions last, deleting the domain itself very last: they would empty what the rest explores
    return sorted(ops, key=lambda op: (op.method.upper() == "DELETE", op.path == "/", op.path, op.method))


CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance, status_code_conformance]


def _drive(op: Any, mode: GenerationMode, count: int, e: str, session: requests.Session,
           ids: dict[str, list[str]], seen: dict[str, list[int]]) -> None:
    """``count`` generated requests of one operation, each checked."""
    any_ids = [i for found in ids.values() for i in found]

    @settings(max_examples=count, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy(generation_mode=mode), pick=st.integers(0, 5), longer=st.sampled_from(LONG))
    def run(case: Any, pick: int, longer: str | None) -> None:
        domain = longer if longer is not None and longer.startswith(LONG_DOMAIN) else FUZZ
        case.query = {**(case.query or {}), "domain": domain}
        path = dict(case.path_parameters or {})
        names = [k for k in path if k not in ("id", "collection")]
        if longer is not None and domain == FUZZ and names:
            path[names[pick % len(names)]] = longer
        if "id" in path and pick < 5:
            pool = any_ids
            if op.path.startswith(("/groups", "/datasets", "/datatypes", "/maps")):
                pool = ids[op.path.split("/")[1]]
            path["id"] = pool[pick % len(pool)]
            if "collection" in path:
                path["collection"] = next(c for c, found in ids.items() if path["id"] in found)
        if "user" in path and pick < 3:
            path["user"] = ("test_user1", "test_user2", "nobody")[pick]
        case.path_parameters = path
        response = case.call(base_url=e, session=session, timeout=TIMEOUT)
        seen.setdefault(op.label, []).append(response.status_code)
        case.validate_response(response, checks=CHECKS)

    try:
        run()
    except Unsatisfiable:
        # a negative case needs something to break; an operation with no constraint (no
        # required parameter, an open body) has none
        assert mode is GenerationMode.NEGATIVE, op.label


def test_fuzz_every_operation(fuzz_server: Server, tmp_path: Path) -> None:
    e = fuzz_server.endpoint
    owner = _session("test_user2")
    _ok(owner.put(e + "/", params={"domain": "/home/test_user2"}, json={"folder": True}), 201)
    golden_ids = _populate(e, owner, GOLDEN)
    before = _snapshot(e, owner, GOLDEN, golden_ids)

    fuzzer = _session("test_user1")
    _ok(fuzzer.put(e + "/", params={"domain": "/home/test_user1"}, json={"folder": True}), 201)
    ids = _populate(e, fuzzer, FUZZ)

    schema = _load_schema(_domain_given(fuzzer.get(e + "/openapi.json").json()), tmp_path)
    seen: dict[str, list[int]] = {}

    for op in _operations(schema):
        for mode, count in EXAMPLES.items():
            _drive(op, mode, count, e, fuzzer, ids, seen)

    assert set(seen) == {op.label for op in _operations(schema)}
    # the fuzzing reached past validation: most operations succeeded at least once
    # (but /metrics, which answers only admins and its token's bearer: 401 to the fuzzing user)
    reachable = {label: codes for label, codes in seen.items() if label != "GET /metrics"}
    succeeded = [label for label, codes in reachable.items() if any(200 <= c < 300 for c in codes)]
    assert len(succeeded) >= 2 * len(reachable) // 3, sorted((label, sorted(set(c))) for label, c in reachable.items())
    assert _snapshot(e, owner, GOLDEN, golden_ids) == before
    assert not (ROOT / ".schemathesis").exists() and not (Path.cwd() / ".schemathesis").exists()  # no test output in the tree


# --- the web view's and h5grove's routes ------------------------------------------------------
# They are separate, read-only APIs, not in /openapi.json: a document of their parameters (all
# query strings) is made here, so schemathesis drives them the same way. Asserted: no 5xx, and
# every refusal is JSON (h5grove's {"message"}, the view's {"error"}).

_VIEW_PARAMS: dict[str, tuple[str, ...]] = {
    "/h5grove/meta": ("file", "path"),
    "/h5grove/attr": ("file", "path", "attr_keys"),
    "/h5grove/data": ("file", "path", "selection", "format", "dtype", "flatten"),
    "/h5grove/stats": ("file", "path", "selection"),
    "/h5grove/paths": ("file", "path"),
    "/view/api/folder": ("folder",),
    "/view/api/summary": ("domain",),
    "/view/api/object": ("domain", "path"),
    "/view/api/paths": ("domain", "path"),
    "/view/api/linked": ("domain", "path"),
    "/view/api/preview": ("domain", "path", "selection", "width", "height"),
    "/view/api/values": ("domain", "path", "selection", "format"),
}
_PATHS = ["/", "/d", "/grow", "/table", "/g", "/soft", "/t", "/lookup", "/nowhere"]
_SELECTIONS = ["0", "1:3", "::2,1", "0:2,0:2", "-1", "0:9999999999", ",", "::0", "[0]", "1:2:3:4", "0,0,0", "...", ""]


def _view_document() -> dict[str, Any]:
    def param(name: str) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if name == "path":
            schema = {"anyOf": [{"enum": _PATHS}, {"type": "string"}]}
        elif name == "selection":
            schema = {"anyOf": [{"enum": _SELECTIONS}, {"type": "string"}]}
        elif name == "format":
            schema = {"anyOf": [{"enum": ["json", "bin", "npy", "csv", "tiff"]}, {"type": "string"}]}
        elif name in ("width", "height"):
            schema = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        return {"name": name, "in": "query", "required": name in ("file", "domain"), "schema": schema}

    paths = {
        route: {"get": {"parameters": [param(n) for n in names], "responses": {"default": {"description": "any"}}}}
        for route, names in _VIEW_PARAMS.items()
    }
    return {"openapi": "3.0.3", "info": {"title": "h5lake view and h5grove", "version": "1"}, "paths": paths}


def _drive_view(op: Any, e: str, session: requests.Session, domain: str, seen: dict[str, list[int]]) -> None:
    @settings(max_examples=25, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy(generation_mode=GenerationMode.POSITIVE), pick=st.integers(0, 3),
           path=st.sampled_from([None, *_PATHS[:4]]), selection=st.sampled_from([None, None, *_SELECTIONS]))
    def run(case: Any, pick: int, path: str | None, selection: str | None) -> None:
        query = dict(case.query or {})
        key = "file" if op.path.startswith("/h5grove") else "domain"
        if key in query and pick < 3:
            query[key] = domain  # most requests reach the data
        # most requests name a dataset and a selection that exist, the others what was generated
        for name, value in (("path", path), ("selection", selection)):
            if value is not None and name in _VIEW_PARAMS[op.path]:
                query[name] = value
        if op.path == "/view/api/folder" and pick < 2:
            query["folder"] = "/home/test_user1/"
        case.query = query
        response = case.call(base_url=e, session=session, timeout=TIMEOUT)
        seen.setdefault(op.path, []).append(response.status_code)
        assert response.status_code < 500, (op.path, query, response.text[:300])
        if response.status_code >= 400:
            ctype = response.headers.get("content-type") or [""]
            assert (ctype[0] if isinstance(ctype, list) else ctype).startswith("application/json"), (op.path, query)
            assert set(orjson.loads(response.content)) & {"message", "error"}, response.text[:300]

    run()


def test_fuzz_view_and_h5grove_routes(fuzz_server: Server, tmp_path: Path) -> None:
    e = fuzz_server.endpoint
    user = _session("test_user1")
    domain = "/home/test_user1/viewfuzz.h5"
    user.put(e + "/", params={"domain": "/home/test_user1"}, json={"folder": True})
    _populate(e, user, domain)
    schema = _load_schema(_view_document(), tmp_path)
    seen: dict[str, list[int]] = {}
    for result in schema.get_all_operations():
        _drive_view(result.ok(), e, user, domain, seen)
    assert set(seen) == set(_VIEW_PARAMS)
    # the fuzzed domain holds no linked dataset: /view/api/linked refuses every path of it (400)
    succeeded = [p for p, codes in seen.items() if any(c == 200 for c in codes) or p == "/view/api/linked"]
    assert len(succeeded) == len(seen), sorted((p, sorted(set(c))) for p, c in seen.items())
    assert not (ROOT / ".schemathesis").exists() and not (Path.cwd() / ".schemathesis").exists()
