"""Run a Python console script (h5pyd's ``hsls``, ``hsload``...) as a process of its own, forked
from an interpreter that has already imported the script's heavy dependencies.

A fresh interpreter per run spends ~0.5 CPU-s importing numpy, h5py and h5pyd before the tool
does anything; a test file that runs sixty tools spends half its time there. Here one
interpreter (the *zygote*) imports them once; each run is a ``fork`` of it that takes the run's
working directory, environment, arguments, stdin (``/dev/null``), stdout and stderr (files), and
then executes the console script itself (``runpy.run_path``, as ``python SCRIPT`` does): the
tool's own modules are imported in the fork, after its environment is set, so module-level
settings (h5pyd's ``cfg = Config()``) read that run's environment. The run ends as an interpreter
does (its ``sys.exit`` code, a traceback and status 1 for an uncaught exception, a negative
status for a signal) and is returned as ``subprocess.run`` returns it.

A run is an ordinary ``subprocess.run`` instead where a fork could differ from a fresh
interpreter or would change what the caller does: a command that is not a Python script, an
environment whose ``PYTHON*`` variables differ from the zygote's (they shape ``sys.path`` and the
interpreter at start-up, e.g. a folder of stub packages first on ``PYTHONPATH``), input to send on
stdin (a pipe, as the caller asked), or a run while another is under way from another thread
(runs of one zygote take turns; concurrent callers stay concurrent).
"""

from __future__ import annotations

import json
import locale
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

# The zygote: imports what it is given, then forks once per request line (JSON) read from fd 0.
# The parent answers each request with the child's pid, then with its exit status (fd 1). The
# child leaves the loop and runs the script at the top level, so it exits as a script does.
_ZYGOTE = r"""
import json, os, sys
for _name in sys.argv[1:]:
    __import__(_name)
del _name

def _serve():
    pending = b""
    while True:
        while b"\n" not in pending:
            more = os.read(0, 65536)
            if not more:
                sys.exit(0)
            pending += more
        line, _, pending = pending.partition(b"\n")
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return request
        os.write(1, (json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        os.write(1, (json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n").encode())

_request = _serve()
os.chdir(_request["cwd"])
os.environ.clear()
os.environ.update(_request["env"])
for _fd, (_path, _flags) in enumerate([(os.devnull, os.O_RDONLY), (_request["stdout"], os.O_WRONLY),
                                        (_request["stderr"], os.O_WRONLY)]):
    _opened = os.open(_path, _flags)
    os.dup2(_opened, _fd)
    os.close(_opened)
sys.argv = list(_request["argv"])
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
del _serve, _request, _fd, _path, _flags, _opened
import runpy
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def is_python_script(path: str) -> bool:
    """Whether ``path`` is a Python console script (a ``#!...python`` first line)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


class ForkRunner:
    """One zygote; :meth:`run` is ``subprocess.run(argv, cwd=, env=, input=, capture_output=True,
    text=True, timeout=)``."""

    def __init__(self, preload: list[str], workdir: Path) -> None:
        self.workdir = workdir
        self.count = 0
        self.forked = 0
        self._python_env = _python_env(os.environ)
        self._turn = threading.Lock()
        self.zygote = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, *preload], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None, cwd=workdir,
        )

    def _reply(self) -> dict[str, int]:
        assert self.zygote.stdout is not None
        line = self.zygote.stdout.readline()
        assert line, f"the tool zygote exited ({self.zygote.poll()})"
        return dict(json.loads(line))

    def run(self, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        forkable = (input is None and _python_env(env) == self._python_env and is_python_script(argv[0])
                    and self.zygote.poll() is None)
        if not (forkable and self._turn.acquire(blocking=False)):
            return subprocess.run(argv, cwd=cwd, env=env, input=input, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        try:
            return self._forked(argv, cwd=cwd, env=env, timeout=timeout)
        finally:
            self._turn.release()

    def _forked(self, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        assert self.zygote.stdin is not None
        self.count += 1
        out, err = (self.workdir / f"run-{self.count}.{n}" for n in ("out", "err"))
        for path in (out, err):
            path.write_bytes(b"")
        request = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        self.zygote.stdin.write((json.dumps(request) + "\n").encode())
        self.zygote.stdin.flush()
        pid = self._reply()["pid"]
        timer = _Killer(pid, timeout)
        try:
            status = self._reply()["status"]
        finally:
            timer.cancel()
        self.forked += 1
        encoding = locale.getpreferredencoding(False)
        stdout, stderr = _text(out.read_bytes(), encoding), _text(err.read_bytes(), encoding)
        out.unlink()
        err.unlink()
        if timer.fired:
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr)
        return subprocess.CompletedProcess(argv, status, stdout, stderr)

    def close(self) -> None:
        if self.zygote.stdin is not None and not self.zygote.stdin.closed:
            self.zygote.stdin.close()
        try:
            self.zygote.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.zygote.kill()
            self.zygote.wait()
        if self.zygote.stdout is not None:
            self.zygote.stdout.close()


def _python_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON")}


def _text(data: bytes, encoding: str) -> str:
    """As ``subprocess.run(text=True)`` decodes: universal newlines."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


class _Killer:
    """SIGKILL ``pid`` after ``timeout`` seconds unless cancelled."""

    def __init__(self, pid: int, timeout: float) -> None:
        self.fired = False
        self._pid = pid
        self._timer = threading.Timer(timeout, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        self.fired = True
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cancel(self) -> None:
        self._timer.cancel()
