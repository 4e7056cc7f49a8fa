"""Live data: a reader sees another client's appends (h5pyd's ``refresh()``), and the watch
(``GET /datasets/{id}/shape?wait=S``, ``GET /datasets/{id}?wait=S``) answers as soon as a dataset
changes. Many server processes on one store: tests/scale/test_live_processes.py."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import orjson
import pytest
import requests
from tests.api.test_h5pyd_metadata import open_file
from tests.conftest import Client
from tests.support.server import USERS, Server, start_server

WRITER = """
import sys, numpy as np, h5pyd
endpoint, domain, start, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with h5pyd.File(domain, "a", endpoint=endpoint, username="test_user1", password={pw!r}) as f:
    d = f["data"]
    d.resize((stop,))
    d[start:stop] = np.arange(start, stop, dtype="f4")
    d.flush()
""".format(pw=USERS["test_user1"])


def append_in_another_process(endpoint: str, domain: str, start: int, stop: int) -> None:
    """h5pyd in a process of its own resizes ``data`` to ``stop`` and writes rows from ``start``."""
    subprocess.run([sys.executable, "-c", WRITER, endpoint, domain, str(start), str(stop)], check=True,
                   env=dict(os.environ), timeout=120)


def test_h5pyd_refresh_sees_another_process_append(endpoint: str, domain: str) -> None:
    """Two h5pyd files in two processes: the reader's ``refresh()`` shows each resize and its
    values (h5pyd 1.0 answers ``refresh()`` from ``domain_objs`` if the open listed the dataset)."""
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("data", shape=(0,), dtype="f4", chunks=(2,), maxshape=(None,))
        f.create_dataset("fixed", data=np.arange(3, dtype="i4"))
    with open_file(endpoint, domain, "r") as reader:
        d = reader["data"]
        assert d.shape == (0,)
        for stop in (4, 8):
            append_in_another_process(endpoint, domain, stop - 4, stop)
            d.refresh()
            assert d.shape == (stop,)
            np.testing.assert_array_equal(d[...], np.arange(stop, dtype="f4"))
        np.testing.assert_array_equal(reader["fixed"][...], np.arange(3))


# --- the watch ---------------------------------------------------------------------------------

def make_dataset(client: Client) -> str:
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [0], "maxdims": ["H5S_UNLIMITED"]})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def extend(client: Client, dset: str, rows: int) -> None:
    r = client.put(f"/datasets/{dset}/shape", json={"extend": rows})
    assert r.status_code == 201, r.text


def dims(reply: requests.Response) -> list[int]:
    return list(reply.json()["shape"]["dims"])


@pytest.mark.parametrize("part", ["/shape", ""])
def test_a_waiter_is_answered_at_a_change_made_in_the_same_process(client: Client, part: str) -> None:
    dset = make_dataset(client)
    first = client.get(f"/datasets/{dset}{part}")
    assert first.status_code == 200 and dims(first) == [0]
    etag = first.headers["ETag"]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(client.get, f"/datasets/{dset}{part}", params={"wait": 30},
                              headers={"If-None-Match": etag})
        time.sleep(0.3)  # the waiter is waiting (if it were answered already, it would be a 304 or [0])
        assert not waiting.done()
        extend(client, dset, 5)
        answer = waiting.result(timeout=30)
    assert answer.status_code == 200, answer.text
    assert dims(answer) == [5]
    assert answer.headers["ETag"] != etag
    assert answer.json() == client.get(f"/datasets/{dset}{part}").json()


@pytest.mark.parametrize("part", ["/shape", ""])
def test_an_unchanged_dataset_answers_304_after_the_wait(client: Client, part: str) -> None:
    dset = make_dataset(client)
    etag = client.get(f"/datasets/{dset}{part}").headers["ETag"]
    for seconds in ("0", "0.2"):
        r = client.get(f"/datasets/{dset}{part}", params={"wait": seconds}, headers={"If-None-Match": etag})
        assert r.status_code == 304 and r.content == b""
        assert r.headers["ETag"] == etag
    # an out-of-date ETag, or none, is answered at once with the state
    r = client.get(f"/datasets/{dset}{part}", params={"wait": 60}, headers={"If-None-Match": '"old"'})
    assert r.status_code == 200 and r.headers["ETag"] == etag
    r = client.get(f"/datasets/{dset}{part}", params={"wait": 60})
    assert r.status_code == 200 and r.headers["ETag"] == etag


@pytest.mark.parametrize("wait", ["-1", "60.5", "abc", "nan", "inf", ""])
def test_a_bad_wait_is_400(client: Client, wait: str) -> None:
    dset = make_dataset(client)
    for part in ("/shape", ""):
        r = client.get(f"/datasets/{dset}{part}", params={"wait": wait}, headers={"If-None-Match": "*"})
        assert r.status_code == 400, r.text
        assert "wait" in r.json()["error"]["message"]


def test_a_user_without_read_gets_403_not_a_wait(client: Client) -> None:
    dset = make_dataset(client)
    etag = client.get(f"/datasets/{dset}/shape").headers["ETag"]
    other = Client(client.endpoint, "test_user2", client.domain)
    for part in ("/shape", ""):
        r = other.get(f"/datasets/{dset}{part}", params={"wait": 60}, headers={"If-None-Match": etag})
        assert r.status_code == 403, r.text


# --- many waiters, clients that leave, the bounds (a server of their own) ----------------------

@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server watching at most one dataset at once, with room for 1,010 connections."""
    srv = start_server(tmp_path_factory.mktemp("live"), extra=["--watch-max-datasets", "1", "--max-connections", "1010"])
    yield srv
    srv.stop()


def fresh_client(srv: Server) -> Client:
    home = requests.put(srv.endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": 1},
                        auth=("test_user1", USERS["test_user1"]), timeout=30)
    assert home.status_code in (201, 409), home.text
    c = Client(srv.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    assert c.put("/").status_code == 201
    return c


async def send_wait(port: int, c: Client, dset: str, etag: str, seconds: float = 60) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw connection sending ``GET /datasets/{dset}/shape?wait=`` (its reply is not read here)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    token = base64.b64encode(f"test_user1:{USERS['test_user1']}".encode()).decode()
    writer.write(f"GET /datasets/{dset}/shape?wait={seconds}&domain={c.domain} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                 f"Authorization: Basic {token}\r\nIf-None-Match: {etag}\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


async def reply_of(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Status and body of one reply (Content-Length framed)."""
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, await reader.readexactly(length)


def test_a_thousand_waiters_leave_others_answered_and_all_wake(bounded: Server) -> None:
    c = fresh_client(bounded)
    dset = make_dataset(c)
    etag = c.get(f"/datasets/{dset}/shape").headers["ETag"]
    port = int(bounded.endpoint.rsplit(":", 1)[1])

    async def run() -> tuple[list[tuple[int, bytes]], list[int]]:
        waiters = [await send_wait(port, c, dset, etag) for _ in range(1000)]
        # others are answered while the thousand wait (each waiter's reply not yet sent)
        loop = asyncio.get_running_loop()
        other = await loop.run_in_executor(None, lambda: c.get(f"/datasets/{dset}").status_code)
        assert other == 200
        assert not any(r.at_eof() or len(r._buffer) for r, _ in waiters)  # type: ignore[attr-defined]
        # the per-process connection limit still holds: past 1,010 connections, 503
        extra = [await asyncio.open_connection("127.0.0.1", port) for _ in range(15)]
        for _, w in extra:  # a request answered at once (200), or 503 past the limit
            w.write(f"GET /about HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        answered = await asyncio.gather(*(asyncio.wait_for(reply_of(r), 60) for r, _ in extra))
        statuses = [status for status, _ in answered]
        for _, w in extra:
            w.close()
            await w.wait_closed()
        # the server counts a closed connection until it has seen the close: until then a new
        # one is refused with 503 (--max-connections), so the change is sent again after it
        for _ in range(200):
            r = await loop.run_in_executor(None, lambda: c.put(f"/datasets/{dset}/shape", json={"extend": 3}))
            if r.status_code != 503:
                break
            await asyncio.sleep(0.05)
        assert r.status_code == 201, r.text
        replies = await asyncio.gather(*(asyncio.wait_for(reply_of(r), 30) for r, _ in waiters))
        for _, w in waiters:
            w.close()
        return replies, statuses

    replies, statuses = asyncio.run(run())
    assert 503 in statuses and 200 in statuses
    assert len(replies) == 1000
    assert all(status == 200 and orjson.loads(body)["shape"]["dims"] == [3] for status, body in replies)


def test_a_waiter_whose_client_hangs_up_is_dropped(bounded: Server) -> None:
    c = fresh_client(bounded)
    first, second = make_dataset(c), make_dataset(c)
    etag_first = c.get(f"/datasets/{first}/shape").headers["ETag"]
    etag_second = c.get(f"/datasets/{second}/shape").headers["ETag"]
    port = int(bounded.endpoint.rsplit(":", 1)[1])

    def second_wait() -> int:
        r = c.get(f"/datasets/{second}/shape", params={"wait": 0}, headers={"If-None-Match": etag_second})
        return r.status_code

    async def run() -> list[int]:
        loop = asyncio.get_running_loop()
        _, writer = await send_wait(port, c, first, etag_first)
        seen = []
        for _ in range(1200):  # until the first is watched (bounded: a wait never watched fails, not hangs)
            if (status := await loop.run_in_executor(None, second_wait)) == 503:
                break
            seen.append(status)
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"the first wait was never watched: {seen[-5:]}")
        writer.close()  # hang up: the one watched dataset is let go
        await writer.wait_closed()
        for _ in range(200):  # the waiter asked for 60 s: this is well before
            status = await loop.run_in_executor(None, second_wait)
            seen.append(status)
            if status == 304:
                break
            await asyncio.sleep(0.05)
        return seen

    seen = asyncio.run(run())
    assert seen[-1] == 304


# --- consistent appends (service/values/appends.py) ----------------------------------------------------

def filled_dataset(client: Client, values: list[int], chunk: int = 4) -> str:
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [len(values)], "maxdims": ["H5S_UNLIMITED"],
                                       "creationProperties": {"fillValue": -1, "layout": {"class": "H5D_CHUNKED", "dims": [chunk]}}})
    assert r.status_code == 201, r.text
    dset = str(r.json()["id"])
    if values:
        assert client.put(f"/datasets/{dset}/value", json={"value": values}).status_code == 200
    return dset


def visible_rows(client: Client, dset: str) -> list[int]:
    """The rows inside the extent a reader sees (read after the extent)."""
    n = dims(client.get(f"/datasets/{dset}/shape"))[0]
    if n == 0:
        return []
    return list(client.get(f"/datasets/{dset}/value", params={"select": f"[0:{n}]"}).json()["value"])


def test_an_append_is_shown_only_once_its_rows_are_written(client: Client) -> None:
    """The appender's body arrives slowly: meanwhile readers see the old extent (its rows all
    written), a resize is 409, and after it the new rows."""
    dset = filled_dataset(client, [0, 1, 2])
    port = int(client.endpoint.rsplit(":", 1)[1])
    token = base64.b64encode(f"test_user1:{USERS['test_user1']}".encode()).decode()
    body = np.arange(3, 7, dtype="<i4").tobytes()

    async def run() -> tuple[list[int], int, int]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"PUT /datasets/{dset}/value?append=4&domain={client.domain} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     f"Authorization: Basic {token}\r\nContent-Type: application/octet-stream\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:8])
        await writer.drain()
        await asyncio.sleep(0.3)  # the server has the headers and half the body
        loop = asyncio.get_running_loop()
        during = await loop.run_in_executor(None, visible_rows, client, dset)
        resize = await loop.run_in_executor(None, lambda: client.put(f"/datasets/{dset}/shape", json={"extend": 1}).status_code)
        writer.write(body[8:])
        await writer.drain()
        status, _ = await reply_of(reader)
        writer.close()
        return during, resize, status

    during, resize, status = asyncio.run(run())
    assert -1 not in during and during == [0, 1, 2]
    assert resize == 409
    assert status == 200
    assert visible_rows(client, dset) == list(range(7))
    assert "appends" not in client.get(f"/datasets/{dset}").json()


def test_concurrent_appends_keep_every_row_and_readers_see_no_gap(client: Client) -> None:
    dset = filled_dataset(client, [])
    writers, appends, rows = 4, 8, 3
    stop = threading.Event()
    gaps: list[list[int]] = []

    def append(w: int) -> None:
        c = Client(client.endpoint, "test_user1", client.domain)
        for a in range(appends):
            base = (w * appends + a) * rows
            r = c.put(f"/datasets/{dset}/value", params={"append": rows}, json={"value": list(range(base, base + rows))})
            assert r.status_code == 200, r.text

    def read() -> None:
        c = Client(client.endpoint, "test_user1", client.domain)
        while not stop.is_set():
            seen = visible_rows(c, dset)
            if -1 in seen:
                gaps.append(seen)

    with ThreadPoolExecutor(writers + 1) as pool:
        reading = pool.submit(read)
        list(pool.map(append, range(writers)))
        stop.set()
        reading.result()
    assert gaps == [], [(len(g), [i for i, v in enumerate(g) if v == -1]) for g in gaps[:5]]
    assert sorted(visible_rows(client, dset)) == list(range(writers * appends * rows))


def test_the_client_helper_yields_each_new_shape(endpoint: str, domain: str) -> None:
    from h5lake.client import shapes

    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("data", shape=(0,), dtype="f4", chunks=(2,), maxshape=(None,))
    with open_file(endpoint, domain, "r") as f:
        seen = shapes(f["data"], wait=30)
        assert next(seen) == (0,)
        with ThreadPoolExecutor(1) as pool:
            for stop in (4, 8):
                waiting = pool.submit(next, seen)
                append_in_another_process(endpoint, domain, stop - 4, stop)
                assert waiting.result(timeout=60) == (stop,)
