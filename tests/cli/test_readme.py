"""The README's first ten minutes: its install line installs everything its quick start uses, the
server runs without the client extra, and it sends users to the loader that works (issue 17,
items 7 and 9). tests/cli/test_examples.py runs the README's and docs' examples."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import requests
from tests.support.cli import clean_env
from tests.support.server import launch

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def _installed_by_first_install_line() -> set[str]:
    line = next(line for line in README.splitlines() if "pip install" in line)
    extras = re.search(r"\.\[([^\]]*)\]", line)
    chosen = [e.strip() for e in extras.group(1).split(",")] if extras else []
    requirements = list(PYPROJECT["project"]["dependencies"])
    for extra in chosen:
        requirements += PYPROJECT["project"]["optional-dependencies"][extra]
    return {_name(r) for r in requirements}


def test_the_first_install_line_installs_what_the_quick_start_imports_and_runs() -> None:
    installed = _installed_by_first_install_line()
    quick_start = _section("Quick start with h5pyd")
    code = "\n".join(re.findall(r"```python[^\n]*\n(.*?)```", quick_start, re.DOTALL))
    modules = set()
    for names in re.findall(r"^import (.+)$", code, re.MULTILINE):
        modules |= {n.split(" as ")[0].strip() for n in names.split(",")}
    modules |= set(re.findall(r"^from (\w+)", code, re.MULTILINE))
    assert {"h5pyd", "numpy"} <= modules
    providers = importlib.metadata.packages_distributions()
    for module in modules:
        assert any(_name(d) in installed for d in providers[module]), f"{module} is not installed by the README's first command"
    # the shell commands of the quick start are h5pyd's console scripts
    commands = set(re.findall(r"^\s{4}(hs\w+)", quick_start, re.MULTILINE))
    assert {"hsls", "hsinfo"} <= commands
    scripts = {ep.name for ep in importlib.metadata.distribution("h5pyd").entry_points if ep.group == "console_scripts"}
    assert commands <= scripts and "h5pyd" in installed


def test_the_test_extra_still_has_the_client_and_the_xarray_stack() -> None:
    test = {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"]}
    assert {"h5pyd", "xarray", "h5netcdf", "netcdf4", "pytest"} <= test
    assert "h5pyd" not in {_name(r) for r in PYPROJECT["project"]["dependencies"]}


def test_the_server_runs_without_h5pyd(tmp_path: Path) -> None:
    """``pip install -e .`` (no extra) is a working server: h5lake never imports h5pyd."""
    def blocked(port: int) -> list[str]:
        return [sys.executable, "-c", (
            "import sys; sys.modules['h5pyd'] = None\n"  # any `import h5pyd` now raises ImportError
            "import h5lake.client.load, h5lake.client.export\n"
            "from h5lake.cli.command import main\n"
            # one worker: this interpreter serves, so the guard above holds where the app runs
            f"main(['serve', '--port', '{port}', '--data', {str(tmp_path / 'data')!r}, '--workers', '1'])\n"
        )]

    started = launch(tmp_path, blocked, env=clean_env(tmp_path), cwd=tmp_path)  # fails unless it answers /about
    try:
        assert requests.get(started.endpoint + "/about", timeout=10).ok
    finally:
        started.stop()


def test_the_readme_links_files_with_h5lake_load() -> None:
    assert "hsload --link" not in README.replace("h5pyd 1.0's own `hsload --link` fails", "")
    linking = _section("Moving files in and out")
    for command in ("h5lake load --link", "h5lake load --append --extend", "--allow-source"):
        assert command in linking, command

