"""The ASGI application: routes, error mapping, and the service made once at start-up."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from h5lake.api import connections, metering, metrics
from h5lake.api.dispatch import IndexedRouter
from h5lake.api.errors import HANDLERS, error_response, status_of
from h5lake.api.fast import FastReads
from h5lake.api.http import Authenticate, undecodable_url
from h5lake.api.observe import READINESS, Observe, configure_access_log
from h5lake.api.routes import (
    domains as domain_routes,
)
from h5lake.api.routes import (
    h5grove as h5grove_routes,
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
    viewer as view_routes,
)
from h5lake.api.routes import (
    zarr as zarr_routes,
)
from h5lake.auth import ApiKeys, Authenticator, OidcConfig, TokenVerifier, load_passwd
from h5lake.config import Settings
from h5lake.service.context import Limits, Service
from h5lake.sources.files import SourceRegistry, default_registry
from h5lake.storage import Store
from h5lake.storage.configured import open_store, s3_store

log = logging.getLogger(__name__)


def open_sources(settings: Settings) -> SourceRegistry:
    """Where linked HDF5 files may be read: the ``--allow-source`` folders (symlinks resolved)
    and ``s3://`` prefixes, the latter on the S3 endpoint and region of the settings."""
    roots = tuple(r if r.startswith("s3://") else str(Path(r).resolve()) for r in settings.allow_source)
    s3: Callable[[str], Any] | None = None
    if any(r.startswith("s3://") for r in roots):

        def s3(bucket: str) -> Any:
            return s3_store(bucket, "", settings)

    return default_registry(roots, s3)


def build_service(settings: Settings, store: Store) -> Service:
    sources = open_sources(settings)
    return Service(
        store=store,
        limits=Limits(
            settings.min_chunk_bytes,
            settings.max_chunk_bytes,
            settings.max_request_bytes,
            settings.max_json_bytes,
            settings.compact_max_bytes,
            settings.max_attribute_bytes,
            max_reply_size=settings.max_reply_bytes,
            max_query_elements=settings.max_query_elements,
        ),
        admins=frozenset(settings.admin),
        public_read=settings.public_read,
        chunk_concurrency=settings.chunk_concurrency,
        domain_objects_limit=settings.domain_objects_limit,
        allowed_sources=sources.policy.roots(),
        sources=sources,
        catalog_stale_after=settings.catalog_stale_after,
        catalog_recover_every=settings.catalog_recover_every,
        commit_lease=settings.commit_lease,
        reply_memory=settings.reply_memory_bytes or 2 * settings.max_request_bytes,
        watch_interval=settings.watch_interval,
        watch_max_datasets=settings.watch_max_datasets,
    )


def build_authenticator(settings: Settings, store: Store) -> Authenticator:
    tokens = None
    if settings.oidc_issuer:
        tokens = TokenVerifier(
            OidcConfig(
                issuer=settings.oidc_issuer,
                audience=settings.oidc_audience or "",
                jwks_url=settings.oidc_jwks_url,
                user_claim=settings.oidc_user_claim,
                admin_claim=settings.oidc_admin_claim,
                admin_value=settings.oidc_admin_value,
            )
        )
    return Authenticator(
        load_passwd(settings.passwd) if settings.passwd else None,
        apikeys=ApiKeys(store, ttl=settings.apikey_cache_seconds),
        tokens=tokens,
    )


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD_BYTES = 1024 * 1024  # chunk-sized blocks; smaller ones (request body pieces) stay in the heap
M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter
TRIM_THRESHOLD_BYTES = 8 * 1024 * 1024  # free heap kept on top before it is given back


def fix_mmap_threshold() -> None:
    """Keep large allocations (chunk bytes, blocks of a request) in memory maps of their own,
    returned to the system when freed. glibc otherwise raises its map threshold to the largest
    block freed so far, after which megabyte blocks come from per-thread arenas that keep
    freed memory: with a dozen store and codec threads a 2 GiB read grew a process by ~100 MiB
    (tests/api/test_streaming.py). Fixing it also fixes the trim threshold at glibc's default,
    128 KiB, so the heap gave back the pages of every 256 KB request body piece when it was
    freed and faulted them in (zero-filled) again for the next: ~15 page faults per MiB
    written, ~0.25 ms of CPU. It is set to 8 MiB. Not glibc (musl, macOS): nothing to do."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)


class App(Starlette):
    """The application, with the hot reads answered in front of its stack (`api/fast.py`)."""

    fast: FastReads | None = None
    service: Service  # set at start-up, as ``state.service``
    authenticator: Authenticator | None = None  # likewise
    observe: Observe | None = None  # request ids, figures, access log, health (`api/observe.py`)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.observe is not None:
            await self.observe(scope, receive, send)
        else:
            await self.serve(scope, receive, send)

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (bad := undecodable_url(scope)) is not None:
            await error_response(status_of(bad), bad.message)(scope, receive, send)
            return
        if scope["type"] == "http" and self.fast is not None and await self.fast(scope, receive, send):
            return
        await super().__call__(scope, receive, send)


def create_app(settings: Settings, store: Store | None = None, *, fast: bool = True) -> Starlette:
    """The ASGI application. ``fast=False`` leaves out the read fast path (`api/fast.py`), which
    answers exactly as the full stack does: only its equivalence test turns it off."""
    connections.configure(settings.header_timeout, settings.body_timeout)
    tally = metrics.tally() if settings.metrics else None
    tracer = None
    if settings.tracing:
        from h5lake.api import tracing  # OpenTelemetry is imported only when asked for

        tracer = tracing.tracer_provider()
    fix_mmap_threshold()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if store is not None:
            backend = store
        else:  # a metered store made so from the start (`metering.metered`)
            backend = open_store(settings, metering.metered_class) if tally is not None else open_store(settings)
        if tally is not None:
            backend = metering.metered(backend)
        if tracer is not None:
            backend = tracing.traced_store(backend, tracer)
        READINESS.store, READINESS.stopping = backend, False
        svc = build_service(settings, backend)
        app.state.service = svc
        app.state.authenticator = build_authenticator(settings, backend)
        # plain attributes too, for the handlers (`http.service`) and the fast path: ``state``
        # answers through __getattr__, a few microseconds a request
        app.service, app.authenticator = svc, app.state.authenticator  # type: ignore[attr-defined]
        await svc.ensure_home_folder()
        await svc.catalog.start()
        # anyio imports its event-loop backend on first use, which is a streamed response's task
        # group: ~0.1 s of CPU (0.4 ms/MiB of a first 256 MiB read). Loaded here instead.
        anyio.get_cancelled_exc_class()
        if tally is not None:  # before the freeze: they live as long as the process
            metrics.prepare([*domain_routes.ROUTES, *value_routes.ROUTES, *object_routes.ROUTES])
        # What start-up made lives as long as the process: out of the collector's way, so the
        # full collections that requests with big documents trigger do not scan it every time.
        gc.freeze()
        flushing = metrics.start_flushing(tally, svc) if tally is not None else None
        try:
            yield
        finally:
            if flushing is not None:
                await metrics.stop_flushing(flushing, tally)
            await svc.drain()
            await backend.close()

    routes: list[BaseRoute] = [*domain_routes.ROUTES, *value_routes.ROUTES, *map_routes.ROUTES, *object_routes.ROUTES]
    routes += [*openapi.ROUTES, *version_routes.ROUTES]
    routes += [*view_routes.ROUTES, *h5grove_routes.ROUTES, *zarr_routes.ROUTES, *metrics.ROUTES]
    middleware = [Middleware(Authenticate)]
    if settings.cors_origin:
        # Outermost, so a preflight is answered before authentication, and errors carry the headers too.
        middleware.insert(0, cors_middleware(settings.cors_origin))
    app = App(
        routes=routes,
        exception_handlers=HANDLERS,
        middleware=middleware,
        lifespan=lifespan,
    )
    app.router = IndexedRouter(routes, lifespan=lifespan)  # the same routes, tried fewer at a time
    if fast and not settings.cors_origin:  # with CORS every reply gets headers from its middleware (Vary)
        app.fast = FastReads(app, routes)
    served: ASGIApp = app.serve if tracer is None else tracing.traced_app(app.serve, tracer)
    app.observe = Observe(served, tally, None if settings.access_log == "off" else settings.access_log)
    app.state.metrics_token = settings.metrics_token
    if settings.access_log != "off":
        configure_access_log()
    return app


def cors_middleware(origins: tuple[str, ...]) -> Middleware:
    """CORS for browser apps on the given origins (``*``: any): preflights are answered, and
    every response names the origin, allows credentials (an ``Authorization`` header) and exposes
    its headers to scripts."""
    return Middleware(
        CORSMiddleware,
        allow_origins=list(origins),
        allow_methods=["GET", "PUT", "POST", "DELETE", "OPTIONS"],
        allow_headers=["*"],
        allow_credentials=True,
        expose_headers=["ETag", "Content-Length", "Content-Type", "Retry-After", "X-H5Lake-Cursor"],
        max_age=600,
    )


def create_app_from_env() -> Starlette:
    """Factory for ``uvicorn --factory`` worker processes: settings come from H5LAKE_* variables."""
    return create_app(Settings())
