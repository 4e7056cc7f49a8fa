"""``/openapi.json`` is a valid OpenAPI 3.1 document that describes exactly the routes served."""

from __future__ import annotations

import html

import pytest
import requests
from openapi_spec_validator import validate
from starlette.routing import Route
from tests.support import conformance
from tests.support.server import USERS

from h5lake.api import metrics
from h5lake.api.routes import (
    domains as domain_routes,
)
from h5lake.api.routes import (
    maps as map_routes,
)
from h5lake.api.routes import (
    objects as object_routes,
)
from h5lake.api.routes import (
    openapi,
)
from h5lake.api.routes import (
    values as value_routes,
)
from h5lake.api.routes import (
    versions as version_routes,
)
from h5lake.api.routes import (
    zarr as zarr_routes,
)

pytestmark = pytest.mark.one_backend  # the document and the routes, the same on every store


def test_document_is_valid_openapi_31(endpoint: str) -> None:
    r = requests.get(endpoint + "/openapi.json", timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/json; charset=utf-8"
    doc = r.json()
    assert doc["openapi"].startswith("3.1")
    validate(doc)
    assert doc == openapi.document()


def _served() -> set[tuple[str, str]]:
    out = set()
    routes = domain_routes.ROUTES + object_routes.ROUTES + value_routes.ROUTES + map_routes.ROUTES + version_routes.ROUTES
    for route in routes + zarr_routes.ROUTES + metrics.ROUTES:
        assert isinstance(route, Route)
        path = route.path.replace(":path}", "}").replace(":version}", "}")
        for method in route.methods or ():
            if method not in ("HEAD", "PROPFIND"):  # OpenAPI has no WebDAV methods: docs/zarr.md says it
                # a route of every collection is documented once per collection
                out.update((method, path.replace("{collection}", c)) for c in ("groups", "datasets", "datatypes", "maps"))
    return out | {("GET", "/healthz"), ("GET", "/readyz")}  # answered by api/observe.py, before the routes


def test_document_covers_every_route_and_nothing_else() -> None:
    documented = {(op.method, op.path) for op in openapi.OPS}
    assert documented == _served()
    assert len({op.op_id for op in openapi.OPS}) == len(openapi.OPS)


def test_every_operation_is_matched_by_the_checker() -> None:
    for op in openapi.OPS:
        concrete = op.path.replace("{collection}", "groups").replace("{id}", "g-1").replace("{title}", "a/b")
        concrete = concrete.replace("{name}", "n").replace("{user}", "u").replace("{key}", "k").replace("{vid}", "v1").replace("{path}", "home/u/f.h5/g/c/0")
        found = conformance.find(op.method, concrete)
        assert found is not None and found.template == op.path, (op.method, op.path)


def test_docs_page_lists_operations(endpoint: str) -> None:
    r = requests.get(endpoint + "/docs", timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert "openapi.json" in r.text and "<script" not in r.text
    for op in openapi.OPS:
        assert html.escape(op.summary) in r.text


def test_checker_catches_a_broken_response() -> None:
    """The suite-wide check is not a no-op: a group without hrefs, a charset-less JSON reply and a
    decorated binary type are each reported."""
    json_type = {"content-type": "application/json; charset=utf-8"}
    assert conformance.problems_of("GET", "http://127.0.0.1:1/groups/g-1", 200, json_type, b'{"id": "g-1"}')
    assert conformance.problems_of("GET", "http://127.0.0.1:1/about", 200, {"content-type": "application/json"}, b"{}")
    assert conformance.problems_of(
        "GET", "http://127.0.0.1:1/datasets/d-1/value", 200,
        {"content-type": "application/octet-stream; charset=utf-8"}, b"\0",
    )
    good_error = b'{"error": {"status": 404, "message": "no"}}'
    assert not conformance.problems_of("GET", "http://127.0.0.1:1/groups/g-1", 404, json_type, good_error)


def test_limit_is_documented_where_a_query_takes_it() -> None:
    # a query update (PUT value?query=) takes Limit as a query read does (h5pyd's
    # Table.update_where sends it), and 0 means no limit on both
    doc = openapi.document()
    for method in ("get", "put"):
        params = {p["name"]: p for p in doc["paths"]["/datasets/{id}/value"][method]["parameters"]}
        assert "query" in params and "Limit" in params, method
        assert params["Limit"]["schema"]["minimum"] == 0, method


def test_health_readiness_and_metrics_answer_as_documented(endpoint: str) -> None:
    admin = ("admin", USERS["admin"])
    for path in ("/healthz", "/readyz", "/metrics"):
        r = requests.get(endpoint + path, auth=admin, timeout=30)
        assert r.status_code == 200, (path, r.text[:200])
        assert conformance.find("GET", path) is not None, path
        assert conformance.problems_of("GET", r.url, r.status_code, r.headers, r.content) == [], path
    assert requests.get(endpoint + "/metrics", timeout=30).status_code == 401  # documented as the default error
