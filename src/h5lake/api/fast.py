"""The fast path: the hot GET (and HEAD) routes, and PUTs of one link or one attribute,
answered below Starlette's stack.

h5pyd opens files, groups, datasets, links and attributes with single GETs; each paid ~0.06 ms
of Starlette (its middleware stack, the route walk, `Request` objects, a fresh `QueryParams`
per request) on top of the ~0.1 ms the work itself costs (docs/performance.md). `FastReads`
recognises those requests from the scope alone (method and path, matched exactly as the
routes would), authenticates them as `Authenticate` does, and calls **the same handler** the
router would, with a request whose query parameters are parsed once per distinct query string.
Its reply, or the error's from `api/errors.py`, is sent as the stack would send it.

A PUT of ``/groups/{id}/links/{title}`` or ``/{groups,datasets,datatypes}/{id}/attributes/{name}``
(h5pyd writes attributes and links one request each) is taken too: the same handler reads the
body from ``receive`` (its use case holds the domain's commit fence, `service.fences`); a client
that leaves mid-body gets the 400 of `api.errors.client_disconnected`, as from the stack.

Everything else falls through to the whole application, unchanged: other methods, other paths,
a path the router would redirect, a path with a newline, a ``root_path``, and an app whose
start-up has not run. For the requests it takes the skipped layers do nothing: the exception
middlewares only act on an error, which is rendered here by the same handlers (`api.errors.HANDLERS`). With CORS on (``--cors-origin``) there is no fast path: the CORS
middleware adds headers (``Vary: Origin``) to every reply.

`tests/api/test_fast_path.py` sends a broad set of requests to the app with and without it and
compares status, headers and body.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import lru_cache
from typing import Any

from starlette.datastructures import Headers, QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from h5lake.api.errors import client_disconnected, h5lake_error, http_error, unexpected_error
from h5lake.api.http import one_authorization
from h5lake.auth import Authenticator, Identity
from h5lake.errors import H5LakeError, Unauthorized

Handler = Callable[[Request], Coroutine[Any, Any, Response]]

#: The routes taken here, by their path in the route table.
HOT = (
    "/",
    "/groups/{id}",
    "/datasets/{id}",
    "/datatypes/{id}",
    "/groups/{id}/links",
    "/groups/{id}/links/{title:path}",
    "/{collection}/{id}/attributes",
    "/{collection}/{id}/attributes/{name:path}",
)
_OBJECTS = ("groups", "datasets", "datatypes")
_READS = frozenset({"GET", "HEAD"})
_TAKEN = frozenset({"GET", "HEAD", "PUT"})
_QUERY_CACHED = 2048  # longest query string whose parse is kept


class Query(QueryParams):
    """Query parameters shared by every request with the same query string (immutable):
    ``get`` is the dict's own, as the route handlers ask for one name at a time."""

    def __init__(self, query: bytes) -> None:
        super().__init__(query)
        self.get = self._dict.get  # type: ignore[method-assign]


@lru_cache(maxsize=1024)
def _parsed(query: bytes) -> Query:
    return Query(query)


def query_of(query: bytes) -> Query:
    return _parsed(query) if len(query) <= _QUERY_CACHED else Query(query)


class FastHeaders(Headers):
    """Starlette's `Headers` with a ``get`` of its own: the first value of the name, as
    ``Mapping.get`` finds it through ``__getitem__``, without raising and catching a
    ``KeyError`` for each name a request lacks (a PUT asks for four or five headers; most
    requests send none of ``Content-Encoding``, ``X-Hdf-domain``)."""

    def get(self, key: str, default: Any = None) -> Any:
        wanted = key.lower().encode("latin-1")
        for name, value in self._list:
            if name == wanted:
                return value.decode("latin-1")
        return default


class FastRequest(Request):
    """A `Request` whose query parameters come parsed (shared, see `Query`), as a plain
    attribute rather than a property (the handlers read them a few times each), and whose
    headers are `FastHeaders`."""

    query_params: QueryParams = None  # type: ignore[assignment]  # shadows the property

    def __init__(self, scope: Scope, query: Query, receive: Receive) -> None:
        super().__init__(scope, receive)
        self.query_params = query

    @property
    def headers(self) -> Headers:
        if not hasattr(self, "_headers"):  # made when first asked for, as Starlette's
            self._headers = FastHeaders(scope=self.scope)
        return self._headers


class FastReads:
    """Answers the hot reads of ``app`` (`HOT`) and the PUTs of one link or one attribute
    itself; returns False for any request it leaves to the application (nothing has been sent
    then)."""

    def __init__(self, app: Any, routes: list[BaseRoute]) -> None:
        self.app = app
        endpoints: dict[str, Handler] = {}
        #: the route of each handler, named in the scope as the router does (`api/observe.py`
        #: labels figures with its path)
        self.routes: dict[Handler, BaseRoute] = {}
        for route in routes:  # the first route of each path, as the router finds it
            path, endpoint = getattr(route, "path", None), getattr(route, "endpoint", None)
            methods = getattr(route, "methods", None) or ()
            if path in HOT and path not in endpoints and endpoint is not None and "GET" in methods:
                endpoints[path] = endpoint
                self.routes[endpoint] = route
        missing = set(HOT) - set(endpoints)
        if missing:
            raise RuntimeError(f"fast path: no GET route for {sorted(missing)}")
        self.domain = endpoints["/"]
        self.objects = {c: endpoints[f"/{c}/{{id}}"] for c in _OBJECTS}
        self.links = endpoints["/groups/{id}/links"]
        self.link = endpoints["/groups/{id}/links/{title:path}"]
        self.attributes = endpoints["/{collection}/{id}/attributes"]
        self.attribute = endpoints["/{collection}/{id}/attributes/{name:path}"]
        # the single-item PUTs: the same handlers (they answer every method of their path)
        self.puts = frozenset({self.link, self.attribute})
        for path, endpoint in (("/groups/{id}/links/{title:path}", self.link), ("/{collection}/{id}/attributes/{name:path}", self.attribute)):
            if not any(getattr(r, "path", None) == path and getattr(r, "endpoint", None) is endpoint and "PUT" in (getattr(r, "methods", None) or ()) for r in routes):
                raise RuntimeError(f"fast path: {path} does not take PUT on its GET handler")

    def match(self, path: str) -> tuple[Handler, dict[str, str]] | None:
        """The handler and path parameters the router would find for a GET of ``path``, when
        it is one of `HOT` (``{id}`` is one non-empty segment, ``{name:path}`` the rest)."""
        if path == "/":
            return self.domain, {}
        if "\n" in path:  # the routes' regexes: ``.*`` stops at a newline and ``$`` matches before one
            return None
        parts = path.split("/")
        if len(parts) < 3 or parts[0] or parts[1] not in _OBJECTS or not parts[2]:
            return None
        collection, obj_id = parts[1], parts[2]
        if len(parts) == 3:
            return self.objects[collection], {"id": obj_id}
        kind = parts[3]
        if kind == "links" and collection == "groups":
            if len(parts) == 4:
                return self.links, {"id": obj_id}
            return self.link, {"id": obj_id, "title": "/".join(parts[4:])}
        if kind == "attributes":
            if len(parts) == 4:
                return self.attributes, {"collection": collection, "id": obj_id}
            return self.attribute, {"collection": collection, "id": obj_id, "name": "/".join(parts[4:])}
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> bool:
        method = scope["method"]
        if method not in _TAKEN or scope.get("root_path"):
            return False
        found = self.match(scope["path"])
        if found is None:
            return False
        if method not in _READS and found[0] not in self.puts:
            return False
        authenticator: Authenticator | None = self.app.authenticator
        if authenticator is None:
            return False  # start-up has not run: the application answers as it would
        headers: list[str] = []
        for key, value in scope["headers"]:  # as `Authenticate` and Starlette's Headers.get read them
            if key == b"authorization":
                headers.append(value.decode("latin-1"))
        identity: Identity | Unauthorized
        try:
            identity = await authenticator.identify(one_authorization(headers))
        except Unauthorized as exc:
            identity = exc
        # kept where `Authenticate` keeps it: a request that falls through is not identified twice
        scope.setdefault("state", {})["identity"] = identity
        handler, params = found
        scope["app"] = self.app
        scope["route"] = self.routes[handler]
        scope["path_params"] = params
        query = query_of(scope["query_string"])
        request = FastRequest(scope, query, receive)
        try:
            response = await handler(request)
        except H5LakeError as exc:
            response = await h5lake_error(request, exc)
        except HTTPException as exc:
            response = await http_error(request, exc)
        except ClientDisconnect as exc:
            response = await client_disconnected(request, exc)
        except Exception as exc:
            # as Starlette's outermost middleware: the 500 reply, then the error to the server
            response = await unexpected_error(request, exc)
            await response(scope, receive, send)
            raise
        await response(scope, receive, send)
        return True
