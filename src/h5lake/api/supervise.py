"""The supervisor of ``h5lake serve`` with several workers, kept small.

``h5lake serve`` checks its settings and, for more than one worker, replaces itself
(``os.execv``: same process id, same process group) with ``python -m h5lake.api.supervise
OPTIONS``. This module imports only uvicorn, whose supervisor binds the port and spawns the
worker processes (``multiprocessing`` spawn: each starts a fresh interpreter and loads the
application itself); the supervisor so stays at ~20 MiB resident instead of the ~90 MiB of a
process that imported the application (docs/performance.md, "Memory").

``h5lake serve`` announces itself ("... serving ...", on stdout) only once the port accepts
connections and every worker is ready: with one worker, once uvicorn's server listens
(:class:`AnnouncingServer`); with several, once each worker answers uvicorn's readiness check
(its server started: :class:`Supervisor`), so a script that waits for the line can connect at once.

A SIGTERM or SIGINT to the supervisor stops every worker gracefully and then the supervisor
(uvicorn); a supervisor killed outright (SIGKILL, the OOM killer) takes its workers with it:
each worker asks the kernel for a SIGTERM when its parent ends (``PR_SET_PDEATHSIG``), so no
orphan keeps serving the port.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import socket
import sys
import time
from typing import Any

import uvicorn
from uvicorn.supervisors.multiprocess import Multiprocess

APP = "h5lake.api.supervise:worker_app"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


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


class AnnouncingServer(uvicorn.Server):
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

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], line: str) -> None:
        super().__init__(config, sockets)
        self.line = line

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
    config = uvicorn.Config(APP, factory=True, **options)
    sock = config.bind_socket()
    Supervisor(config, [sock], line).run()


if __name__ == "__main__":
    main(sys.argv[1:])
