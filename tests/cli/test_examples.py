"""The README's quick start and every Python block marked ```` ```python runnable ```` in README.md
and docs/*.md, run as written against a server made by the quick start's own commands; and
``--public-read`` does what the README and ``--help`` say (issue 34). Not in ``--quick``: each
example is a few seconds of a real server's work."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from tests.support.cli import clean_env, run_h5lake
from tests.support.server import USERS, Launched, launch, start_server

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


QUICK_START_ENDPOINT = "http://127.0.0.1:5101"
DOCS_USER = ("me", "me-pw")  # docs/ examples use /home/me/ and the HS_* variables
RUNNABLE = re.compile(r"^```python runnable\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _runnable(path: Path) -> list[str]:
    return RUNNABLE.findall(path.read_text())


def _shell_lines(section: str, first_word: str) -> list[str]:
    return [line.strip() for line in section.splitlines() if line.startswith("    " + first_word)]


def _env(work: Path, endpoint: str, user: tuple[str, str] = DOCS_USER) -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return clean_env(work, {"PATH": path, "HS_ENDPOINT": endpoint, "HS_USERNAME": user[0], "HS_PASSWORD": user[1]})


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Launched, Path]]:
    """The quick start's server, made by its two commands as written (the password typed in is
    ``secret``), on a free port instead of 5101; ``h5lake passwd`` adds the docs' user too."""
    work = tmp_path_factory.mktemp("quickstart")
    make_passwd, serve = _shell_lines(_section("Quick start with h5pyd"), "h5lake")
    assert make_passwd.startswith("h5lake passwd alice") and serve.startswith("h5lake serve")
    env = _env(work, "")
    for command, password in ((make_passwd, "secret"), (f"h5lake passwd {DOCS_USER[0]} >> passwd.txt", DOCS_USER[1])):
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, input=password + "\n", capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
    started = launch(work, lambda port: ["bash", "-c", f"exec {serve}"], env=lambda port: {**env, "H5LAKE_PORT": str(port), "H5LAKE_WORKERS": "1"}, cwd=work)
    try:
        r = requests.put(started.endpoint + "/", params={"domain": f"/home/{DOCS_USER[0]}"}, json={"folder": True}, auth=DOCS_USER, timeout=30)
        assert r.status_code == 201, r.text  # the docs' user has a home folder, as alice after the quick start
        yield started, work
    finally:
        started.stop()


def _run_python(code: str, work: Path, endpoint: str) -> None:
    done = subprocess.run([sys.executable, "-c", code.replace(QUICK_START_ENDPOINT, endpoint)], cwd=work, env=_env(work, endpoint),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"


def test_the_quick_start_runs_as_written(quick_start: tuple[Launched, Path]) -> None:
    started, work = quick_start
    log = started.log.read_text()
    assert "plain text" not in log and "NO AUTHENTICATION" not in log, log  # a hashed password, no warning
    assert (work / "passwd.txt").read_text().startswith("alice:") and "secret" not in (work / "passwd.txt").read_text()
    section = _section("Quick start with h5pyd")
    blocks = RUNNABLE.findall(section)
    assert len(blocks) == 1
    _run_python(blocks[0], work, started.endpoint)
    tools = [line.replace(QUICK_START_ENDPOINT, started.endpoint) for line in
             _shell_lines(section, "export HS_") + _shell_lines(section, "hsls") + _shell_lines(section, "hsinfo")]
    assert len(tools) == 3
    done = subprocess.run(["bash", "-ec", "\n".join(tools)], cwd=work, env=clean_env(work), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "demo.h5" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("doc", ["docs/maps.md", "docs/versions.md"])
def test_the_docs_python_examples_run_as_written(doc: str, quick_start: tuple[Launched, Path]) -> None:
    started, work = quick_start
    blocks = _runnable(ROOT / doc)
    assert blocks, f"{doc} has no block marked runnable"
    for code in blocks:
        _run_python(code, work, started.endpoint)


def test_every_runnable_block_is_run() -> None:
    marked = {str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")] if _runnable(p)}
    assert marked == {"README.md", "docs/maps.md", "docs/versions.md"}


# --- --public-read: what the README and --help say is what it does ------------------------------

PUBLIC_READ = "domains and folders created while it is on are readable by everyone, without credentials"


def test_public_read_is_described_alike_and_truly(tmp_path: Path) -> None:
    readme = " ".join(README.split())
    assert PUBLIC_READ in readme
    help_text = run_h5lake("serve", "--help", cwd=tmp_path)
    assert PUBLIC_READ in " ".join(help_text.stdout.split()).lower(), help_text.stdout
    home, user = "/home/test_user1", ("test_user1", USERS["test_user1"])
    before = start_server(tmp_path / "off")
    try:
        assert requests.put(before.endpoint + "/", params={"domain": home}, json={"folder": True}, auth=user, timeout=30).status_code == 201
        assert requests.put(before.endpoint + "/", params={"domain": f"{home}/old.h5"}, auth=user, timeout=30).status_code == 201
    finally:
        before.stop()
    after = start_server(tmp_path / "on", data=before.data, extra=["--public-read"])
    try:
        assert requests.put(after.endpoint + "/", params={"domain": f"{home}/new.h5"}, auth=user, timeout=30).status_code == 201
        assert requests.get(after.endpoint + "/", params={"domain": f"{home}/new.h5"}, timeout=30).status_code == 200
        assert requests.get(after.endpoint + "/", params={"domain": f"{home}/old.h5"}, timeout=30).status_code in (401, 403)
        assert requests.put(after.endpoint + "/", params={"domain": f"{home}/anon.h5"}, timeout=30).status_code == 401  # reads only
        assert requests.get(after.endpoint + "/view/", timeout=30).status_code == 200  # no login asked
    finally:
        after.stop()
