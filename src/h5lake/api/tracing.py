"""Optional tracing with OpenTelemetry (``--tracing``, the ``tracing`` extra): a span per request
and a child span per storage operation.

Off (the default) nothing of OpenTelemetry is imported and nothing wraps a request or the store.
On, `traced_app` wraps the application in OpenTelemetry's ASGI middleware (inside `api/observe.py`,
so the request id is known) and names each request's span by its route template
(``GET /groups/{id}``, never an id), with the request id as ``h5lake.request_id``; `traced_store`
wraps each storage operation in a span ``storage.OP`` (``h5lake.storage.op``; for reads and
writes the bytes moved as ``h5lake.storage.bytes``; no key, which names a domain). A store
operation of a request is a child of its span.

Where spans go: the tracer provider already set in the process (``opentelemetry-instrument``,
or a program embedding the application), else one made here that exports in batches to the
exporter ``OTEL_TRACES_EXPORTER`` names: ``otlp`` (the default; needs
``opentelemetry-exporter-otlp-proto-http``, configured by the ``OTEL_EXPORTER_OTLP_*``
variables) or ``console`` (one JSON document per span on stdout). ``OTEL_SERVICE_NAME``
names the service (default ``h5lake``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from h5lake import __version__
from h5lake.api.observe import REQUEST_ID
from h5lake.extras import need
from h5lake.storage import Store

_OPS = ("get", "get_mapped", "get_range", "get_ranges", "read_into", "head", "delete", "copy", "put", "put_hashed")
_WRITES = frozenset({"put", "put_hashed"})
_READS = frozenset({"get", "get_mapped", "get_range", "get_ranges", "read_into"})


def tracer_provider() -> Any:
    """The process's SDK tracer provider, set up from the environment if none is yet."""
    trace = need("opentelemetry.trace", "--tracing")
    sdk = need("opentelemetry.sdk.trace", "--tracing")
    current = trace.get_tracer_provider()
    if isinstance(current, sdk.TracerProvider):
        return current
    resources = need("opentelemetry.sdk.resources", "--tracing")
    export = need("opentelemetry.sdk.trace.export", "--tracing")
    name = os.environ.get("OTEL_SERVICE_NAME", "h5lake")
    provider = sdk.TracerProvider(resource=resources.Resource.create({"service.name": name, "service.version": __version__}))
    kind = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")[0].strip()
    if kind == "console":
        exporter = export.ConsoleSpanExporter()
    elif kind == "otlp":
        exporter = need("opentelemetry.exporter.otlp.proto.http.trace_exporter", "--tracing with OTLP").OTLPSpanExporter()
    else:
        raise ValueError(f"OTEL_TRACES_EXPORTER={kind!r}: h5lake exports traces to otlp or console")
    provider.add_span_processor(export.BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


def traced_app(app: ASGIApp, provider: Any) -> ASGIApp:
    """``app`` with a server span per HTTP request, named by method and route template."""
    asgi = need("opentelemetry.instrumentation.asgi", "--tracing")
    trace = need("opentelemetry.trace", "--tracing")

    async def named(scope: Scope, receive: Receive, send: Send) -> None:
        span = trace.get_current_span()  # the request's; it ends with the reply's last piece

        async def naming(message: Message) -> None:
            if message["type"] == "http.response.start":
                route = getattr(scope.get("route"), "path", None)
                if route is not None:
                    span.update_name(f"{scope['method']} {route}")
                    span.set_attribute("http.route", route)
                span.set_attribute("h5lake.request_id", REQUEST_ID.get())
            await send(message)

        await app(scope, receive, naming)

    def details(scope: Scope) -> tuple[str, dict[str, Any]]:
        return scope.get("method", "HTTP"), {}  # the path may hold ids: renamed by route above

    return asgi.OpenTelemetryMiddleware(
        named, tracer_provider=provider, default_span_details=details, exclude_spans=["receive", "send"]
    )


def traced_store(store: Store, provider: Any) -> Store:
    """``store`` with each operation in a span of its own (wrapped on the object, as
    `api/metering.metered` does)."""
    tracer = provider.get_tracer("h5lake.storage", __version__)
    for name in _OPS:
        method = getattr(store, name, None)
        if method is not None:
            setattr(store, name, _spanned(tracer, name, method))
    return store


def _spanned(tracer: Any, op: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    span_name = f"storage.{op}"
    reads, writes = op in _READS, op in _WRITES

    @wraps(method)
    async def spanned(*args: Any, **kwargs: Any) -> Any:
        with tracer.start_as_current_span(span_name, attributes={"h5lake.storage.op": op}) as span:
            result = await method(*args, **kwargs)
            if reads and result is not None:
                span.set_attribute("h5lake.storage.bytes", _size(result))
            elif writes and len(args) > 1:
                span.set_attribute("h5lake.storage.bytes", _size(args[1]))
            return result

    return spanned


def _size(value: Any) -> int:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    data = getattr(value, "data", None)
    return len(data) if data is not None else 0
