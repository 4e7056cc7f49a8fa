"""The indexed leaf of a map bucket (format 2; docs/maps.md, "Storage"), pure part.

A leaf of format 1 is its keys and values filtered as one payload, so reading one value means
reading and decoding the whole bucket. Format 2 keeps the keys apart from the values and cuts
the values into blocks of about ``VALUE_BLOCK`` bytes, each filtered on its own::

    header (32 bytes: format 2, pair count, stored bytes of the key section, generation)
    key section, filtered: u32 block count, u32 pairs per block, u32 stored bytes per block, keys
    value blocks, each filtered: the values of consecutive pairs

A section or block that the filters do not make smaller is stored as it is (a header flag for
the key section, the top bit of a block's pair count for a block): incompressible values cost
no decoding.

so a read of a few keys fetches the header and key section, then only the blocks that hold the
values it wants (one ranged read of one version of the object). The generation is a random
number each encoding draws: a reader that fetched the key section and the blocks in two reads
compares the header read with the blocks against it to know both came from the same bucket.

The filters are passed in (``encode_bytes``, ``decode_bytes``: a pipeline's), so this module does no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.errors import DataCorruption
from h5lake.maps import data as md

VALUE_BLOCK = 16 * 1024
"""Values are cut into blocks of about this many bytes (one larger value is a block alone)."""
_RAW = 1 << 31
"""In a block's pair count: the block is stored unfiltered."""
INCOMPRESSIBLE = 0.97
"""When the filters shrink a leaf's values together by less than this, every block is stored
unfiltered without trying each (a filter call costs tens of microseconds)."""

Encode = Callable[[bytes], bytes]
Decode = Callable[[bytes | memoryview], bytes]


@dataclass(frozen=True, slots=True)
class KeySection:
    """A leaf's keys and where the value of each pair is: ``counts[b]`` pairs in block ``b``
    (from pair ``first[b]``), stored in ``sizes[b]`` bytes from ``offsets[b]`` of the bucket
    (unfiltered when ``raw[b]``)."""

    keys: np.ndarray[Any, Any]
    counts: np.ndarray[Any, Any]
    sizes: np.ndarray[Any, Any]
    offsets: np.ndarray[Any, Any]
    raw: np.ndarray[Any, Any]
    ends: np.ndarray[Any, Any]

    @property
    def first(self) -> np.ndarray[Any, Any]:
        return self.ends - self.counts

    def blocks_of(self, pairs: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The block holding each pair index."""
        return np.searchsorted(self.ends, pairs, side="right")


def _value_sizes(values: np.ndarray[Any, Any], variable: bool) -> np.ndarray[Any, Any]:
    if not variable:
        return np.full(len(values), values.dtype.itemsize, dtype=np.int64)
    return np.fromiter((4 + len(v) for v in values.tolist()), dtype=np.int64, count=len(values))


def block_bounds(values: np.ndarray[Any, Any], variable: bool) -> list[tuple[int, int]]:
    """(first pair, end) of each value block: a block is the pairs whose values start in the
    same ``VALUE_BLOCK`` window of the values laid end to end."""
    if not len(values):
        return []
    sizes = _value_sizes(values, variable)
    window = (np.cumsum(sizes) - sizes) // VALUE_BLOCK
    cuts = [0, *(np.flatnonzero(np.diff(window)) + 1).tolist(), len(values)]
    return list(itertools.pairwise(cuts))


def _smaller(data: bytes, encode_bytes: Encode) -> tuple[bytes, bool]:
    """(what to store, stored unfiltered)."""
    encoded = encode_bytes(data)
    return (data, True) if len(encoded) >= len(data) else (encoded, False)


def encode(depth: int, pairs: md.Pairs, variable_keys: bool, variable_values: bool,
           encode_bytes: Encode, generation: int) -> bytes:
    """A leaf of format 2 holding ``pairs`` (in iteration order)."""
    bounds = block_bounds(pairs.values, variable_values)
    if variable_values:
        parts = [md.section(pairs.values[a:b], True) for a, b in bounds]
    else:
        raw = memoryview(pairs.values.tobytes())
        size = pairs.values.dtype.itemsize
        parts = [bytes(raw[a * size : b * size]) for a, b in bounds]
    whole = b"".join(parts)
    if len(parts) > 1 and len(encode_bytes(whole)) >= len(whole) * INCOMPRESSIBLE:
        blocks = [(part, True) for part in parts]  # the values do not compress: no block will
    else:
        blocks = [_smaller(part, encode_bytes) for part in parts]
    table = np.empty(1 + 2 * len(bounds), dtype="<u4")
    table[0] = len(bounds)
    table[1 : 1 + len(bounds)] = [(b - a) | (_RAW if unfiltered else 0) for (a, b), (_, unfiltered) in zip(bounds, blocks)]
    table[1 + len(bounds) :] = [len(x) for x, _ in blocks]
    key_section, raw_keys = (_smaller(table.tobytes() + md.section(pairs.keys, variable_keys), encode_bytes)
                             if len(pairs) else (b"", True))
    head = md.leaf_header(depth, len(pairs), variable_keys, variable_values, len(key_section), generation, raw_keys)
    return b"".join([head, key_section, *(x for x, _ in blocks)])


def decode_keys(header: md.BucketHeader, stored: bytes | memoryview, keys: md.KeyCodec,
                decode_bytes: Decode) -> KeySection:
    """The key section of a leaf of format 2 from its stored bytes (those after the header)."""
    if header.count == 0:
        empty = np.empty(0, dtype=np.int64)
        return KeySection(np.empty(0, dtype="S1"), empty, empty, empty, np.empty(0, dtype=bool), empty)
    if len(stored) < header.key_bytes:
        raise DataCorruption("map bucket is truncated")
    section = stored[: header.key_bytes]
    raw = memoryview(section if header.raw_keys else decode_bytes(section))
    if len(raw) < 4:
        raise DataCorruption("map bucket key section is truncated")
    nblocks = int(np.frombuffer(raw[:4], dtype="<u4")[0])
    end = 4 + 8 * nblocks
    if end > len(raw):
        raise DataCorruption("map bucket key section is truncated")
    table = np.frombuffer(raw[4:end], dtype="<u4").astype(np.int64)
    unfiltered = table[:nblocks] >= _RAW
    counts, sizes = table[:nblocks] & (_RAW - 1), table[nblocks:]
    if int(counts.sum()) != header.count:
        raise DataCorruption("map bucket block table does not match its pair count")
    found, at = md.read_section(raw, end, header.count, keys.variable, keys.width, "S")
    if at != len(raw):
        raise DataCorruption("map bucket key section has trailing bytes")
    offsets = md.HEADER_SIZE + header.key_bytes + np.cumsum(sizes) - sizes
    return KeySection(found, counts, sizes, offsets, unfiltered, np.cumsum(counts))


def decode_blocks(blocks: Sequence[bytes | memoryview], counts: Sequence[int], unfiltered: Sequence[bool],
                  values: md.ValueCodec, decode_bytes: Decode) -> np.ndarray[Any, Any]:
    """The values of the given stored blocks (holding ``counts`` pairs each), end to end."""
    if not values.variable and all(unfiltered):  # packed values stored as they are: one copy
        joined = b"".join(blocks)
        if len(joined) != sum(counts) * values.size:
            raise DataCorruption("map bucket value block has trailing bytes")
        return np.frombuffer(joined, dtype=f"V{max(1, values.size)}")
    parts = []
    for stored, count, as_is in zip(blocks, counts, unfiltered):
        raw = memoryview(stored if as_is else decode_bytes(stored))
        found, at = md.read_section(raw, 0, count, values.variable, values.size, "V")
        if at != len(raw):
            raise DataCorruption("map bucket value block has trailing bytes")
        parts.append(found)
    if not parts:
        return md.empty_pairs(values.variable, values.size).values
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def decode(header: md.BucketHeader, data: bytes, keys: md.KeyCodec, values: md.ValueCodec,
           decode_bytes: Decode) -> md.Pairs:
    """All the pairs of a leaf of format 2 from its whole stored bytes."""
    view = memoryview(data)
    section = decode_keys(header, view[md.HEADER_SIZE :], keys, decode_bytes)
    if not header.count:
        return md.empty_pairs(values.variable, values.size)
    end = int(section.offsets[-1] + section.sizes[-1]) if len(section.sizes) else md.HEADER_SIZE + header.key_bytes
    if end != len(view):
        raise DataCorruption("map bucket is truncated" if end > len(view) else "map bucket has trailing bytes")
    blocks = [view[o : o + s] for o, s in zip(section.offsets.tolist(), section.sizes.tolist())]
    values_read = decode_blocks(blocks, section.counts.tolist(), section.raw.tolist(), values, decode_bytes)
    return md.Pairs(section.keys, values_read)
