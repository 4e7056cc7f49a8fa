"""The indexed router (``api/dispatch.py``) picks the route Starlette's linear walk would pick,
for every path and method, on the app's real route table."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from starlette.routing import BaseRoute, Match

from h5lake.api.app import create_app
from h5lake.api.dispatch import IndexedRouter
from h5lake.config import Settings

GID = "g-12345678-12345678-1234-123456-123456"
SEGMENTS = [
    "", "groups", "datasets", "datatypes", "maps", "acls", "versions", "view", "h5grove", "about",
    "domains", "openapi.json", GID, "links", "attributes", "value", "shape", "key", "keys", "tags",
    "restore", "api", "static", "x", "a%2Fb",
]  # fmt: skip


def _walk(routes: list[BaseRoute], scope: dict[str, object]) -> BaseRoute | None:
    """The route Starlette's router hands a request to: the first full match, else the first
    partial one (a path it knows with another method: 405)."""
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


def test_the_indexed_router_picks_what_the_linear_walk_picks(tmp_path: Path) -> None:
    router = create_app(Settings(data=tmp_path)).router
    assert isinstance(router, IndexedRouter)
    rng = random.Random(14)
    paths = {"", "/"} | {"/" + "/".join(c) for n in (1, 2) for c in itertools.product(SEGMENTS, repeat=n)}
    for _ in range(200):
        path = "/" + "/".join(rng.choice(SEGMENTS) for _ in range(rng.randint(3, 6)))
        paths |= {path, path + "/"}
    picked = 0
    for path in sorted(paths):
        first = path[1:].partition("/")[0]
        candidates = router._index.get(first, router._anywhere)
        for method in ("GET", "PUT", "POST", "PATCH"):
            scope = {"type": "http", "path": path, "method": method, "root_path": ""}
            expected = _walk(router.routes, scope)
            assert _walk(candidates, scope) is expected, (method, path)
            picked += expected is not None
    assert picked > 500  # the paths reach many routes, not only 404s
