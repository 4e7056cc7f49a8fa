"""Names of links and attributes this process deleted, so that asking for one answers 410 Gone.

HSDS answers 410 for a link or attribute deleted earlier (one at a time or several) and 404 for
one that never was. It knows which from a set each data node keeps in memory: nothing stored
says so, and a restart forgets it. h5lake does the same, per process and bounded: the last
`LIMIT` names deleted here are remembered (a deleted object answers 410 from a stored marker
instead, model/ids.py). Made again, a name is found and answered as usual; only a name that is
absent consults this record, so it never needs to forget a name that came back.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

LIMIT = 100_000
"""Names remembered (about 100 bytes each); the oldest are forgotten first (then 404)."""


class DeletedNames:
    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._names: OrderedDict[tuple[str, str, str, str], None] = OrderedDict()

    def note(self, domain: str, obj_id: str, kind: str, names: Iterable[str]) -> None:
        """``names`` of ``kind`` (``link`` or ``attribute``) of object ``obj_id`` of ``domain``
        were deleted."""
        for name in names:
            key = (domain, obj_id, kind, name)
            self._names[key] = None
            self._names.move_to_end(key)
        while len(self._names) > self._limit:
            self._names.popitem(last=False)

    def was_deleted(self, domain: str, obj_id: str, kind: str, name: str) -> bool:
        return (domain, obj_id, kind, name) in self._names
