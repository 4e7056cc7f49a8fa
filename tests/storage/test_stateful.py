"""Model-based test: random sequences of store operations against a plain dict.

Hypothesis drives put, create-only, if-match (fresh and stale), delete, get, ranged get and
list (prefix, delimiter, start_after) on a backend and on the model, and shrinks any
disagreement to a shortest sequence. Keys all have the same depth (a local key cannot also be
a folder) and use the characters that sort differently in a directory walk.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from h5lake.storage.base import PreconditionFailed, Store

T = TypeVar("T")
Listing = Callable[..., list[str]]

KEYS = [f"{top}/{mid}/{leaf}" for top in ("a", "a b", "a-b", "é") for mid in ("x", "x.y", "x y")
        for leaf in ("k", "k 1", ".domain.json")] + ["f/k", "f/k-1", "f/kk"]  # fmt: skip
PREFIXES = ["", "a", "a/", "a b/", "a/x", "a/x/", "a/x.y/", "a-", "é/", "f/", "f/k", "zz"]
MARKS = st.none() | st.sampled_from(KEYS + PREFIXES + ["a/x/k 0", "f/k-0"])


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class StoreModel(RuleBasedStateMachine):
    """Set ``make`` on a subclass: it returns a new, empty store."""

    make: Callable[[], Store]
    expected_listing: Listing  # conftest's reference listing

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.store = type(self).make()
        self.model: dict[str, bytes] = {}

    def run(self, operation: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(operation)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()

    @rule(key=st.sampled_from(KEYS), data=st.binary(max_size=40))
    def put(self, key: str, data: bytes) -> None:
        assert self.run(self.store.put(key, data)) == md5(data)
        self.model[key] = data

    @rule(key=st.sampled_from(KEYS), data=st.binary(max_size=40))
    def create(self, key: str, data: bytes) -> None:
        if key in self.model:
            with pytest.raises(PreconditionFailed):
                self.run(self.store.put(key, data, if_none_match=True))
        else:
            self.run(self.store.put(key, data, if_none_match=True))
            self.model[key] = data

    @rule(key=st.sampled_from(KEYS), data=st.binary(max_size=40), stale=st.booleans())
    def put_if_match(self, key: str, data: bytes, stale: bool) -> None:
        current = self.model.get(key)
        etag = md5(b"" if current is None else current)
        if stale:
            etag = md5((current or b"") + b"-stale")
        if current is None or stale:
            with pytest.raises(PreconditionFailed):
                self.run(self.store.put(key, data, if_match=etag))
        else:
            self.run(self.store.put(key, data, if_match=etag))
            self.model[key] = data

    @rule(key=st.sampled_from(KEYS))
    def delete(self, key: str) -> None:
        self.run(self.store.delete(key))
        self.model.pop(key, None)

    @rule(key=st.sampled_from(KEYS))
    def get(self, key: str) -> None:
        blob = self.run(self.store.get(key))
        info = self.run(self.store.head(key))
        if key not in self.model:
            assert blob is None and info is None
        else:
            data = self.model[key]
            assert blob is not None and (blob.data, blob.etag) == (data, md5(data))
            assert info is not None and (info.size, info.etag) == (len(data), md5(data))

    @rule(key=st.sampled_from(KEYS), offset=st.integers(0, 50), length=st.integers(0, 50))
    def get_range(self, key: str, offset: int, length: int) -> None:
        got = self.run(self.store.get_range(key, offset, length))
        data = self.model.get(key)
        assert got == (None if data is None else data[offset : offset + length])

    @rule(prefix=st.sampled_from(PREFIXES), rollup=st.booleans(), start_after=MARKS)
    def list_keys(self, prefix: str, rollup: bool, start_after: str | None) -> None:
        self.check_listing(prefix, rollup, start_after)

    @rule(prefix=st.sampled_from(PREFIXES), rollup=st.booleans(), pick=st.data())
    def list_keys_after_an_entry(self, prefix: str, rollup: bool, pick: st.DataObject) -> None:
        """start_after an entry there is (a key, or a common prefix), as paging does."""
        present = self.reference(self.model, "", None, None)
        present += self.reference(self.model, prefix, "/", None)
        present += [key[: i + 1] for key in self.model for i, c in enumerate(key) if c == "/"]
        if present:
            self.check_listing(prefix, rollup, pick.draw(st.sampled_from(sorted(set(present)))))

    def reference(self, *args: Any) -> list[str]:
        return type(self).expected_listing(*args)

    def check_listing(self, prefix: str, rollup: bool, start_after: str | None) -> None:
        delimiter = "/" if rollup else None

        async def collect() -> list[str]:
            listing = self.store.list(prefix, delimiter=delimiter, start_after=start_after)
            return [entry async for entry in listing]

        want = self.reference(self.model, prefix, delimiter, start_after)
        assert self.run(collect()) == want


@pytest.mark.parametrize(
    ("kind", "examples"), [("memory", 100), ("local", 40), pytest.param("s3", 12, marks=pytest.mark.slow)]
)
def test_store_matches_model(
    kind: str,
    examples: int,
    make_store: Callable[[str], Store],
    expected_listing: Listing,
) -> None:
    reference = expected_listing

    class Machine(StoreModel):
        make = staticmethod(lambda: make_store(kind))
        expected_listing = staticmethod(reference)

    run_state_machine_as_test(
        Machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
