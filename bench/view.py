"""The web view on a big dataset: what opening a 2-D plot costs.

    python bench/view.py                  # a 16384 x 16384 float32 dataset (1 GiB)
    python bench/view.py --rows 4096      # smaller, for a quick look
    python bench/view.py --series 10000000  # a 1-D float64 series with two spikes, as a line

Makes the dataset (with h5pyd, in row blocks), then sends the request the page sends when the
dataset is opened (``/view/api/preview`` over the whole extent, for a plot about 1000 x 750
pixels), and a zoomed one read at full resolution. Prints bytes transferred, the server's own
time (its ``Server-Timing`` header) and the wall time of each, cold then warm.
Goal (issue 16): the first under 2 MiB and under 1 s of server time.

With ``--series N``: a float64 series of N points (a sine plus noise) with one spike up and one
down at indexes no stride of the plot's width lands on; opens its line plot (whole extent, as the
page does) and says whether both spikes are in the answer.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_target_args, describe, row, target


def server_ms(headers: dict[str, str]) -> float:
    timing = headers.get("server-timing", "")
    return float(timing.split("dur=")[1]) if "dur=" in timing else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--width", type=int, default=1000, help="plot width in pixels, as the page asks")
    parser.add_argument("--height", type=int, default=750)
    parser.add_argument("--series", type=int, default=0, help="points of a 1-D series to plot instead")
    args = parser.parse_args()
    if args.series:
        series(args)
        return
    import h5pyd

    with target(args) as t:
        describe(t)
        domain = t.new_folder("view") + "big.h5"
        started = time.perf_counter()
        with h5pyd.File(domain, "w", **t.h5pyd_opts()) as f:
            d = f.create_dataset("image", (args.rows, args.cols), dtype="f4")
            block = max(1, (64 << 20) // (4 * args.cols))
            cols = np.arange(args.cols, dtype="f4")
            for r in range(0, args.rows, block):
                n = min(block, args.rows - r)
                rows = np.arange(r, r + n, dtype="f4")[:, None]
                d[r : r + n] = np.sin(rows / 700.0) * np.cos(cols / 500.0) * 100 + rows / 100
            chunks = d.chunks
        size = args.rows * args.cols * 4
        row("dataset", f"{args.rows} x {args.cols} float32, {size / 2**30:.2f} GiB", f"chunks {chunks}, "
            f"written in {time.perf_counter() - started:.0f} s")
        s = t.session()

        def ask(selection: str, label: str) -> None:
            params = {"domain": domain, "path": "/image", "selection": selection,
                      "width": args.width, "height": args.height}
            for attempt in ("cold", "warm"):
                t0 = time.perf_counter()
                r = s.get(t.endpoint + "/view/api/preview", params=params, timeout=600)
                wall = (time.perf_counter() - t0) * 1000
                r.raise_for_status()
                length = int.from_bytes(r.content[:4], "little")
                mode = r.content[4 : 4 + length].decode().split('"mode":"')[1].split('"')[0]
                row(f"{label} ({attempt})", f"{len(r.content) / 2**20:.2f} MiB, server {server_ms(r.headers):.0f} ms",
                    f"wall {wall:.0f} ms, mode {mode}")

        ask(f"0:{args.rows},0:{args.cols}", "open 2-D plot")
        ask(f"{args.rows // 2}:{args.rows // 2 + 500},{args.cols // 2}:{args.cols // 2 + 600}", "zoom to 500 x 600")


def series(args: argparse.Namespace) -> None:
    import h5pyd

    n = args.series
    spikes = {n // 3 + 1: 1e6, 2 * n // 3 + 7: -1e6}
    with target(args) as t:
        describe(t)
        domain = t.new_folder("view") + "series.h5"
        started = time.perf_counter()
        rng = np.random.default_rng(1)
        with h5pyd.File(domain, "w", **t.h5pyd_opts()) as f:
            d = f.create_dataset("series", (n,), dtype="f8")
            block = 1 << 22
            for b in range(0, n, block):
                i = np.arange(b, min(n, b + block))
                values = np.sin(i / 5e4) + rng.normal(scale=0.1, size=i.size)
                for at, v in spikes.items():
                    if b <= at < b + block:
                        values[at - b] = v
                d[b : b + i.size] = values
            chunks = d.chunks
        row("dataset", f"{n} float64, {n * 8 / 2**20:.1f} MiB", f"chunks {chunks}, "
            f"written in {time.perf_counter() - started:.0f} s")
        s = t.session()
        params = {"domain": domain, "path": "/series", "selection": f"0:{n}", "width": args.width}
        for attempt in ("cold", "warm", "warm"):
            t0 = time.perf_counter()
            r = s.get(t.endpoint + "/view/api/preview", params=params, timeout=600)
            wall = (time.perf_counter() - t0) * 1000
            r.raise_for_status()
            length = int.from_bytes(r.content[:4], "little")
            mode = r.content[4 : 4 + length].decode().split('"mode":"')[1].split('"')[0]
            body = r.content[4 + length :]
            y = np.frombuffer(body, "<f8")[len(body) // 16 :]
            kept = all(v in y for v in spikes.values())
            row(f"open line plot ({attempt})", f"{len(r.content) / 1024:.1f} KiB, server {server_ms(r.headers):.0f} ms",
                f"wall {wall:.0f} ms, mode {mode}, spikes {'kept' if kept else 'LOST'}")


if __name__ == "__main__":
    main()
