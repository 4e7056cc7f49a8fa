"""Small value writes, one chunk each: the write path with its intent (and heartbeat).

    python bench/small_writes.py                                   # starts its own h5lake
    python bench/small_writes.py --server-env PYTHONPATH=/tmp/old/src   # another build's server
    python bench/small_writes.py --writes 2000 --server-arg=--workers=1

Makes a chunked float64 dataset (1024, 1024) in chunks of (16, 1024), then PUTs ``--writes``
binary rows, one at a time on one keep-alive session, each to a row in a different chunk (a
write intent put and deleted each time), for ``--rounds`` rounds; prints the best round's median
and p90 request time and the server's CPU per write.
"""

from __future__ import annotations

import argparse
import time
import uuid

import numpy as np
from common import CpuMeter, add_target_args, cpu_row, median_ms, row, target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--writes", type=int, default=500, help="writes per round [500]")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with target(args) as t:
        s = t.session()
        domain = f"{t.new_folder('small-writes')}{uuid.uuid4().hex[:8]}.h5"
        url = t.endpoint
        r = s.put(url + "/", params={"domain": domain}, timeout=60)
        r.raise_for_status()
        body = {"type": "H5T_IEEE_F64LE", "shape": [1024, 1024],
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [16, 1024]}}}
        r = s.post(url + "/datasets", params={"domain": domain}, json=body, timeout=60)
        r.raise_for_status()
        dset = r.json()["id"]
        row_bytes = np.arange(1024, dtype="<f8").tobytes()
        headers = {"Content-Type": "application/octet-stream"}
        best: tuple[float, list[float], CpuMeter] | None = None
        for _ in range(args.rounds):
            samples: list[float] = []
            meter = CpuMeter(t.server_pid).start()
            for i in range(args.writes):
                row_index = (i * 16) % 1024 + (i // 64) % 16
                start = time.perf_counter()
                r = s.put(f"{url}/datasets/{dset}/value", params={"domain": domain, "select": f"[{row_index},:]"},
                          data=row_bytes, headers=headers, timeout=60)
                samples.append(time.perf_counter() - start)
                if r.status_code != 200:
                    raise RuntimeError(f"write: {r.status_code} {r.text[:200]}")
            meter.stop()
            total = sum(samples)
            if best is None or total < best[0]:
                best = (total, samples, meter)
        assert best is not None
        row(f"{args.writes} one-row writes (best of {args.rounds})", median_ms(best[1]))
        cpu_row(best[2], args.writes, "write")
        t.cleanup()


if __name__ == "__main__":
    main()
