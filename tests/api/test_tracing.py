"""Optional tracing with OpenTelemetry (api/tracing.py; docs/operations.md, "Tracing"): a span
per request, named by its route template, with a child span per storage operation; nothing of
OpenTelemetry loaded or wrapped when it is off."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.testclient import TestClient
from tests.support.server import USERS, start_server, write_passwd

from h5lake.api.app import create_app
from h5lake.config import Settings

AUTH = ("test_user1", USERS["test_user1"])


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the process's provider can be set only once
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    try:
        yield exporter
    finally:
        processor.shutdown()  # stops exporting to this test's exporter


def test_a_request_span_has_its_storage_operations_as_children(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    app = create_app(Settings(data=tmp_path / "data", passwd=write_passwd(tmp_path / "passwd"), tracing=True))
    with TestClient(app) as c:
        assert c.put("/?domain=/home/test_user1", json={"folder": True}, auth=AUTH).status_code in (201, 409)
        assert c.put("/?domain=/home/test_user1/t.h5", auth=AUTH).status_code == 201
        root = c.get("/?domain=/home/test_user1/t.h5", auth=AUTH).json()["root"]
        spans.clear()
        r = c.get(f"/groups/{root}?domain=/home/test_user1/t.h5", auth=AUTH, headers={"X-Request-Id": "trace-me-1"})
        assert r.status_code == 200
    finished = spans.get_finished_spans()
    requests = [s for s in finished if s.kind == SpanKind.SERVER]
    assert [s.name for s in requests] == ["GET /groups/{id}"]
    request = requests[0]
    assert request.attributes is not None and request.attributes["h5lake.request_id"] == "trace-me-1"
    assert root not in request.name  # no id in a span's name
    children = [s for s in finished if s.parent is not None and s.parent.span_id == request.context.span_id]
    storage = [s for s in children if s.name.startswith("storage.")]
    assert storage and {s.name for s in storage} <= {"storage.get", "storage.head"}
    assert all(s.context.trace_id == request.context.trace_id for s in storage)
    assert any((s.attributes or {}).get("h5lake.storage.bytes", 0) > 0 for s in storage)


def test_tracing_off_loads_and_wraps_nothing(tmp_path: Path) -> None:
    program = (
        "import sys\n"
        "from h5lake.api.app import create_app\n"
        "from h5lake.config import Settings\n"
        f"create_app(Settings(data={str(tmp_path / 'data')!r}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], check=True, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]"


class Collector(ThreadingHTTPServer):
    """An OTLP/HTTP trace collector on 127.0.0.1: keeps each export POSTed to ``/v1/traces``
    (protobuf, gzip or not) and answers as a collector does."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Export)
        self.exports: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every span received, with its resource's attributes."""
        found = []
        for export in list(self.exports):
            for rs in export.resource_spans:
                resource = {a.key: a.value.string_value for a in rs.resource.attributes}
                found += [(resource, span) for ss in rs.scope_spans for span in ss.spans]
        return found


class _Export(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.server.paths.append(self.path)
        self.server.exports.append(ExportTraceServiceRequest.FromString(body))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _attrs(span: Any) -> dict[str, Any]:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}


def test_a_server_exports_request_and_storage_spans_over_otlp_http(tmp_path: Path, collector: Collector) -> None:
    port = collector.server_address[1]
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
        "OTEL_SERVICE_NAME": "h5lake-otlp-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms between batches
        "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
    }
    server = start_server(tmp_path, extra=["--tracing"], env=env, timeout=90)
    try:
        url, domain = server.endpoint, "/home/test_user1/otlp.h5"
        assert requests.put(f"{url}/?domain=/home/test_user1", json={"folder": True}, auth=AUTH, timeout=30).status_code in (201, 409)
        assert requests.put(f"{url}/?domain={domain}", auth=AUTH, timeout=30).status_code == 201
        root = requests.get(f"{url}/?domain={domain}", auth=AUTH, timeout=30).json()["root"]
        r = requests.put(
            f"{url}/groups/{root}/attributes/a1?domain={domain}", auth=AUTH, headers={"X-Request-Id": "otlp-put-1"},
            json={"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 7}, timeout=30,
        )
        assert r.status_code == 201, r.text
        r = requests.get(f"{url}/groups/{root}?domain={domain}", auth=AUTH, headers={"X-Request-Id": "otlp-get-1"}, timeout=30)
        assert r.status_code == 200

        def request_span(rid: str) -> Any:
            return next((s for _, s in collector.spans() if _attrs(s).get("h5lake.request_id") == rid), None)

        deadline = time.monotonic() + 60
        while (request_span("otlp-get-1") is None or request_span("otlp-put-1") is None) and time.monotonic() < deadline:
            time.sleep(0.2)
        put, get = request_span("otlp-put-1"), request_span("otlp-get-1")
        assert put is not None and get is not None, [s.name for _, s in collector.spans()]
    finally:
        server.stop()
    assert set(collector.paths) == {"/v1/traces"}
    assert {resource.get("service.name") for resource, _ in collector.spans()} == {"h5lake-otlp-test"}
    assert get.name == "GET /groups/{id}" and put.name == "PUT /{collection}/{id}/attributes/{name:path}"
    assert _attrs(get)["http.route"] == "/groups/{id}"
    spans = [s for _, s in collector.spans()]
    for request, ops in ((get, {"storage.get", "storage.head"}), (put, {"storage.get", "storage.put", "storage.delete"})):
        children = [s for s in spans if s.parent_span_id == request.span_id and s.name.startswith("storage.")]
        assert children and {s.name for s in children} <= ops, (request.name, [s.name for s in children])
        assert all(s.trace_id == request.trace_id for s in children)
        assert all(_attrs(s)["h5lake.storage.op"] == s.name.removeprefix("storage.") for s in children)
    assert any(_attrs(s).get("h5lake.storage.bytes", 0) > 0 for s in spans if s.parent_span_id == get.span_id)
