"""Small datasets through h5pyd: 1,000 datasets of 100 float64 each, opened and read one by one.

    python bench/small_datasets.py                 # starts its own h5lake on a free port
    python bench/small_datasets.py --server-env PYTHONPATH=/tmp/old/src   # another build's server
    python bench/small_datasets.py --endpoint http://host:5101 --user u --password p
    python bench/small_datasets.py --values 8000 --server-arg=--compact-max-bytes=0   # sizes, limit
    python bench/small_datasets.py --s3            # its h5lake on S3 (a SeaweedFS started here)

The datasets are made once (one h5pyd File, ``create_dataset(name, data=...)`` each). Then, in a
fresh ``h5pyd.File``, every dataset is opened (``f[name]``: one GET of the dataset) and read whole
(``d[...]``: one GET of its values), one after the other; the best of ``--rounds`` rounds is
printed, with the CPU the server and this client spent per dataset. A value read of a dataset
whose values are kept in its document (h5lake's compact storage) reads one stored object; a
dataset whose values are in a chunk object reads two (the document, then the chunk).
"""

from __future__ import annotations

import argparse
import contextlib
import time
import uuid

import h5pyd
import numpy as np
from common import CpuMeter, Target, add_target_args, cpu_row, describe, maybe_pause, row, target
from tests.support.s3server import start_s3_server

N_DATASETS = 1000
N_VALUES = 100


def make(t: Target, domain: str, n: int, values: int) -> None:
    with h5pyd.File(domain, "w", **t.h5pyd_opts()) as f:
        for i in range(n):
            f.create_dataset(f"d{i:04d}", data=np.arange(values, dtype="f8") + i)


def read_all(t: Target, domain: str, n: int, values: int) -> float:
    """Seconds to open and read every dataset, one by one, in a fresh File."""
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        names = [f"d{i:04d}" for i in range(n)]
        start = time.perf_counter()
        for i, name in enumerate(names):
            got = f[name][...]
            if got[0] != i or got.shape != (values,):
                raise AssertionError(f"{name} read back wrong values")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--datasets", type=int, default=N_DATASETS)
    parser.add_argument("--values", type=int, default=N_VALUES, help="float64 values per dataset")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--s3", action="store_true", help="run the h5lake it starts on S3 (SeaweedFS started here)")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.s3 and not args.endpoint:
            s3 = start_s3_server()
            stack.callback(s3.stop)
            args.server_arg += ["--storage", f"s3://{s3.bucket}/small-{uuid.uuid4().hex[:8]}",
                                "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"]
            args.server_env += [f"AWS_ACCESS_KEY_ID={s3.access_key_id}", f"AWS_SECRET_ACCESS_KEY={s3.secret_access_key}"]
            print(f"# storage: S3 (SeaweedFS at {s3.endpoint})")
        run(args)


def run(args: argparse.Namespace) -> None:
    with target(args) as t:
        describe(t)
        folder = t.new_folder("small")
        domain = folder + "small.h5"
        start = time.perf_counter()
        make(t, domain, args.datasets, args.values)
        row(f"create {args.datasets} datasets of {args.values} float64", f"{time.perf_counter() - start:.2f} s")
        maybe_pause(args, t)
        read_all(t, domain, min(50, args.datasets), args.values)  # warm up: connection, server caches
        best = None
        meter = CpuMeter(t.server_pid)
        for _ in range(args.rounds):
            meter.start()
            seconds = read_all(t, domain, args.datasets, args.values)
            meter.stop()
            best = seconds if best is None else min(best, seconds)
        assert best is not None
        row(
            f"open + read {args.datasets} datasets, one by one",
            f"{best:.2f} s",
            f"{best / args.datasets * 1000:.2f} ms per dataset (best of {args.rounds})",
        )
        cpu_row(meter, args.datasets * args.rounds, "dataset")


if __name__ == "__main__":
    main()
