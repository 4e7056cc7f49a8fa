"""HDF5 files on S3 for ``h5lake load s3://BUCKET/KEY``: a read-only file object over ranged GETs.

Why a file object: h5py opens any Python file object (its ``fileobj`` driver), so the loader
reads an S3 object as it reads a local file, without downloading it; the h5py wheels carry no
ros3 driver. Reads go through obstore (the client the server's S3 store uses), in blocks of
`BLOCK` bytes kept in a small LRU cache: HDF5 reads metadata in many small pieces close
together, which then cost one GET per block instead of one per piece.

Settings are the server's: the endpoint and region from ``--s3-endpoint``/``--s3-region`` (or
``H5LAKE_S3_ENDPOINT``/``H5LAKE_S3_REGION``), credentials from the standard AWS environment.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from typing import Any

import obstore
from obstore.store import S3Store

BLOCK = 1024 * 1024
CACHED_BLOCKS = 64
SCHEME = "s3://"


def is_s3(text: object) -> bool:
    return isinstance(text, str) and text.startswith(SCHEME)


def split_uri(uri: str) -> tuple[str, str]:
    """``s3://BUCKET/KEY`` as (bucket, key); ``ValueError`` when either is missing."""
    bucket, _, key = uri[len(SCHEME) :].partition("/")
    if not bucket or not key or key.endswith("/"):
        raise ValueError(f"{uri}: an S3 source must look like s3://BUCKET/PATH/FILE.h5")
    return bucket, key


def make_store(bucket: str, endpoint: str | None, region: str | None) -> Any:
    config: dict[str, Any] = {}
    if endpoint:
        config["endpoint"] = endpoint
    if region:
        config["region"] = region
    options = {"allow_http": True} if endpoint and endpoint.startswith("http://") else {}
    return S3Store(bucket, config=config, client_options=options)  # type: ignore[arg-type]


class S3File(io.RawIOBase):
    """One S3 object, read-only and seekable; ``gets`` counts the GETs made."""

    def __init__(self, uri: str, *, endpoint: str | None = None, region: str | None = None, block: int = BLOCK) -> None:
        super().__init__()
        self.uri = uri
        bucket, self.key = split_uri(uri)
        self.store = make_store(bucket, endpoint, region)
        self.size = int(obstore.head(self.store, self.key)["size"])  # FileNotFoundError when missing
        self.block = block
        self.pos = 0
        self.gets = 0
        self._blocks: OrderedDict[int, bytes] = OrderedDict()

    def __repr__(self) -> str:
        return f"S3File({self.uri!r})"

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def _get_block(self, index: int) -> bytes:
        found = self._blocks.get(index)
        if found is not None:
            self._blocks.move_to_end(index)
            return found
        start = index * self.block
        data = bytes(obstore.get_range(self.store, self.key, start=start, end=min(self.size, start + self.block)))
        self.gets += 1
        self._blocks[index] = data
        if len(self._blocks) > CACHED_BLOCKS:
            self._blocks.popitem(last=False)
        return data

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        want = min(len(out), max(0, self.size - self.pos))
        if want >= 4 * self.block:  # a large read (values): one GET of exactly that range
            data = bytes(obstore.get_range(self.store, self.key, start=self.pos, end=self.pos + want))
            self.gets += 1
            out[:want] = data
            self.pos += want
            return want
        done = 0
        while done < want:
            index, inside = divmod(self.pos, self.block)
            data = self._get_block(index)
            n = min(want - done, len(data) - inside)
            out[done : done + n] = data[inside : inside + n]
            done += n
            self.pos += n
        return done

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes (the user block), without moving the position."""
        here = self.pos
        self.seek(0)
        buf = bytearray(min(n, self.size))
        self.readinto(buf)
        self.seek(here)
        return bytes(buf)
