"""Route dispatch indexed by the first path segment.

Starlette's router tries every route in order, one regex each: 27 tries to reach
``/groups/{id}/attributes/{name}``, ~10% of a group GET's server CPU (docs/performance.md).
A route whose path starts with a literal segment (``/groups/...``) can only match a request
whose path starts with that segment, so ``IndexedRouter`` keeps, per first segment, the routes
that could match it in their original order (those with that literal first segment and those
whose first segment is a parameter, ``/{collection}/...``), and tries only those, exactly as
Starlette would. A request no route answers falls back to Starlette's own walk, so 404s, 405s
and slash redirects stay Starlette's, except that a 405 names in `Allow` the methods of every
route for the path (Starlette names the first one's).
"""

from __future__ import annotations

from typing import Any

from starlette._utils import get_route_path
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, Router
from starlette.types import Receive, Scope, Send


def _first_segment(path: str) -> str | None:
    """The literal first segment of a route's path; ``None`` when it holds a parameter (or the
    route has no path, as a ``Host``), so that the route is a candidate for every request."""
    first = path[1:].partition("/")[0]
    return None if "{" in first else first


class IndexedRouter(Router):
    def __init__(self, routes: list[BaseRoute], **kwargs: Any) -> None:
        super().__init__(routes, **kwargs)
        firsts = [_first_segment(getattr(route, "path", "{}")) for route in self.routes]
        self._anywhere = [route for route, first in zip(self.routes, firsts) if first is None]
        self._index: dict[str, list[BaseRoute]] = {}
        for key in {first for first in firsts if first is not None}:
            self._index[key] = [route for route, first in zip(self.routes, firsts) if first in (key, None)]

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().app(scope, receive, send)
            return
        first = get_route_path(scope)[1:].partition("/")[0]
        allowed: set[str] = set()
        for route in self._index.get(first, self._anywhere):
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope.setdefault("router", self)
                scope["route"] = route
                scope.update(child_scope)
                await route.handle(scope, receive, send)
                return
            if match is Match.PARTIAL:
                allowed.update(getattr(route, "methods", None) or ())
        if allowed:
            # a route for this path but not this method: a 405 naming every method the path
            # takes (Starlette's names only the first route's, "GET, HEAD" for a PUT-able "/")
            # (WebDAV's PROPFIND, which the Zarr bridge answers for listings, is not named: it is
            # no method of the documented HTTP API, and OpenAPI cannot describe it)
            raise HTTPException(405, headers={"Allow": ", ".join(sorted(allowed - {"PROPFIND"}))})
        await super().app(scope, receive, send)  # nothing here: Starlette's redirects and 404
