"""A new user's mistakes, made with the real ``h5lake`` command: each ends in one line on stderr
that says what to do, a non-zero exit status and no traceback (issue 17, items 8 and 10)."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import h5py
import numpy as np
import pytest
import requests
from click.testing import CliRunner
from tests.support.cli import clean_env, h5lake_command, one_error_line, run_h5lake
from tests.support.server import USERS, free_port, launch, refusing_port, write_passwd

from h5lake.cli import command as cli
from h5lake.cli import server as commands

pytestmark = pytest.mark.one_backend  # what the command line says, the same on every store

CREDS = ["-u", "test_user1", "-p", USERS["test_user1"]]


@pytest.fixture
def small_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(6)
    return path


# --- serve: settings, the port ------------------------------------------------------------------


@contextmanager
def serving(workdir: Path, env: dict[str, str], args: tuple[str, ...] = ()) -> Iterator[str]:
    """``h5lake serve`` configured by ``env`` alone (no options but ``args``); yields its endpoint."""
    def settings(port: int) -> dict[str, str]:
        return clean_env(workdir, {"H5LAKE_PORT": str(port), "H5LAKE_DATA": str(workdir / "data"), "H5LAKE_WORKERS": "1", **env})

    started = launch(workdir, lambda port: [*h5lake_command(), "serve", *args], env=settings, cwd=workdir)
    try:
        yield started.endpoint
    finally:
        started.stop()


def may_make_folder(endpoint: str, user: str, folder: str) -> bool:
    """Only an admin may make a folder under /home that is not their own."""
    r = requests.put(endpoint + "/", params={"domain": folder}, json={"folder": True}, auth=(user, USERS[user]), timeout=30)
    assert r.status_code in (201, 403), r.text
    return r.status_code == 201


@pytest.mark.parametrize("form", ["plain", "commas", "json"])
def test_list_settings_from_the_environment(form: str, tmp_path: Path, small_file: Path) -> None:
    """``H5LAKE_ADMIN=alice`` and ``H5LAKE_ALLOW_SOURCE=/data`` work as written, as do
    comma-separated names and JSON lists; the values take effect."""
    sources = tmp_path / "sources"
    sources.mkdir()
    linked_file = sources / "day.h5"
    linked_file.write_bytes(small_file.read_bytes())
    admin, allow = {
        "plain": ("test_user2", str(sources)),
        "commas": ("admin, test_user2", f"{tmp_path},{sources}"),
        "json": ('["admin", "test_user2"]', f'["{sources}"]'),
    }[form]
    passwd = write_passwd(tmp_path / "passwd.txt")
    env = {"H5LAKE_ADMIN": admin, "H5LAKE_ALLOW_SOURCE": allow, "H5LAKE_PASSWD": str(passwd)}
    with serving(tmp_path, env) as endpoint:
        assert may_make_folder(endpoint, "test_user2", "/home/made-by-an-admin")
        assert not may_make_folder(endpoint, "test_user1", "/home/not-by-a-user")
        assert may_make_folder(endpoint, "test_user1", "/home/test_user1")
        loaded = run_h5lake("load", "--link", str(linked_file), "/home/test_user1/day.h5", "-e", endpoint, *CREDS, cwd=tmp_path)
        assert loaded.returncode == 0, loaded.stderr


@pytest.mark.parametrize(
    ("env", "args", "expected"),
    [
        ({"H5LAKE_ADMIN": '["alice"'}, (), "H5LAKE_ADMIN"),
        ({"H5LAKE_ALLOW_SOURCE": "/nonexistent/h5lake-sources"}, (), "/nonexistent/h5lake-sources is not a folder"),
        ({}, ("--allow-source", "/nonexistent/h5lake-sources"), "--allow-source"),
        ({"H5LAKE_PORT": "not-a-number"}, (), "H5LAKE_PORT"),
    ],
)
def test_bad_settings_stop_start_up(env: dict[str, str], args: tuple[str, ...], expected: str, tmp_path: Path) -> None:
    result = run_h5lake("serve", "--data", str(tmp_path / "data"), *args, cwd=tmp_path, env=env)
    line = one_error_line(result)
    assert "invalid setting" in line and expected in line, line
    assert "serving" not in result.stdout


def test_a_malformed_password_file_stops_start_up(tmp_path: Path) -> None:
    (tmp_path / "passwd.txt").write_text("alice secret\n")
    line = one_error_line(run_h5lake("serve", "--data", str(tmp_path / "data"), "--passwd", "passwd.txt", cwd=tmp_path))
    assert "passwd.txt:1: expected user:password" in line and "h5lake passwd USER" in line, line


def test_an_unreachable_s3_store_stops_start_up(tmp_path: Path) -> None:
    env = {"AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret"}
    with refusing_port() as store_port:
        store_endpoint = f"http://127.0.0.1:{store_port}"
        args = ["--storage", "s3://bucket/prefix", "--s3-endpoint", store_endpoint, "--s3-region", "us-east-1"]
        # its own port is checked free and never bound: it stops at the store
        result = run_h5lake("serve", *args, "--port", str(free_port()), cwd=tmp_path, env=env, timeout=120)
    line = one_error_line(result)
    assert f"cannot use the store s3://bucket/prefix at {store_endpoint}" in line and "--s3-endpoint" in line, line


def test_an_unexpected_exception_is_one_line_unless_the_traceback_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net under every command (a bug stands in for one here: the one place a test
    simulates a failure, since a real bug is what this guards against)."""
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("simulated bug")

    monkeypatch.setattr(commands, "_check_port", broken)
    result = CliRunner().invoke(cli.main, ["serve", "--data", str(tmp_path / "data")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: unexpected KeyError: 'simulated bug' (a bug in h5lake: please report it; H5LAKE_TRACEBACK=1 shows where it happened)"
    ]
    monkeypatch.setenv("H5LAKE_TRACEBACK", "1")
    assert isinstance(CliRunner().invoke(cli.main, ["serve", "--data", str(tmp_path / "data")]).exception, KeyError)


def test_an_occupied_port_is_reported_before_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_h5lake("serve", "--data", str(tmp_path / "data"), "--port", str(port), cwd=tmp_path)
    line = one_error_line(result)
    assert f"port {port}" in line and "already in use" in line and "--port" in line, line
    assert "serving" not in result.stdout


# --- passwd -------------------------------------------------------------------------------------


def test_passwd_reads_a_password_from_a_pipe(tmp_path: Path) -> None:
    result = run_h5lake("passwd", "bob", cwd=tmp_path, input="pipe-pw\n")
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith("bob:") and "pipe-pw" not in line
    (tmp_path / "passwd.txt").write_text(line + "\n")
    with serving(tmp_path, {"H5LAKE_PASSWD": str(tmp_path / "passwd.txt")}) as endpoint:
        assert requests.get(endpoint + "/about", auth=("bob", "pipe-pw"), timeout=30).json()["username"] == "bob"
        assert requests.get(endpoint + "/about", auth=("bob", "pipe-pw\n"), timeout=30).status_code == 401


def test_passwd_with_an_empty_pipe_says_what_to_do(tmp_path: Path) -> None:
    line = one_error_line(run_h5lake("passwd", "bob", cwd=tmp_path, input=""))
    assert "echo" in line and "h5lake passwd bob" in line


# --- load and export against a wrong endpoint, wrong credentials, wrong paths ------------------


@pytest.mark.parametrize("tool", ["load", "export"])
def test_nothing_listening_at_the_endpoint(tool: str, tmp_path: Path, small_file: Path) -> None:
    args = [str(small_file), "/home/test_user1/x.h5"] if tool == "load" else ["/home/test_user1/x.h5", str(tmp_path / "out.h5")]
    with refusing_port() as port:
        endpoint = f"http://127.0.0.1:{port}"
        result = run_h5lake(tool, *args, "-e", endpoint, *CREDS, cwd=tmp_path, timeout=20)
    line = one_error_line(result)
    assert f"cannot reach a server at {endpoint}" in line and "connection refused" in line and "-e/--endpoint" in line, line


@pytest.mark.parametrize("tool", ["load", "export"])
def test_an_endpoint_that_is_not_a_url(tool: str, tmp_path: Path, small_file: Path) -> None:
    args = [str(small_file), "/home/test_user1/x.h5"] if tool == "load" else ["/home/test_user1/x.h5", str(tmp_path / "out.h5")]
    line = one_error_line(run_h5lake(tool, *args, "-e", "http://127.0.0.1:WRONG", *CREDS, cwd=tmp_path, timeout=20))
    assert "'http://127.0.0.1:WRONG' is not a valid server URL" in line and "HS_ENDPOINT" in line, line


def test_load_and_export_word_a_wrong_password_the_same(endpoint: str, home_folder: str, tmp_path: Path, small_file: Path) -> None:
    domain = f"{home_folder}/{uuid.uuid4().hex[:8]}.h5"
    assert run_h5lake("load", str(small_file), domain, "-e", endpoint, *CREDS, cwd=tmp_path).returncode == 0
    wrong = ["-e", endpoint, "-u", "test_user1", "-p", "not-the-password"]
    from_load = one_error_line(run_h5lake("load", str(small_file), domain + "2", *wrong, cwd=tmp_path))
    from_export = one_error_line(run_h5lake("export", domain, str(tmp_path / "out.h5"), *wrong, cwd=tmp_path))
    assert from_load == from_export
    assert "refused user 'test_user1'" in from_load and "wrong user name or password" in from_load and "-u/-p" in from_load


def test_no_credentials_for_a_server_that_needs_them(endpoint: str, home_folder: str, tmp_path: Path, small_file: Path) -> None:
    domain = f"{home_folder}/{uuid.uuid4().hex[:8]}.h5"
    assert run_h5lake("load", str(small_file), domain, "-e", endpoint, *CREDS, cwd=tmp_path).returncode == 0
    line = one_error_line(run_h5lake("export", domain, str(tmp_path / "out.h5"), "-e", endpoint, cwd=tmp_path))
    assert "needs a user name and password" in line and "-u/-p" in line


def test_export_into_a_missing_folder(endpoint: str, tmp_path: Path) -> None:
    line = one_error_line(run_h5lake("export", "/home/test_user1/x.h5", "/nonexistent/dir/x.h5", "-e", endpoint, *CREDS, cwd=tmp_path))
    assert "cannot write /nonexistent/dir/x.h5: folder /nonexistent/dir does not exist" in line


def test_export_of_a_missing_domain(endpoint: str, home_folder: str, tmp_path: Path) -> None:
    line = one_error_line(run_h5lake("export", f"{home_folder}/never-made.h5", str(tmp_path / "out.h5"), "-e", endpoint, *CREDS, cwd=tmp_path))
    assert "not found" in line and f"hsls {home_folder}/" in line
    assert not (tmp_path / "out.h5").exists()


def test_load_of_a_missing_file(endpoint: str, tmp_path: Path) -> None:
    line = one_error_line(run_h5lake("load", str(tmp_path / "nope.h5"), "/home/test_user1/x.h5", "-e", endpoint, *CREDS, cwd=tmp_path))
    assert f"{tmp_path / 'nope.h5'}: no such file" in line


def test_load_into_a_missing_folder(endpoint: str, tmp_path: Path, small_file: Path) -> None:
    folder = f"/home/test_user1/{uuid.uuid4().hex[:8]}"
    line = one_error_line(run_h5lake("load", str(small_file), f"{folder}/x.h5", "-e", endpoint, *CREDS, cwd=tmp_path))
    assert f"parent folder {folder} not found" in line and f"hstouch {folder}/" in line


def test_load_into_someone_elses_folder(endpoint: str, home_folder: str, tmp_path: Path, small_file: Path) -> None:
    creds2 = ["-u", "test_user2", "-p", USERS["test_user2"]]
    line = one_error_line(run_h5lake("load", str(small_file), f"{home_folder}/theirs.h5", "-e", endpoint, *creds2, cwd=tmp_path))
    assert "test_user2" in line and "log in as a user with access" in line


def test_a_wrong_domain_path_and_a_usage_error(endpoint: str, tmp_path: Path, small_file: Path) -> None:
    line = one_error_line(run_h5lake("load", str(small_file), "home/x.h5", "-e", endpoint, *CREDS, cwd=tmp_path))
    assert "is not a domain path (expected /folder/name.h5)" in line
    line = one_error_line(run_h5lake("export", "/home/test_user1/x.h5", cwd=tmp_path))
    assert "Missing argument 'TARGET'" in line and "h5lake export --help" in line


# --- help ---------------------------------------------------------------------------------------


def test_help_lists_the_lazy_commands_as_their_own_help_says_without_loading_them() -> None:
    """``h5lake --help`` names each lazily loaded command by a line kept in cli/command.py (loading
    them all cost a second of imports); each line is the loaded command's own short help."""
    for name, line in cli._Commands.lazy_help.items():
        command = cli.main.get_command(click.Context(cli.main), name)
        assert command is not None and command.get_short_help_str(200) == line, name
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom h5lake import cli\n"
        "result = CliRunner().invoke(cli.main, ['--help'], standalone_mode=False)\n"
        "assert result.exit_code == 0, result.output\n"
        f"print(sorted(m for m in {sorted(set(cli._Commands.lazy.values()))!r} if m in sys.modules))\n"
    )
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert listed.stdout.strip() == "[]"


def test_help_lists_every_command_in_a_whole_sentence(tmp_path: Path) -> None:
    result = run_h5lake("--help", cwd=tmp_path)
    assert result.returncode == 0
    commands = result.stdout.split("Commands:")[1].strip().splitlines()
    assert [c.split()[0] for c in commands] == ["apikey", "export", "gc", "load", "passwd", "serve", "version"]
    for line in commands:
        assert line.rstrip().endswith(".") and not line.rstrip().endswith("..."), line
        assert "(e.g" not in line, line


def test_load_into_a_version_names_the_head(endpoint: str, home_folder: str, tmp_path: Path, small_file: Path) -> None:
    """A version is read-only: ``load`` into ``D@v1`` says so and names the head ``D``, with or
    without --overwrite, and changes nothing (issue 34)."""
    domain = f"{home_folder}/{uuid.uuid4().hex[:8]}.h5"
    assert run_h5lake("load", str(small_file), domain, "-e", endpoint, *CREDS, cwd=tmp_path).returncode == 0
    assert run_h5lake("version", "commit", domain, "-e", endpoint, *CREDS, cwd=tmp_path).returncode == 0
    for more in ((), ("--overwrite",), ("--append", "--extend", "0")):
        line = one_error_line(run_h5lake("load", *more, str(small_file), domain + "@v1", "-e", endpoint, *CREDS, cwd=tmp_path))
        assert f"{domain}@v1 is a version of {domain}" in line and "read-only" in line and f"load into {domain}" in line, line
        assert not any(verb in line for verb in ("GET ", "PUT ", "POST ", "DELETE ", "failed (")), line
    r = requests.get(endpoint + "/", params={"domain": domain + "@v1"}, auth=("test_user1", USERS["test_user1"]), timeout=30)
    assert r.status_code == 200


@pytest.mark.parametrize("method", ["GET", "PUT", "POST", "DELETE"])
def test_a_refused_request_is_worded_without_http_verbs(method: str) -> None:
    """What the server refused, in words; the status and its message, never ``DELETE / failed``."""
    from h5lake.client.common import explain
    from h5lake.client.rest import RestClient, RestError, Settings

    client = RestClient(Settings("http://127.0.0.1:1"), "/home/u/d.h5")
    for path in ("/", "/datasets/d-1/value", "/groups/g-1/links/x"):
        line = explain(RestError(method, path, 409, "something is in the way"), client)
        assert method not in line and "failed (" not in line, line
        assert "something is in the way" in line and "409" in line and "/home/u/d.h5" in line, line
