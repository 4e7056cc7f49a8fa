"""Many large replies made whole at once. h5grove's ``data`` and ``stats`` (what H5Web calls),
the web view's ``.npy`` downloads and REST reads of a compound's fields read their whole
selection (up to the request limit) and encode it before answering: each held its values and
their encoding (``stats`` several copies more), all at once, so forty clients asking for
512 MiB each could take tens of gigabytes and the server with them. Now each reserves what it
will hold from a budget of the process (``--reply-memory-bytes``, by default twice the request
limit) before reading, and gives it back once sent; the others wait their turn.

The server here runs with a request limit of 64 MiB (budget 128 MiB) and one worker, and
``CLIENTS`` clients read a 48 MiB dataset each way at once. Its process group's footprint
(tests/support/procgroup.py) may grow by at most ``2 x budget`` over what it held before: the
budget admits one of these replies at a time (each reserves more than half of it), and one
holds its reservation plus the chunks being read. Before the budget the growth was about
``CLIENTS x 2 x 48 MiB`` (1.3 GiB and more measured), far over the bound. The answers are
checked too, and small reads run beside the large ones."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import orjson
import pytest
import requests

from tests.support.procgroup import GroupPeak, group_memory
from tests.support.server import USERS, Server, start_server

A = ("admin", USERS["admin"])
DOMAIN = "/home/admin/replies.h5"
REQUEST_LIMIT = 64 * 1024 * 1024
BUDGET = 2 * REQUEST_LIMIT  # the default: twice --max-request-bytes
ROWS, COLS = 3072, 2048  # 6.3 M elements: float64 values are 48 MiB
CLIENTS = 16
PAIRS = ROWS * COLS // 4  # a compound of two float64: 24 MiB, its field "a" 12 MiB
MiB = 2**20


@dataclass
class Target:
    srv: Server
    ep: str
    dset: str
    compound: str


def values() -> np.ndarray:
    return np.arange(ROWS * COLS, dtype="<f8").reshape(ROWS, COLS) / 7.0


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    work = tmp_path_factory.mktemp("replies")
    srv = start_server(work / "srv", workers=1, extra=["--max-request-bytes", str(REQUEST_LIMIT)])
    try:
        s = requests.Session()
        s.auth = A
        ep, params = srv.endpoint, {"domain": DOMAIN}
        assert s.put(ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}).status_code in (201, 409)
        assert s.put(ep + "/", params=params).status_code == 201
        root = s.get(ep + "/", params=params).json()["root"]
        ids = {}
        for name, type_json, data in (
            ("big", "H5T_IEEE_F64LE", values()),
            ("pairs", {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_IEEE_F64LE"},
                                                         {"name": "b", "type": "H5T_IEEE_F64LE"}]}, None),
        ):
            shape = [ROWS, COLS] if data is not None else [PAIRS]
            body = {"type": type_json, "shape": shape, "link": {"id": root, "name": name}}
            r = s.post(ep + "/datasets", params=params, json=body)
            assert r.status_code == 201, r.text
            ids[name] = r.json()["id"]
            if data is not None:
                r = s.put(ep + f"/datasets/{ids[name]}/value", params=params, data=data.tobytes(),
                          headers={"Content-Type": "application/octet-stream"})
                assert r.status_code == 200, r.text
        yield Target(srv, ep, ids["big"], ids["pairs"])
        assert srv.process.poll() is None
    finally:
        srv.stop()


def big_read(ep: str, dset: str, compound: str, kind: int) -> tuple[str, bytes]:
    """One large reply made whole, of four kinds."""
    grove = {"file": DOMAIN, "path": "/big"}
    if kind == 0:
        r = requests.get(ep + "/h5grove/data", params={**grove, "format": "bin"}, auth=A, timeout=600)
    elif kind == 1:
        r = requests.get(ep + "/h5grove/stats", params=grove, auth=A, timeout=600)
    elif kind == 2:
        r = requests.get(ep + "/view/api/values", params={"domain": DOMAIN, "path": "/big", "format": "npy"},
                         auth=A, timeout=600)
    else:  # a compound's field: read whole (not streamed)
        r = requests.get(ep + f"/datasets/{compound}/value", params={"domain": DOMAIN, "fields": "a"}, auth=A,
                         headers={"Accept": "application/octet-stream"}, timeout=600)
    assert r.status_code == 200, r.text[:300]
    return ("bin", "stats", "npy", "field")[kind], r.content


def test_many_large_replies_at_once_stay_within_the_budget(target: Target) -> None:
    expected = values()
    small_answers: list[int] = []
    stop = threading.Event()

    def small_reads() -> None:  # a small read keeps being answered beside the large ones
        s = requests.Session()
        s.auth = A
        while not stop.is_set():
            r = s.get(target.ep + "/h5grove/data", params={"file": DOMAIN, "path": "/big", "selection": "5,0:8"},
                      timeout=600)
            assert r.status_code == 200 and r.json() == expected[5, :8].tolist()
            small_answers.append(r.status_code)

    before = group_memory(target.srv.process.pid)
    sampler = GroupPeak(target.srv.process.pid)
    small = threading.Thread(target=small_reads)
    small.start()
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(lambda k: big_read(target.ep, target.dset, target.compound, k % 4), range(CLIENTS)))
    finally:
        stop.set()
        small.join()
        peak = sampler.stop()
    for kind, body in answers:
        if kind == "bin":
            assert body == expected.tobytes()
        elif kind == "npy":
            np.testing.assert_array_equal(np.load(io.BytesIO(body)), expected)
        elif kind == "stats":
            found = orjson.loads(body)
            assert found["min"] == 0.0 and found["max"] == expected[-1, -1]
            assert found["strict_positive_min"] == expected[0, 1] and found["positive_min"] == 0.0
            assert found["mean"] == pytest.approx(expected.mean())
        else:
            assert body == bytes(PAIRS * 8)  # never written: the fill value
    assert small_answers
    grown = peak.footprint - before.footprint
    print(f"footprint grew {grown / MiB:.0f} MiB with {CLIENTS} large replies at once (before: {before}; peak: {peak})")
    assert grown < 2 * BUDGET, (
        f"{CLIENTS} large replies at once grew the server's footprint by {grown / MiB:.0f} MiB "
        f"(bound {2 * BUDGET / MiB:.0f} MiB): before {before}, peak {peak}"
    )
    assert "Traceback" not in target.srv.log.read_text()

