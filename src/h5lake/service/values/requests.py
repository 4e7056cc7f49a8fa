"""What a value request asks for and what it answers, as typed values.

The HTTP edge parses a request into one of these (no dataset needed: anything that depends on
the dataset's shape or type stays text until the use case checks it against the document), and
serializes the `ValuesRead` it gets back.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.selection import PointSelection
from h5lake.model.selectparse import Bounds
from h5lake.service.budget import NOTHING, Reservation
from h5lake.service.documents import Doc


@dataclass(frozen=True, slots=True)
class Query:
    expression: str
    limit: int | None


@dataclass(frozen=True, slots=True)
class Points:
    """Point coordinates as sent: packed uint64 (``packed``) or a JSON list (``listed``)."""

    packed: bytes | None = None
    listed: Any = None

    def parse(self, shape: tuple[int, ...]) -> PointSelection:
        if self.packed is not None:
            return PointSelection.from_bytes(self.packed, shape)
        return PointSelection.from_json(self.listed, shape)

    @property
    def work(self) -> int:
        """About how many bytes of work parsing them is (for the CPU pool's threshold)."""
        if self.packed is not None:
            return len(self.packed)
        return 16 * len(self.listed) if isinstance(self.listed, list) else 0


@dataclass(frozen=True, slots=True)
class ValueRead:
    """A read of a hyperslab (``select``, all when None), optionally of some compound
    ``fields``, filtered by ``query``, answered as packed bytes (``binary``) or JSON. A dataset
    with a null dataspace has no values to read: 400, as HSDS answers."""

    select: str | list[Any] | Bounds | None = None
    fields: str | None = None
    query: Query | None = None
    binary: bool = False


@dataclass(frozen=True, slots=True)
class PointRead:
    points: Points
    binary: bool = False
    fields: str | None = None


@dataclass(frozen=True, slots=True)
class ValuesRead:
    """What a read found: ``values`` of type ``type_json`` (the requested fields only), or a
    stream of ``size`` packed bytes (``blocks``: sent as they come when ``streamed``, else joined
    into one reply); ``index`` holds a query's match positions.
    ``held``: what the read reserved of the server's reply budget (`service.budget`) for values
    read whole; the caller releases it once the reply is sent."""

    type_json: Doc
    values: np.ndarray | None = None
    index: np.ndarray | None = None
    size: int = 0
    blocks: AsyncIterator[bytes | memoryview] | None = None
    streamed: bool = False
    held: Reservation = NOTHING


class PackedBody(Protocol):
    """A packed (binary) request body, read only when and as the use case needs it.

    A body may also have ``async readinto(view: memoryview) -> int``, which fills ``view`` with
    its next bytes (fewer only at its end; 0 once it is over): a streamed write then receives
    each block in place (the HTTP edge copies the socket's pieces straight into it)."""

    def stream(self) -> AsyncIterator[bytes]:
        """The body as it arrives, in pieces of any size (for writes of any size)."""
        ...

    async def read(self) -> bytes | memoryview:
        """The whole body (bounded by the request-size limit)."""
        ...


_NO_SELECT = object()


@dataclass(frozen=True, slots=True)
class JsonValues:
    """A JSON write body: values as JSON (``value``) or packed bytes (``packed``, from
    ``value_base64``), for ``points``, a ``select`` or ``start``/``stop``/``step`` (``bounds``)
    given in the body; ``element_count`` values broadcast over the selection."""

    value: Any = None
    packed: bytes | None = None
    points: Any = None
    select: Any = _NO_SELECT
    bounds: Bounds | None = None
    element_count: Any = None
    fields: str | None = None  # HSDS reads ``fields`` from the body too

    @classmethod
    def from_body(cls, body: Any) -> JsonValues:
        if not isinstance(body, dict):
            raise InvalidInput("body must be a JSON object with value (or value_base64)")
        packed = None
        if "value_base64" in body:
            try:
                packed = base64.b64decode(body["value_base64"], validate=True)
            except (ValueError, TypeError):  # binascii.Error, and non-ASCII text
                raise InvalidInput("value_base64 is not valid base64") from None
        elif "value" not in body:
            raise InvalidInput("body needs value or value_base64")
        bounds = Bounds.from_body(body)
        select = body.get("select", _NO_SELECT)
        if bounds is not None and (select is not _NO_SELECT or "points" in body):
            raise InvalidInput("start/stop/step cannot be combined with select or points")
        fields = body.get("fields")
        if fields is not None and not isinstance(fields, str):
            raise InvalidInput("fields must be a string of names joined by ':'")
        return cls(body.get("value"), packed, body.get("points"), select, bounds, body.get("element_count"), fields)

    @property
    def has_select(self) -> bool:
        return self.select is not _NO_SELECT


@dataclass(frozen=True, slots=True)
class Append:
    count: int
    axis: int = 0


@dataclass(frozen=True, slots=True)
class ValueWrite:
    """A write of a hyperslab (``select``; all when None) or, with ``append``, of the region
    an append adds; optionally of some compound ``fields`` only."""

    body: PackedBody | JsonValues
    select: str | None = None
    fields: str | None = None
    append: Append | None = None
    element_count: Any = None  # the ``element_count`` parameter (text), if given


@dataclass(frozen=True, slots=True)
class QueryUpdate:
    """Set ``values`` (field name -> value) in every element matching ``query``."""

    query: Query
    values: dict[str, Any]
    fields: str | None = None  # a ``fields`` parameter, checked though a query update ignores it
    select: str | list[Any] | Bounds | None = None  # only the selected elements are looked at (HSDS)

    @classmethod
    def from_body(cls, query: Query, body: Any, fields: str | None = None, select: str | None = None) -> QueryUpdate:
        """``{"value": {field: value}}`` (beside it a ``select`` or ``start``/``stop``/``step``,
        as in other value bodies, and a ``Limit``, which wins over the query parameter as in
        HSDS), or HSDS's bare ``{field: value}``; a ``select`` query parameter wins over the body's."""
        if not isinstance(body, dict) or not body:
            raise InvalidInput(QUERY_UPDATE_SHAPE)
        if isinstance(body.get("value"), dict):
            bounds = Bounds.from_body(body)
            if bounds is not None and "select" in body:
                raise InvalidInput("start/stop/step cannot be combined with select")
            in_body = bounds if bounds is not None else body.get("select")
            if "Limit" in body:
                limit = body["Limit"]
                if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                    raise InvalidInput("Limit must be an integer of at least 0 (0: no limit)")
                query = Query(query.expression, limit or None)
            return cls(query, body["value"], fields, select if select is not None else in_body)
        return cls(query, body, fields, select)


QUERY_UPDATE_SHAPE = "a query update needs a compound dataset and {field: value} (or {\"value\": {field: value}})"
