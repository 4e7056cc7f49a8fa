"""A compact dataset's chunks, held in its document (``"compact": {"chunks": {"i_j": base64}}``),
as the little of a store the chunk engine uses: get, conditional put and byte ranges, in memory.
Reads and writes of a compact dataset run the ordinary engine on it (see `service.datasets.compact`)."""

from __future__ import annotations

import base64
from typing import Final

from h5lake.model.ids import chunk_key, index_name, parse_chunk_key, parse_index_name
from h5lake.model.layout import COMPACT_KEY
from h5lake.storage.base import Blob, PreconditionFailed

KEY: Final = COMPACT_KEY


def listed_chunks(listing: dict[str, str]) -> dict[tuple[int, ...], bytes]:
    """``{"0_1": base64}`` as chunk index: stored bytes."""
    return {parse_index_name(name): base64.b64decode(text) for name, text in listing.items()}


class DocumentChunks:
    """A document's chunks as the little of a store the chunk engine uses (get, conditional
    put, byte ranges), in memory: a compact dataset's reads and writes run on it."""

    def __init__(self, chunks: dict[tuple[int, ...], bytes], dataset_id: str) -> None:
        self.names = {chunk_key(dataset_id, index): index for index in chunks}
        self._blobs = {chunk_key(dataset_id, index): Blob(data, str(n), 0.0) for n, (index, data) in enumerate(chunks.items())}
        self._serial = len(self._blobs)

    async def get(self, key: str) -> Blob | None:
        return self._blobs.get(key)

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        blob = self._blobs.get(key)
        return None if blob is None else blob.data[offset : offset + length]

    async def put(self, key: str, data: bytes | memoryview, *, if_match: str | None = None, if_none_match: bool = False) -> str:
        current = self._blobs.get(key)
        if if_none_match and current is not None or if_match is not None and (current is None or current.etag != if_match):
            raise PreconditionFailed(key)
        self._serial += 1
        self._blobs[key] = Blob(bytes(data), str(self._serial), 0.0)
        return str(self._serial)

    async def delete(self, key: str) -> None:
        """Drop a chunk (it reads as fill again): the Zarr bridge's DELETE of a chunk key."""
        self._blobs.pop(key, None)

    def contents(self, dataset_id: str) -> dict[str, str]:
        """The chunks as the document lists them (index name: base64)."""
        out = {}
        for key, blob in self._blobs.items():
            index = self.names.get(key)
            if index is None:
                index = parse_chunk_key(key)[1]
            out[index_name(index)] = base64.b64encode(blob.data).decode()
        return out

    def size(self) -> int:
        return sum(len(b.data) for b in self._blobs.values())
