"""Server CPU with metrics on and off, side by side: two one-worker servers on this machine get
the same requests alternately (so both see the same load from other processes), and the CPU
of each is read from /proc after each round.

    python bench/metrics_paired.py [REQUESTS]      # group GETs per round; attribute PUTs: a sixth

Prints, per round, ms of server CPU per group GET and per durable attribute PUT for each, and
their ratio (docs/performance.md, "Metrics").
"""
import base64
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.procgroup import group_cpu
from tests.support.server import start_server

work = Path(tempfile.mkdtemp())
servers = {m: start_server(work / m, extra=[f"--{m}"], workers=1, timeout=120) for m in ("metrics", "no-metrics")}
auth = "Basic " + base64.b64encode(b"test_user1:test1-pw").decode()
conns, roots = {}, {}
try:
    for m, s in servers.items():
        port = int(s.endpoint.rsplit(":", 1)[1])
        c = http.client.HTTPConnection("127.0.0.1", port)
        conns[m] = c
        def req(method, url, body=None, c=c):
            h = {"Authorization": auth}
            if body is not None:
                h["Content-Type"] = "application/json"
            c.request(method, url, body=body, headers=h)
            r = c.getresponse(); data = r.read(); return r.status, data
        req("PUT", "/?domain=/home/test_user1", json.dumps({"folder": True}))
        req("PUT", "/?domain=/home/test_user1/p.h5")
        roots[m] = (req, json.loads(req("GET", "/?domain=/home/test_user1/p.h5")[1])["root"])
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    for phase in ("group GET", "attribute PUT"):
        for rnd in range(3):
            cpu0 = {m: group_cpu(s.process.pid) for m, s in servers.items()}
            for i in range(n if phase == "group GET" else n // 6):
                for m in (("metrics", "no-metrics") if i % 2 else ("no-metrics", "metrics")):
                    req, root = roots[m]
                    if phase == "group GET":
                        st, _ = req("GET", f"/groups/{root}?domain=/home/test_user1/p.h5")
                        assert st == 200
                    else:
                        st, _ = req("PUT", f"/groups/{root}/attributes/r{rnd}a{i}?domain=/home/test_user1/p.h5",
                                    json.dumps({"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": i}))
                        assert st == 201, st
            time.sleep(1.5)
            cpu1 = {m: group_cpu(s.process.pid) for m, s in servers.items()}
            count = n if phase == "group GET" else n // 6
            on, off = ((cpu1[m] - cpu0[m]) / count * 1e3 for m in ("metrics", "no-metrics"))
            print(f"{phase:14s} round {rnd}: metrics on {on:.4f} ms, off {off:.4f} ms, on/off {on/off:.3f}", flush=True)
finally:
    for s in servers.values():
        s.stop()
