"""The gzip encoder (h5lake.chunks.codecs.deflate: leading noise stored after 4 KiB probes, the
rest libdeflate) against libdeflate alone, on chunks of several kinds of data, in this process.

    python bench/deflate_shapes.py                     # levels 1, 4, 9; best of 5
    python bench/deflate_shapes.py --levels 6 --repeat 9

Each kind is one 1 MiB chunk (4 MiB for "noise4M"), through shuffle when its element size is
above 1 as HDF5's gzip + shuffle would (the probes judge what deflate sees). Printed per kind
and level: CPU ms per chunk (process time, best of ``--repeat``) of libdeflate alone and of our
encoder, their ratio, and the stored size of each as a share of the chunk. A ratio above 1.00
means the probes cost more than they save.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import imagecodecs
import numpy as np

from h5lake.chunks.codecs.deflate import Shuffle, deflate_zlib

MIB = 1024 * 1024


def kinds() -> dict[str, tuple[bytes, int]]:
    """name: (raw chunk, element size)."""
    rng = np.random.default_rng(7)
    n4 = MIB // 4
    x = np.arange(n4) / 500.0
    words = rng.choice(np.array(["the", "of", "and", "a", "to", "in", "is", "was", "data", "value", "sensor", "time"]), 200000)
    text = " ".join(words.tolist()).encode()[:MIB]
    pixels = (1000 + 200 * np.sin(x / 3) + rng.normal(0, 20, n4 * 2)[:n4]).astype("<u2")
    return {
        "floats-f4": ((np.sin(x) + rng.normal(0, 1e-3, n4)).astype("<f4").tobytes(), 4),
        "floats-f8": ((np.sin(x[: n4 // 2]) + rng.normal(0, 1e-3, n4 // 2)).astype("<f8").tobytes(), 8),
        "counter-i4": (np.arange(n4, dtype="<i4").tobytes(), 4),
        "small-i8": (rng.integers(0, 1000, MIB // 8, dtype="<i8").tobytes(), 8),
        "random-i4": (rng.integers(-(2**31), 2**31 - 1, n4, dtype="<i4").tobytes(), 4),
        "sensor-u2": (np.tile(pixels, 2)[: MIB // 2].tobytes(), 2),
        "text-u1": (text, 1),
        "zlib-u1": (imagecodecs.zlib_encode(rng.integers(0, 40, 4 * MIB, dtype=np.uint8).tobytes(), 9)[:MIB], 1),
        "noise4M-u1": (rng.bytes(4 * MIB), 1),
        "noise-then-text": (rng.bytes(MIB // 2) + text[: MIB // 2], 1),
        "text-then-noise": (text[: MIB // 2] + rng.bytes(MIB // 2), 1),
    }


def best(fn: Callable[..., bytes], args: tuple[object, ...], repeat: int) -> tuple[float, int]:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        out = fn(*args)
        times.append(time.process_time() - t)
    return min(times) * 1000, len(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,4,9")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"# CPU ms per chunk, best of {args.repeat}; size as % of the chunk")
    print(f"{'kind':18} lvl  libdeflate   ours   ratio   size lib/ours")
    for name, (raw, itemsize) in kinds().items():
        data = bytes(Shuffle(itemsize).encode(raw)) if itemsize > 1 else raw
        plane = len(data) // itemsize  # as Deflate.parse sets it
        for level in (int(v) for v in args.levels.split(",")):
            lib_ms, lib_size = best(imagecodecs.deflate_encode, (data, level), args.repeat)
            our_ms, our_size = best(deflate_zlib, (data, level, plane), args.repeat)
            print(f"{name:18} {level:3}  {lib_ms:9.1f} {our_ms:7.1f}  {our_ms / lib_ms:5.2f}"
                  f"   {100 * lib_size / len(raw):5.1f}/{100 * our_size / len(raw):5.1f}")


if __name__ == "__main__":
    main()
