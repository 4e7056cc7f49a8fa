"""Start a real ``h5lake serve`` process on a free loopback port for tests and benchmarks.

A test server is one process (``--workers 1``) unless the caller says otherwise: most tests
check behaviour that does not depend on how many processes serve, and a server of several
workers costs ~1.5 s more CPU to start (each worker loads the application). Pass
``workers=None`` for the default of ``h5lake serve`` (one per usable core), or ``--workers`` in
``extra``. The server leads a process group of its own, which ``Server.stop`` signals whole.

Tests run in parallel (pytest-xdist), so a free port picked here may be taken by another
worker's server before this one binds it: a server is only taken as started once its own
process holds the listening socket (not merely once something answers ``/about`` there), and
one that found its port taken is started again on another (unless the caller chose the port)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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
        stop_group(self.process, sig)


def stop_group(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Signal the process group ``process`` leads; SIGKILL it if it has not ended in 15 s."""
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


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
    attempts = 1 if port is not None else 3
    for attempt in range(attempts):
        try:
            return _start(workdir, extra=extra, env=env, port=port or free_port(), data=data, timeout=timeout,
                          workers=workers)
        except PortTaken:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


class PortTaken(RuntimeError):
    """The chosen port was taken by another process before the server bound it."""


def _start(
    workdir: Path, *, extra: list[str] | None, env: dict[str, str] | None, port: int, data: Path | None,
    timeout: float, workers: int | None,
) -> Server:
    workdir.mkdir(parents=True, exist_ok=True)
    passwd = write_passwd(workdir / "passwd.txt")
    data = data or workdir / "data"
    args = [
        sys.executable, "-m", "h5lake.cli.command", "serve",
        "--data", str(data), "--port", str(port), "--passwd", str(passwd), "--admin", "admin",
        *(extra or []),
    ]
    if workers is not None and "--workers" not in args:
        args += ["--workers", str(workers)]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    full_env.update(env or {})
    started = _launch(workdir, args, full_env, None, port, timeout)
    return Server(started.endpoint, data, started.process, started.log, args)


@dataclass
class Launched:
    """A server process started by :func:`launch`, serving at ``endpoint``."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM) -> None:
        stop_group(self.process, sig)


def launch(
    workdir: Path,
    command: Callable[[int], list[str]],
    *,
    env: Callable[[int], dict[str, str]] | dict[str, str] | None = None,
    cwd: Path | None = None,
    port: int | None = None,
    timeout: float = 30.0,
) -> Launched:
    """Start a server that a test sets up its own way (``command(port)``, with ``env``, or
    ``env(port)`` where the port is a setting), on a free port, as :func:`start_server` does:
    taken as started only once its own process listens there and answers ``/about``, and started
    again on another port if another process took this one first (unless ``port`` is given).
    Its output (stdout and stderr) goes to ``workdir/server-<port>.log``; the process leads a
    process group of its own (``Launched.stop`` signals it whole)."""
    workdir.mkdir(parents=True, exist_ok=True)
    attempts = 1 if port is not None else 3
    for attempt in range(attempts):
        chosen = port or free_port()
        full_env = env(chosen) if callable(env) else env
        try:
            return _launch(workdir, command(chosen), full_env, cwd, chosen, timeout)
        except PortTaken:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _launch(workdir: Path, args: list[str], env: dict[str, str] | None, cwd: Path | None, port: int, timeout: float) -> Launched:
    log = workdir / f"server-{port}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            text = log.read_text()
            if f"port {port} on 127.0.0.1 is already in use" in text or "address already in use" in text:
                raise PortTaken(f"port {port} was taken before h5lake bound it:\n{text}")
            raise RuntimeError(f"h5lake exited with {proc.returncode}:\n{text}")
        try:
            answered = requests.get(endpoint + "/about", timeout=1).status_code == 200
        except requests.ConnectionError:
            answered = False
        if answered and listens(proc.pid, port):  # not another worker's server on this port
            return Launched(proc, port, log)
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raise RuntimeError(f"h5lake did not start in {timeout}s:\n{log.read_text()}")


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port where nothing listens, held (bound, not listening) for the ``with`` block,
    so that no other test's server can take it meanwhile: a connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on ``port`` of 127.0.0.1 (read from
    /proc; True where there is no /proc to read). ``h5lake serve`` binds in its first process:
    uvicorn itself with one worker, the supervisor (the same process, exec'd) with several."""
    inodes = set()
    try:
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return True
    for line in table:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and local == f"0100007F:{port:04X}":  # LISTEN on 127.0.0.1:port
            inodes.add(f"socket:[{inode}]")
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed meanwhile
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return True
    except OSError:
        return False
    return False
