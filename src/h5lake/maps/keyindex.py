"""The key sections of map buckets this process has read (leaves of format 2,
:mod:`h5lake.maps.leaf`), kept so that a read of a few keys of a bucket read before costs
one ranged read: the header (the same generation: the bucket is unchanged) with the value blocks
wanted. Like the index blocks an SSTable reader keeps; bounded by bytes, least recently used
dropped first. A bucket replaced since shows another generation, and its entry is then read
again, so an entry is never trusted past the read that checks it."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from h5lake.maps import data as md
from h5lake.maps import leaf as mapleaf

MAX_BYTES = 64 * 1024 * 1024
"""Bytes of key sections (keys, fingerprints, block tables) a process keeps at most."""


@dataclass(frozen=True, slots=True)
class KeyIndex:
    header: md.BucketHeader
    section: mapleaf.KeySection
    finder: md.KeyFinder

    @property
    def nbytes(self) -> int:
        s = self.section
        return self.finder.nbytes + int(s.counts.nbytes + s.sizes.nbytes + s.offsets.nbytes + s.raw.nbytes) + 256


class KeyIndexes:
    """Key indexes by the storage key of their bucket."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, KeyIndex] = OrderedDict()
        self._bytes = 0

    def get(self, key: str) -> KeyIndex | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: str, index: KeyIndex) -> None:
        self.drop(key)
        size = index.nbytes
        if size > self.max_bytes // 4:
            return  # one huge bucket would push out everything else
        while self._entries and self._bytes + size > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes
        self._entries[key] = index
        self._bytes += size

    def drop(self, key: str) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.nbytes

    def __len__(self) -> int:
        return len(self._entries)
