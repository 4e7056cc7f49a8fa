"""Optional tracing with OpenTelemetry (api/tracing.py; docs/operations.md, "Tracing"): a span
per request, named by its route template, with a child span per storage operation; nothing of
OpenTelemetry loaded or wrapped when it is off."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.testclient import TestClient
from tests.support.server import USERS, write_passwd

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
