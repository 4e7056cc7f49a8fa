"""Parsing a value request's selection: the ``select`` query text (the grammar and the decisions
about bounds are in :mod:`h5lake.model.selection`) and the ``start``/``stop``/``step`` keys of a
JSON request (`Bounds`), into the selection types of that module."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from h5lake.errors import InvalidInput
from h5lake.model.selection import (
    Coords,
    PairedSelection,
    Part,
    Selection,
    coords_part,
    index_part,
    slice_part,
)

_INT_RE = re.compile(r"[+-]?\d+")


def parse_select(text: str | list[Any] | None, shape: Sequence[int]) -> Selection | PairedSelection:
    """Parse a ``select`` parameter against a dataset ``shape`` (see the module docstring).

    ``None`` (parameter absent) selects everything. A scalar dataset (shape ``()``) accepts only
    ``None`` or ``"[]"``. Any malformed or out-of-range input raises `InvalidInput`. Several
    coordinate lists give a `PairedSelection`.
    """
    shape = tuple(int(n) for n in shape)
    if text is None:
        return Selection.all(shape)
    if isinstance(text, list):
        text = _select_from_list(text)
    if not isinstance(text, str):
        raise InvalidInput("select must be a string")
    body = "".join(text.split())
    if len(body) < 2 or body[0] != "[" or body[-1] != "]":
        raise InvalidInput(f"select must be enclosed in brackets, got {_clip(text)!r}")
    raw_parts = _split_top_level(body[1:-1])
    if len(raw_parts) != len(shape):
        raise InvalidInput(
            f"select has {len(raw_parts)} dimension(s), dataset has rank {len(shape)}"
        )
    clamp = any(raw.startswith("[") for raw in raw_parts)
    parts: list[Part] = []
    for dim, (raw, extent) in enumerate(zip(raw_parts, shape)):
        parts.append(_parse_part(raw, extent, dim, clamp))
    if sum(isinstance(p, Coords) for p in parts) > 1:
        return PairedSelection.of(parts)
    return Selection(tuple(parts))


@dataclass(frozen=True, slots=True)
class Bounds:
    """The ``start``, ``stop`` and ``step`` keys of a JSON value request (each None when absent;
    an int or a list of ints as sent)."""

    start: Any = None
    stop: Any = None
    step: Any = None

    @classmethod
    def from_body(cls, body: Any) -> Bounds | None:
        if not isinstance(body, dict) or not any(k in body for k in ("start", "stop", "step")):
            return None
        return cls(body.get("start"), body.get("stop"), body.get("step"))

    def parse(self, shape: Sequence[int]) -> Selection:
        shape = tuple(int(n) for n in shape)
        rank = len(shape)
        lists = [_bound_list(v, name, rank) for v, name in ((self.start, "start"), (self.stop, "stop"), (self.step, "step"))]
        parts: list[Part] = []
        for dim, extent in enumerate(shape):
            start, stop, step = (None if lst is None else lst[dim] for lst in lists)
            if start is not None and start >= extent > 0:
                raise InvalidInput(f"start {start} is out of range for extent {extent} in dim {dim}")
            parts.append(slice_part(start, stop, step, extent, dim, clamp=False))
        return Selection(tuple(parts))


def _bound_list(value: Any, name: str, rank: int) -> list[int] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    if len(items) != rank:
        raise InvalidInput(f"{name} has {len(items)} value(s), the dataset has rank {rank}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise InvalidInput(f"{name} must be an integer or a list of integers")
    if any(v < 0 for v in items):
        raise InvalidInput(f"{name} values must not be negative")
    return [int(v) for v in items]


def _select_from_list(items: list[Any]) -> str:
    """A ``select`` given as a JSON list, one item per dimension (HSDS's POST body form): an int
    index, a list of coordinates, or the text of one part (``"2:8"``)."""
    parts: list[str] = []
    for item in items:
        if isinstance(item, bool):
            raise InvalidInput("select items must be integers, coordinate lists or part texts")
        if isinstance(item, int):
            parts.append(str(item))
        elif isinstance(item, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in item):
            parts.append("[" + ",".join(str(c) for c in item) + "]")
        elif isinstance(item, str) and "[" not in item and "]" not in item and "," not in item:
            parts.append(item)
        else:
            raise InvalidInput("select items must be integers, coordinate lists or part texts")
    return "[" + ",".join(parts) + "]"


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _split_top_level(inner: str) -> list[str]:
    """Split on commas outside brackets; ``""`` (as in ``[]``) has no parts."""
    if inner == "":
        return []
    parts: list[str] = []
    depth, begin = 0, 0
    for pos, ch in enumerate(inner):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise InvalidInput("select coordinate lists cannot be nested")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InvalidInput("select has an unbalanced ']'")
        elif ch == "," and depth == 0:
            parts.append(inner[begin:pos])
            begin = pos + 1
    if depth != 0:
        raise InvalidInput("select has an unbalanced '['")
    parts.append(inner[begin:])
    return parts


def _parse_int(token: str, what: str, dim: int) -> int:
    if not _INT_RE.fullmatch(token):
        raise InvalidInput(f"select {what} in dim {dim} is not an integer: {_clip(token)!r}")
    if len(token) > 64:  # int() of thousands of digits is slow, and no extent is that large
        raise InvalidInput(f"select {what} in dim {dim} is out of range: {_clip(token)!r}")
    return int(token)


def _parse_part(raw: str, extent: int, dim: int, clamp: bool) -> Part:
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise InvalidInput(f"select dim {dim}: text after a coordinate list")
        inner = raw[1:-1]
        tokens = inner.split(",") if inner else []
        return coords_part([_parse_int(t, "coordinate", dim) for t in tokens], extent, dim)
    if ":" in raw:
        fields = raw.split(":")
        if len(fields) > 3:
            raise InvalidInput(f"select dim {dim}: too many ':' in {_clip(raw)!r}")
        start, stop, step = (
            None if f == "" else _parse_int(f, name, dim)
            for f, name in zip(fields + [""] * (3 - len(fields)), ("start", "stop", "step"))
        )
        return slice_part(start, stop, step, extent, dim, clamp=clamp)
    if raw == "":
        raise InvalidInput(f"select dim {dim} is empty")
    return index_part(_parse_int(raw, "index", dim), extent, dim)
