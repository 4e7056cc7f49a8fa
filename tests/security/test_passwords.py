"""Passwords: OWASP-strength hashes, old hashes still read, every check costs the same, the
event loop stays free while wrong passwords pour in, plain-text lines are warned about."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from h5lake.auth import passwords
from tests.support.server import free_port, launch, start_server


def run_cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    return subprocess.run([sys.executable, "-m", "h5lake.cli.command", *args], check=False, capture_output=True, text=True,
                          env=env, input=input, timeout=60)


def test_new_hashes_follow_owasp() -> None:
    scheme, iterations, salt, digest = passwords.hash_password("pw").split("$")
    assert scheme == "pbkdf2_sha256"
    assert int(iterations) >= 600_000
    assert len(bytes.fromhex(salt)) >= 16
    assert len(base64.b64decode(digest)) == 32


def _old_hash(password: str) -> str:
    """What h5lake 0.1 wrote: 200,000 iterations and a 64-bit salt."""
    salt = "0123456789abcdef"
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), 200_000)
    return f"pbkdf2_sha256$200000${salt}${base64.b64encode(digest).decode()}"


def test_every_check_costs_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unknown users, plain lines, old and new hashes all spend the full PBKDF2 work, so the
    answer's timing does not reveal which user names exist."""
    spent: list[int] = []
    real = hashlib.pbkdf2_hmac

    def counting(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        spent.append(iterations)
        return real(name, password, salt, 1)

    new = passwords.hash_password("pw", iterations=passwords.ITERATIONS)
    old = _old_hash("pw")
    monkeypatch.setattr(passwords.hashlib, "pbkdf2_hmac", counting)
    for stored, password in [(None, "pw"), ("pw", "pw"), ("pw", "wrong"), (old, "x"), (new, "x"), ("bad$hash", "x")]:
        spent.clear()
        passwords.verify_password(stored, password)
        assert sum(spent) == passwords.ITERATIONS, (stored, spent)


def test_verification_accepts_right_and_old_hashes_only() -> None:
    assert passwords.verify_password(_old_hash("s3cret"), "s3cret")
    assert not passwords.verify_password(_old_hash("s3cret"), "other")
    assert passwords.verify_password(passwords.hash_password("é pw"), "é pw")
    assert not passwords.verify_password(None, "anything")
    assert not passwords.verify_password("pbkdf2_sha256$notanumber$x$y", "x")


def test_old_hashes_and_plain_lines_log_in(tmp_path: Path) -> None:
    passwd = tmp_path / "users.txt"
    passwd.write_text(f"old:{_old_hash('old-pw')}\nplain:plain-pw\nadmin:admin-pw\n")
    srv = start_server(tmp_path / "srv", extra=["--passwd", str(passwd)])
    try:
        assert requests.get(srv.endpoint + "/about", auth=("old", "old-pw"), timeout=10).status_code == 200
        assert requests.get(srv.endpoint + "/about", auth=("old", "nope"), timeout=10).status_code == 401
        assert requests.get(srv.endpoint + "/about", auth=("plain", "plain-pw"), timeout=10).status_code == 200
        assert requests.get(srv.endpoint + "/about", auth=("nobody", "x"), timeout=10).status_code == 401
    finally:
        srv.stop()
    log = srv.log.read_text()
    assert "'plain'" in log and "plain text" in log and "h5lake passwd plain" in log
    assert "'old'" not in log, "hashed lines are not warned about"


def test_wrong_password_flood_does_not_stall_others(tmp_path: Path) -> None:
    """Four clients hammer wrong passwords (each costs a full PBKDF2); a fifth, already logged in,
    keeps being answered because hashing runs off the event loop."""
    srv = start_server(tmp_path / "srv")
    url = srv.endpoint + "/about"
    good = ("test_user1", "test1-pw")
    assert requests.get(url, auth=good, timeout=10).status_code == 200  # remembered from now on
    stop = threading.Event()
    refused: list[int] = []

    def attack(n: int) -> None:
        with requests.Session() as s:
            while not stop.is_set():
                refused.append(s.get(url, auth=("test_user1", f"guess-{n}-{len(refused)}"), timeout=60).status_code)

    threads = [threading.Thread(target=attack, args=(n,)) for n in range(4)]
    try:
        for t in threads:
            t.start()
        time.sleep(0.5)
        waits = []
        with requests.Session() as s:
            for _ in range(10):
                started = time.monotonic()
                assert s.get(url, auth=good, timeout=10).status_code == 200
                waits.append(time.monotonic() - started)
                time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join()
        srv.stop()
    assert refused and set(refused) == {401}
    # the bound: another client is answered within 1 s while the attack runs
    assert max(waits) < 1.0, waits


def test_passwd_command_prints_a_strong_hash() -> None:
    result = run_cli("passwd", "carol", input="s3cret\ns3cret\n")
    assert result.returncode == 0, result.stderr
    user, _, stored = result.stdout.strip().splitlines()[-1].partition(":")
    assert user == "carol"
    assert passwords.verify_password(stored, "s3cret")
    assert int(stored.split("$")[1]) >= 600_000


@pytest.mark.parametrize(
    "args, words",
    [
        (["--admin", "root"], ["--admin needs --passwd", "--insecure-no-auth"]),
        (["--host", "0.0.0.0"], ["0.0.0.0", "--insecure-no-auth"]),
    ],
)
def test_no_auth_is_refused_where_it_would_be_dangerous(tmp_path: Path, args: list[str], words: list[str]) -> None:
    result = run_cli("serve", "--data", str(tmp_path / "d"), "--port", str(free_port()), *args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_insecure_mode_is_explicit_and_loud(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    started = launch(tmp_path, lambda port: [
        sys.executable, "-m", "h5lake.cli.command", "serve", "--data", str(tmp_path / "d"), "--port", str(port),
        "--admin", "root", "--insecure-no-auth", "--workers", "1"], env=env)
    try:
        about = requests.get(started.endpoint + "/about", auth=("root", "anything"), timeout=10)
        assert about.status_code == 200 and about.json()["isadmin"]
    finally:
        started.stop()
    assert "NO AUTHENTICATION" in started.log.read_text()
