"""Sorting long lists in pieces, for work done on a pool thread beside the event loop.

A sort is one call that holds the interpreter for its whole run: 200,000 names in random order
take ~0.4 s on the CI machine, during which a thread-pool job holds up the event loop as much as
work on the loop itself would. `sorted_in_runs` sorts runs of at most `RUN` items (a few
milliseconds each) and merges them with ``heapq.merge``, Python code that lets other threads in.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
RUN = 4096


def sorted_in_runs(items: Iterable[T], key: Callable[[T], Any] | None = None, run: int = RUN) -> list[T]:
    """``sorted(items, key=key)``; equal keys keep their order, as ``sorted`` keeps them."""
    items = list(items)
    if len(items) <= run:
        return sorted(items, key=key)  # type: ignore[type-var,arg-type]
    runs = [sorted(items[i : i + run], key=key) for i in range(0, len(items), run)]  # type: ignore[type-var,arg-type]
    return list(heapq.merge(*runs, key=key))  # type: ignore[arg-type]
