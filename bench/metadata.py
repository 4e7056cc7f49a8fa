"""Metadata benchmark through h5pyd: creating groups and attributes, listing links, GET rates.

    python bench/metadata.py                      # starts its own h5lake on a free port
    python bench/metadata.py --endpoint http://host:5101 --user u --password p

Figures printed:
  * 200 groups with 2 attributes each, created through h5pyd; the time includes flush and close
    (h5pyd buffers everything until then: one POST /groups, one PUT links, one PUT attributes).
  * a group with 1000 links (hard links to 1000 groups): ``list(g.keys())`` and iterating
    ``g.values()`` (which opens every member: one GET each) through a fresh File.
  * single GETs of a group per second: plain ``requests.Session`` GET /groups/<id> for ~5 s, and
    the same through h5pyd (``f[name]`` with the object dropped from h5pyd's cache, so each open
    is one GET; and a fresh ``File`` open plus ``f[name]``, which is 4 requests).

Under each figure a ``cpu:`` line gives the CPU milliseconds per operation of the server (only
when this script started it) and of this client, beside the wall time. When their sum is well
below the wall time, the time goes to waiting: fsync, or a busy machine's scheduler.
"""

from __future__ import annotations

import argparse
import time

import h5pyd
import numpy as np
from common import (
    CpuMeter,
    Target,
    add_target_args,
    cpu_row,
    describe,
    maybe_pause,
    rate_for,
    row,
    target,
    timed,
)

N_GROUPS = 200
N_LINKS = 1000


def create_groups(t: Target, domain: str, n: int) -> tuple[float, float]:
    """Seconds for the whole job (open .. close) and for the flush/close part alone."""
    start = time.perf_counter()
    f = h5pyd.File(domain, "w", **t.h5pyd_opts())
    for i in range(n):
        g = f.create_group(f"g{i:04d}")
        g.attrs["index"] = np.int64(i)
        g.attrs["label"] = f"group number {i}"
    before_close = time.perf_counter()
    f.close()
    end = time.perf_counter()
    return end - start, end - before_close


def check_groups(t: Target, domain: str, n: int) -> None:
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        assert len(f) == n, f"expected {n} groups, found {len(f)}"
        last = f[f"g{n - 1:04d}"]
        assert last.attrs["index"] == n - 1 and last.attrs["label"] == f"group number {n - 1}"


def make_link_group(t: Target, domain: str, n: int) -> None:
    with h5pyd.File(domain, "w", **t.h5pyd_opts()) as f:
        many = f.create_group("many")
        for i in range(n):
            many.create_group(f"m{i:04d}")


def list_links(t: Target, domain: str, n: int) -> None:
    def keys() -> list[str]:
        with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
            return list(f["many"].keys())

    def items() -> int:
        count = 0
        with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
            for obj in f["many"].values():
                count += obj.id.id is not None
        return count

    keys()  # warm up (connection, caches on the server)
    meter = CpuMeter(t.server_pid).start()
    samples = [timed(keys) for _ in range(5)]
    meter.stop()
    best = min(s for s, _ in samples)
    assert len(samples[0][1]) == n
    row(
        f"fresh open + list(g.keys()) of {n} links",
        f"{best * 1000:.1f} ms",
        "best of 5, incl. File open (4 requests)",
    )
    cpu_row(meter, 5, "listing")
    meter = CpuMeter(t.server_pid).start()
    seconds, count = timed(items)
    meter.stop()
    assert count == n
    row(
        f"fresh open + iterate g.values() ({n} objects)",
        f"{seconds:.2f} s",
        f"{n / seconds:.0f} objects/s, one GET each",
    )
    cpu_row(meter, n, "object")


def get_rates(t: Target, domain: str, seconds: float) -> None:
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        gid = f["g0000"].id.id
    s = t.session()
    url = f"{t.endpoint}/groups/{gid}"
    params: dict[str, str | int] = {"domain": domain, "include_attrs": 1, "include_links": 1}

    def plain() -> None:
        r = s.get(url, params=params, timeout=60)
        if r.status_code != 200:
            raise RuntimeError(f"GET {url}: {r.status_code}")

    plain()
    meter = CpuMeter(t.server_pid).start()
    calls, elapsed = rate_for(seconds, plain)
    meter.stop()
    row(
        "requests.Session GET /groups/<id>",
        f"{calls / elapsed:.0f} req/s",
        f"{elapsed / calls * 1000:.2f} ms each",
    )
    cpu_row(meter, calls, "req")

    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        cache = getattr(getattr(f.id, "db", None), "db", None)
        f["g0000"]
        if isinstance(cache, dict) and gid in cache:

            def cold_open() -> None:
                cache.pop(gid, None)
                g = f["g0000"]
                assert g.id.id == gid

            meter = CpuMeter(t.server_pid).start()
            calls, elapsed = rate_for(seconds, cold_open)
            meter.stop()
            row(
                "h5pyd f[name], object not cached (1 GET)",
                f"{calls / elapsed:.0f} opens/s",
                f"{elapsed / calls * 1000:.2f} ms each",
            )
            cpu_row(meter, calls, "open")
        else:
            row(
                "h5pyd f[name], object not cached (1 GET)",
                "n/a",
                "this h5pyd keeps no object cache we can drop",
            )

        def warm_open() -> None:
            f["g0000"]

        calls, elapsed = rate_for(1.0, warm_open)
        row("h5pyd f[name], object cached (no request)", f"{calls / elapsed:.0f} opens/s")

    def fresh_open() -> None:
        with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
            f["g0000"]

    meter = CpuMeter(t.server_pid).start()
    calls, elapsed = rate_for(seconds, fresh_open)
    meter.stop()
    row(
        "h5pyd fresh File + f[name] (4 requests)",
        f"{calls / elapsed:.0f} opens/s",
        f"{elapsed / calls * 1000:.2f} ms each",
    )
    cpu_row(meter, calls, "open")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_target_args(parser)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each rate measurement")
    parser.add_argument("--groups", type=int, default=N_GROUPS)
    parser.add_argument("--links", type=int, default=N_LINKS)
    args = parser.parse_args()
    with target(args) as t:
        describe(t)
        folder = t.new_folder("metadata")
        maybe_pause(args, t)

        print(f"\n## create {args.groups} groups x 2 attributes (h5pyd, one File, incl. flush/close)")
        create_groups(t, folder + "warmup.h5", 10)
        meter = CpuMeter(t.server_pid).start()
        runs = [create_groups(t, folder + f"groups{i}.h5", args.groups) for i in range(3)]
        meter.stop()
        total, flush = min(runs)
        check_groups(t, folder + "groups0.h5", args.groups)
        row(
            "total (open .. close)",
            f"{total * 1000:.0f} ms",
            f"{args.groups / total:.0f} groups/s, best of 3",
        )
        row("of which flush + close", f"{flush * 1000:.0f} ms")
        cpu_row(meter, 3, "run")

        print(f"\n## list a group of {args.links} links")
        make_link_group(t, folder + "links.h5", args.links)
        list_links(t, folder + "links.h5", args.links)

        print(f"\n## single GET of a group, ~{args.seconds:g} s each")
        get_rates(t, folder + "groups0.h5", args.seconds)


if __name__ == "__main__":
    main()
