"""Where a map's keys go: the 64-bit placement hash of each key's bytes (its bits, read from the
lowest, pick the path through the bucket tree), the bit-reversed order that walks the tree depth
first, and a cheaper fingerprint for comparing keys of one width. Pure numpy over arrays of keys."""

from __future__ import annotations

from typing import Any

import numpy as np

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def key_hashes(keys: np.ndarray[Any, Any], variable: bool) -> np.ndarray[Any, Any]:
    """A 64-bit hash of each key's bytes: FNV-1a over the bytes, the length mixed in, then the
    splitmix64 finalizer. Bit ``d`` of the hash picks the child at depth ``d`` of the bucket tree."""
    n = len(keys)
    width = keys.dtype.itemsize
    matrix = np.frombuffer(keys.tobytes(), dtype=np.uint8).reshape(n, width)
    lengths = np.char.str_len(keys).astype(np.uint64) if variable else np.full(n, width, dtype=np.uint64)
    h = np.full(n, _FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(width):
            step = (h ^ matrix[:, j].astype(np.uint64)) * _FNV_PRIME
            h = np.where(lengths > j, step, h) if variable else step
        h ^= lengths
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return h


def bit_reversed(h: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The hashes with their 64 bits in reverse order: sorting by these is the order of a
    depth-first walk of the bucket tree (child 0 first), whatever its shape."""
    x = h.astype(np.uint64).copy()
    for shift, mask in ((1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
                        (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)):
        m, s = np.uint64(mask), np.uint64(shift)
        x = ((x >> s) & m) | ((x & m) << s)
    return x


def fingerprints(keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A cheap 64-bit mix of each key's bytes, eight at a time (equal keys of one width have
    equal fingerprints; not the placement hash, which works byte by byte)."""
    width = -(-keys.dtype.itemsize // 8) * 8
    words = np.ascontiguousarray(keys.astype(f"S{width}")).view("<u8").reshape(len(keys), width // 8)
    out = np.full(len(keys), _FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in words.T:
            out = (out ^ column) * _MIX
            out ^= out >> np.uint64(31)
    return out


_MIX = np.uint64(0x9E3779B97F4A7C15)
