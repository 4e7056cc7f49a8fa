"""Graceful shutdown behind a load balancer: a server sent SIGTERM turns /readyz 503, keeps
serving for --drain-seconds while Debian's haproxy (health check on /readyz) moves the traffic to
the other server, then closes its listener, finishes what it has in flight and exits. Under a
steady load of reads and writes through haproxy no request fails and every acknowledged write
is there afterwards (cli/supervise.py, docs/operations.md)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from tests.support.server import USERS, free_port, start_server

pytestmark = pytest.mark.slow  # three servers, haproxy and a few seconds of load

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"  # Debian's haproxy package
AUTH = ("test_user1", USERS["test_user1"])
THREADS = 4


def haproxy_config(port: int, backends: list[str]) -> str:
    servers = "\n".join(
        f"    server s{i} {b.removeprefix('http://')} check inter 200ms fall 1 rise 2" for i, b in enumerate(backends)
    )
    return f"""global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout check 10s
frontend front
    bind 127.0.0.1:{port}
    default_backend back
backend back
    balance roundrobin
    option httpchk GET /readyz
{servers}
"""


def wait_until(check: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_a_draining_server_loses_no_request_behind_haproxy(tmp_path: Path) -> None:
    data = tmp_path / "data"
    extra = ["--drain-seconds", "3", "--shutdown-timeout", "20"]
    going = start_server(tmp_path / "a", data=data, extra=extra, workers=2, timeout=90)
    staying = start_server(tmp_path / "b", data=data, extra=extra, timeout=90)
    proxy = None
    try:
        port = free_port()
        config = tmp_path / "haproxy.cfg"
        config.write_text(haproxy_config(port, [going.endpoint, staying.endpoint]))
        proxy = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        front = f"http://127.0.0.1:{port}"
        assert wait_until(lambda: requests.get(front + "/healthz", timeout=5).ok if _up(front) else False, 30)

        r = requests.put(front + "/?domain=/home/test_user1", json={"folder": True}, auth=AUTH, timeout=30)
        assert r.status_code in (201, 409), r.text
        domain = f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5"
        assert requests.put(front + f"/?domain={domain}", auth=AUTH, timeout=30).status_code == 201
        root = requests.get(front + f"/?domain={domain}", auth=AUTH, timeout=30).json()["root"]

        stop = threading.Event()
        failures: list[str] = []
        acknowledged: list[str] = []

        def load(n: int) -> None:
            session = requests.Session()
            i = 0
            while not stop.is_set():
                name = f"t{n}-{i}"
                i += 1
                try:
                    r = session.put(
                        front + f"/groups/{root}/attributes/{name}?domain={domain}",
                        json={"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": i}, auth=AUTH, timeout=60,
                    )
                    if r.status_code == 201:
                        acknowledged.append(name)
                    else:
                        failures.append(f"PUT {name}: {r.status_code} {r.text[:200]}")
                    r = session.get(front + f"/groups/{root}?domain={domain}", auth=AUTH, timeout=60)
                    if r.status_code != 200:
                        failures.append(f"GET: {r.status_code} {r.text[:200]}")
                except requests.RequestException as exc:
                    failures.append(f"{name}: {exc!r}")

        threads = [threading.Thread(target=load, args=(n,)) for n in range(THREADS)]
        for t in threads:
            t.start()
        try:
            # load on both servers (haproxy takes turns): writes acknowledged before the signal
            assert wait_until(lambda: len(acknowledged) >= 2 * THREADS, 60), failures[:5]
            os.kill(going.process.pid, signal.SIGTERM)  # as a container runtime does: the main process
            assert wait_until(lambda: _status(going.endpoint + "/readyz") == 503, 5)
            going.process.wait(timeout=60)  # drained, finished, ended
            assert "Traceback" not in going.log.read_text()
            ended = len(acknowledged)  # then load on the staying server alone
            assert wait_until(lambda: len(acknowledged) >= ended + 2 * THREADS, 60), failures[:5]
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=120)
        assert not failures, failures[:5]
        assert len(acknowledged) > 20
        attrs = requests.get(front + f"/groups/{root}/attributes?domain={domain}&Limit=100000", auth=AUTH, timeout=60)
        assert attrs.status_code == 200
        names = {a["name"] for a in attrs.json()["attributes"]}
        assert set(acknowledged) <= names
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=30)
        going.stop()
        staying.stop()


def _status(url: str) -> int | None:
    try:
        return requests.get(url, timeout=5).status_code
    except requests.RequestException:
        return None


def _up(url: str) -> bool:
    return _status(url + "/healthz") == 200
