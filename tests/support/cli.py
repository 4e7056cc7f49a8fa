"""Run the real ``h5lake`` command as a user would: a process of its own, in its own working
directory, with a home of its own (no stray ``~/.hscfg``) and none of the caller's
``H5LAKE_*``/``HS_*`` variables unless given.

Each run is forked from one interpreter (per test process) that has imported numpy, h5py,
requests and click, but no module of h5lake (``tests/support/forkrun.py``): the command's own
modules load in the run, as in a fresh interpreter, without ~0.5 CPU-s of imports each."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.forkrun import ForkRunner

PRELOAD = ["numpy", "h5py", "requests", "click"]
_runner: ForkRunner | None = None


def _fork_runner() -> ForkRunner:
    global _runner
    if _runner is None:
        _runner = ForkRunner(PRELOAD, Path(tempfile.mkdtemp(prefix="h5lake-runs-")))
        atexit.register(_close, _runner)
    return _runner


def _close(runner: ForkRunner) -> None:
    runner.close()
    shutil.rmtree(runner.workdir, ignore_errors=True)


def h5lake_command() -> list[str]:
    """The ``h5lake`` console script beside this interpreter (the venv's), else on PATH, else
    the module; ``PYTHONPATH`` is passed on, so the script imports the code under test."""
    beside = Path(sys.executable).parent / "h5lake"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("h5lake")
    return [found] if found else [sys.executable, "-m", "h5lake.cli.command"]


def clean_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("H5LAKE_", "HS_"))}
    env["HOME"] = str(home)
    env.update(extra or {})
    return env


def run_h5lake(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    return _fork_runner().run([*h5lake_command(), *args], cwd=cwd, env=clean_env(cwd, env), input=input,
                              timeout=timeout)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single line a failed command printed (asserting it failed, printed one line on
    stderr, nothing on stdout, and no traceback)."""
    assert proc.returncode != 0, f"{proc.args} succeeded:\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert proc.stdout.strip() == "", proc.stdout
    assert lines[0].startswith("Error: "), lines[0]
    return lines[0]
