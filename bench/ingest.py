"""``h5lake load`` and ``h5lake export`` of metadata-heavy files: objects/s and MiB/s.

    python bench/ingest.py                        # 8,041 objects, its own h5lake on local storage
    python bench/ingest.py --s3                   # the same with the h5lake on S3 (SeaweedFS started here)
    python bench/ingest.py --objects 100000       # the larger file (about 100,000 objects)
    python bench/ingest.py --no-export            # the load only
    python bench/ingest.py --s3 --pages 3         # also the server's side of export alone: its getobjs pages, 3 times
    python bench/ingest.py --hsload               # also h5pyd's ``hsload`` (h5pyd 1.0) into the same server
    python bench/ingest.py --h5py-floor           # only h5py making the same file from memory (export's floor)
    python bench/ingest.py --bulk-mib 256         # also a file of one 256 MiB uncompressed dataset (MiB/s)
    python bench/ingest.py --no-export --bulk-mib 3072 --bulk-file /tmp/bulk3g.h5 --bulk-repeat 2 --workers 16
    python bench/ingest.py --endpoint http://host:5101 --user u --password p   # any server

The file (made in a temporary directory, or kept with ``--file``): the root, G top groups of 100
groups each, one 10-element int32 dataset in each of those groups, and three attributes per
leaf group and its dataset (one on the group, two on the dataset). The default G = 40 gives
4,040 groups, 4,000 datasets, 8,041 objects and 12,000 attributes (issue 30's file).
Printed for load, export (and hsload): wall seconds, objects/s (every object over the whole
time) and the MiB/s of the values, with client and server CPU beside them. The export is then
compared with the source with ``h5diff`` (and hsload's domain with an export of it).

With ``--bulk-mib N`` a second file holds one float64 dataset of N MiB in uncompressed 4 MiB
chunks (the bulk of values): its load (and hsload's) is printed in MiB/s, from the same server.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Self

import h5py
import numpy as np
from common import CpuMeter, add_target_args, cpu_row, maybe_pause, row, target
from tests.support.procgroup import group_cpu
from tests.support.s3server import free_ports, start_s3_server

from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings

MIB = 1024 * 1024
PER_TOP = 100  # groups under each top group


def make_file(path: Path, top: int) -> tuple[int, int]:
    """The bench file; returns (objects, value bytes)."""
    values = np.arange(10, dtype="<i4")
    with h5py.File(path, "w") as f:
        for i in range(top):
            t = f.create_group(f"top{i:04d}")
            for j in range(PER_TOP):
                g = t.create_group(f"g{j:03d}")
                g.attrs["index"] = np.int64(i * PER_TOP + j)
                d = g.create_dataset("values", data=values + j)
                d.attrs["units"] = "counts"
                d.attrs["scale"] = np.float64(0.5 * j)
    return 1 + top + 2 * top * PER_TOP, top * PER_TOP * values.nbytes


def floor(path: Path, top: int) -> None:
    """The bench file made with the h5py calls export makes (anonymous create, then link; one
    write per attribute and dataset), from memory: what export's client cannot go below."""
    from h5py import h5a, h5d, h5f, h5g, h5o, h5p, h5s, h5t

    cpu, wall = time.process_time(), time.perf_counter()
    fcpl = h5p.create(h5p.FILE_CREATE)
    fcpl.set_obj_track_times(True)
    fid = h5f.create(str(path).encode(), h5f.ACC_TRUNC, fcpl=fcpl)
    values = np.arange(10, dtype="<i4")
    ten, scalar = h5s.create_simple((10,)), h5s.create(h5s.SCALAR)
    text = h5t.C_S1.copy()
    text.set_size(h5t.VARIABLE)
    text.set_cset(h5t.CSET_UTF8)
    units = np.array(b"counts", dtype=h5py.string_dtype())
    lcpl = h5p.create(h5p.LINK_CREATE)
    for i in range(top):
        t = h5g.create(fid, None)
        h5o.link(t, fid, f"top{i:04d}".encode(), lcpl=lcpl)
        for j in range(PER_TOP):
            g = h5g.create(fid, None)
            h5a.create(g, b"index", h5t.STD_I64LE, scalar).write(np.array(i * PER_TOP + j, dtype="<i8"))
            h5o.link(g, t, f"g{j:03d}".encode(), lcpl=lcpl)
            d = h5d.create(fid, None, h5t.STD_I32LE, ten)
            h5a.create(d, b"scale", h5t.IEEE_F64LE, scalar).write(np.array(0.5 * j))
            h5a.create(d, b"units", text, scalar).write(units)
            d.write(h5s.ALL, h5s.ALL, values + j)
            h5o.link(d, g, b"values", lcpl=lcpl)
    fid.close()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    objects = 1 + top + 2 * top * PER_TOP
    row(f"h5py floor: {objects} objects", f"{objects / cpu:.0f} objects/s of CPU", f"{cpu:.2f} s CPU, {wall:.2f} s wall, load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--objects", type=int, default=8041, help="about this many objects (default 8,041)")
    parser.add_argument("--workers", type=int, default=8, help="concurrent requests of load and export (default 8)")
    parser.add_argument("--file", type=Path, help="keep the bench file here (made if missing)")
    parser.add_argument("--s3", action="store_true", help="run the h5lake it starts on S3 (SeaweedFS started here)")
    parser.add_argument("--weed-arg", action="append", default=[], metavar="FLAG",
                        help="extra flag of the SeaweedFS (weed mini) started with --s3 (repeatable)")
    parser.add_argument("--hsload", action="store_true", help="also time h5pyd's hsload into the same server")
    parser.add_argument("--no-export", action="store_true", help="time the load only")
    parser.add_argument("--pages", type=int, default=0, metavar="N",
                        help="also read export's getobjs pages alone (no file written) N times, after the load")
    parser.add_argument("--h5py-floor", action="store_true", help="only time h5py's low-level calls making the same file from memory")
    parser.add_argument("--bulk-mib", type=int, default=0, help="also load a file of one uncompressed dataset of this many MiB")
    parser.add_argument("--bulk-file", type=Path, help="keep the bulk file here (made if missing: a file made just before loads slower)")
    parser.add_argument("--bulk-repeat", type=int, default=1, help="load the bulk file this many times (default 1)")
    args = parser.parse_args()
    args.s3_pid = args.s3_metrics = None
    if args.h5py_floor:
        top = max(1, round((args.objects - 1) / (1 + 2 * PER_TOP)))
        with tempfile.TemporaryDirectory(prefix="h5lake-floor-") as tmp:
            for _ in range(3):
                floor(Path(tmp) / "floor.h5", top)
        return
    with contextlib.ExitStack() as stack:
        if args.s3 and not args.endpoint:
            (metrics_port,) = free_ports(1)
            s3 = start_s3_server(extra=[f"-metricsPort={metrics_port}", *args.weed_arg])
            stack.callback(s3.stop)
            args.s3_pid, args.s3_metrics = s3.process.pid, f"http://127.0.0.1:{metrics_port}/metrics"
            args.server_arg += ["--storage", f"s3://{s3.bucket}/ingest-{uuid.uuid4().hex[:8]}",
                                "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"]
            args.server_env += [f"AWS_ACCESS_KEY_ID={s3.access_key_id}", f"AWS_SECRET_ACCESS_KEY={s3.secret_access_key}"]
            print(f"# storage: S3 (SeaweedFS at {s3.endpoint})")
        run(args)


def run(args: argparse.Namespace) -> None:
    top = max(1, round((args.objects - 1) / (1 + 2 * PER_TOP)))
    with tempfile.TemporaryDirectory(prefix="h5lake-ingest-") as tmp:
        source = args.file or Path(tmp) / "ingest.h5"
        if not source.exists():
            started = time.perf_counter()
            make_file(source, top)
            print(f"# made {source} ({time.perf_counter() - started:.1f} s)")
        with h5py.File(source, "r") as f:
            top = len(f)
        objects, nbytes = 1 + top + 2 * top * PER_TOP, top * PER_TOP * 40
        print(f"# {objects} objects ({top + top * PER_TOP} groups, {top * PER_TOP} datasets), {3 * top * PER_TOP} attributes")
        with target(args) as t:
            maybe_pause(args, t)
            folder = t.new_folder("ingest")
            client = RestClient(Settings(t.endpoint, t.user, t.password), folder + "ingest.h5", pool_size=args.workers)
            print(f"# {t.endpoint}, {args.workers} workers")

            with Metered(args, t) as metered:
                meter = CpuMeter(t.server_pid).start()
                load_file(source, client, workers=args.workers)
                meter.stop()
            report("h5lake load", meter.wall, objects, nbytes)
            cpu_per_object(meter, objects)
            metered.print(objects)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"# client peak RSS so far: {peak:.0f} MiB (this process; making the file, when it did, included)")

            for _ in range(args.pages):
                with Metered(args, t) as metered:
                    meter = CpuMeter(t.server_pid).start()
                    listed = read_pages(client)
                    meter.stop()
                report(f"getobjs pages ({listed} listed)", meter.wall, objects, nbytes)
                cpu_per_object(meter, objects)
                metered.print(objects)
            if args.hsload:
                hsload(args, t, folder, source, objects, nbytes, Path(tmp))
            if args.bulk_mib:
                bulk(args, t, folder, Path(tmp))
            if args.no_export:
                return
            exported = Path(tmp) / "exported.h5"
            with Metered(args, t) as metered:
                meter = CpuMeter(t.server_pid).start()
                export_domain(client, exported, workers=args.workers)
                meter.stop()
            report("h5lake export", meter.wall, objects, nbytes)
            cpu_per_object(meter, objects)
            metered.print(objects)
            same(source, exported)
            if args.hsload:
                client = RestClient(Settings(t.endpoint, t.user, t.password), folder + "hsload.h5", pool_size=args.workers)
                exported = Path(tmp) / "hsload-exported.h5"
                export_domain(client, exported, workers=args.workers)
                same(source, exported, "hsload's domain")


class Metered:
    """What one step cost beside ``CpuMeter``'s figures: the S3 server's CPU (when started here)
    and the storage operations and HTTP requests the server counted (``/metrics``, as admin)."""

    def __init__(self, args: argparse.Namespace, t) -> None:  # type: ignore[no-untyped-def]
        self.args, self.t = args, t
        self.weed = 0.0
        self.ops: dict[str, float] = {}

    def _scrape(self) -> dict[str, float]:
        import requests
        from prometheus_client.parser import text_string_to_metric_families

        if self.t.server_pid is None:
            return {}
        from tests.support.server import USERS

        text = requests.get(self.t.endpoint + "/metrics", auth=("admin", USERS["admin"]), timeout=60).text
        if self.args.s3_metrics:
            text += requests.get(self.args.s3_metrics, timeout=60).text
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "h5lake_storage_operations_total":
                    key = f"{sample.labels['op']}"
                elif sample.name == "h5lake_http_requests_total":
                    key = f"HTTP {sample.labels['method']}"
                elif sample.name == "SeaweedFS_s3_request_total":  # HEAD counts as GET
                    key = f"S3 {sample.labels['type']} {sample.labels['code']}"
                else:
                    continue
                out[key] = out.get(key, 0.0) + sample.value
        return out

    def __enter__(self) -> Self:
        self._ops0 = self._scrape()
        self._weed0 = group_cpu(self.args.s3_pid) if self.args.s3_pid else 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.weed = (group_cpu(self.args.s3_pid) if self.args.s3_pid else 0.0) - self._weed0
        after = self._scrape()
        self.ops = {k: v - self._ops0.get(k, 0.0) for k, v in after.items() if v - self._ops0.get(k, 0.0)}

    def print(self, objects: int) -> None:
        if self.ops:
            storage = {k: v for k, v in self.ops.items() if not k.startswith(("HTTP", "S3"))}
            http = {k: v for k, v in self.ops.items() if k.startswith("HTTP")}
            s3 = {k: v for k, v in self.ops.items() if k.startswith("S3")}
            per = ", ".join(f"{k} {v / objects:.3f}" for k, v in sorted(storage.items()))
            print(f"  {'':<52} {'':>18}  storage ops/object: {sum(storage.values()) / objects:.3f} ({per})")
            if s3:
                per = ", ".join(f"{k[3:]} {v / objects:.3f}" for k, v in sorted(s3.items()))
                print(f"  {'':<52} {'':>18}  S3 requests/object (SeaweedFS's count, HEAD as GET): {sum(s3.values()) / objects:.3f} ({per})")
            print(f"  {'':<52} {'':>18}  HTTP requests: {', '.join(f'{k[5:]} {v:.0f}' for k, v in sorted(http.items()))}")
        if self.args.s3_pid:
            print(f"  {'':<52} {'':>18}  S3 server (weed) cpu: {self.weed * 1000 / objects:.2f} ms/object")


def read_pages(client: RestClient) -> int:
    """Export's reading half alone: every page of ``GET /?getobjs=1`` as export asks for them,
    one after the other; returns the objects listed."""
    from h5lake.client.exportfetch import FIRST_PAGE, PAGE

    params: dict[str, object] = {"getobjs": 1, "include_attrs": 1, "include_links": 1, "Limit": FIRST_PAGE, "include_values": 1}
    listed = 0
    while True:
        reply = client.get_json("/", **params)
        listed += len(reply.get("domain_objs") or {})
        if not isinstance(reply.get("nextMarker"), str):
            return listed
        params["Marker"] = reply["nextMarker"]
        params["Limit"] = min(PAGE, 2 * int(params["Limit"]))  # type: ignore[call-overload]


def make_bulk(path: Path, mib: int) -> int:
    """One float64 dataset of ``mib`` MiB in uncompressed chunks of 4 MiB; returns its bytes."""
    rows = mib * MIB // 8 // 1024
    with h5py.File(path, "w") as f:
        d = f.create_dataset("bulk", shape=(rows, 1024), dtype="<f8", chunks=(512, 1024))
        step = 8192
        for start in range(0, rows, step):
            n = min(step, rows - start)
            d[start : start + n] = np.arange(start * 1024, (start + n) * 1024, dtype="<f8").reshape(n, 1024)
    return rows * 1024 * 8


def bulk(args: argparse.Namespace, t, folder: str, tmp: Path) -> None:  # type: ignore[no-untyped-def]
    source = args.bulk_file or tmp / "bulk.h5"
    if args.bulk_file is None or not source.exists():
        make_bulk(source, args.bulk_mib)
    with h5py.File(source, "r") as f:
        nbytes = f["bulk"].nbytes
    for i in range(args.bulk_repeat):
        client = RestClient(Settings(t.endpoint, t.user, t.password), folder + f"bulk{i or ''}.h5", pool_size=args.workers)
        meter = CpuMeter(t.server_pid).start()
        load_file(source, client, workers=args.workers)
        meter.stop()
        row(f"h5lake load: {nbytes / MIB:.0f} MiB uncompressed", f"{nbytes / MIB / meter.wall:.0f} MiB/s",
            f"{meter.wall:.2f} s, load {os.getloadavg()[0]:.1f}")
        cpu_row(meter, nbytes // MIB, "MiB")
    if args.hsload and shutil.which("hsload"):
        env = dict(os.environ, HS_ENDPOINT=t.endpoint, HS_USERNAME=t.user, HS_PASSWORD=t.password)
        meter = CpuMeter(t.server_pid).start()
        subprocess.run([shutil.which("hsload") or "hsload", str(source), folder + "bulk-hsload.h5"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        meter.stop()
        row(f"h5pyd hsload: {nbytes / MIB:.0f} MiB uncompressed", f"{nbytes / MIB / meter.wall:.0f} MiB/s", f"{meter.wall:.2f} s")
        cpu_row(meter, nbytes // MIB, "MiB")
    source.unlink()


def hsload(args: argparse.Namespace, t, folder: str, source: Path, objects: int, nbytes: int, tmp: Path) -> None:  # type: ignore[no-untyped-def]
    exe = shutil.which("hsload")
    if exe is None:
        print("# hsload: not installed")
        return
    env = dict(os.environ, HS_ENDPOINT=t.endpoint, HS_USERNAME=t.user, HS_PASSWORD=t.password)
    domain = folder + "hsload.h5"
    meter = CpuMeter(t.server_pid).start()
    subprocess.run([exe, str(source), domain], env=env, check=True, stdout=subprocess.DEVNULL)
    meter.stop()
    report("h5pyd hsload", meter.wall, objects, nbytes)
    cpu_per_object(meter, objects)


def same(source: Path, exported: Path, what: str = "the export") -> None:
    h5diff = shutil.which("h5diff")
    if h5diff is None:
        print("# h5diff not installed: not compared")
        return
    done = subprocess.run([h5diff, str(source), str(exported)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"# {what} DIFFERS from the source (h5diff):\n{done.stdout[-2000:]}", file=sys.stderr)
        raise SystemExit(1)
    print(f"# {what} matches the source (h5diff)")


def cpu_per_object(meter: CpuMeter, objects: int) -> None:
    """The CPU row, and the same in microseconds an object (the row rounds to 0.1 ms)."""
    cpu_row(meter, objects, "object")
    server = f"server {meter.server * 1e6 / objects:.0f} us, " if meter.server_pid is not None else ""
    print(f"  {'':<52} {'':>18}  cpu: {server}client {meter.client * 1e6 / objects:.0f} us an object")


def report(what: str, seconds: float, objects: int, nbytes: int) -> None:
    row(f"{what}: {objects} objects", f"{objects / seconds:.0f} objects/s", f"{seconds:.2f} s, {nbytes / MIB / seconds:.2f} MiB/s of values")


if __name__ == "__main__":
    main()
