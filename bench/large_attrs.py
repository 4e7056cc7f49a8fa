"""Objects with large attributes (values kept outside the document, docs/storage.md "Large
attributes"): wall and server CPU of a ``GET`` of the object, of one small attribute beside the
large one, and of the large value in binary.

    python bench/large_attrs.py [--endpoint URL --user U --password P] [--mib 50] [--repeat 10]
"""

from __future__ import annotations

import argparse
import time

from bench.common import CpuMeter, add_target_args, row, target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_target_args(ap)
    ap.add_argument("--mib", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    with target(args) as t:
        s = t.session()
        domain = t.new_folder("large-attrs") + "a.h5"
        root = s.put(t.endpoint + "/", params={"domain": domain}, timeout=60).json()["root"]
        p = {"domain": domain}
        n = args.mib * 2**20 // 8
        payload = bytes(range(256)) * (n * 8 // 256)
        started = time.perf_counter()
        r = s.put(f"{t.endpoint}/groups/{root}/attributes/big", timeout=300, data=payload,
                  params={**p, "type": "H5T_IEEE_F64LE", "shape": f"[{n}]"},
                  headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 201, r.text
        row(f"PUT {args.mib} MiB attribute (binary)", f"{time.perf_counter() - started:.2f} s")
        assert s.put(f"{t.endpoint}/groups/{root}/attributes/small", params=p, timeout=60,
                     json={"type": "H5T_STD_I32LE", "value": 1}).status_code == 201
        for what, url, params, headers in (
            ("GET object", f"/groups/{root}", {}, {}),
            ("GET small attribute", f"/groups/{root}/attributes/small", {}, {}),
            ("GET large value, binary", f"/groups/{root}/attributes/big/value", {},
             {"Accept": "application/octet-stream"}),
        ):
            meter = CpuMeter(t.server_pid).start()
            started = time.perf_counter()
            for _ in range(args.repeat):
                r = s.get(t.endpoint + url, params={**p, **params}, headers=headers, timeout=300)
                assert r.status_code == 200, r.text[:200]
            wall = (time.perf_counter() - started) / args.repeat
            meter.stop()
            row(what, f"{wall * 1000:.1f} ms, {len(r.content)} bytes", meter.note(args.repeat, "GET"))


if __name__ == "__main__":
    main()
