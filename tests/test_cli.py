"""The ``h5lake`` command: settings validation, start-up message, hashed passwords, limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from h5lake.config import auto_workers
from tests.support.procgroup import group_pids, worker_pids
from tests.support.server import launch, start_server


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "h5lake.cli.command", *args], capture_output=True, text=True,
                          env=full, input=input, timeout=60)


def test_bad_settings_stop_with_one_line(tmp_path: Path) -> None:
    for args, env in [
        (["serve", "--port", "99999"], {}),
        (["serve", "--passwd", str(tmp_path / "missing.txt")], {}),
        (["serve"], {"H5LAKE_PORT": "not-a-number"}),
        (["serve"], {"H5LAKE_LOG_LEVEL": "loud"}),
        (["serve", "--storage", "ftp://x"], {}),
    ]:
        result = run(*args, "--data", str(tmp_path / "d"), env=env)
        assert result.returncode != 0, args
        assert "Traceback" not in result.stderr
        assert "invalid setting" in result.stderr, result.stderr


def test_serve_prints_endpoint_and_env_settings(tmp_path: Path) -> None:
    """``h5lake serve`` with the default number of workers (one per usable core): it serves,
    runs that many worker processes, and a SIGTERM to the process it started (as a terminal, a
    container runtime or systemd sends it) stops every one of them, exiting with 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    started = launch(tmp_path, lambda port: [sys.executable, "-m", "h5lake.cli.command", "serve"], timeout=60,
                     env=lambda port: {**env, "H5LAKE_PORT": str(port), "H5LAKE_DATA": str(tmp_path / "data")})
    proc = started.process
    try:
        # the port answers once one worker listens; the line comes once every worker is ready
        deadline = time.monotonic() + 60
        while not (found := [x for x in started.log.read_text().splitlines() if " serving " in x]):
            assert time.monotonic() < deadline and proc.poll() is None, started.log.read_text()
            time.sleep(0.1)
        line = found[0]
        assert f"http://127.0.0.1:{started.port}" in line
        assert (tmp_path / "data" / "home" / ".domain.json").exists()
        expected = auto_workers()
        if expected > 1:  # a supervisor and its workers; on one core the one process serves
            assert len(worker_pids(proc.pid)) == expected
        group = group_pids(proc.pid)
        proc.send_signal(signal.SIGTERM)  # the process alone, not its group
        assert proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while group_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_pids(proc.pid) == [], f"left running after SIGTERM: {group_pids(proc.pid)} of {group}"
    finally:
        if proc.poll() is None or group_pids(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


def test_hashed_passwords(tmp_path: Path) -> None:
    line = run("passwd", "carol", input="s3cret\n").stdout.strip()
    assert line.startswith("carol:pbkdf2_sha256$") and "s3cret" not in line
    srv = start_server(tmp_path / "srv")
    srv.stop()
    (tmp_path / "hashed.txt").write_text(line + "\n")
    srv = start_server(tmp_path / "srv2", extra=["--passwd", str(tmp_path / "hashed.txt")])
    try:
        # the later --passwd wins over the default test file
        assert requests.get(srv.endpoint + "/about", auth=("carol", "s3cret")).json()["username"] == "carol"
        assert requests.get(srv.endpoint + "/about", auth=("carol", "wrong")).status_code == 401
    finally:
        srv.stop()


def test_request_size_limit(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "srv", extra=["--max-request-bytes", "65536"])
    try:
        s = requests.Session()
        s.auth = ("admin", "admin-pw")
        params = {"domain": "/home/limits.h5"}
        assert s.put(srv.endpoint + "/", params=params).status_code == 201
        root = s.get(srv.endpoint + "/", params=params).json()["root"]
        attr = {"type": "H5T_STD_I32LE", "shape": [50000], "value": list(range(50000))}
        r = s.put(srv.endpoint + f"/groups/{root}/attributes/big", params=params, json=attr)
        assert r.status_code == 413
        assert "limit" in r.json()["error"]["message"]
        assert s.get(srv.endpoint + f"/groups/{root}/attributes/big", params=params).status_code == 404
    finally:
        srv.stop()
