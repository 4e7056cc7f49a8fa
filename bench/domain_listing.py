"""What a folder listing and a small write cost: ``GET /domains`` of a folder of 200 domains
(plain and ``verbose=1``) and 200 small value writes to one domain, on a fresh local server.

    PYTHONPATH=src:. python bench/domain_listing.py          # this checkout
    PYTHONPATH=/other/src:. python bench/domain_listing.py   # another build, to compare

Each domain holds one dataset of 10 written values. Prints the median wall time of 20 listings
of each kind and of the writes. Results: docs/api.md, "Listings: last change and size".
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import requests
from tests.support.server import USERS, start_server

DOMAINS = 200


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="h5lake-listing-") as tmp:
        server = start_server(Path(tmp))
        try:
            run(server.endpoint)
        finally:
            server.stop()


def run(endpoint: str) -> None:
    s = requests.Session()
    s.auth = ("test_user1", USERS["test_user1"])
    folder = "/home/test_user1/listing"
    s.put(endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, timeout=60)
    s.put(endpoint + "/", params={"domain": folder}, json={"folder": True}, timeout=60).raise_for_status()
    dset = ""
    for i in range(DOMAINS):
        domain = {"domain": f"{folder}/d{i:03d}.h5"}
        s.put(endpoint + "/", params=domain, timeout=60).raise_for_status()
        dset = s.post(endpoint + "/datasets", params=domain, json={"type": "H5T_STD_I32LE", "shape": [10]},
                      timeout=60).json()["id"]
        s.put(f"{endpoint}/datasets/{dset}/value", params=domain, json={"value": list(range(10))},
              timeout=60).raise_for_status()
    time.sleep(2)  # let the catalogs catch up
    for verbose in (0, 1):
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            r = s.get(endpoint + "/domains", params={"domain": folder + "/", "verbose": verbose, "Limit": 1000},
                      timeout=120)
            times.append(time.perf_counter() - t0)
            assert len(r.json()["domains"]) == DOMAINS
        print(f"GET /domains verbose={verbose}, {DOMAINS} domains: {statistics.median(times) * 1000:.1f} ms")
    domain = {"domain": f"{folder}/d{DOMAINS - 1:03d}.h5"}
    times = []
    for i in range(200):
        t0 = time.perf_counter()
        s.put(f"{endpoint}/datasets/{dset}/value", params={**domain, "select": f"[{i % 10}:{i % 10 + 1}]"},
              json={"value": [i]}, timeout=60).raise_for_status()
        times.append(time.perf_counter() - t0)
    print(f"PUT of one value: {statistics.median(times) * 1000:.2f} ms (median of 200)")


if __name__ == "__main__":
    main()
