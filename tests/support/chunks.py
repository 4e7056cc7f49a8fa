"""A dataset's stored chunk bytes read straight from the store, wherever the server keeps them:
a chunk object of its own, or the dataset's document (compact values, ``docs/storage.md``)."""

from __future__ import annotations

import base64
import json
from typing import Protocol

from h5lake.model.ids import chunk_key, object_key


class Readable(Protocol):
    def read(self, key: str) -> bytes | None: ...


def stored_chunk(raw: Readable, dataset_id: str, index: tuple[int, ...]) -> bytes | None:
    """The stored bytes of chunk ``index`` (filters applied), or None when it was never written."""
    found = raw.read(chunk_key(dataset_id, index))
    if found is not None:
        return found
    doc = raw.read(object_key(dataset_id))
    listed = json.loads(doc).get("compact", {}).get("chunks", {}) if doc else {}
    name = "_".join(map(str, index)) or "0"
    return base64.b64decode(listed[name]) if name in listed else None
