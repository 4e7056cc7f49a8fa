"""The schemathesis CLI, run as an outside tester runs it (``schemathesis run URL/openapi.json``,
its default checks, positive and negative cases), finds nothing wrong with the server against
its own ``/openapi.json``: every schema-valid request is accepted (or answered 404/403/409),
every schema-violating one refused, and every reply matches the document.

Phases: the examples, the coverage phase (every operation, with every default check, on cases
made from the schema: each bound, each required part missing, each wrong type) and the stateful
one. The fuzzing phase (random cases, ids the server never made, so nearly all stop at 404) is
left out: it was half of this test's time, and ``tests/api/test_fuzz.py`` fuzzes every operation
with more random cases each, on real ids.

Run as an ordinary user on a fresh store. The CLI's own files (its cache of failures,
``./.schemathesis``) stay in the test's directory, never in the checkout.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.server import USERS, start_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 5
PHASES = "examples,coverage,stateful"


def _run(url: str, user: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cwd.mkdir()
    return subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "run", url, "-a", f"{user}:{USERS[user]}",
         "--max-examples", str(EXAMPLES), "--seed", "1", "--no-color", "--request-timeout", "30",
         "--phases", PHASES],
        cwd=cwd, capture_output=True, text=True, timeout=900, check=False,
    )


@pytest.mark.slow
def test_schemathesis_default_checks_find_nothing(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "server")
    try:
        done = _run(srv.endpoint + "/openapi.json", "test_user1", tmp_path / "run")
    finally:
        srv.stop()
    failures = sorted(set(re.findall(r"^_+ (.+?) _+$", done.stdout, re.MULTILINE)))
    assert done.returncode == 0 and not failures, "\n".join(
        [f"exit {done.returncode}, {len(failures)} operations failed:", *failures, done.stdout[-3000:], done.stderr[-2000:]])
    assert "generated" in done.stdout  # it did run cases
    for phase in ("Examples", "Coverage", "Stateful"):  # in every phase named
        assert re.search(rf"✅ +{phase} \(in ", done.stdout), done.stdout[-3000:]
    # the coverage phase ran every default check on every operation of the document
    selected = re.search(r"Selected: (\d+)/(\d+)", done.stdout)
    covered = re.search(r"Coverage \(in [^)]*\)\s+✅ (\d+) passed", done.stdout)
    assert selected and covered and selected[1] == selected[2] == covered[1], done.stdout[-3000:]
    # the CLI writes only where it was started (tmp_path/run): nothing of it in the checkout
    assert not (ROOT / ".schemathesis").exists() and not (Path.cwd() / ".schemathesis").exists()
    assert not (ROOT / "schemathesis-report").exists()
