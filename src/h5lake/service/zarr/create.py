"""``PUT .../zarr.json``: a new group or array, or an existing node's attributes or shape."""

from __future__ import annotations

from typing import Any

from h5lake.errors import InvalidInput
from h5lake.service.context import Caller, Service
from h5lake.service.zarr import nodes


async def put_meta(svc: Service, caller: Caller, key: nodes.Key, body: Any) -> bool:
    raise InvalidInput("not yet")
