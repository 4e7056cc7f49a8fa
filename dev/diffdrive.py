"""Differential run: random operations on an h5py file and on an h5pyd file served by a server
of this tree, every result and exception compared (tests/support/differential.py).

    python dev/diffdrive.py --seeds 0-19 --steps 120 [--more 0.15] [--endpoint URL] [--all]

Starts ``h5lake serve`` on a loopback port unless ``--endpoint`` is given, runs each seed on a
fresh domain and a fresh local file, and prints each difference with the operation that made it
(seed and step reproduce it; ``--more`` is the share of operations drawn from the scales,
references, committed types, null spaces, lookups and names of ``differential.op_more``, and
is part of what a seed means). Differences that are h5pyd's own (``known`` below) are counted
apart and shown only with ``--all``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import h5pyd
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support import differential
from tests.support.server import USERS, start_server


def seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--more", type=float, default=0.15)
    ap.add_argument("--endpoint")
    ap.add_argument("--all", action="store_true", help="show the known h5pyd differences too")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="diffdrive-"))
    server = None
    endpoint = args.endpoint
    if endpoint is None:
        server = start_server(work / "server")
        endpoint = server.endpoint
    user = "test_user1"
    requests.put(endpoint + "/", params={"domain": f"/home/{user}"}, json={"folder": True},
                 auth=(user, USERS[user]))
    total = known = steps = 0
    try:
        for seed in seeds(args.seeds):
            domain = f"/home/{user}/diff-{seed}-{uuid.uuid4().hex[:6]}.h5"

            def open_remote(mode: str, domain: str = domain) -> h5pyd.File:
                return h5pyd.File(domain, mode, endpoint=endpoint, username=user, password=USERS[user])

            reached: list[int] = [0]
            diffs = differential.run(seed, args.steps, str(work / f"local-{seed}.h5"), open_remote,
                                     differential.known_difference, reached=reached,
                                     more=args.more)
            steps += reached[0]
            for d in diffs:
                total += 1
                known += bool(d.known)
                if args.all or not d.known:
                    print(d.show(), flush=True)
            print(f"# seed {seed}: {reached[0]} steps, {len(diffs)} differences "
                  f"({sum(bool(d.known) for d in diffs)} known)", flush=True)
    finally:
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"# {steps} steps, {total} differences, {known} known h5pyd ones, {total - known} left")
    return 1 if total - known else 0


if __name__ == "__main__":
    sys.exit(main())
