"""Merging byte ranges of one object into few requests (pure).

A ranged GET costs a round trip and a request's fixed work at the server, so ranges closer than
a gap are fetched as one span (reading the unwanted bytes between them) and cut apart after;
a span stops growing at ``max_span`` bytes so large reads still run as several requests at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """Bytes ``[start, end)`` of the object, holding the requested ranges ``members`` (indexes
    into the caller's list)."""

    start: int
    end: int
    members: tuple[int, ...]


def coalesce(ranges: Sequence[tuple[int, int]], gap: int, max_span: int) -> list[Span]:
    """Spans covering every non-empty ``(offset, length)`` of ``ranges``, in offset order.

    Two ranges share a span when the hole between them is at most ``gap`` bytes (overlapping
    ranges always do, while the span stays within ``max_span``). A single range longer than
    ``max_span`` is a span of its own. Empty ranges belong to no span.
    """
    order = sorted((i for i, (_, n) in enumerate(ranges) if n > 0), key=lambda i: ranges[i][0])
    spans: list[Span] = []
    start = end = 0
    members: list[int] = []
    for i in order:
        offset, length = ranges[i]
        stop = offset + length
        if members and offset - end <= gap and max(end, stop) - start <= max_span:
            end = max(end, stop)
            members.append(i)
            continue
        if members:
            spans.append(Span(start, end, tuple(members)))
        start, end, members = offset, stop, [i]
    if members:
        spans.append(Span(start, end, tuple(members)))
    return spans
