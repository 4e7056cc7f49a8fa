"""Linked HDF5 files: ingest and read speed, against a full copy and against h5py (the ceiling).

    python bench/linked.py                 # full sizes: 1 GiB gzip file, 2 GiB contiguous file
    python bench/linked.py --scale 0.125   # the same at 1/8 of the size, for a quick look

In a temporary folder it makes

* ``chunked.h5``: float32 (N, 16384) in 256 KiB chunks (256x256), gzip level 1 + shuffle (1 GiB raw);
* ``contig.h5``: float32 (2N, 16384) contiguous (2 GiB);
* ``tiny.h5``: int32 (4,000,000,) in 1,000,000 chunks of 4 elements (``--million`` to change);

starts an h5lake allowed to read that folder, and prints, each with its ratio:

* link ingest of chunked.h5 (metadata + chunk table, ``client/load_link.py`` over REST) vs a full copy
  with ``h5lake load`` (the colleague's loader; ``--no-copy`` skips it);
* through h5pyd vs h5py on the same file: the whole chunked dataset, 200 random 256x256
  hyperslabs, one row of the contiguous dataset;
* link ingest of the 1,000,000-chunk file and one random read from it.

Every h5pyd read is checked against h5py.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import orjson
import requests

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.server import USERS, start_server

from h5lake.client import load_link as link
from h5lake.model.types import type_from_dtype

USER = "test_user1"
COLS = 16384


def make_files(folder: Path, scale: float, million: int) -> dict[str, Path]:
    rows = max(256, int(16384 * scale) // 256 * 256)
    rng = np.random.default_rng(0)
    base = np.sin(np.linspace(0, 40, COLS, dtype=np.float32))
    out = {"chunked": folder / "chunked.h5", "contig": folder / "contig.h5", "tiny": folder / "tiny.h5"}
    with h5py.File(out["chunked"], "w") as f:
        d = f.create_dataset(
            "data",
            (rows, COLS),
            "<f4",
            chunks=(256, 256),
            compression="gzip",
            compression_opts=1,
            shuffle=True,
        )
        for r in range(0, rows, 256):
            block = base[None, :] * np.arange(r, r + 256, dtype=np.float32)[:, None] / rows
            d[r : r + 256] = block + rng.random((256, COLS), dtype=np.float32) * 0.01
    with h5py.File(out["contig"], "w") as f:
        d = f.create_dataset("data", (2 * rows, COLS), "<f4")
        for r in range(0, 2 * rows, 1024):
            d[r : r + 1024] = rng.random((min(1024, 2 * rows - r), COLS), dtype=np.float32)
    with h5py.File(out["tiny"], "w") as f:
        f.create_dataset("data", data=np.arange(4 * million, dtype="<i4"), chunks=(4,))
    return out


class Rest:
    def __init__(self, endpoint: str, domain: str) -> None:
        self.endpoint, self.domain = endpoint, domain
        self.s = requests.Session()
        self.s.auth = (USER, USERS[USER])

    def call(self, method: str, path: str, body: Any = None, **params: str) -> Any:
        headers = {}
        data = None
        if isinstance(body, bytes):
            data, headers["Content-Type"] = body, "application/octet-stream"
        elif body is not None:
            data, headers["Content-Type"] = orjson.dumps(body), "application/json"
        r = self.s.request(
            method,
            self.endpoint + path,
            params={"domain": self.domain, **params},
            data=data,
            headers=headers,
            timeout=3600,
        )
        if r.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")
        return (
            r.json()
            if r.content and r.headers.get("Content-Type", "").startswith("application/json")
            else None
        )


def link_file(rest: Rest, path: Path, name: str = "data") -> str:
    """Link one dataset of ``path`` into ``rest.domain`` (made here), as ``load --link`` would."""
    rest.call("PUT", "/")
    root = rest.call("GET", "/")["root"]
    with h5py.File(path) as f:
        plan = link.plan_link(f[name], str(path))
        assert plan is not None
        table_id = None
        if plan.table is not None:
            t = plan.table
            table_id = rest.call(
                "POST",
                "/datasets",
                {"type": t.type_json, "shape": list(t.shape), "creationProperties": t.creation_properties()},
            )["id"]
            rest.call("PUT", f"/datasets/{table_id}/value", t.body())
        item = {
            "type": type_from_dtype(f[name].dtype),
            "shape": plan.shape,
            "creationProperties": plan.with_table(table_id),
            "link": {"id": root, "name": name},
        }
        rest.call("POST", "/datasets", item)
    return root


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def line(label: str, ours: float, ref: float | None = None, ref_label: str = "h5py") -> None:
    ratio = f"   {ours / ref:6.2f}x {ref_label} ({ref:.3f} s)" if ref else ""
    print(f"{label:<48} {ours:9.3f} s{ratio}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the full sizes (1 GiB / 2 GiB)")
    p.add_argument("--million", type=int, default=1_000_000, help="chunks in tiny.h5")
    p.add_argument("--no-copy", action="store_true", help="skip the full-copy load")
    p.add_argument("--hyperslabs", type=int, default=200)
    args = p.parse_args()
    import h5pyd

    with tempfile.TemporaryDirectory(prefix="h5lake-bench-linked-") as tmp:
        work = Path(tmp)
        src = work / "src"
        src.mkdir()
        t, files = timed(lambda: make_files(src, args.scale, args.million))
        sizes = {k: v.stat().st_size / 2**20 for k, v in files.items()}
        print(
            f"made files in {t:.1f} s: " + ", ".join(f"{k} {s:.0f} MiB" for k, s in sizes.items()), flush=True
        )
        srv = start_server(work / "srv", extra=["--allow-source", str(src)])
        try:
            home = Rest(srv.endpoint, f"/home/{USER}")
            try:
                home.call("PUT", "/", {"folder": True})
            except RuntimeError:
                pass
            opts = {"endpoint": srv.endpoint, "username": USER, "password": USERS[USER]}

            t_link, _ = timed(
                lambda: link_file(
                    Rest(srv.endpoint, f"/home/{USER}/chunked-{uuid.uuid4().hex[:6]}.h5"), files["chunked"]
                )
            )
            dom_chunked = f"/home/{USER}/chunked-link.h5"
            link_file(Rest(srv.endpoint, dom_chunked), files["chunked"])
            dom_contig = f"/home/{USER}/contig-link.h5"
            link_file(Rest(srv.endpoint, dom_contig), files["contig"])
            t_copy = None
            if not args.no_copy:
                try:
                    from h5lake.client.load import load_file
                    from h5lake.client.rest import RestClient, Settings

                    client = RestClient(
                        Settings(srv.endpoint, USER, USERS[USER]), f"/home/{USER}/chunked-copy.h5"
                    )
                    t_copy, _ = timed(lambda: load_file(files["chunked"], client, workers=8))
                except ImportError as exc:
                    print(f"(full copy skipped: {exc})")
            line(
                f"link ingest, chunked ({16384 * 4 * 16384 * args.scale / 2**30:g} GiB raw, gzip)",
                t_link,
                t_copy,
                "full copy",
            )

            with h5py.File(files["chunked"]) as hf, h5pyd.File(dom_chunked, "r", **opts) as rf:
                a, b = hf["data"], rf["data"]
                t_ref, expect = timed(lambda: a[...])
                t_ours, got = timed(lambda: b[...])
                assert np.array_equal(got, expect)
                del got
                line("read whole chunked dataset", t_ours, t_ref)
                rng = np.random.default_rng(1)
                starts = [
                    (int(rng.integers(0, a.shape[0] - 256)), int(rng.integers(0, COLS - 256)))
                    for _ in range(args.hyperslabs)
                ]
                t_ref, ref = timed(lambda: [a[r : r + 256, c : c + 256] for r, c in starts])
                t_ours, ours = timed(lambda: [b[r : r + 256, c : c + 256] for r, c in starts])
                assert all(np.array_equal(x, y) for x, y in zip(ref, ours))
                line(f"{args.hyperslabs} random 256x256 hyperslabs", t_ours, t_ref)
            with h5py.File(files["contig"]) as hf, h5pyd.File(dom_contig, "r", **opts) as rf:
                a, b = hf["data"], rf["data"]
                r = a.shape[0] // 2 + 7
                t_ref, expect = timed(lambda: a[r])
                t_ours, got = timed(lambda: b[r])
                assert np.array_equal(got, expect)
                line("one row of the 2 GiB contiguous dataset", t_ours, t_ref)

            dom_tiny = f"/home/{USER}/tiny-link.h5"
            t_tiny, _ = timed(lambda: link_file(Rest(srv.endpoint, dom_tiny), files["tiny"]))
            line(f"link ingest, {args.million:,} chunks", t_tiny)
            with h5py.File(files["tiny"]) as hf, h5pyd.File(dom_tiny, "r", **opts) as rf:
                i = int(np.random.default_rng(2).integers(0, hf["data"].shape[0] - 100))
                t_ref, expect = timed(lambda: hf["data"][i : i + 100])
                t_ours, got = timed(lambda: rf["data"][i : i + 100])
                assert np.array_equal(got, expect)
                line("read 100 elements (25 chunks) of it", t_ours, t_ref)
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
