"""A seeded, randomized driver of concurrent writers (and, optionally, SIGKILLs) against several
``h5lake serve`` processes sharing one store; checks afterwards that every acknowledged write
reads back, nothing refused or never-acknowledged shows half-done, and the catalogs converge.

    PYTHONPATH=src:. python dev/race_drive.py --seed 1 --seconds 60 [--s3] [--kill-every 3] [--workers2]

Not a test (it runs for as long as asked); the regression tests it led to are in
tests/scale/test_intents_under_races.py (docs/storage.md, "Crashes and races").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import requests
from tests.conftest import Backing, Client, LocalRaw, S3Raw
from tests.support.procgroup import worker_pids
from tests.support.s3server import start_s3_server

OCTET = {"Content-Type": "application/octet-stream"}
ROWS0, COLS, CH = 64, 64, 8
ENV = {"H5LAKE_CATALOG_STALE_AFTER": "2", "H5LAKE_CATALOG_RECOVER_EVERY": "0.5",
       "H5LAKE_COMPACT_MAX_BYTES": "16384"}  # the small dataset moves to chunk objects past 64 rows


class World:
    """What the clients were told: per cell / name, the values that may be there."""

    def __init__(self, threads: int) -> None:
        self.lock = threading.Lock()
        self.cells: dict[tuple[str, int, int], set[int]] = {}  # (dataset, row, col) -> possible
        self.cell_sure: dict[tuple[str, int, int], int] = {}  # last acknowledged value
        self.rows = {"d": ROWS0, "s": 4}
        self.attrs: dict[str, set[int]] = defaultdict(set)
        self.attrs_acked: dict[str, int] = {}
        self.links: dict[str, str] = {}  # name -> "yes" | "no" | "maybe"
        self.keys: dict[int, set[float]] = defaultdict(set)
        self.keys_acked: dict[int, float] = {}
        self.problems: list[str] = []
        self.codes: dict[int, int] = defaultdict(int)


def drive(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="h5lake-race-"))
    s3 = start_s3_server(work / "s3") if args.s3 else None
    backing = Backing("s3" if s3 else "local", work / "data", s3, f"race-{uuid.uuid4().hex[:8]}")
    servers: list[Any] = []
    ports: list[int] = []
    try:
        for i in range(args.servers):
            extra = ["--workers", "2"] if args.workers2 and i == 0 else []
            srv = backing.start(work / f"srv{i}", extra, env=ENV)
            servers.append(srv)
            ports.append(int(srv.endpoint.rsplit(":", 1)[1]))
        eps = [s.endpoint for s in servers]
        home = Client(eps[0], "test_user1", "/home/test_user1")
        home.put("/", json={"folder": True})
        dom = f"/home/test_user1/race-{args.seed}-{uuid.uuid4().hex[:6]}.h5"
        c0 = Client(eps[0], "test_user1", dom)
        assert c0.put("/").status_code == 201
        root = c0.get("/").json()["root"]
        ids = {}
        for name, rows, chunks in (("d", ROWS0, [CH, CH]), ("s", 4, [4, COLS])):
            body = {"type": "H5T_STD_I32LE", "shape": [rows, COLS], "maxdims": [0, COLS],
                    "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": chunks}},
                    "link": {"id": root, "name": name}}
            r = c0.post("/datasets", json=body)
            assert r.status_code == 201, r.text
            ids[name] = r.json()["id"]
        r = c0.post("/maps", json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE",
                                   "creationProperties": {"bucketBytes": 4096}})
        assert r.status_code == 201, r.text
        map_id = r.json()["id"]
        world = World(args.threads)
        for name in ids:
            for row in range(world.rows[name]):
                for col in range(COLS):
                    world.cells[(name, row, col)] = {0}
                    world.cell_sure[(name, row, col)] = 0
        stop = threading.Event()
        down: set[int] = set()
        counter = iter(range(1, 10**9))
        count_lock = threading.Lock()

        def next_value() -> int:
            with count_lock:
                return next(counter)

        def worker(w: int) -> None:
            r = random.Random(args.seed * 1000 + w)
            clients = [Client(ep, "test_user1", dom) for ep in eps]
            n = 0
            while not stop.is_set():
                n += 1
                c = r.choice(clients)
                op = r.choices(["cells", "extend", "attr", "link", "key", "commit"],
                               [5, 1, 2, 2, 2, 0.2 if args.commits else 0])[0]
                try:
                    one(w, r, c, op, n)
                except requests.RequestException:
                    pass
                except (AssertionError, KeyError, ValueError, TypeError) as exc:  # a reply not as expected
                    with world.lock:
                        world.problems.append(f"worker {w}: {exc!r}")

        def one(w: int, r: random.Random, c: Client, op: str, n: int) -> None:
            if op == "cells":
                name = r.choice(["d", "d", "s"])
                with world.lock:
                    rows = world.rows[name]
                lo = r.randrange(rows)
                hi = min(rows, lo + r.randint(1, 12))
                cols = list(range(w, COLS, args.threads))
                v = next_value()
                data = np.full((hi - lo, len(cols)), v, "<i4").tobytes()
                sel = f"[{lo}:{hi},{w}:{COLS}:{args.threads}]"
                with world.lock:
                    for row in range(lo, hi):
                        for col in cols:
                            world.cells[(name, row, col)].add(v)
                try:
                    got = c.put(f"/datasets/{ids[name]}/value", params={"select": sel}, data=data, headers=OCTET)
                except requests.RequestException:
                    return
                code(got)
                if got.status_code == 200:
                    with world.lock:
                        for row in range(lo, hi):
                            for col in cols:
                                # this thread owns these columns: its writes are serial
                                world.cells[(name, row, col)] = {v}
                                world.cell_sure[(name, row, col)] = v
            elif op == "extend":
                name = r.choice(["d", "s"])
                by = r.randint(1, 9)
                got = c.put(f"/datasets/{ids[name]}/shape", json={"extend": by, "extend_dim": 0})
                code(got)
                if got.status_code in (200, 201):
                    shape = c.get(f"/datasets/{ids[name]}/shape").json()["shape"]["dims"]
                    with world.lock:
                        for row in range(world.rows[name], shape[0]):
                            for col in range(COLS):
                                world.cells.setdefault((name, row, col), {0})
                                world.cell_sure.setdefault((name, row, col), 0)
                        world.rows[name] = max(world.rows[name], shape[0])
            elif op == "attr":
                name = f"s{r.randrange(3)}" if r.random() < 0.5 else f"a{w}-{n}"
                v = next_value()
                with world.lock:
                    world.attrs[name].add(v)
                got = c.put(f"/groups/{root}/attributes/{name}", params={"replace": 1},
                            json={"type": "H5T_STD_I32LE", "shape": [], "value": v})
                code(got)
                if got.status_code in (200, 201):
                    with world.lock:
                        world.attrs_acked[name] = v
            elif op == "link":
                mine = [k for k, s in world.links.items() if k.startswith(f"l{w}-") and s == "yes"]
                if mine and r.random() < 0.4:
                    name = r.choice(mine)
                    with world.lock:
                        world.links[name] = "maybe"
                    got = c.delete(f"/groups/{root}/links/{name}")
                    code(got)
                    if got.status_code == 200:
                        with world.lock:
                            world.links[name] = "no"
                else:
                    name = f"l{w}-{n}"
                    with world.lock:
                        world.links[name] = "maybe-new"
                    got = c.put(f"/groups/{root}/links/{name}", json={"h5path": f"/x/{name}"})
                    code(got)
                    if got.status_code == 201:
                        with world.lock:
                            world.links[name] = "yes"
            elif op == "key":
                k = w * 1_000_000 + r.randrange(200)
                v = float(next_value())
                with world.lock:
                    world.keys[k].add(v)
                got = c.put(f"/maps/{map_id}/key/{k}", json={"value": v})
                code(got)
                if got.status_code in (200, 201):
                    with world.lock:
                        world.keys[k] = {v}
                        world.keys_acked[k] = v
            elif op == "commit":
                got = c.post("/versions", json={"message": f"w{w} n{n}"})
                if got.status_code not in (201, 409):
                    code(got)

        def code(got: requests.Response) -> None:
            with world.lock:
                world.codes[got.status_code] += 1
                if got.status_code >= 500:
                    world.problems.append(f"{got.status_code} {got.request.method} {got.url}: {got.text[:300]}")

        def killer() -> None:
            kr = random.Random(args.seed + 7)
            while not stop.wait(kr.uniform(0.5, 2) * args.kill_every):
                if args.workers2 and kr.random() < 0.5:  # one worker of the --workers 2 server
                    pids = worker_pids(servers[0].process.pid)
                    if pids:
                        os.kill(kr.choice(pids), signal.SIGKILL)
                    continue
                i = kr.randrange(len(servers))
                srv = servers[i]
                down.add(i)
                srv.stop(signal.SIGKILL)
                time.sleep(kr.uniform(0, 1))
                servers[i] = backing.start(work / f"srv{i}", ["--workers", "2"] if args.workers2 and i == 0 else [],
                                           env=ENV, port=ports[i])
                down.discard(i)

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(args.threads)]
        if args.kill_every:
            threads.append(threading.Thread(target=killer))
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join()
        time.sleep(3.5)  # recovery of the dead processes' intents (stale after 2 s)
        return check(world, eps, dom, root, ids, map_id, backing, rng)
    finally:
        for srv in servers:
            srv.stop(signal.SIGTERM)
        if s3 is not None:
            s3.stop()
        shutil.rmtree(work, ignore_errors=True)


def check(world: World, eps: list[str], dom: str, root: str, ids: dict[str, str], map_id: str,
          backing: Backing, rng: random.Random) -> int:
    problems = list(world.problems)
    for ep in eps:
        c = Client(ep, "test_user1", dom)
        for name, did in ids.items():
            shape = c.get(f"/datasets/{did}/shape").json()["shape"]["dims"]
            if shape[0] < world.rows[name]:
                problems.append(f"{name}: {shape[0]} rows, {world.rows[name]} acknowledged")
            got = c.get(f"/datasets/{did}/value", headers={"Accept": "application/octet-stream"})
            arr = np.frombuffer(got.content, "<i4").reshape(shape)
            bad = 0
            for (n, row, col), possible in world.cells.items():
                if n == name and row < shape[0] and int(arr[row, col]) not in possible:
                    bad += 1
                    if bad <= 5:
                        problems.append(f"{ep} {name}[{row},{col}] = {arr[row, col]}, possible {sorted(possible)[-4:]}")
            if bad:
                problems.append(f"{ep} {name}: {bad} cells wrong")
        attrs = {a["name"]: a["value"] for a in c.get(f"/groups/{root}/attributes", params={"IncludeData": 1}).json()["attributes"]}
        for name, acked in world.attrs_acked.items():
            if name not in attrs:
                problems.append(f"attribute {name} acknowledged ({acked}) and missing")
            elif attrs[name] not in world.attrs[name]:
                problems.append(f"attribute {name} = {attrs[name]}, never sent")
        links = {link["title"] for link in c.get(f"/groups/{root}/links").json()["links"]}
        for name, state in world.links.items():
            if state == "yes" and name not in links:
                problems.append(f"link {name} acknowledged and missing")
            if state == "no" and name in links:
                problems.append(f"link {name} deleted (acknowledged) and present")
        for k, acked in world.keys_acked.items():
            got = c.get(f"/maps/{map_id}/key/{k}")
            if got.status_code != 200 or got.json()["value"] not in world.keys[k]:
                problems.append(f"map key {k}: {got.status_code} {got.text[:80]}, possible {world.keys[k]}")
    raw = LocalRaw(backing.data) if backing.s3 is None else S3Raw(backing.s3, backing.prefix)
    deadline = time.monotonic() + 20
    while True:
        keys = raw.list_keys()
        left = [k for k in keys if k.startswith(".h5lake/pending/")]
        mismatch = []
        for name, did in ids.items():
            stored = {k.split("_", 1)[1] for k in keys if f"-c-{did[2:]}_" in k}
            cat = (raw.read(f"{dom.lstrip('/')}/.{did}.chunks.txt") or b"").decode()
            listed = {line.split()[0] for line in cat.splitlines()}
            if stored != listed:
                mismatch.append(f"{name}: unlisted {sorted(stored - listed)[:5]} extra {sorted(listed - stored)[:5]}")
        if not left and not mismatch or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    problems += [f"intent left {k}" for k in left] + mismatch
    for k in keys:
        if "tmp-" in k.rsplit("/", 1)[-1]:
            problems.append(f"temporary object visible: {k}")
        if k.endswith(".json") and not k.endswith(".blob"):
            data = raw.read(k)
            if data is not None:
                try:
                    json.loads(data)
                except ValueError:
                    problems.append(f"torn document {k}")
    print(json.dumps({"codes": world.codes, "cells": len(world.cells), "attrs": len(world.attrs_acked),
                      "links": len(world.links), "keys": len(world.keys_acked), "rows": world.rows}))
    for p in problems[:40]:
        print("PROBLEM", p)
    print("problems:", len(problems))
    return 1 if problems else 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--threads", type=int, default=6)
    p.add_argument("--servers", type=int, default=2)
    p.add_argument("--s3", action="store_true")
    p.add_argument("--workers2", action="store_true")
    p.add_argument("--kill-every", type=float, default=0)
    p.add_argument("--commits", action="store_true")
    return drive(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
