"""The HTTP floor: server CPU per GET of uvicorn with a bare ASGI callable (no h5lake app).

    python bench/http_floor.py                        # h5lake's protocol, then plain httptools
    python bench/http_floor.py --protocol httptools --gets 8000

The callable answers every request with a fixed JSON body the size of a group GET's reply and
the same three headers (length, type, ETag), so what is measured is uvicorn (its per-request
cycle, ``ProxyHeadersMiddleware``, the checks of ``send``), the protocol (``--http``),
httptools, uvloop and the loopback socket. CPU seconds of the server process from /proc, before
and after ``--gets`` GETs on one keep-alive ``http.client`` connection (after 500 to warm up).
Subtract it from `bench/server_cost.py`'s group GET for the app's share (docs/performance.md).
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson

_BODY = orjson.dumps(
    {
        "id": "g-" + "0" * 36, "root": "g-" + "0" * 36, "created": 1.0, "lastModified": 1.0,
        "attributeCount": 0, "linkCount": 0, "domain": "/home/u/f.h5",
        "hrefs": [{"rel": "self", "href": "http://127.0.0.1:5101/groups/g?domain=/home/u/f.h5"}] * 5,
    }
)  # fmt: skip
_HEADERS = [
    (b"content-length", str(len(_BODY)).encode()),
    (b"content-type", b"application/json; charset=utf-8"),
    (b"etag", b'"0123456789abcdef01234567"'),
]
_AUTH = {"Authorization": "Basic dGVzdF91c2VyMTp0ZXN0MS1wdw=="}


async def app(scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
    """The bare ASGI callable uvicorn serves (``bench.http_floor:app``)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": _BODY})


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(protocol: str, gets: int) -> float:
    port = _free_port()
    root = Path(__file__).resolve().parents[1]
    args = [sys.executable, "-m", "uvicorn", "bench.http_floor:app", "--port", str(port), "--no-access-log"]
    args += ["--loop", "uvloop", "--http", protocol, "--log-level", "warning"]
    server = subprocess.Popen(args, cwd=root)
    try:
        conn = None
        for _ in range(100):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port)
                conn.request("GET", "/")
                conn.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)
        assert conn is not None
        path = "/groups/g?domain=/home/u/f.h5"
        for _ in range(500):
            conn.request("GET", path, headers=_AUTH)
            conn.getresponse().read()
        before = _cpu(server.pid)
        for _ in range(gets):
            conn.request("GET", path, headers=_AUTH)
            conn.getresponse().read()
        time.sleep(0.3)
        return (_cpu(server.pid) - before) / gets
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", action="append", help="uvicorn --http value (repeatable) [h5lake's, httptools]")
    parser.add_argument("--gets", type=int, default=4000, help="GETs measured [4000]")
    args = parser.parse_args()
    for protocol in args.protocol or ["h5lake.api.connections:GuardedHttpProtocol", "httptools"]:
        print(f"  {protocol:<45} server CPU {measure(protocol, args.gets) * 1000:.3f} ms/request")


if __name__ == "__main__":
    main()
