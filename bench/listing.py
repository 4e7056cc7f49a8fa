"""Server CPU of ``GET /?getobjs=1`` (h5pyd's open), by plain ``requests``, one worker.

    python bench/listing.py                         # this checkout
    python bench/listing.py --checkout /work/main   # another build, to compare

Two domains as bench/side_by_side.py makes them: ``links.h5`` (a group of 1,000 empty groups:
1,002 objects) and ``groups.h5`` (200 groups x 2 attributes: 201 objects). Printed per round:
the server's CPU (its process group, from /proc) and the wall time per listing of the smaller
one alone, then per pair of listings of both in turn (as the driver runs them).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import ROOT, CpuMeter, Target
from metadata import create_groups, make_link_group
from tests.support.server import USERS, start_server

USER = "test_user1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", default=str(ROOT), help="the h5lake to start [this one]")
    parser.add_argument("--count", type=int, default=30, help="listings (or pairs) per round [30]")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tree = Path(args.checkout).resolve()
    with tempfile.TemporaryDirectory(prefix="h5lake-listing-") as tmp:
        server = start_server(Path(tmp) / "s", workers=1, env={"PYTHONPATH": f"{tree}/src:{tree}"})
        try:
            t = Target(server.endpoint, USER, USERS[USER], server.process.pid)
            folder = t.new_folder("listing")
            links, groups = folder + "links.h5", folder + "groups.h5"
            make_link_group(t, links, 1000)
            create_groups(t, groups, 200)
            s = t.session()

            def listed(domain: str, objects: int) -> None:
                q = {"domain": domain, "getobjs": "T", "include_attrs": "T"}
                r = s.get(t.endpoint + "/", params=q, timeout=60)
                assert r.status_code == 200 and len(r.json()["domain_objs"]) == objects, r.text[:200]

            for _ in range(3):
                listed(links, 1002)
                listed(groups, 201)
            print(f"# h5lake of {tree}, one worker; {args.count} per round")
            for rnd in range(args.rounds):
                alone = CpuMeter(server.process.pid).start()
                for _ in range(args.count):
                    listed(groups, 201)
                alone.stop()
                pair = CpuMeter(server.process.pid).start()
                for _ in range(args.count):
                    listed(links, 1002)
                    listed(groups, 201)
                pair.stop()
                per = 1000 / args.count
                print(
                    f"round {rnd + 1}: 201 objects alone: server {alone.server * per:.1f} ms, wall {alone.wall * per:.1f} ms;"
                    f" 1,002 and 201 in turn: server {pair.server * per:.1f} ms, wall {pair.wall * per:.1f} ms per pair",
                    flush=True,
                )
            t.cleanup()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
