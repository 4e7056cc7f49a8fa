"""``h5lake serve`` prints its "serving" line only once the port accepts connections and every
worker is ready (issue 34, item 3): a script that waits for the line and then connects at once
gets its answer, with one worker and with several."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import pytest
from tests.support.cli import clean_env, h5lake_command
from tests.support.server import free_port, stop_group

pytestmark = pytest.mark.one_backend  # the command's start-up, the same on every store

STARTS = 3


def serve_and_connect_on_the_line(workdir: Path, workers: int) -> None:
    """Start the real command, read its stdout up to the "serving" line, then at once send
    ``GET /about`` on a new connection: it must be accepted and answered 200."""
    workdir.mkdir(parents=True)
    port = free_port()
    env = clean_env(workdir, {"H5LAKE_PORT": str(port), "H5LAKE_DATA": str(workdir / "data"),
                              "H5LAKE_WORKERS": str(workers)})
    proc = subprocess.Popen([*h5lake_command(), "serve"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=workdir, start_new_session=True)
    try:
        assert proc.stdout is not None
        seen = []
        for raw in proc.stdout:
            seen.append(raw.decode())
            if " serving " in seen[-1]:
                break
        else:
            raise AssertionError(f"h5lake serve ended without the serving line: {seen}")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:  # refused if not listening
            conn.sendall(b"GET /about HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        if workers > 1:  # every worker started (and is past its start-up) when the line came
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            spawned = [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
            assert len(spawned) == workers, children
    finally:
        stop_group(proc, signal.SIGTERM)
        if proc.stdout is not None:
            proc.stdout.close()


def test_the_serving_line_comes_once_one_worker_listens(tmp_path: Path) -> None:
    for i in range(STARTS):
        serve_and_connect_on_the_line(tmp_path / str(i), 1)


@pytest.mark.slow  # several worker processes started three times
def test_the_serving_line_comes_once_every_worker_is_ready(tmp_path: Path) -> None:
    for i in range(STARTS):
        serve_and_connect_on_the_line(tmp_path / str(i), 2)

