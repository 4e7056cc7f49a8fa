"""The web view on a big dataset: what opening a 2-D plot costs.

    python bench/view.py                  # a 16384 x 16384 float32 dataset (1 GiB)
    python bench/view.py --rows 4096      # smaller, for a quick look

Makes the dataset (with h5pyd, in row blocks), then sends the request the page sends when the
dataset is opened (``/view/api/preview`` over the whole extent, for a plot about 1000 x 750
pixels), and a zoomed one read at full resolution. Prints bytes transferred, the server's own
time (its ``Server-Timing`` header) and the wall time of each, cold then warm.
Goal (issue 16): the first under 2 MiB and under 1 s of server time.
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
