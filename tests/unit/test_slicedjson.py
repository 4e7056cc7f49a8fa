"""A large document parsed a slice at a time is the document orjson reads, paused often enough
that no slice holds the interpreter long; sorting in runs gives ``sorted``'s order."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h5lake.model.ordering import sorted_in_runs
from h5lake.model.slicedjson import STEP, NotSliceable, parse_in_slices

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _run(data: bytes, step: int) -> tuple[Any, int]:
    steps = parse_in_slices(data, step)
    pauses = 0
    try:
        while True:
            next(steps)
            pauses += 1
    except StopIteration as done:
        return done.value, pauses


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON, max_size=6), st.integers(1, 64))
def test_any_document_orjson_wrote_is_read_as_orjson_reads_it(doc: dict[str, Any], step: int) -> None:
    data = orjson.dumps(doc)
    got, _ = _run(data, step)
    want = orjson.loads(data)
    assert got == want and orjson.dumps(got) == data  # the same values, types and order


def test_a_wide_group_is_read_in_short_slices() -> None:
    links = {f"l{random.getrandbits(40):x}\u00e9\"}},": {"class": "H5L_TYPE_SOFT", "created": 1.7e9 + i / 7,
                                                           "h5path": f"/a\\b\"}}\n{i}"} for i in range(50_000)}
    data = orjson.dumps({"id": "g-1", "links": links, "attributes": {}, "created": 1.5})
    got, pauses = _run(data, STEP)
    assert got == orjson.loads(data) and list(got["links"]) == list(links)
    assert pauses >= 2 * (len(data) // STEP)  # decoding, then parsing: a pause every STEP of each


@pytest.mark.parametrize("text", [b"[1]", b'{"a": 1}', b'{"a":1', b'{"a":1}x', b'{"a":\xff}', b' {}', b'{"a":}',
                                  b'{"a":{"b" :1}}', b"", b"{", b'{"a":NaN,"b":{}}'[:7]])
def test_text_orjson_did_not_write_is_left_to_orjson(text: bytes) -> None:
    with pytest.raises(NotSliceable):
        _run(text, 4)


@given(st.lists(st.tuples(st.integers(0, 50), st.text(max_size=3))), st.integers(1, 9))
def test_sorting_in_runs_is_sorting(items: list[tuple[int, str]], run: int) -> None:
    assert sorted_in_runs(items, run=run) == sorted(items)
    by_number = sorted_in_runs(items, key=lambda kv: kv[0], run=run)
    assert by_number == sorted(items, key=lambda kv: kv[0])  # equal keys keep their order
