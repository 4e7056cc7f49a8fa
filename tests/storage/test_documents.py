"""Documents.update with ``reuse``: the document this process wrote last stands in for a read,
and every guarantee of a read-mutate-write-if-unchanged holds.

Two ``Documents`` on one store are two processes (each has its own memory of what it wrote);
on the local directory each has its own ``LocalStore`` on the shared root, as two server
processes would.
"""

from __future__ import annotations

import asyncio
import enum
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.conftest import backend_params
from tests.storage.conftest import BACKENDS, s3_store

from h5lake.errors import NotFound
from h5lake.service.documents import Doc, Documents, Unchanged, json_native
from h5lake.storage.base import Store
from h5lake.storage.local import LocalStore
from h5lake.storage.memory import MemoryStore

KEY = "db/objects/g-1.json"


@pytest.fixture(params=backend_params(BACKENDS))
async def pair(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Documents, Documents]]:
    """Two writers of one store, as two processes."""
    stores: list[Store]
    if request.param == "memory":
        shared = MemoryStore()
        stores = [shared]
        docs = (Documents(shared), Documents(shared))
    elif request.param == "local":
        stores = [LocalStore(tmp_path / "shared"), LocalStore(tmp_path / "shared")]
        docs = (Documents(stores[0]), Documents(stores[1]))
    else:
        shared = s3_store(request.getfixturevalue("s3_server"))
        stores = [shared]
        docs = (Documents(shared), Documents(shared))
    await docs[0].put(KEY, {"id": "g-1", "attributes": {}, "lastModified": 0.0})
    yield docs
    for store in stores:
        await store.close()


def setting(name: str, value: Any) -> Any:
    """A mutation as attributes make them: whole entries set at the second level."""

    def mutate(doc: Doc) -> Any:
        attrs = doc.setdefault("attributes", {})
        if attrs.get(name) == {"value": value}:
            return Unchanged("same")
        attrs[name] = {"value": value}
        doc["lastModified"] = doc["lastModified"] + 1
        return "written"

    return mutate


def deleting(name: str) -> Any:
    def mutate(doc: Doc) -> None:
        if name not in doc["attributes"]:
            raise NotFound(f"attribute {name!r} not found")
        del doc["attributes"][name]

    return mutate


async def stored(docs: Documents) -> Doc:
    found = await docs.get(KEY)
    assert found is not None
    return found.doc


async def test_alternating_writers_lose_nothing(pair: tuple[Documents, Documents]) -> None:
    a, b = pair
    for i in range(12):
        writer = (a, b)[i % 3 == 0]  # runs of writes by one, then the other
        doc, result = await writer.update(KEY, setting(f"x{i}", i), "group", reuse=True)
        assert result == "written"
        assert sorted(doc["attributes"]) == sorted(f"x{j}" for j in range(i + 1))
    final = await stored(a)
    assert final["attributes"] == {f"x{i}": {"value": i} for i in range(12)}
    assert final["lastModified"] == 12
    assert len(a.memo) == 1 and len(b.memo) == 1


async def test_a_remembered_document_is_what_the_store_holds(pair: tuple[Documents, Documents]) -> None:
    a, _ = pair
    for i in range(3):
        doc, _ = await a.update(KEY, setting(f"x{i}", [i, 1.5, "s", None, True]), "group", reuse=True)
        assert doc == await stored(a)
        assert orjson.loads(orjson.dumps(doc)) == doc


async def test_unchanged_is_decided_on_the_stored_document(pair: tuple[Documents, Documents]) -> None:
    """This process remembers x = 1; another sets x = 2. Setting x = 1 again must write, not
    answer "unchanged" from the remembered document."""
    a, b = pair
    await a.update(KEY, setting("x", 1), "group", reuse=True)
    await b.update(KEY, setting("x", 2), "group", reuse=True)
    _, result = await a.update(KEY, setting("x", 1), "group", reuse=True)
    assert result == "written"
    assert (await stored(b))["attributes"]["x"] == {"value": 1}
    _, result = await a.update(KEY, setting("x", 1), "group", reuse=True)
    assert result == "same"


async def test_a_refusal_is_decided_on_the_stored_document(pair: tuple[Documents, Documents]) -> None:
    """This process remembers no y; another adds it: deleting y succeeds. Then this process
    remembers y gone while another adds it again: deleting it again succeeds too."""
    a, b = pair
    await a.update(KEY, setting("x", 1), "group", reuse=True)
    await b.update(KEY, setting("y", 1), "group", reuse=True)
    await a.update(KEY, deleting("y"), "group", reuse=True)
    assert "y" not in (await stored(b))["attributes"]
    await b.update(KEY, setting("y", 2), "group")
    await a.update(KEY, deleting("y"), "group", reuse=True)
    with pytest.raises(NotFound):
        await a.update(KEY, deleting("y"), "group", reuse=True)


async def test_a_size_check_sees_the_serialized_size_and_is_decided_on_the_stored_document(
    pair: tuple[Documents, Documents],
) -> None:
    """``check`` gets the length of what would be written; a refusal on a remembered document
    is decided again on a fresh read: b shrank the document behind a's back."""
    a, b = pair
    sizes: list[int] = []

    def bounded(limit: int) -> Any:
        def check(doc: Doc, size: int) -> None:
            sizes.append(size)
            assert size == len(orjson.dumps(doc))
            if size > limit:
                raise ValueError(f"{size} bytes")

        return check

    await b.update(KEY, setting("big", "y" * 2000), "group", check=bounded(10_000))
    await a.update(KEY, setting("x", 1), "group", reuse=True, check=bounded(10_000))  # a remembers big
    await b.update(KEY, deleting("big"), "group")
    # with the remembered document the change is refused, with the stored one it fits
    await a.update(KEY, setting("z", 1), "group", reuse=True, check=bounded(1000))
    assert (await stored(b))["attributes"]["z"] == {"value": 1}
    # refused on the stored document: nothing written
    with pytest.raises(ValueError):
        await a.update(KEY, setting("w", "v" * 2000), "group", reuse=True, check=bounded(1000))
    assert "w" not in (await stored(b))["attributes"]
    assert any(size > 2000 for size in sizes)


async def test_concurrent_updates_in_one_process_lose_nothing(pair: tuple[Documents, Documents]) -> None:
    a, b = pair
    await a.update(KEY, setting("first", 0), "group", reuse=True)
    await asyncio.gather(
        *(w.update(KEY, setting(f"c{i}", i), "group", reuse=True) for i, w in enumerate([a] * 12 + [b] * 4))
    )
    assert sorted((await stored(a))["attributes"]) == sorted(["first"] + [f"c{i}" for i in range(16)])


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    "value",
    [(1, 2), Color.RED, math.nan, {1: "int key"}, [1, (2,)]],
    ids=["tuple", "enum", "nan", "int-key", "nested-tuple"],
)
async def test_non_json_values_are_not_remembered(pair: tuple[Documents, Documents], value: Any) -> None:
    """A value that the store would give back as something else (a tuple as a list, an enum as
    its value, NaN as null, a key as a string) is written but not remembered: the next update
    works on what a read gives."""
    a, _ = pair
    await a.update(KEY, setting("x", 1), "group", reuse=True)
    assert len(a.memo) == 1
    try:
        await a.update(KEY, setting("odd", value), "group", reuse=True)
    except TypeError:  # orjson refuses some (a dict with an int key): nothing written
        assert len(a.memo) == 0
        return
    assert len(a.memo) == 0
    seen: list[Any] = []

    def look(doc: Doc) -> Any:
        seen.append(doc["attributes"]["odd"]["value"])
        return Unchanged()

    await a.update(KEY, look, "group", reuse=True)
    assert seen == [orjson.loads(orjson.dumps(value))]


async def test_mutating_a_copy_leaves_the_remembered_document(pair: tuple[Documents, Documents]) -> None:
    """A mutation whose write loses (another writer first) leaves nothing of itself behind."""
    a, b = pair
    await a.update(KEY, setting("x", 1), "group", reuse=True)
    await b.update(KEY, setting("y", 1), "group")
    calls: list[set[str]] = []

    def add_z(doc: Doc) -> str:
        calls.append(set(doc["attributes"]))
        doc["attributes"]["z"] = {"value": 1}
        return "written"

    await a.update(KEY, add_z, "group", reuse=True)
    assert calls == [{"x"}, {"x", "y"}]  # the remembered document, then a fresh read
    assert set((await stored(b))["attributes"]) == {"x", "y", "z"}


def test_json_native() -> None:
    assert json_native({"a": [1, 2.5, "s", None, True, {"b": []}]})
    for odd in [(1,), Color.RED, math.inf, math.nan, {1: 2}, b"x", 1j, {"a": {"b": (1,)}}]:
        assert not json_native(odd), odd

    class Sub(str):
        pass

    assert not json_native(Sub("x"))
    assert not json_native({Sub("k"): 1})


def _ways_of_setting(name: str, value: Any) -> list[Any]:
    """Mutations that each add ``attributes[name] = value`` by another dict method."""

    def item(doc: Doc) -> str:
        doc["attributes"][name] = value
        return "written"

    def setdefault(doc: Doc) -> str:
        doc["attributes"].setdefault(name, value)
        return "written"

    def update(doc: Doc) -> str:
        doc["attributes"].update({name: value})
        return "written"

    def keywords(doc: Doc) -> str:
        doc["attributes"].update(**{name: value})
        return "written"

    def merge(doc: Doc) -> str:
        attrs = doc["attributes"]
        attrs |= {name: value}
        return "written"

    return [item, setdefault, update, keywords, merge]


@pytest.mark.parametrize("way", range(5), ids=["item", "setdefault", "update", "keywords", "merge"])
async def test_an_entry_added_any_way_is_checked(pair: tuple[Documents, Documents], way: int) -> None:
    """Whatever dict method a mutation adds an entry with, a value the store would give back
    as something else is not remembered, and a JSON value is, equal to what a read gives."""
    a, _ = pair
    await a.update(KEY, setting("x", 1), "group", reuse=True)
    await a.update(KEY, _ways_of_setting("odd", {"value": (1, 2)})[way], "group", reuse=True)
    assert len(a.memo) == 0
    await a.update(KEY, _ways_of_setting("fine", {"value": [1, 2]})[way], "group", reuse=True)
    assert len(a.memo) == 1
    remembered = a.memo.take(KEY)
    assert remembered is not None and type(remembered.doc["attributes"]) is dict  # plain again, as a read gives
    a.memo.keep(KEY, remembered, 1)
    seen: list[Doc] = []

    def look(doc: Doc) -> Any:
        seen.append(doc)
        return Unchanged()

    # decided "unchanged" on the remembered document, then again on a fresh read: both alike
    await a.update(KEY, look, "group", reuse=True)
    stored_doc = await stored(a)
    assert seen == [stored_doc, stored_doc]
    assert seen[0]["attributes"]["fine"] == {"value": [1, 2]} and seen[0]["attributes"]["odd"] == {"value": [1, 2]}


async def test_second_level_dictionaries_moved_or_emptied(pair: tuple[Documents, Documents]) -> None:
    """A mutation that moves a second-level dictionary to another key, or empties one, leaves
    a remembered document equal to the stored one."""
    a, _ = pair
    await a.update(KEY, setting("x", 1), "group", reuse=True)

    def move(doc: Doc) -> str:
        doc["old"] = doc.pop("attributes")
        doc["attributes"] = {}
        return "written"

    def empty(doc: Doc) -> str:
        doc["old"].clear()
        doc["attributes"]["y"] = {"value": 2}
        return "written"

    for mutate in (move, empty):
        await a.update(KEY, mutate, "group", reuse=True)
        assert len(a.memo) == 1
        seen: list[Doc] = []
        await a.update(KEY, lambda d: (seen.append(d), Unchanged())[1], "group", reuse=True)
        assert seen == [await stored(a)] * 2  # the remembered document, then a fresh read
    assert seen[0] == {"id": "g-1", "lastModified": 1.0, "old": {}, "attributes": {"y": {"value": 2}}}


async def test_the_bytes_written_are_the_whole_document_serialized(pair: tuple[Documents, Documents]) -> None:
    """An update from a remembered document serializes only the entries its mutation set
    (the others' serializations are remembered): what it writes is byte for byte
    ``orjson.dumps`` of the whole document, in its order, whatever the mutation did at the two
    levels it may change, and after another writer's change."""
    a, b = pair
    reference: Doc = {"id": "g-1", "attributes": {}, "lastModified": 0.0}

    def both(mutate: Any) -> Any:
        def apply(doc: Doc) -> Any:
            return mutate(doc)

        mutate(reference)  # the same change on a plain copy, serialized whole below
        return apply

    def put(name: str, value: Any) -> Any:
        def mutate(doc: Doc) -> str:
            doc["attributes"][name] = {"value": value, "created": 1.5}
            doc["lastModified"] = doc["lastModified"] + 1
            return "written"

        return mutate

    def drop_and_readd(name: str) -> Any:
        def mutate(doc: Doc) -> str:
            value = doc["attributes"].pop(name)
            doc["attributes"][name] = value  # now last
            return "written"

        return mutate

    def move(doc: Doc) -> str:
        doc["links"] = doc.pop("attributes")
        doc["attributes"] = {"new": {"value": [1, 2]}}
        return "written"

    def touch_links(doc: Doc) -> str:
        doc["links"].update({"l1": {"id": "x"}, "a1": {"value": "replaced"}})
        del doc["links"]["a0"]
        return "written"

    steps: list[Any] = [put(f"a{i}", i) for i in range(5)]
    steps += [put("a2", "replaced in place"), put("a9", [1.25, None]), drop_and_readd("a1"), put("a1", 7)]
    steps += [move, put("n2", {"nested": [1, {"x": 2}]}), touch_links, put("n3", 3)]
    for i, mutate in enumerate(steps):
        if i == 8:  # another process writes: the next update starts from a fresh read
            await b.update(KEY, both(put("b", "other")), "group", reuse=True)
        await a.update(KEY, both(mutate), "group", reuse=True)
        blob = await a.store.get(KEY)
        assert blob is not None
        assert blob.data == orjson.dumps(reference), f"after step {i}"
    assert len(a.memo) == 1
