"""Named crash points, for tests that kill a server between two given store writes.

With ``H5LAKE_CRASH_AT=NAME`` in its environment, a process that reaches ``crash_point(NAME)``
ends at once with ``os._exit`` (no clean-up, no reply: as a kill -9 there would); ``NAME#K``
ends it the K-th time. Unset, as it always is in service, a crash point costs one environment
lookup. The points: `service.versions.applying` (a version written to the head) and
`service.versions.merge`.
"""

from __future__ import annotations

import os

CRASH_ENV = "H5LAKE_CRASH_AT"
CRASH_STATUS = 70  # the exit status a crash point ends the process with
_reached: dict[str, int] = {}


def crash_point(name: str) -> None:
    wanted = os.environ.get(CRASH_ENV)
    if not wanted or not wanted.startswith(name):
        return
    point, _, nth = wanted.partition("#")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] >= int(nth or 1):
        os._exit(CRASH_STATUS)
