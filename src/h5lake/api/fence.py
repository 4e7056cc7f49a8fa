"""ASGI middleware: every request that may change a domain (PUT, POST, DELETE naming one, other
than the version routes) holds that domain's commit fence for its whole run, so a commit of the
domain in this process sees it wholly or not at all (`service.fences`)."""

from __future__ import annotations

from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from h5lake.errors import InvalidInput
from h5lake.model.ids import normalize_domain

CHANGES = frozenset({"PUT", "POST", "DELETE"})


class CommitFence:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        domain = _changed_domain(scope)
        svc = getattr(scope["app"].state, "service", None) if domain is not None else None
        if svc is None:
            await self.app(scope, receive, send)
            return
        async with svc.fences.changing(domain):
            await self.app(scope, receive, send)


def _changed_domain(scope: Scope) -> str | None:
    if scope["type"] != "http" or scope["method"] not in CHANGES or scope["path"].startswith("/versions"):
        return None
    return fenced_domain(QueryParams(scope.get("query_string", b"")).get("domain") or Headers(scope=scope).get("x-hdf-domain"))


def fenced_domain(value: str | None) -> str | None:
    """The domain a change names by ``domain=`` (else ``X-Hdf-domain``), normalized; ``None``
    when it names none that can be fenced (the handler answers those)."""
    if not value or "@" in value:
        return None
    try:
        return normalize_domain(value.removeprefix("hdf5:/"))
    except InvalidInput:
        return None
