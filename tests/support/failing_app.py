"""A bare ASGI application for protocol tests (``tests/api/test_reply_send.py``): it starts a
reply, says so on stderr, waits for the client to go away, then fails, as a streamed read
whose next block cannot be read would after its client left."""

from __future__ import annotations

import sys
from typing import Any

STARTED = "failing_app: reply started"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]})
    print(STARTED, file=sys.stderr, flush=True)
    while (await receive())["type"] != "http.disconnect":
        pass
    raise ValueError("failing_app: failed after the client left")
