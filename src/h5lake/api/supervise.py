"""The supervisor of ``h5lake serve`` with several workers, kept small.

``h5lake serve`` checks its settings and, for more than one worker, replaces itself
(``os.execv``: same process id, same process group) with ``python -m h5lake.api.supervise
OPTIONS``. This module imports only uvicorn, whose supervisor binds the port and spawns the
worker processes (``multiprocessing`` spawn: each starts a fresh interpreter and loads the
application itself); the supervisor so stays at ~20 MiB resident instead of the ~90 MiB of a
process that imported the application (docs/performance.md, "Memory").

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
import sys
from typing import Any

import uvicorn

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


def main(argv: list[str]) -> None:
    options = json.loads(argv[0])
    uvicorn.run(APP, factory=True, **options)


if __name__ == "__main__":
    main(sys.argv[1:])
