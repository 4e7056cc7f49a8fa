"""Server CPU per byte and per request, measured from /proc, with a plain HTTP client.

    python bench/server_cost.py                       # starts its own h5lake (its own process group)
    python bench/server_cost.py --endpoint http://host:5101 --pgid 1234 --user u --password p
    python bench/server_cost.py --compare-metrics     # metrics on and off, side by side

What it does, all through ``http.client`` on one keep-alive connection (a client that costs
little, so the figures are the server's):

* makes a domain with a float32 dataset of 256 MiB, (65536, 1024), in chunks of (256, 1024) =
  1 MiB, uncompressed;
* **write**: PUTs the 256 MiB as binary in 4 requests of 64 MiB (``select=[a:b,:]``);
* **read**: GETs them back as binary in 4 requests of 64 MiB (``--read-passes`` times), checked
  against what was written;
* **group GET**: 500 single ``GET /groups/{root}``;
* **attribute PUT**: 250 ``PUT /groups/{attrs}/attributes/a{i}`` of a scalar int32 (durable; a
  new value of the same 250 names each pass after the first);
* **concurrent attribute PUTs**: 512 PUTs from 1, 8 and 32 connections at once (threads), each
  on a group of its own, as attributes PUTs per second and server CPU per request (group commit).

For each it prints the CPU seconds of the server's whole **process group** (user + system of
every process whose ``pgrp`` is the given one, read from ``/proc/<pid>/stat`` before and after,
so worker processes count too) per MiB or per request, beside the wall time. The server must run
on this machine; when this script starts the server, the group is the one it started.

``--compare-metrics`` starts two servers instead, one with ``--metrics`` and one with
``--no-metrics``, and gives them each case in turn for ``--rounds`` rounds (`compare_metrics`):
the cost of metrics as the ratio of their server CPU, both under the same load of the machine,
as the median of the rounds' ratios with a bootstrap 95% confidence interval. ``--instructions``
counts instead the instructions each server executes (valgrind's callgrind, switched on for the
requests only, read by ``callgrind_control``): about 30 times slower, but independent of the
machine's load, so a few percent can be told apart on a busy shared machine:

    python bench/server_cost.py --compare-metrics --instructions --skip-bulk --gets 150 --attrs 100 --clients '' --rounds 20 --settle 1
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import add_target_args, target
from tests.support.procgroup import group_cpu, group_memory  # on the path through common
from tests.support.server import USERS, launch, start_server, write_passwd  # on the path through common

MIB = 1024 * 1024
SHAPE = (65536, 1024)  # float32: 256 MiB
CHUNK = (256, 1024)  # 1 MiB
ROWS_PER_REQUEST = 16384  # 64 MiB
GOALS = {"write": 1.5, "read": 0.6, "group GET": 0.25, "attribute PUT": 0.8}


class Client:
    """One keep-alive HTTP connection, basic auth, the domain as a query parameter."""

    def __init__(self, endpoint: str, user: str, password: str, domain: str) -> None:
        url = urllib.parse.urlsplit(endpoint)
        self.conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80, timeout=600)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.auth = f"Basic {token}"
        self.domain = domain
        self.endpoint, self.user, self.password = endpoint, user, password

    def call(
        self, method: str, path: str, body: bytes | memoryview | None = None, *, binary: bool = False, **params: str
    ) -> tuple[int, bytes]:
        query = urllib.parse.urlencode({"domain": self.domain, **params})
        headers = {"Authorization": self.auth}
        if binary:
            headers["Accept"] = "application/octet-stream"
            if body is not None:
                headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            headers["Content-Type"] = "application/json"
        if body is not None:
            headers["Content-Length"] = str(len(body))
        try:
            self.conn.request(method, f"{path}?{query}", body=body, headers=headers)
            resp = self.conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):  # an idle keep-alive connection closed: once more
            self.conn.close()
            self.conn.request(method, f"{path}?{query}", body=body, headers=headers)
            resp = self.conn.getresponse()
        data = resp.read()
        return resp.status, data

    def json(self, method: str, path: str, doc: Any = None, **params: str) -> Any:
        body = json.dumps(doc).encode() if doc is not None else None
        status, data = self.call(method, path, body, **params)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {data[:300]!r}")
        return json.loads(data) if data else None


class Meter:
    def __init__(self, pgid: int) -> None:
        self.pgid = pgid

    def measure(self, fn: Callable[[], None], settle: float) -> tuple[float, float]:
        """(server CPU seconds, wall seconds) of ``fn()``. The CPU is read ``settle`` seconds
        after the last reply, so work the requests left behind (h5lake's catalogs are merged
        about 0.5 s after a write) counts too; an idle server spends next to nothing meanwhile."""
        c0, w0 = group_cpu(self.pgid), time.perf_counter()
        fn()
        wall = time.perf_counter() - w0
        time.sleep(settle)
        return group_cpu(self.pgid) - c0, wall


def report(label: str, cpu: float, wall: float, count: float, unit: str) -> None:
    goal = GOALS.get(label)
    per = cpu * 1000 / max(count, 1)
    goal_note = f"  (goal under {goal})" if goal is not None else ""
    print(f"  {label:<14} server CPU {per:7.3f} ms/{unit:<8} wall {wall * 1000 / max(count, 1):7.3f} ms/{unit}{goal_note}")


Case = tuple[str, Callable[[], None], float, str]  # label, one pass, its count, the unit


def cases(client: Client, args: argparse.Namespace) -> list[Case]:
    """The domain, dataset and data of a run, and its cases, each callable again at the same cost:
    the attribute PUTs go to a group of their own, ``attrs``, and a pass after the first replaces
    the values of the same names, so neither that group nor the root group read by the group
    GETs grows from pass to pass."""
    root = client.json("PUT", "/")["root"]
    attrs = client.json("POST", "/groups")["id"]
    client.json("PUT", f"/groups/{root}/links/attrs", {"id": attrs})
    dtype = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
    layout = {"class": "H5D_CHUNKED", "dims": list(CHUNK)}
    dset = client.json(
        "POST", "/datasets", {"type": dtype, "shape": list(SHAPE), "creationProperties": {"layout": layout}}
    )["id"]
    client.json("PUT", f"/groups/{root}/links/data", {"id": dset})
    rng = np.random.default_rng(14)
    data = rng.random((ROWS_PER_REQUEST, SHAPE[1]), dtype=np.float32)
    blocks = [data + np.float32(i) for i in range(SHAPE[0] // ROWS_PER_REQUEST)]
    total_mib = SHAPE[0] * SHAPE[1] * 4 / MIB
    passes = [0]

    def write() -> None:
        for i, block in enumerate(blocks):
            sel = f"[{i * ROWS_PER_REQUEST}:{(i + 1) * ROWS_PER_REQUEST},:]"
            status, reply = client.call("PUT", f"/datasets/{dset}/value", memoryview(block).cast("B"), binary=True, select=sel)
            if status >= 300:
                raise RuntimeError(f"write: {status} {reply[:300]!r}")

    def read() -> None:
        for i, block in enumerate(blocks):
            sel = f"[{i * ROWS_PER_REQUEST}:{(i + 1) * ROWS_PER_REQUEST},:]"
            status, reply = client.call("GET", f"/datasets/{dset}/value", binary=True, select=sel)
            if status != 200 or reply != block.tobytes():
                raise RuntimeError(f"read: {status}, {len(reply)} bytes, not what was written")

    def group_gets() -> None:
        for _ in range(args.gets):
            status, reply = client.call("GET", f"/groups/{root}")
            if status != 200:
                raise RuntimeError(f"group GET: {status} {reply[:300]!r}")

    def attribute_puts() -> None:
        passes[0] += 1
        for i in range(args.attrs):
            doc = json.dumps({"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": passes[0] * args.attrs + i}).encode()
            status, reply = client.call("PUT", f"/groups/{attrs}/attributes/a{i}", doc)
            if status >= 300:
                raise RuntimeError(f"attribute PUT: {status} {reply[:300]!r}")

    found: list[Case] = [
        ("write", write, total_mib, "MiB"),
        ("read", read, total_mib, "MiB"),
        ("group GET", group_gets, args.gets, "request"),
        ("attribute PUT", attribute_puts, args.attrs, "request"),
    ]
    if getattr(args, "idle", 0):  # --compare-metrics: what a server spends without requests (counted with --settle)
        found.append(("idle", lambda: time.sleep(args.idle), args.idle + args.settle, "second"))
    only = set(args.only.split(",")) if getattr(args, "only", None) else None
    return [case for case in found if not (args.skip_bulk and case[3] == "MiB") and (only is None or case[0] in only)]


def run(client: Client, pgid: int, args: argparse.Namespace) -> None:
    meter = Meter(pgid)
    for label, fn, count, unit in cases(client, args):
        if args.pause_each:
            input(f"# {label} next: attach a profiler to process group {pgid}, then press Enter ")
        passes = args.read_passes if label == "read" else 1
        for _ in range(passes):
            cpu, wall = meter.measure(fn, args.settle)
            report(label, cpu, wall, count, unit)
    root = client.json("GET", "/")["root"]
    for clients in args.clients:
        concurrent_puts(client, meter, root, clients, args)


def compare_metrics(args: argparse.Namespace) -> None:
    """Two servers on this machine, ``--metrics`` and ``--no-metrics`` (otherwise alike), given
    the same cases in turn, round after round (which one goes first alternates). Each round's
    server cost is its CPU read from ``/proc/PID/task/TID/schedstat`` (nanoseconds), both servers
    working in turn between two readings, ``--settle`` seconds after the last reply; or, with
    ``--instructions``, the instructions it executed (`Callgrind`), from just before the
    requests to ``--settle`` seconds after them, both servers getting theirs at the same time. Prints per case the
    median cost per unit of each, and the median of the rounds' on/off ratios with its bootstrap
    95% confidence interval and their range."""
    from tests.support.procgroup import group_cpu_precise

    with tempfile.TemporaryDirectory(prefix="h5lake-bench-") as tmp:
        env = dict(item.split("=", 1) for item in args.server_env)
        servers: dict[str, Any] = {}
        meters: dict[str, Callgrind] = {}
        try:
            for mode in ("on", "off"):
                extra = [*args.server_arg, "--metrics" if mode == "on" else "--no-metrics"]
                if args.instructions:
                    meters[mode] = Callgrind(Path(tmp) / mode, args.fold_every, args.keep_dumps)
                    servers[mode] = meters[mode].start(extra, env)
                else:
                    servers[mode] = start_server(Path(tmp) / mode, extra=extra, env=env, workers=None, timeout=120)
            runs = {}
            for mode, server in servers.items():
                domain = f"/home/test_user1/cost-{mode}.h5"
                client = Client(server.endpoint, "test_user1", USERS["test_user1"], domain)
                _home(client)
                runs[mode] = cases(client, args)
            what = "instructions (callgrind)" if args.instructions else "server CPU (schedstat)"
            print(f"# {what}; metrics on: {servers['on'].endpoint}, off: {servers['off'].endpoint}; "
                  f"{args.rounds} rounds; load average {_load()}", flush=True)
            if args.instructions:
                for mode, meter in meters.items():  # code runs once under instrumentation before it counts
                    meter.instrument()
                    for case in runs[mode]:
                        case[1]()
            figures: dict[str, dict[str, list[float]]] = {}
            units = {label: unit for label, _, _, unit in runs["on"]}
            for rnd in range(args.rounds):
                order = ("on", "off") if rnd % 2 == 0 else ("off", "on")
                for i, (label, _, count, _unit) in enumerate(runs["on"]):
                    spent: dict[str, float] = {}
                    if args.instructions:  # both at once: the counts do not depend on the machine's load
                        for mode in order:
                            meters[mode].zero()
                        _at_once([runs[mode][i][1] for mode in order])
                        time.sleep(args.settle)
                        for mode in order:
                            spent[mode] = meters[mode].dump()
                    else:
                        before = {m: group_cpu_precise(servers[m].process.pid) for m in order}
                        for mode in order:
                            runs[mode][i][1]()
                        time.sleep(args.settle)
                        spent = {m: group_cpu_precise(servers[m].process.pid) - before[m] for m in order}
                    per = figures.setdefault(label, {"on": [], "off": []})
                    for mode in order:
                        scale = 1e-3 if args.instructions else 1000.0  # thousands of instructions, or ms
                        per[mode].append(spent[mode] * scale / count)
                print(f"# round {rnd + 1} done, load average {_load()}", flush=True)
            unit_of_cost = "k instructions" if args.instructions else "ms CPU"
            print(f"  {'case':<14} {unit_of_cost + ' per':>22} {'metrics on':>11} {'off':>11}   "
                  f"on/off: all rounds [95% CI]   median of rounds [95% CI] (range of {args.rounds})")
            for name, per in figures.items():
                on, off = np.asarray(per["on"]), np.asarray(per["off"])
                ratios = [a / b for a, b in zip(on, off) if b > 0]
                (low, high), (mlow, mhigh) = ratio_cis(on, off)
                print(
                    f"  {name:<14} {units[name]:>22} {statistics.median(per['on']):11.3f} "
                    f"{statistics.median(per['off']):11.3f}   {on.sum() / off.sum():.4f} [{low:.4f}, {high:.4f}]"
                    f"   {statistics.median(ratios):.4f} [{mlow:.4f}, {mhigh:.4f}] ({min(ratios):.4f}-{max(ratios):.4f})"
                )
        finally:
            for server in servers.values():
                server.stop()


def ratio_cis(on: np.ndarray, off: np.ndarray, level: float = 0.95, resamples: int = 10000) -> list[tuple[float, float]]:
    """Bootstrap confidence intervals (percentile method) of the on/off ratio of the sums over
    all rounds and of the median of the rounds' ratios: the rounds drawn again with replacement,
    ``resamples`` times."""
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(on), (resamples, len(on)))
    pooled = on[picks].sum(axis=1) / off[picks].sum(axis=1)
    medians = np.median(on[picks] / off[picks], axis=1)
    tail = (1 - level) / 2 * 100
    return [(float(a), float(b)) for a, b in (np.percentile(x, [tail, 100 - tail]) for x in (pooled, medians))]


def _at_once(calls: list[Callable[[], None]]) -> None:
    """Run the calls in threads of their own at the same time; the first failure is raised."""
    failed: list[BaseException] = []

    def run(call: Callable[[], None]) -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001  (raised again below, on the main thread)
            failed.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


#: ``h5lake serve`` with the metrics folded every ``argv[1]`` seconds (`api/metrics.FLUSH_SECONDS`).
_SERVE_FOLDING_EVERY = (
    "import sys; import h5lake.api.metrics as m; m.FLUSH_SECONDS = float(sys.argv.pop(1)); "
    "from h5lake.cli.command import main; main()"
)


class Callgrind:
    """One ``h5lake serve --workers 1`` under valgrind's callgrind, its instrumentation off until
    `instrument` (start-up and the set-up requests, with the password hash, run at valgrind's
    plain speed), its counts zeroed (`zero`) and written out (`dump`) by ``callgrind_control``
    between requests. The count is of user-space instructions of every thread of the process
    (the kernel's share, the same with metrics on and off, is not in it). Work done by the wall
    clock runs as often per second as natively while the code runs 40-70 times slower (a group
    GET: ~1.1 million instructions, ~0.2 ms of CPU natively, against ~75 million instructions a
    second under callgrind), so per request it would count tens of times over: the metrics'
    fold, natively once a second, runs every ``fold_every`` seconds here (``--fold-every``,
    30 by default: still more often per request than natively)."""

    def __init__(self, workdir: Path, fold_every: float, keep: Path | None = None) -> None:
        self.workdir = workdir
        self.fold_every = fold_every
        self.keep = keep  # a folder the dumps are copied into (for callgrind_annotate), or None
        self.dumps = 0
        self.pid = 0

    def start(self, extra: list[str], env: dict[str, str]) -> Any:
        self.workdir.mkdir(parents=True, exist_ok=True)
        passwd = write_passwd(self.workdir / "passwd.txt")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
        full_env.update(env)

        def command(port: int) -> list[str]:
            return [
                "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={self.workdir}/cg.out",
                sys.executable, "-c", _SERVE_FOLDING_EVERY, str(self.fold_every), "serve", "--data", str(self.workdir / "data"),
                "--port", str(port), "--passwd", str(passwd), "--admin", "admin", "--workers", "1", *extra,
            ]

        server = launch(self.workdir, command, env=full_env, timeout=900)
        self.pid = server.process.pid
        return server

    def _control(self, *options: str) -> None:
        subprocess.run(["callgrind_control", *options, str(self.pid)], check=True, capture_output=True, timeout=600)

    def instrument(self) -> None:
        self._control("--instr=on")

    def zero(self) -> None:
        self._control("--zero")

    def dump(self) -> float:
        """The instructions since the last `zero`, from the dump this writes."""
        self._control("--dump")
        dumps = sorted(self.workdir.glob("cg.out.*"), key=lambda f: int(f.suffix[1:]))
        text = dumps[-1].read_text(errors="replace")
        found = re.search(r"^totals:\s+(\d+)", text, re.MULTILINE) or re.search(r"^summary:\s+(\d+)", text, re.MULTILINE)
        if found is None:
            raise RuntimeError(f"no totals in {dumps[-1]}")
        if self.keep is not None:
            self.dumps += 1
            self.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(dumps[-1], self.keep / f"{self.workdir.name}.{self.dumps}")
        for old in dumps:
            old.unlink()
        return float(found.group(1))


def _home(client: Client) -> None:
    """The user's home folder (the test server starts without one)."""
    domain, client.domain = client.domain, "/home/test_user1"
    try:
        status, reply = client.call("PUT", "/", json.dumps({"folder": True}).encode())
        if status not in (201, 409):
            raise RuntimeError(f"home folder: {status} {reply[:300]!r}")
    finally:
        client.domain = domain


def concurrent_puts(client: Client, meter: Meter, root: str, clients: int, args: argparse.Namespace) -> None:
    """``clients`` connections at once, each PUTting attributes of a group of its own (durable
    small writes that do not contend for one document): requests per second and server CPU."""
    per_client = max(1, args.concurrent_puts // clients)
    groups = []
    for i in range(clients):
        gid = client.json("POST", "/groups")["id"]
        client.json("PUT", f"/groups/{root}/links/c{clients}-{i}", {"id": gid})
        groups.append(gid)
    conns = [Client(client.endpoint, client.user, client.password, client.domain) for _ in range(clients)]
    errors: list[str] = []

    def one(conn: Client, gid: str) -> None:
        for i in range(per_client):
            doc = json.dumps({"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": i}).encode()
            status, reply = conn.call("PUT", f"/groups/{gid}/attributes/a{i}", doc)
            if status >= 300:
                errors.append(f"{status} {reply[:200]!r}")

    def run_all() -> None:
        threads = [threading.Thread(target=one, args=(c, g)) for c, g in zip(conns, groups)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    cpu, wall = meter.measure(run_all, args.settle)
    if errors:
        raise RuntimeError(f"concurrent attribute PUT: {errors[0]}")
    n = per_client * clients
    print(
        f"  {clients:>3} clients     server CPU {cpu * 1000 / n:7.3f} ms/request  "
        f"{n / wall:7.0f} attribute PUTs/s ({n} in {wall:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--pgid", type=int, help="process group of the server given by --endpoint")
    parser.add_argument("--gets", type=int, default=500, help="group GETs [500]")
    parser.add_argument("--attrs", type=int, default=250, help="attribute PUTs [250]")
    parser.add_argument("--read-passes", type=int, default=2, help="times the 256 MiB are read [2]")
    parser.add_argument("--settle", type=float, default=1.5, help="seconds of background work counted after each case [1.5]")
    parser.add_argument(
        "--clients", type=lambda v: [int(x) for x in v.split(",") if x], default=[1, 8, 32],
        help="concurrent attribute PUT runs with these numbers of clients [1,8,32]; '' for none",
    )
    parser.add_argument("--concurrent-puts", type=int, default=512, help="attribute PUTs of each concurrent run [512]")
    parser.add_argument("--skip-bulk", action="store_true", help="only the group GETs and attribute PUTs")
    parser.add_argument("--pause-each", action="store_true", help="wait for Enter before each case")
    parser.add_argument("--only", help="only these cases, by label, comma-separated (e.g. 'write,group GET')")
    parser.add_argument(
        "--compare-metrics", action="store_true",
        help="start two servers, --metrics and --no-metrics, and give them the cases in turn (side by side)",
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds of --compare-metrics [6]")
    parser.add_argument(
        "--idle", type=float, default=0, help="with --compare-metrics: also a case of this many seconds without requests",
    )
    parser.add_argument(
        "--fold-every", type=float, default=30.0,
        help="with --instructions: seconds between the metrics' folds under callgrind (natively 1) [30]",
    )
    parser.add_argument(
        "--instructions", action="store_true",
        help="with --compare-metrics: count the servers' instructions under valgrind's callgrind instead of CPU time",
    )
    parser.add_argument(
        "--keep-dumps", type=Path,
        help="with --instructions: copy each callgrind dump into this folder (on.N, off.N) for callgrind_annotate",
    )
    args = parser.parse_args()
    if args.compare_metrics:
        if args.endpoint:
            parser.error("--compare-metrics starts its own servers: no --endpoint")
        compare_metrics(args)
        return
    if args.instructions:
        parser.error("--instructions goes with --compare-metrics")
    if args.endpoint and args.pgid is None:
        parser.error("--endpoint needs --pgid (the server's process group, e.g. `ps -o pgid= PID`)")
    with target(args) as t:
        pgid = args.pgid if args.endpoint else os.getpgid(t.server_pid or 0)
        folder = t.new_folder("cost")
        domain = f"{folder}{uuid.uuid4().hex[:8]}.h5"
        print(f"# server {t.endpoint}, process group {pgid}, domain {domain}")
        print(f"# server process group idle: {group_memory(pgid)}")
        client = Client(t.endpoint, t.user, t.password, domain)
        run(client, pgid, args)
        print(f"# server process group now: {group_memory(pgid)}")


if __name__ == "__main__":
    main()
