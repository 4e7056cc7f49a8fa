"""Every attack test runs beside another client: while the test's requests are in flight, a
second client asks the same server for ``/about`` every 50 ms, and the test fails if any of those
answers took a second or more, or if the server's process died. The server is found among the
test's fixtures (a ``Server``, or an object with one of ``endpoint``/``ep``).

Those waits measure the machine as well as the server, so every test here is ``exclusive``: in a
parallel run (pytest-xdist) no other test runs at the same time (tests/conftest.py).

The modules whose server needs no option of its own share one (``shared_server``, through
``module_on``): each keeps to domains of its own names, and each checks at its end that the
server still runs and logged no traceback while it ran. Starting one per module cost ~2 s each
of a block in which no other test runs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.server import Server, start_server

PATIENCE = 1.0  # seconds another client may wait while an attack runs
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.exclusive)


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One ``h5lake serve`` of default options for the modules here that need nothing else."""
    srv = start_server(tmp_path_factory.mktemp("shared"))
    yield srv
    assert srv.process.poll() is None
    srv.stop()
    assert "Traceback" not in srv.log.read_text()


@contextlib.contextmanager
def module_on(srv: Server) -> Iterator[Server]:
    """The shared server for one module: at its end, the server still runs and logged no
    traceback while the module's tests ran."""
    start = srv.log.stat().st_size
    yield srv
    assert srv.process.poll() is None, "the server died"
    with open(srv.log, "rb") as log:
        log.seek(start)
        assert b"Traceback" not in log.read()


def _endpoint(value: Any) -> str | None:
    for name in ("endpoint", "ep"):
        found = getattr(value, name, None)
        if isinstance(found, str) and found.startswith("http"):
            return found
    return None


class Watchdog:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.waits: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with requests.Session() as s:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    s.get(self.endpoint + "/about", timeout=10)
                except requests.RequestException as exc:
                    self.failures.append(type(exc).__name__)
                self.waits.append(time.monotonic() - started)
                self._stop.wait(0.05)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    servers = [v for v in funcargs.values() if isinstance(v, Server)]
    endpoints = [e for e in (_endpoint(v) for v in funcargs.values()) if e]
    if not endpoints:
        return (yield)
    with Watchdog(endpoints[0]) as dog:
        result = yield
    assert not dog.failures, f"another client's requests failed while the test ran: {dog.failures[:5]}"
    assert not dog.waits or max(dog.waits) < PATIENCE, f"another client waited {max(dog.waits):.2f} s"
    for srv in servers:
        assert srv.process.poll() is None, "the server died"
    return result
