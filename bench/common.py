"""Shared parts of the benchmarks: where the server is, how h5pyd reaches it, how to time.

A bench either starts its own h5lake (``tests/support/server.py``: a real ``h5lake serve`` on a
free loopback port, data in a temporary directory, removed afterwards) or, given ``--endpoint``,
talks to any HDF REST server (h5lake or HSDS) as ``--user``/``--password``. Every bench works in
a fresh folder ``/home/<user>/bench-<random>/`` and deletes what it made at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.support.server when run as ``python bench/x.py``

from tests.support.procgroup import group_cpu


@dataclass
class Target:
    """An HDF REST endpoint and the account the bench uses on it."""

    endpoint: str
    user: str
    password: str
    server_pid: int | None = None  # set when the bench started the server itself
    server_log: Path | None = None
    folders: list[str] = field(default_factory=list)

    def h5pyd_opts(self) -> dict[str, Any]:
        """Keyword arguments for ``h5pyd.File``/``h5pyd.Folder``."""
        return {"endpoint": self.endpoint, "username": self.user, "password": self.password}

    def session(self) -> requests.Session:
        s = requests.Session()
        s.auth = (self.user, self.password)
        return s

    def new_folder(self, tag: str) -> str:
        """A fresh folder for this run (made, with the home folder if missing); path ends in /."""
        s = self.session()
        home = f"/home/{self.user}"
        r = s.get(self.endpoint + "/", params={"domain": home}, timeout=60)
        if r.status_code in (404, 410):
            r = s.put(self.endpoint + "/", params={"domain": home}, json={"folder": True}, timeout=60)
            if r.status_code not in (201, 409):
                raise RuntimeError(f"cannot make the home folder {home}: {r.status_code} {r.text[:200]}")
        elif r.status_code != 200:
            raise RuntimeError(f"cannot read the home folder {home}: {r.status_code} {r.text[:200]}")
        folder = f"{home}/bench-{tag}-{uuid.uuid4().hex[:8]}"
        r = s.put(self.endpoint + "/", params={"domain": folder}, json={"folder": True}, timeout=60)
        if r.status_code != 201:
            raise RuntimeError(f"cannot make {folder}: {r.status_code} {r.text[:200]}")
        self.folders.append(folder)
        return folder + "/"

    def cleanup(self) -> None:
        """Delete the domains and folders this run made (best effort)."""
        s = self.session()
        for folder in self.folders:
            listing: dict[str, str | int] = {"domain": folder + "/", "Limit": 1000}
            r = s.get(self.endpoint + "/domains", params=listing, timeout=60)
            if r.status_code == 200:
                for item in r.json().get("domains", []):
                    s.delete(self.endpoint + "/", params={"domain": item["name"]}, timeout=120)
            s.delete(self.endpoint + "/", params={"domain": folder}, timeout=120)


def add_target_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoint", help="HDF REST server to measure (default: start an h5lake here)")
    parser.add_argument("--user", default=os.environ.get("HS_USERNAME", "test_user1"))
    parser.add_argument("--password", default=None, help="default: HS_PASSWORD, or the test password")
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        help="extra argument for the h5lake it starts (repeatable)",
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment of the h5lake it starts, e.g. PYTHONPATH=/tmp/old/src to compare builds",
    )
    parser.add_argument(
        "--data", type=Path, help="directory for the h5lake it starts (default: a temporary one)"
    )
    parser.add_argument(
        "--pause",
        action="store_true",
        help="print the server pid and wait for Enter before measuring (to attach a profiler)",
    )


@contextlib.contextmanager
def target(args: argparse.Namespace) -> Iterator[Target]:
    """The server to measure: the one given, or an h5lake started for the run and stopped after."""
    if args.endpoint:
        password = args.password or os.environ.get("HS_PASSWORD") or ""
        t = Target(args.endpoint.rstrip("/"), args.user, password)
        try:
            yield t
        finally:
            t.cleanup()
        return

    from tests.support.server import USERS, start_server

    with contextlib.ExitStack() as stack:
        workdir = args.data or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="h5lake-bench-")))
        env = dict(item.split("=", 1) for item in args.server_env)
        # the number of workers `h5lake serve` chooses itself unless --server-arg gives one
        server = start_server(Path(workdir), extra=list(args.server_arg), env=env, workers=None)
        stack.callback(server.stop)
        user = args.user if args.user in USERS else "test_user1"
        t = Target(server.endpoint, user, args.password or USERS[user], server.process.pid, server.log)
        print(f"# h5lake started at {t.endpoint} (pid {t.server_pid}), data in {workdir}")
        yield t


def maybe_pause(args: argparse.Namespace, t: Target) -> None:
    if getattr(args, "pause", False):
        input(f"# server pid {t.server_pid}: attach a profiler, then press Enter ")


def describe(t: Target) -> None:
    about = t.session().get(t.endpoint + "/about", timeout=60).json()
    name = about.get("name", "?")
    version = about.get("h5lake_version") or about.get("hsds_version", "?")
    print(f"# server: {name} {version} at {t.endpoint} as {t.user}")
    import h5pyd

    print(f"# client: h5pyd {h5pyd.version.version}, python {sys.version.split()[0]}")


class CpuMeter:
    """CPU seconds used by this process (the client) and, when its pid is known and local, the
    server's process group, between ``start()`` and ``stop()``: tells whether a figure is bound by the client,
    the server, or neither (waiting: disk, loopback, scheduling)."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.client = self.server = self.wall = 0.0
        self._c = self._s = self._w = 0.0

    def _server_cpu(self) -> float:
        """Of the server's whole process group (it leads its own): with several workers, the
        started process only supervises them."""
        if self.server_pid is None:
            return 0.0
        return group_cpu(self.server_pid)

    def start(self) -> CpuMeter:
        # the server's first: reading /proc for its process group is this process's CPU, not the run's
        self._s = self._server_cpu()
        self._c, self._w = time.process_time(), time.perf_counter()
        return self

    def stop(self) -> CpuMeter:
        self.wall += time.perf_counter() - self._w
        self.client += time.process_time() - self._c
        self.server += self._server_cpu() - self._s
        return self

    def note(self, ops: int = 1, unit: str = "op") -> str:
        """``server 1.2 ms/op, client 0.8 ms/op of 3.1 ms/op wall``."""
        per = 1000.0 / max(1, ops)
        server = f"server {self.server * per:.1f}, " if self.server_pid is not None else ""
        return f"cpu: {server}client {self.client * per:.1f} of {self.wall * per:.1f} ms/{unit} wall"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def rate_for(seconds: float, fn: Callable[[], Any], min_calls: int = 5) -> tuple[int, float]:
    """Call ``fn`` repeatedly for about ``seconds``; returns (calls, elapsed)."""
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while calls < min_calls or time.perf_counter() < deadline:
        fn()
        calls += 1
    return calls, time.perf_counter() - start


def median_ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.2f} ms, p90 {sorted(samples)[int(len(samples) * 0.9)] * 1000:.2f} ms"


def row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<52} {value:>18}  {note}".rstrip())


def cpu_row(meter: CpuMeter, ops: int = 1, unit: str = "op") -> None:
    print(f"  {'':<52} {'':>18}  {meter.note(ops, unit)}")
