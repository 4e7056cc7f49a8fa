"""Which processes holding write intents are alive: each says so with a heartbeat,
``.h5lake/alive/<owner>.json``, while it holds intents (`h5lake.catalog.catalogs`).

An intent names its process (``owner``, 32 hex digits) and how often that process says it is
alive (``renew``). Another process takes an intent for a dead process's only when the owner's
heartbeat is absent or older than ``max(stale_after, 3 * renew)``: a write running longer
than ``stale_after`` keeps its intent. The heartbeat carries its writer's clock (``at``): S3
gives an object's time in whole seconds. It counts only within the second after the store's
time of the heartbeat: processes on other machines may keep other clocks (a writer whose clock
ran behind had its live intents recovered; one whose clock ran ahead, killed, kept its intents
from recovery as long).
"""

from __future__ import annotations

import math
import re
import time
import uuid

import orjson

from h5lake.model import ids
from h5lake.storage.base import Store

DEAD_HEARTBEAT = 3600.0  # seconds after which a heartbeat's process is long gone
SWEEP_EVERY = 600.0  # seconds between one process's looks for such heartbeats (each a HEAD of every heartbeat)
_OWNER = re.compile(r"[0-9a-f]{32}")


class Liveness:
    """This process's heartbeat, and the check of other processes' intents against theirs."""

    def __init__(self, store: Store, stale_after: float) -> None:
        self.store = store
        self.owner = uuid.uuid4().hex  # names this process in its intents and its heartbeat
        self.renew = max(stale_after / 4, 0.05)  # seconds between heartbeats while intents are held
        self._last_beat = -math.inf  # time.monotonic() of the last heartbeat put
        self._last_sweep = -math.inf  # time.monotonic() of the last look for dead heartbeats

    def stamp(self) -> dict[str, object]:
        """The fields an intent carries."""
        return {"owner": self.owner, "renew": self.renew}

    def due(self, part: float = 1.0) -> bool:
        """Whether ``part`` of a heartbeat period went by since the last heartbeat."""
        return time.monotonic() - self._last_beat >= part * self.renew

    async def beat(self) -> None:
        await self.store.put(ids.alive_key(self.owner), orjson.dumps({"renew": self.renew, "at": time.time()}))
        self._last_beat = time.monotonic()

    async def end(self) -> None:
        """Delete this process's heartbeat (what it still holds is left to recovery)."""
        if self._last_beat > -math.inf:
            await self.store.delete(ids.alive_key(self.owner))

    async def held(self, data: bytes | memoryview, limit: float) -> bool:
        """Whether an intent (its bytes) belongs to a write still under way in another live
        process: its owner's heartbeat is younger than ``max(limit, 3 * renew)`` seconds."""
        try:
            doc = orjson.loads(data)
            owner, renew = doc["owner"], float(doc["renew"])
        except (ValueError, KeyError, TypeError):
            return False  # written before intents named their owner, or unreadable
        if owner == self.owner or not isinstance(owner, str) or not _OWNER.fullmatch(owner):
            return False  # ours, left by `abort`: recovered as a dead process's
        beat = await self.store.get(ids.alive_key(owner))
        if beat is None:
            return False
        try:
            at = float(orjson.loads(beat.data)["at"])
        except (ValueError, KeyError, TypeError):
            at = beat.last_modified
        # The writer's clock only within the second the store says it took the heartbeat (S3
        # rounds down to whole seconds): a writer whose clock runs behind stays alive, one whose
        # clock runs ahead is not alive for longer than it ran ahead.
        at = min(max(at, beat.last_modified), beat.last_modified + 1)
        return time.time() - at < max(limit, 3 * renew)

    async def forget_dead(self, limit: float) -> None:
        """Delete heartbeats left by processes that died holding intents (long after any
        intent of theirs was recovered), at most every ``SWEEP_EVERY`` seconds: every
        process's recovery pass comes here, and a look HEADs every heartbeat (with N processes
        on S3, N * N HEADs a pass)."""
        if time.monotonic() - self._last_sweep < SWEEP_EVERY:
            return
        self._last_sweep = time.monotonic()
        mine = ids.alive_key(self.owner)
        for key in [k async for k in self.store.list(ids.ALIVE_PREFIX, delimiter="/")]:
            info = None if key == mine else await self.store.head(key)
            if info is not None and time.time() - info.last_modified > max(DEAD_HEARTBEAT, 10 * limit):
                await self.store.delete(key)
