"""The indexed leaf of a map bucket (format 2, maps/leaf.py): whole and partial decoding,
blocks stored unfiltered when filtering does not help, and leaves of format 1 still read."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from h5lake.chunks.filters import FilterPipeline
from h5lake.errors import DataCorruption
from h5lake.maps import data as md
from h5lake.maps import leaf as mapleaf
from h5lake.maps.buckets import MapFormat

VSTR = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}
I64 = {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}
OPAQUE = {"class": "H5T_OPAQUE", "size": 700}


def _sorted(fmt: MapFormat, keys: np.ndarray, values: np.ndarray) -> md.Pairs:
    pairs, _, _ = md.merge(fmt.empty(), md.Pairs(keys, values), np.zeros(len(keys), bool), fmt.keys.variable)
    return pairs


@pytest.mark.parametrize("filters", [[], [{"class": "H5Z_FILTER_DEFLATE", "level": 1}], [{"class": "H5Z_FILTER_LZ4"}]])
def test_fixed_pairs_whole_and_in_part(filters: list[dict[str, object]]) -> None:
    fmt = MapFormat(md.KeyCodec(I64), md.ValueCodec(OPAQUE), FilterPipeline.from_json(filters, 1))
    rng = np.random.default_rng(1)
    n = 200
    pairs = _sorted(fmt, md.KeyCodec(I64).from_json(list(range(n))), np.zeros(n, "V700"))
    values = np.zeros((n, 700), np.uint8)
    values[: n // 2] = rng.integers(0, 256, (n // 2, 700))  # the first half (in leaf order) incompressible
    pairs = md.Pairs(pairs.keys, values.view("V700").ravel())
    data = fmt.encode_leaf(3, pairs)
    header, back = fmt.decode(data)
    assert header.version == 2 and header.count == n and header.depth == 3 and back is not None
    assert back.keys.tolist() == pairs.keys.tolist() and back.values.tobytes() == pairs.values.tobytes()
    index = fmt.index(header, memoryview(data)[md.HEADER_SIZE :])
    section = index.section
    assert len(section.counts) > 5 and int(section.counts.sum()) == n  # blocks of about 16 KiB
    if filters:
        assert section.raw.any() and not section.raw.all()  # incompressible blocks stored as they are
    want = md.KeyCodec(I64).from_json([5, 1000, 199, 0])
    at = index.finder.find(want)
    assert [bool(a >= 0) for a in at] == [True, False, True, True]
    for a in at[at >= 0]:
        b = int(section.blocks_of(np.array([a]))[0])
        part = data[section.offsets[b] : section.offsets[b] + section.sizes[b]]
        got = mapleaf.decode_blocks([part], [int(section.counts[b])], [bool(section.raw[b])], fmt.values, fmt.pipeline.decode)
        assert got[a - section.first[b]].tobytes() == pairs.values[a].tobytes()
    assert fmt.encode_leaf(3, pairs) != data  # each encoding draws a new generation
    with pytest.raises(DataCorruption):
        fmt.decode(data[:-1])


def test_variable_pairs_and_empty_leaf() -> None:
    vals = md.ValueCodec(VSTR)
    fmt = MapFormat(md.KeyCodec(VSTR), vals, FilterPipeline.from_json([{"class": "H5Z_FILTER_LZ4"}], 1))
    texts = [f"key {i} " + "é" * (i % 7) for i in range(500)]
    pairs = _sorted(fmt, fmt.keys.from_json(texts), vals.from_json([t * 20 for t in texts], len(texts)))
    data = fmt.encode_leaf(0, pairs)
    header, back = fmt.decode(data)
    assert back is not None and fmt.keys.to_json(back.keys) == fmt.keys.to_json(pairs.keys)
    assert vals.to_json(back.values) == vals.to_json(pairs.values)
    index = fmt.index(header, memoryview(data)[md.HEADER_SIZE :])
    wider = fmt.keys.from_json(["key 3 ééé", "key 3 éééééééééééééééééééé", "nope"])
    assert [bool(a >= 0) for a in index.finder.find(wider)] == [True, False, False]
    empty = fmt.encode_leaf(1, fmt.empty())
    header, none = fmt.decode(empty)
    assert header.count == 0 and none is not None and len(none) == 0


def test_leaves_of_format_1_still_read() -> None:
    fmt = MapFormat(md.KeyCodec(I64), md.ValueCodec(I64), FilterPipeline.from_json([{"class": "H5Z_FILTER_DEFLATE"}], 1))
    keys = fmt.keys.from_json([3, 1, 2])
    pairs = _sorted(fmt, keys, np.array([30, 10, 20], "<i8").view("V8"))
    payload = zlib.compress(md.leaf_payload(pairs, False, False))
    old = md.leaf_bytes(0, 3, False, False, payload)
    header, back = fmt.decode(old)
    assert header.version == 1 and back is not None
    assert back.values.tobytes() == pairs.values.tobytes()
