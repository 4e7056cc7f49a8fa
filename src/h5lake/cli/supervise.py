"""The supervisor of ``h5lake serve`` with several workers, kept small.

``h5lake serve`` checks its settings and, for more than one worker, replaces itself
(``os.execv``: same process id, same process group) with ``python -m h5lake.cli.supervise
OPTIONS``. This module imports only uvicorn (and `api/stopping.py`), whose supervisor binds the port and spawns the
worker processes (``multiprocessing`` spawn: each starts a fresh interpreter and loads the
application itself); the supervisor so stays at ~20 MiB resident instead of the ~90 MiB of a
process that imported the application (docs/performance.md, "Memory").

``h5lake serve`` announces itself ("... serving ...", on stdout) only once the port accepts
connections and every worker is ready: with one worker, once uvicorn's server listens
(:class:`AnnouncingServer`); with several, once each worker answers uvicorn's readiness check
(its server started: :class:`Supervisor`), so a script that waits for the line can connect at once.

A SIGTERM or SIGINT to the supervisor stops every worker gracefully and then the supervisor
(uvicorn). Each server process (`DrainingServer`) takes a SIGTERM as the start of a drain: its
``/readyz`` answers 503 at once (`SHUTDOWN`), it keeps serving for ``--drain-seconds`` so that a
load balancer checking ``/readyz`` stops sending it requests, then closes its listener and lets
the requests in flight finish (up to ``--shutdown-timeout`` seconds) before it exits. A second
SIGTERM, or a SIGINT, skips the rest of the drain. A supervisor killed outright (SIGKILL, the OOM killer) takes its workers with it:
each worker asks the kernel for a SIGTERM when its parent ends (``PR_SET_PDEATHSIG``), so no
orphan keeps serving the port.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.supervisors import multiprocess
from uvicorn.supervisors.multiprocess import Multiprocess

from h5lake.api.stopping import SHUTDOWN

APP = "h5lake.cli.supervise:worker_app"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def drain_seconds() -> float:
    """``--drain-seconds``, as ``h5lake serve`` exported it to its processes."""
    try:
        return max(0.0, float(os.environ.get("H5LAKE_DRAIN_SECONDS", "0")))
    except ValueError:
        return 0.0


class DrainingServer(uvicorn.Server):
    """uvicorn's server, which on SIGTERM first drains (see the module docstring)."""

    drain_until: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        SHUTDOWN.set()
        seconds = drain_seconds()
        if sig == signal.SIGTERM and seconds > 0 and self.drain_until is None and not self.should_exit:
            self._captured_signals.append(sig)  # as uvicorn's own handler: raised again at the end
            self.drain_until = time.monotonic() + seconds
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if await super().on_tick(counter):
            return True
        return self.drain_until is not None and time.monotonic() >= self.drain_until


class DrainingProcess(multiprocess.Process):
    """uvicorn's worker process, serving with a `DrainingServer`."""

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = DrainingServer(config=self.config)
        return self._server


def worker_app() -> Any:
    """The application of one worker process (a uvicorn factory)."""
    end_with_parent()
    # Imported here, in the worker, not at the top: the supervisor must not load the application.
    from h5lake.api.app import create_app_from_env

    return create_app_from_env()


def end_with_parent() -> None:
    """Have the kernel send this process SIGTERM when the process that started it ends. Nothing
    to do in a process that no multiprocessing parent started, or off Linux."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent.pid:  # the parent ended before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def announce(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class AnnouncingServer(DrainingServer):
    """uvicorn's server, printing ``line`` once it listens (its start-up done)."""

    def __init__(self, config: uvicorn.Config, line: str) -> None:
        super().__init__(config)
        self.line = line

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            announce(self.line)


class Supervisor(Multiprocess):
    """uvicorn's supervisor of several workers, printing ``line`` once every worker it started
    is ready. A worker that ends before it is ready leaves the line unprinted; uvicorn's loop
    then sees it (a start-up failure stops the supervisor, another death starts a new worker)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], line: str, metrics_dir: str | None = None) -> None:
        super().__init__(config, sockets)
        self.line = line
        self.metrics_dir = metrics_dir

    def keep_subprocess_alive(self) -> None:
        before = {p.pid for p in self.processes}
        super().keep_subprocess_alive()
        if self.metrics_dir:
            # a worker that died and was replaced: its gauges ("live" modes) no longer count,
            # as prometheus-client's mark_process_dead does (without importing it here)
            for pid in before - {p.pid for p in self.processes}:
                for path in Path(self.metrics_dir).glob(f"gauge_live*_{pid}.db"):
                    path.unlink(missing_ok=True)

    def terminate_all(self) -> None:
        super().terminate_all()
        # The workers drain and close their copies of the listening socket; with the
        # supervisor's closed too, the port then refuses connections instead of queueing them.
        for sock in self.sockets:
            sock.close()

    def init_processes(self) -> None:
        super().init_processes()
        waiting = list(self.processes)
        while waiting:
            self.handle_signals()  # a SIGTERM meanwhile stops the wait (and then the supervisor)
            if self.should_exit.is_set() or not all(p.process.is_alive() for p in waiting):
                return
            waiting = [p for p in waiting if not p.is_ready(timeout=1)]
            if waiting:
                time.sleep(0.02)
        announce(self.line)


def main(argv: list[str]) -> None:
    options = json.loads(argv[0])
    line = options.pop("announce")
    metrics_dir = options.pop("metrics_dir", None)
    multiprocess.Process = DrainingProcess  # type: ignore[misc]  # the class uvicorn's supervisor starts
    config = uvicorn.Config(APP, factory=True, **options)
    sock = config.bind_socket()
    try:
        Supervisor(config, [sock], line, metrics_dir).run()
    finally:
        if metrics_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)


if __name__ == "__main__":
    # Run as ``python -m``, this file is ``__main__``; the classes the workers unpickle must be
    # those of the module itself (whose names they import).
    importlib.import_module("h5lake.cli.supervise").main(sys.argv[1:])
