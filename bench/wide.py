"""How long another client waits while one request works on a very wide object.

Starts its own ``h5lake serve`` (one worker, local store), builds each wide object (a group of
many links, many attributes, a dataset of many written chunks, a domain of many objects, a
folder of many domains) and, while one client makes the big request, a second client asks
``/about`` every 20 ms: the figures are that client's waits (median and max, seconds) and the
big request's own time. ``--only NAME`` runs one case (names as printed); ``--links N`` sets the
width of the wide group.

    python bench/wide.py [--links 200000] [--only links --case get-group --repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import h5pyd
import numpy as np
import requests

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.server import start_server

AUTH = ("admin", "admin-pw")
HOME = "/home/admin"


class Watch:
    """A second client, in a process of its own (so that this one's parsing of large replies
    does not hold it), asking ``/about`` every 20 ms; its waits in seconds."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.waits: list[float] = []
        self._stop = multiprocessing.Event()
        self._out, self._in = multiprocessing.Pipe(duplex=False)
        self._proc = multiprocessing.Process(target=_ask, args=(endpoint, self._stop, self._in), daemon=True)

    def __enter__(self) -> Self:
        self._proc.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.05)
        self._stop.set()
        self.waits = self._out.recv()
        self._proc.join()


def _ask(endpoint: str, stop: Any, out: Any) -> None:
    waits = []
    with requests.Session() as s:
        s.get(endpoint + "/about", timeout=60)
        while not stop.is_set():
            t = time.monotonic()
            s.get(endpoint + "/about", timeout=60)
            waits.append(time.monotonic() - t)
            stop.wait(0.02)
    out.send(waits)


class Client:
    def __init__(self, endpoint: str) -> None:
        self.ep = endpoint
        self.s = requests.Session()
        self.s.auth = AUTH

    def call(self, method: str, path: str, domain: str | None, **kw: object) -> requests.Response:
        params = dict(kw.pop("params", {}))  # type: ignore[call-overload]
        if domain is not None:
            params["domain"] = domain
        r = self.s.request(method, self.ep + path, params=params, timeout=600, **kw)  # type: ignore[arg-type]
        assert r.status_code < 300, (method, path, r.status_code, r.text[:300])
        return r


RESULTS: list[tuple[str, float, float, float, int]] = []


@contextmanager
def measured(ep: str, name: str) -> Iterator[None]:
    with Watch(ep) as w:
        t = time.monotonic()
        yield
        took = time.monotonic() - t
    RESULTS.append((name, took, statistics.median(w.waits), max(w.waits), len(w.waits)))
    print(f"{name:38s} took {took:7.2f} s   others waited median {statistics.median(w.waits):.3f} "
          f"max {max(w.waits):.3f} s ({len(w.waits)} asks)", flush=True)


def wide_group(c: Client, ep: str, n: int, only: set[str] | None, repeat: int) -> None:
    dom = f"{HOME}/wide.h5"
    root = c.call("PUT", "/", dom).json()["root"]
    gid = c.call("POST", "/groups", dom, json={"link": {"id": root, "name": "g"}}).json()["id"]
    batch = 20_000
    with measured(ep, f"put-links ({n} in batches of {batch})"):
        for start in range(0, n, batch):
            links = {f"link{i:07d}": {"h5path": f"/t{i}"} for i in range(start, min(n, start + batch))}
            c.call("PUT", f"/groups/{gid}/links", dom, json={"links": links})
    cases: dict[str, Callable[[], object]] = {
        "get-group": lambda: c.call("GET", f"/groups/{gid}", dom),
        "get-group-links (h5pyd)": lambda: c.call("GET", f"/groups/{gid}", dom,
                                                  params={"include_links": 1, "include_attrs": 1}),
        "get-links": lambda: c.call("GET", f"/groups/{gid}/links", dom),
        "get-links Limit=1000": lambda: c.call("GET", f"/groups/{gid}/links", dom, params={"Limit": 1000}),
        "get-links Marker+Limit": lambda: c.call("GET", f"/groups/{gid}/links", dom,
                                                 params={"Limit": 1000, "Marker": f"link{n // 2:07d}"}),
        "get-link": lambda: c.call("GET", f"/groups/{gid}/links/link0000001", dom),
        "put-link (one more)": lambda: c.call("PUT", f"/groups/{gid}/links/extra", dom, json={"h5path": "/x"}),
        "getobjs": lambda: c.call("GET", "/", dom, params={"getobjs": 1, "include_links": 1}),
    }
    for name, fn in cases.items():
        if only is None or name.split()[0] in only:
            for _ in range(repeat):
                with measured(ep, name):
                    fn()
    if only is None or "h5pyd" in only:
        with measured(ep, "h5pyd list(g) + items()"), h5pyd.File(dom, "r", endpoint=ep, username=AUTH[0],
                                                                  password=AUTH[1]) as f:
            g = f["g"]
            names = list(g)
            assert len(names) == n + 1
            _ = list(g.items())[:10]
    with measured(ep, "delete-domain (wide group)"):
        c.call("DELETE", "/", dom)


def many_attributes(c: Client, ep: str, only: set[str] | None) -> None:
    dom = f"{HOME}/attrs.h5"
    root = c.call("PUT", "/", dom).json()["root"]
    n = 20_000
    attrs = {f"a{i:06d}": {"type": "H5T_STD_I32LE", "shape": [], "value": i} for i in range(n)}
    with measured(ep, f"put-attributes ({n})"):
        c.call("PUT", f"/groups/{root}/attributes", dom, json={"attributes": attrs})
    with measured(ep, "get-attributes"):
        c.call("GET", f"/groups/{root}/attributes", dom)
    with measured(ep, "get-group include_attrs"):
        c.call("GET", f"/groups/{root}", dom, params={"include_attrs": 1})
    c.call("DELETE", "/", dom)


def many_chunks(c: Client, ep: str, chunks: int) -> None:
    dom = f"{HOME}/chunks.h5"
    c.call("PUT", "/", dom)
    body = {"type": "H5T_STD_I32LE", "shape": [chunks * 10], "maxdims": ["H5S_UNLIMITED"],
            "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [10]}}}
    dsid = c.call("POST", "/datasets", dom, json=body).json()["id"]
    with measured(ep, f"write {chunks} chunks (binary)"):
        c.call("PUT", f"/datasets/{dsid}/value", dom, data=np.arange(chunks * 10, dtype="<i4").tobytes(),
               headers={"Content-Type": "application/octet-stream"})
    with measured(ep, "catalog merge (3 s after)"):
        time.sleep(3)
    with measured(ep, f"delete-dataset ({chunks} chunks)"):
        c.call("DELETE", f"/datasets/{dsid}", dom)
    dsid = c.call("POST", "/datasets", dom, json=body).json()["id"]
    c.call("PUT", f"/datasets/{dsid}/value", dom, json={"value": list(range(20))}, params={"select": "[0:20]"})
    with measured(ep, f"shrink {chunks * 10} -> 5 rows (probes {chunks} chunks)"):
        c.call("PUT", f"/datasets/{dsid}/shape", dom, json={"shape": [5]})
    with measured(ep, "delete-domain (after)"):
        c.call("DELETE", "/", dom)


def many_objects(c: Client, ep: str, n: int) -> None:
    dom = f"{HOME}/objects.h5"
    root = c.call("PUT", "/", dom).json()["root"]
    for i in range(n):
        c.call("POST", "/groups", dom, json={"link": {"id": root, "name": f"g{i}"}})
    with measured(ep, f"getobjs ({n} objects)"):
        c.call("GET", "/", dom, params={"getobjs": 1, "include_links": 1, "include_attrs": 1})
    with measured(ep, f"delete-domain ({n} objects)"):
        c.call("DELETE", "/", dom)


def many_domains(c: Client, ep: str, n: int) -> None:
    folder = f"{HOME}/many/"
    c.call("PUT", "/", folder, json={"folder": 1})
    clients = [Client(ep) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:  # each thread its own client
        list(pool.map(lambda k: [clients[k].call("PUT", "/", f"{folder}d{i:05d}.h5") for i in range(k, n, 8)],
                      range(8)))
    time.sleep(5)  # the catalog's merges of the new domains, in the background
    for _ in range(2):
        with measured(ep, f"folder listing ({n} domains)"):
            c.call("GET", "/domains", folder)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", type=int, default=200_000)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--objects", type=int, default=2_000)
    ap.add_argument("--domains", type=int, default=2_000)
    ap.add_argument("--only", action="append", help="cases to run: links, attrs, chunks, objects, domains")
    ap.add_argument("--case", action="append", help="within links: get-group, get-links, h5pyd, ...")
    ap.add_argument("--repeat", type=int, default=1, help="times each request of the links cases is measured")
    args = ap.parse_args()
    parts = set(args.only or ["links", "attrs", "chunks", "objects", "domains"])
    with tempfile.TemporaryDirectory(prefix="h5lake-wide-") as tmp:
        srv = start_server(Path(tmp), extra=["--admin", "admin"])
        try:
            c = Client(srv.endpoint)
            c.call("PUT", "/", f"{HOME}/", json={"folder": 1})
            if "links" in parts:
                wide_group(c, srv.endpoint, args.links, set(args.case) if args.case else None, args.repeat)
            if "attrs" in parts:
                many_attributes(c, srv.endpoint, None)
            if "chunks" in parts:
                many_chunks(c, srv.endpoint, args.chunks)
            if "objects" in parts:
                many_objects(c, srv.endpoint, args.objects)
            if "domains" in parts:
                many_domains(c, srv.endpoint, args.domains)
        finally:
            srv.stop()
            if "Traceback" in srv.log.read_text():
                print(srv.log.read_text()[-3000:])


if __name__ == "__main__":
    main()
