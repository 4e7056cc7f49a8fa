"""Start a real ``h5lake serve`` process on a free loopback port for tests and benchmarks.

A test server is one process (``--workers 1``) unless the caller says otherwise: most tests
check behaviour that does not depend on how many processes serve, and a server of several
workers costs ~1.5 s more CPU to start (each worker loads the application). Pass
``workers=None`` for the default of ``h5lake serve`` (one per usable core), or ``--workers`` in
``extra``. The server leads a process group of its own, which ``Server.stop`` signals whole."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

USERS = {"admin": "admin-pw", "test_user1": "test1-pw", "test_user2": "test2-pw"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_passwd(path: Path, users: dict[str, str] = USERS) -> Path:
    path.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
    return path


@dataclass
class Server:
    endpoint: str
    data: Path
    process: subprocess.Popen[bytes]
    log: Path
    args: list[str] = field(default_factory=list)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_server(
    workdir: Path,
    *,
    extra: list[str] | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
    data: Path | None = None,
    timeout: float = 30.0,
    workers: int | None = 1,
) -> Server:
    workdir.mkdir(parents=True, exist_ok=True)
    passwd = write_passwd(workdir / "passwd.txt")
    data = data or workdir / "data"
    port = port or free_port()
    args = [
        sys.executable, "-m", "h5lake.cli", "serve",
        "--data", str(data), "--port", str(port), "--passwd", str(passwd), "--admin", "admin",
        *(extra or []),
    ]
    if workers is not None and "--workers" not in args:
        args += ["--workers", str(workers)]
    log = workdir / f"server-{port}.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    full_env.update(env or {})
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=full_env, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"h5lake exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if requests.get(endpoint + "/about", timeout=1).status_code == 200:
                return Server(endpoint, data, proc, log, args)
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raise RuntimeError(f"h5lake did not start in {timeout}s:\n{log.read_text()}")
