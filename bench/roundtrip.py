"""``h5lake load`` and ``h5lake export`` of a 1 GiB file: values and many small objects.

    python bench/roundtrip.py                     # starts its own h5lake on a free port
    python bench/roundtrip.py --endpoint http://host:5101 --user u --password p   # any server
    python bench/roundtrip.py --gib 0.25 --workers 16

The file (made once in a temporary directory, or kept with ``--file``): one float32 dataset of
1 GiB in 10,000 chunks of 105 KiB (100 x 100 chunks of 128 x 210, no filters), and 2,000 small
groups with two attributes each. Printed for load and for export: the total time, the values'
MiB/s (over the time spent on values) and the metadata objects/s (groups, datasets, links and
attributes over the time spent on everything else), with client and server CPU beside them.
The export is compared with the source afterwards (values sampled, structure in full).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
from common import CpuMeter, add_target_args, cpu_row, maybe_pause, row, target

from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings

MIB = 1024 * 1024
CHUNK = (128, 210)  # 107,520 bytes of float32
GROUPS = 2000


def make_file(path: Path, gib: float) -> tuple[int, int]:
    """The bench file; returns (value bytes, chunks)."""
    grid = max(1, round(math.sqrt(gib * 1024**3 / (CHUNK[0] * CHUNK[1] * 4))))
    shape = (grid * CHUNK[0], grid * CHUNK[1])
    with h5py.File(path, "w") as f:
        d = f.create_dataset("values", shape=shape, dtype="<f4", chunks=CHUNK)
        rows = np.arange(shape[1], dtype="<f4")
        for i in range(grid):
            block = np.add.outer(np.arange(i * CHUNK[0], (i + 1) * CHUNK[0], dtype="<f4"), rows)
            d[i * CHUNK[0] : (i + 1) * CHUNK[0], :] = block
        top = f.create_group("groups")
        for i in range(GROUPS):
            g = top.create_group(f"g{i:05d}")
            g.attrs["index"] = np.int64(i)
            g.attrs["label"] = f"group number {i}"
    return shape[0] * shape[1] * 4, grid * grid


def check(source: Path, exported: Path) -> None:
    with h5py.File(source, "r") as a, h5py.File(exported, "r") as b:
        da, db = a["values"], b["values"]
        assert da.shape == db.shape and da.chunks == db.chunks, "dataset shape or chunks differ"
        rng = np.random.default_rng(1)
        for _ in range(20):
            i = int(rng.integers(0, da.shape[0] - CHUNK[0]))
            j = int(rng.integers(0, da.shape[1] - CHUNK[1]))
            box = np.s_[i : i + CHUNK[0], j : j + CHUNK[1]]
            assert np.array_equal(da[box], db[box]), f"values differ at {box}"
        assert sorted(a["groups"]) == sorted(b["groups"]), "groups differ"
        last = f"groups/g{GROUPS - 1:05d}"
        assert dict(a[last].attrs) == dict(b[last].attrs), "attributes differ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--gib", type=float, default=1.0, help="size of the dataset (default 1 GiB)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent requests (default 8)")
    parser.add_argument("--file", type=Path, help="keep the bench file here (made if missing)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="h5lake-roundtrip-") as tmp:
        source = args.file or Path(tmp) / "bench.h5"
        if not source.exists():
            started = time.perf_counter()
            nbytes, chunks = make_file(source, args.gib)
            print(f"# made {source}: {nbytes / MIB:.0f} MiB in {chunks} chunks, {GROUPS} groups with 2 attributes each ({time.perf_counter() - started:.1f} s)")
        with target(args) as t:
            maybe_pause(args, t)
            folder = t.new_folder("roundtrip")
            client = RestClient(Settings(t.endpoint, t.user, t.password), folder + "bench.h5", pool_size=args.workers)
            print(f"# {t.endpoint}, {args.workers} workers")

            meter = CpuMeter(t.server_pid).start()
            loaded, _ = load_file(source, client, workers=args.workers)
            meter.stop()
            report("load", loaded.seconds, loaded.metadata_seconds, loaded.value_bytes, loaded.objects)
            cpu_row(meter)

            exported_path = Path(tmp) / "exported.h5"
            meter = CpuMeter(t.server_pid).start()
            exported, _ = export_domain(client, exported_path, workers=args.workers)
            meter.stop()
            report("export", exported.seconds, exported.metadata_seconds, exported.value_bytes, exported.objects)
            cpu_row(meter)
            check(source, exported_path)
            print("# the export matches the source")


def report(what: str, seconds: float, metadata_seconds: float, nbytes: int, objects: int) -> None:
    values_seconds = max(seconds - metadata_seconds, 1e-9)
    row(f"{what}: total", f"{seconds:.1f} s")
    row(f"{what}: values ({nbytes / MIB:.0f} MiB)", f"{nbytes / MIB / values_seconds:.1f} MiB/s", f"{values_seconds:.1f} s")
    row(f"{what}: metadata ({objects} objects)", f"{objects / max(metadata_seconds, 1e-9):.0f} objects/s", f"{metadata_seconds:.1f} s")


if __name__ == "__main__":
    main()
