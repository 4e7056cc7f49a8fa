"""What an operator sees: request ids, /healthz and /readyz, the access log, /metrics
(api/observe.py, api/metrics.py; docs/operations.md)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient
from tests.support.s3server import start_s3_server
from tests.support.server import USERS, Server, start_server, write_passwd

from h5lake.api.app import create_app
from h5lake.api.observe import READINESS
from h5lake.config import Settings
from h5lake.model.ids import blob_key
from h5lake.storage.local import LocalStore

ADMIN = ("admin", USERS["admin"])
USER = ("test_user1", USERS["test_user1"])
TOKEN = "metrics-token-0123456789abcdef"
API_KEY_SECRET = "apikeysecret-9f8e7d6c5b4a"


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    passwd = write_passwd(tmp_path / "passwd")
    app = create_app(Settings(data=tmp_path / "data", passwd=passwd, admin=("admin",)))
    with TestClient(app) as c:
        yield c


# --- request ids -----------------------------------------------------------------------------


def test_a_sane_request_id_is_kept_and_named_in_error_bodies(client: TestClient) -> None:
    r = client.get("/?domain=/home/test_user1/none.h5", headers={**basic(*USER), "X-Request-Id": "trace:abc-123/4"})
    assert r.status_code == 404
    assert r.headers["x-request-id"] == "trace:abc-123/4"
    assert r.json()["error"]["request_id"] == "trace:abc-123/4"


@pytest.mark.parametrize("given", ["x" * 129, "has space", "semi;colon", "quote\"d", ""])
def test_an_unsafe_request_id_is_replaced(client: TestClient, given: str) -> None:
    r = client.get("/groups/g-00000000-00000000-0000-000000-000000", headers={**basic(*USER), "X-Request-Id": given})
    rid = r.headers["x-request-id"]
    assert rid != given and 0 < len(rid) <= 128 and rid.isalnum()
    assert r.json()["error"]["request_id"] == rid


def home(put: object, endpoint: str = "") -> None:
    r = put(endpoint + "/?domain=/home/test_user1", json={"folder": True}, headers=basic(*USER))  # type: ignore[operator]
    assert r.status_code in (201, 409), r.text


def test_every_reply_path_carries_a_new_id_each_time(client: TestClient) -> None:
    home(client.put)
    client.put("/?domain=/home/test_user1/ids.h5", headers=basic(*USER))
    root = client.get("/?domain=/home/test_user1/ids.h5", headers=basic(*USER)).json()["root"]
    seen = set()
    for url in (
        f"/groups/{root}?domain=/home/test_user1/ids.h5",  # the fast path (api/fast.py)
        "/about",  # Starlette's stack
        "/no/such/route",  # the router's 404
        "/healthz",
        "/readyz",
    ):
        r = client.get(url, headers=basic(*USER))
        assert r.headers["x-request-id"] not in seen, url
        seen.add(r.headers["x-request-id"])


# --- health and readiness --------------------------------------------------------------------


def test_health_routes_refuse_other_methods_with_405(client: TestClient) -> None:
    for path in ("/healthz", "/readyz"):
        for method in ("POST", "PUT", "DELETE", "TRACE"):
            r = client.request(method, path)
            assert (r.status_code, r.headers.get("allow")) == (405, "GET, HEAD"), (method, path, r.status_code)
            assert r.json()["error"]["status"] == 405 and r.headers["x-request-id"]


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").json() == {"status": "ok", "reason": "ready"}
    READINESS.stopping = True
    try:
        r = client.get("/readyz")
        assert r.status_code == 503 and r.json()["reason"] == "shutting down"
        assert client.get("/healthz").status_code == 200  # still serving
    finally:
        READINESS.stopping = False


# --- start-up --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "words"),
    [(["--access-log", "verbose"], "must be json, text or off"), (["--metrics-token", ""], "metrics_token")],
)
def test_bad_operations_settings_stop_start_up_with_one_line(tmp_path: Path, option: list[str], words: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "h5lake.cli.command", "serve", "--data", str(tmp_path), "--port", "1", *option],
        check=False, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr


# --- a real server of two workers: metrics summed over both, the access log ------------------


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_server(
        tmp_path_factory.mktemp("observe"), workers=2, timeout=90,
        extra=["--access-log", "json", "--metrics-token", TOKEN],
    )
    try:
        yield server
    finally:
        server.stop()


def scrape(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = requests.get(f"{server.endpoint}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(r.text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def logged(server: Server) -> tuple[int, int]:
    """The requests the access log lists (the health routes, which are not counted, left out) and
    the bytes they received."""
    lines = [json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")]
    counted = [line for line in lines if not line["path"].startswith(("/healthz", "/readyz"))]
    return len(counted), sum(line["bytes_in"] for line in counted)


def settled(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """A scrape that counts every request answered so far. Each worker writes its figures once a
    second, and counts a request in the same step as it logs it; so the scrape is taken once the
    requests, their durations and the bytes it reports are those the access log lists (the bytes
    read before and after it: the scrape itself is logged once answered)."""
    deadline = time.monotonic() + 30
    while True:
        requests_before, bytes_before = logged(server)
        samples = scrape(server)
        answered = sum(v for (name, _), v in samples.items() if name == "h5lake_http_requests_total")
        timed = sum(v for (name, _), v in samples.items() if name == "h5lake_http_request_duration_seconds_count")
        # a scrape may fall between a worker's writing of its counters and of its histogram
        if (answered, timed, value(samples, "h5lake_http_bytes_received_total")) == (requests_before, requests_before, bytes_before) \
                and logged(server)[1] == bytes_before:
            return samples
        assert time.monotonic() < deadline, "the scrape never caught up with the access log"
        time.sleep(0.1)


def workers_in_log(server: Server) -> set[int]:
    return {json.loads(line)["worker"] for line in server.log.read_text().splitlines() if line.startswith("{")}


def test_metrics_follow_traffic_through_two_workers(two_workers: Server) -> None:
    server = two_workers
    domain = "/home/test_user1/metrics.h5"
    home(requests.put, server.endpoint)
    assert requests.put(f"{server.endpoint}/?domain={domain}", headers=basic(*USER), timeout=30).status_code == 201
    root = requests.get(f"{server.endpoint}/?domain={domain}", headers=basic(*USER), timeout=30).json()["root"]
    before = settled(server)  # the requests above counted before the baseline
    gets = puts = 0
    body = json.dumps({"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 7}).encode()
    sent = 0
    # new connections each time, until both workers have answered some (the kernel picks)
    while gets < 20 or len(workers_in_log(server)) < 2:
        assert gets < 2000, "one worker took every connection"
        r = requests.get(f"{server.endpoint}/groups/{root}?domain={domain}", headers=basic(*USER), timeout=30)
        assert r.status_code == 200
        gets += 1
        r = requests.put(
            f"{server.endpoint}/groups/{root}/attributes/a{puts}?domain={domain}",
            headers={**basic(*USER), "Content-Type": "application/json"}, data=body, timeout=30,
        )
        assert r.status_code == 201, r.text
        puts += 1
        sent += len(body)
    bad = requests.get(f"{server.endpoint}/groups/{root}?domain={domain}", headers=basic("test_user1", "wrong"), timeout=30)
    assert bad.status_code == 401

    route = "/groups/{id}"
    after = settled(server)  # every request above counted

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("h5lake_http_requests_total", method="GET", route=route, status="200") == gets
    assert delta("h5lake_http_requests_total", method="GET", route=route, status="401") == 1
    attr_route = "/{collection}/{id}/attributes/{name:path}"
    assert delta("h5lake_http_requests_total", method="PUT", route=attr_route, status="201") == puts
    assert delta("h5lake_http_request_duration_seconds_count", method="GET", route=route) == gets + 1
    assert delta("h5lake_http_request_duration_seconds_bucket", method="GET", route=route, le="+Inf") == gets + 1
    assert delta("h5lake_http_bytes_received_total") == sent
    assert delta("h5lake_http_bytes_sent_total") > 0
    assert delta("h5lake_auth_failures_total") == 1
    assert delta("h5lake_storage_operations_total", op="put", outcome="ok") >= puts
    assert delta("h5lake_storage_bytes_total", direction="written") > 0
    assert value(after, "h5lake_build_info", version=__import__("h5lake").__version__) == 1
    assert value(after, "h5lake_connections") >= 1  # this scrape's own
    labels = {v for (_, pairs) in after for _, v in pairs}
    assert not any(root in v or "metrics.h5" in v or "test_user1" in v for v in labels)


def test_chunked_request_bodies_are_counted_as_received(two_workers: Server) -> None:
    """A body without Content-Length (Transfer-Encoding: chunked) counts its bytes as the
    application reads them: through ``receive`` (a JSON attribute) and through the
    ``h5lake.readinto`` extension (a binary dataset value)."""
    server, domain = two_workers, "/home/test_user1/chunked.h5"
    home(requests.put, server.endpoint)
    requests.put(f"{server.endpoint}/?domain={domain}", headers=basic(*USER), timeout=30)
    root = requests.get(f"{server.endpoint}/?domain={domain}", headers=basic(*USER), timeout=30).json()["root"]
    dset = requests.post(
        f"{server.endpoint}/datasets?domain={domain}", headers=basic(*USER), timeout=30,
        json={"type": "H5T_STD_U8LE", "shape": [100000]},
    ).json()["id"]
    before = settled(server)  # the requests above counted before the baseline
    attribute = json.dumps({"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 5}).encode()
    values = bytes(range(256)) * 390 + b"x" * 160  # 100000 bytes

    def pieces(data: bytes, size: int) -> Iterator[bytes]:  # requests sends a generator chunked
        yield from (data[i : i + size] for i in range(0, len(data), size))

    r = requests.put(
        f"{server.endpoint}/groups/{root}/attributes/chunky?domain={domain}", data=pieces(attribute, 7), timeout=30,
        headers={**basic(*USER), "Content-Type": "application/json"},
    )
    assert r.status_code == 201 and r.request.headers.get("Transfer-Encoding") == "chunked", r.text
    r = requests.put(
        f"{server.endpoint}/datasets/{dset}/value?domain={domain}", data=pieces(values, 30000), timeout=30,
        headers={**basic(*USER), "Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200 and r.request.headers.get("Transfer-Encoding") == "chunked", r.text
    expected = len(attribute) + len(values)
    deadline = time.monotonic() + 30
    while True:  # the other worker writes its figures once a second
        received = value(scrape(server), "h5lake_http_bytes_received_total") - value(before, "h5lake_http_bytes_received_total")
        if received >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert received == expected


def test_metrics_need_an_admin_or_the_token(two_workers: Server) -> None:
    url = f"{two_workers.endpoint}/metrics"
    assert requests.get(url, timeout=30).status_code == 401
    assert requests.get(url, headers=basic(*USER), timeout=30).status_code == 401
    assert requests.get(url, headers={"Authorization": "Bearer wrong-token"}, timeout=30).status_code == 401
    assert requests.get(url, headers=basic(*ADMIN), timeout=30).status_code == 200
    assert requests.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).status_code == 200


def test_the_access_log_has_one_json_line_per_request_and_no_credentials(two_workers: Server) -> None:
    server = two_workers
    marker = "log-check-42"
    requests.get(
        f"{server.endpoint}/?domain=/home/test_user1/none.h5&api_key={API_KEY_SECRET}",
        headers={**basic(*USER), "X-Request-Id": marker}, timeout=30,
    )
    requests.get(f"{server.endpoint}/metrics", headers={"Authorization": f"Bearer {TOKEN}", "X-Request-Id": marker + "b"}, timeout=30)
    deadline = time.monotonic() + 10
    while marker + "b" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = server.log.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    mine = [line for line in lines if line["request_id"] == marker]
    assert len(mine) == 1
    line = mine[0]
    assert set(line) == {"time", "request_id", "user", "method", "path", "status", "bytes_in", "bytes_out", "duration_ms", "worker"}
    assert line["user"] == "test_user1" and line["method"] == "GET" and line["status"] == 404
    assert line["path"].startswith("/?domain=") and "api_key=***" in line["path"]
    assert line["bytes_out"] > 0 and line["duration_ms"] >= 0
    for secret in (API_KEY_SECRET, TOKEN, USERS["test_user1"], USERS["admin"], base64.b64encode(b"test_user1:").decode()[:12]):
        assert secret not in text
    assert "authorization" not in text.lower()


def test_protocol_refusals_carry_a_request_id(two_workers: Server) -> None:
    host, port = two_workers.endpoint.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"GET /about HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-F%d: v\r\n" % i for i in range(150)) + b"\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431")
    rid = next(line.split(b": ", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"x-request-id:"))
    assert json.loads(body)["error"]["request_id"] == rid.decode()


# --- readiness follows the store -------------------------------------------------------------


def status_of(url: str) -> int | None:
    try:
        return requests.get(url, timeout=10).status_code
    except requests.RequestException:
        return None


def becomes(url: str, status: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if status_of(url) == status:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow  # SeaweedFS started twice
def test_readiness_follows_the_s3_store_down_and_up(tmp_path: Path) -> None:
    with start_s3_server(tmp_path / "s3") as s3:
        server = start_server(
            tmp_path / "server", timeout=90,
            extra=["--storage", f"s3://{s3.bucket}/ready", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"],
            env={"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key},
        )
        try:
            assert status_of(server.endpoint + "/readyz") == 200
            s3.stop(keep_workdir=True)
            assert becomes(server.endpoint + "/readyz", 503, 60)
            assert status_of(server.endpoint + "/healthz") == 200  # the process still serves
            s3.start_again(timeout=60)
            assert becomes(server.endpoint + "/readyz", 200, 60)
        finally:
            server.stop()


DASHBOARD = Path(__file__).parents[2] / "deploy" / "monitoring" / "grafana-dashboard.json"


def test_version_commits_and_map_requests_are_counted_and_the_dashboard_plots_only_exported_metrics(
    two_workers: Server,
) -> None:
    server = two_workers
    domain = "/home/test_user1/dashboard.h5"
    home(requests.put, server.endpoint)
    assert requests.put(f"{server.endpoint}/?domain={domain}", headers=basic(*USER), timeout=30).status_code == 201
    before = settled(server)  # the requests above counted before the baseline
    r = requests.post(f"{server.endpoint}/versions?domain={domain}", json={"message": "one"}, headers=basic(*USER), timeout=30)
    assert r.status_code == 201, r.text
    r = requests.post(
        f"{server.endpoint}/maps?domain={domain}", json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE"},
        headers=basic(*USER), timeout=30,
    )
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 30
    while True:  # other workers write their figures once a second
        after = scrape(server)
        commits = value(after, "h5lake_version_operations_total", op="commit") - value(
            before, "h5lake_version_operations_total", op="commit"
        )
        maps = value(after, "h5lake_map_operations_total", method="POST", route="/maps") - value(
            before, "h5lake_map_operations_total", method="POST", route="/maps"
        )
        if (commits, maps) == (1, 1) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert (commits, maps) == (1, 1)

    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    exprs = []
    for p in panels:
        assert p["datasource"]["uid"] == "${datasource}" and p["targets"], p["title"]
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"]), p["title"]
        exprs += [t["expr"] for t in p["targets"]]
    titles = " ".join(p["title"].lower() for p in panels)
    assert "garbage collection" in titles and "version commits" in titles
    used = {name for expr in exprs for name in re.findall(r"h5lake_[a-z_]+", expr)}
    used |= set(re.findall(r"h5lake_[a-z_]+", json.dumps(dashboard["templating"])))
    exported = {name for name, _ in after}  # sample names: _total, _bucket, ... as queried
    assert {"h5lake_version_operations_total", "h5lake_gc_reclaimed_bytes_total"} <= used
    assert used <= exported, used - exported


def test_the_text_access_log_names_the_request_without_secrets(tmp_path: Path) -> None:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    keep = Keep()
    logging.getLogger("h5lake.access").addHandler(keep)
    try:
        passwd = write_passwd(tmp_path / "passwd")
        app = create_app(Settings(data=tmp_path / "data", passwd=passwd, access_log="text"))
        with TestClient(app) as c:
            c.get(f"/?domain=/home/x.h5&api_key={API_KEY_SECRET}&password=pw-in-url", headers={**basic(*USER), "X-Request-Id": "text-1"})
            c.get("/about", headers={"Authorization": "Bearer not-a-valid-token-abc", "X-Request-Id": "text-2"})
    finally:
        logging.getLogger("h5lake.access").removeHandler(keep)
    first = next(line for line in lines if " text-1 " in line)
    assert re.fullmatch(
        r"\S+Z text-1 test_user1 \"GET /\?domain=/home/x\.h5&api_key=\*\*\*&password=\*\*\*\" 404 0 \d+ [\d.]+ms worker=\d+",
        first,
    ), first
    second = next(line for line in lines if " text-2 " in line)
    assert " - \"GET /about\" 401 " in second  # refused credentials: no user
    for secret in (API_KEY_SECRET, "pw-in-url", USERS["test_user1"], "not-a-valid-token-abc"):
        assert not any(secret in line for line in lines)


def test_start_up_removes_the_metrics_folders_of_servers_gone(tmp_path: Path) -> None:
    parent = Path(tempfile.gettempdir()) / f"h5lake-metrics-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = parent / str(gone.pid)  # a server ended by a signal leaves its folder behind
    stale.mkdir(exist_ok=True)
    (stale / "counter_1.db").write_bytes(b"x")
    server = start_server(tmp_path, timeout=90)
    try:
        assert not stale.exists()
        assert (parent / str(server.process.pid)).is_dir()
    finally:
        server.stop()


# --- garbage collection, run outside the server, in /metrics ---------------------------------


def test_metrics_report_what_gc_runs_reclaimed(tmp_path: Path) -> None:
    data = tmp_path / "data"

    async def unreferenced(body: bytes) -> None:  # a committed chunk no version references
        store = LocalStore(data)
        try:
            await store.put(blob_key(hashlib.sha256(body).hexdigest()), body)
        finally:
            await store.close()

    def gc(*extra: str) -> dict[str, int]:
        done = subprocess.run(
            [sys.executable, "-m", "h5lake.cli.command", "gc", "--data", str(data), "--grace", "0", "--json", *extra],
            check=True, capture_output=True, text=True, timeout=120,
        )
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    asyncio.run(unreferenced(b"a" * 1000))
    asyncio.run(unreferenced(b"b" * 234))
    started = time.time()
    assert gc("--dry-run")["bytes_deleted"] == 1234  # counted, not deleted: not recorded
    first = gc()
    assert (first["blobs_deleted"], first["bytes_deleted"]) == (2, 1234)
    asyncio.run(unreferenced(b"c" * 10))
    assert gc()["bytes_deleted"] == 10

    app = create_app(Settings(data=data, passwd=write_passwd(tmp_path / "passwd"), admin=("admin",)))
    with TestClient(app) as c:
        r = c.get("/metrics", headers=basic(*ADMIN))
    assert r.status_code == 200
    samples = {s.name: s.value for f in text_string_to_metric_families(r.text) for s in f.samples if not s.labels}
    assert samples["h5lake_gc_runs_total"] == 2
    assert samples["h5lake_gc_reclaimed_objects_total"] == 3
    assert samples["h5lake_gc_reclaimed_bytes_total"] == 1244
    assert samples["h5lake_gc_last_run_reclaimed_bytes"] == 10
    assert started <= samples["h5lake_gc_last_run_timestamp_seconds"] <= time.time()
    assert samples["h5lake_gc_last_run_duration_seconds"] >= 0


# --- storage operations counted (api/metering.metered) -----------------------------------------


def test_metered_gets_count_answers_at_once_and_keep_a_subclass_get(tmp_path: Path) -> None:
    from h5lake.api import metering as metrics

    class Counting(LocalStore):
        calls = 0

        async def get(self, key: str) -> Any:
            Counting.calls += 1
            return await super().get(key)

    async def run() -> None:
        plain, sub = LocalStore(tmp_path / "a"), Counting(tmp_path / "b")
        try:
            for store in (plain, sub):
                await store.put("k/one", b"x" * 100)
                metrics.metered(store)
            metrics.STORE.take()
            took = []
            for store in (plain, sub):
                for _ in range(3):
                    blob = await store.get("k/one")  # a small object read lately: answered at once
                    assert blob is not None and blob.data == b"x" * 100
                    assert await store.get("k/none") is None
                took.append(metrics.STORE.take()["get"])
            for counted in took:
                assert (counted.ok, counted.missing, counted.bytes, sum(counted.buckets)) == (3, 3, 300, 6)
            # answered at once: in the first bucket, the clock not read; the subclass's get is timed
            assert took[0].buckets[0] == 6 and took[0].seconds == 0.0 and took[1].seconds > 0.0
            assert Counting.calls == 6  # the subclass's own get still runs
        finally:
            await plain.close()
            await sub.close()

    asyncio.run(run())


def test_a_servers_metered_store_keeps_its_operations_on_its_class(tmp_path: Path) -> None:
    """The store a server opens with metrics is made as a counting subclass of its class: no
    operation is set on the instance (which took Python's attribute caches off every attribute
    of the store), and gets, puts and heads are counted with their bytes and outcomes."""
    from h5lake.api import metering as metrics
    from h5lake.storage.configured import open_store

    async def run() -> None:
        store = open_store(Settings(data=tmp_path / "data"), metrics.metered_class)
        try:
            assert isinstance(store, LocalStore) and type(store).__name__ == "LocalStore"
            assert not set(vars(store)) & {"get", "put", "head", "delete", "put_hashed"}
            assert metrics.metered(store) is store
            metrics.STORE.take()
            await store.put("k/one", b"y" * 40)
            assert (await store.get("k/one")).data == b"y" * 40  # type: ignore[union-attr]
            assert await store.head("k/none") is None
            counted = metrics.STORE.take()
            assert (counted["put"].ok, counted["put"].bytes, sum(counted["put"].buckets)) == (1, 40, 1)
            assert (counted["get"].ok, counted["get"].bytes) == (1, 40)
            assert counted["head"].missing == 1
        finally:
            await store.close()

    asyncio.run(run())


def test_start_up_makes_the_usual_series_and_a_scrape_shows_only_those_counted(tmp_path: Path) -> None:
    """A worker makes at start-up the prometheus-client values of the usual traffic (a route's
    successes and duration, storage operations), so the flush makes none while requests wait;
    those still at zero are not shown."""
    from h5lake.api import metrics

    metrics._CHILDREN.clear()  # the values stay registered; only the cache of them is emptied
    app = create_app(Settings(data=tmp_path / "data", passwd=write_passwd(tmp_path / "passwd"), admin=("admin",)))
    attributes = "/{collection}/{id}/attributes/{name:path}"
    with TestClient(app) as c:
        usual = {
            ("requests", ("GET", "/groups/{id}", "200")), ("duration", ("GET", "/groups/{id}")),
            ("requests", ("PUT", attributes, "201")), ("duration", ("PUT", attributes)),
            ("storage_ops", ("get", "ok")), ("storage_duration", ("put",)), ("storage_bytes", ("written",)),
        }
        assert usual <= set(metrics._CHILDREN)
        home(c.put)
        domain = "/home/test_user1/made.h5"
        assert c.put(f"/?domain={domain}", headers=basic(*USER)).status_code == 201
        root = c.get(f"/?domain={domain}", headers=basic(*USER)).json()["root"]
        metrics.flush(metrics.tally(), app.service)  # type: ignore[attr-defined]
        made = set(metrics._CHILDREN)
        assert c.get(f"/groups/{root}?domain={domain}", headers=basic(*USER)).status_code == 200
        r = c.put(
            f"/groups/{root}/attributes/a?domain={domain}", headers=basic(*USER),
            json={"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 1},
        )
        assert r.status_code == 201, r.text
        metrics.flush(metrics.tally(), app.service)  # type: ignore[attr-defined]
        assert set(metrics._CHILDREN) == made  # nothing made while counting them
        r = c.get("/metrics", headers=basic(*ADMIN))
    assert r.status_code == 200
    shown = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text) for s in family.samples
    }
    assert shown[("h5lake_http_requests_total", (("method", "GET"), ("route", "/groups/{id}"), ("status", "200")))] >= 1
    for (name, _), v in shown.items():
        if name in ("h5lake_http_requests_total", "h5lake_storage_operations_total", "h5lake_http_request_duration_seconds_count"):
            assert v > 0, name
    assert not any(dict(labels).get("route") == "/datasets/{id}/shape" for _, labels in shown)  # made, never counted
