"""Many waiters at once on one dataset cost a few store reads, not one each (api/routes/watch.py).

In process (the ASGI application, no HTTP), on a store that counts the reads of the dataset's
document: the clients' waits arrive together, then a change wakes them all.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

from tests.support.server import USERS, write_passwd

from h5lake.api.app import create_app
from h5lake.config import Settings
from h5lake.storage.base import Blob
from h5lake.storage.memory import MemoryStore

USER = "test_user1"
AUTH = b"Basic " + base64.b64encode(f"{USER}:{USERS[USER]}".encode())
WAITERS = 200


class CountedReads(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.watched = "-"
        self.reads = 0

    async def get(self, key: str) -> Blob | None:
        if self.watched in key:
            self.reads += 1
        return await super().get(key)


async def call(app: Any, method: str, path: str, query: str, body: bytes = b"", headers: tuple[tuple[bytes, bytes], ...] = ()) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[dict[str, Any]] = []
    answered = asyncio.Event()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await answered.wait()  # the client stays until it has its answer
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"127.0.0.1:9"), (b"authorization", AUTH), (b"content-type", b"application/json"), *headers],
        "server": ("127.0.0.1", 9), "client": ("127.0.0.1", 10), "app": app,
    }
    await app(scope, receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


async def test_waiters_that_arrive_together_share_their_first_reply_and_their_wake_up(tmp_path: Path) -> None:
    store = CountedReads()
    app = create_app(Settings(data=tmp_path / "data", passwd=write_passwd(tmp_path / "passwd")), store=store)
    async with app.router.lifespan_context(app):
        domain = f"domain=/home/{USER}/shared.h5"
        assert (await call(app, "PUT", "/", f"domain=/home/{USER}", b'{"folder": 1}'))[0] == 201
        assert (await call(app, "PUT", "/", domain))[0] == 201
        status, _, body = await call(app, "POST", "/datasets", domain,
                                     b'{"type": "H5T_STD_I32LE", "shape": [0], "maxdims": ["H5S_UNLIMITED"]}')
        assert status == 201
        dset = json.loads(body)["id"]
        store.watched = dset.removeprefix("d-")
        path = f"/datasets/{dset}/shape"
        status, headers, _ = await call(app, "GET", path, domain)
        assert status == 200
        etag = headers[b"etag"]

        before = store.reads
        waiters = [asyncio.ensure_future(call(app, "GET", path, domain + "&wait=30", headers=((b"if-none-match", etag),)))
                   for _ in range(WAITERS)]
        await asyncio.sleep(0.5)
        assert not any(w.done() for w in waiters)
        arriving = store.reads - before
        assert arriving < WAITERS / 4, arriving  # one read per reply made, shared by those who came meanwhile

        before = store.reads
        assert (await call(app, "PUT", path, domain, b'{"extend": 3}'))[0] == 201
        answers = await asyncio.wait_for(asyncio.gather(*waiters), 30)
        assert {status for status, _, _ in answers} == {200}
        assert {tuple(json.loads(body)["shape"]["dims"]) for _, _, body in answers} == {(3,)}
        assert store.reads - before < WAITERS / 4, store.reads - before  # the PUT's, and one reply for all
