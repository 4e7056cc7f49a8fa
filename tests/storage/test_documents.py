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
from h5lake.service import documents as documents_module
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


# --- serialized from remembered pieces: the bytes written are always the whole document's ----


def recording(docs: Documents) -> list[bytes]:
    """Every object ``docs`` writes successfully, as written (its store's ``put`` wrapped)."""
    written: list[bytes] = []
    real = docs.store.put

    async def put(key: str, data: bytes | memoryview, **kw: Any) -> str:
        etag = await real(key, data, **kw)
        written.append(bytes(data))
        return etag

    docs.store.put = put  # type: ignore[method-assign]
    return written


async def written_as_returned(docs: Documents, written: list[bytes], mutate: Any, key: str = KEY, **kw: Any) -> Doc:
    """``docs.update`` with reuse, checked: what it wrote (if anything) is ``orjson.dumps`` of
    the document it returned, byte for byte, and that is what the store now holds."""
    before = len(written)
    doc, _ = await docs.update(key, mutate, "group", reuse=True, **kw)
    if len(written) > before:
        assert written[-1] == orjson.dumps(doc)
    blob = await docs.store.get(key)
    assert blob is not None and blob.data == orjson.dumps(doc)
    return doc


async def test_several_new_entries_set_by_one_mutation_are_written_in_the_order_set(
    pair: tuple[Documents, Documents],
) -> None:
    """A PUT of many attributes (or links) at once adds many keys to the remembered
    dictionary: they are written in the order they were set, as the document holds them (a
    set's order, which hashes decide, would differ nearly always with 20 names)."""
    a, _ = pair
    written = recording(a)

    def adding(names: list[str]) -> Any:
        def mutate(doc: Doc) -> None:
            for name in names:
                doc["attributes"][name] = {"value": name}
            doc["lastModified"] += 1

        return mutate

    await written_as_returned(a, written, adding(["first"]))
    await written_as_returned(a, written, adding(["second"]))  # now remembered with its pieces
    names = [f"n{i}" for i in range(20)]
    doc = await written_as_returned(a, written, adding(names))
    assert list(doc["attributes"]) == ["first", "second", *names]
    again = [f"m{i}" for i in range(20, 0, -1)] + ["first"]  # new ones and an existing one, mixed
    doc = await written_as_returned(a, written, adding(again))
    assert list(doc["attributes"]) == ["first", "second", *names, *again[:-1]]


async def test_pieces_hold_for_every_shape_of_change_at_the_two_levels(pair: tuple[Documents, Documents]) -> None:
    """Values at the second level that are no dictionaries (list, str, number), values deeper
    than two levels replaced whole, a second-level dictionary replaced by a new one, a top-level
    key deleted and added again (now last), the dictionary methods that set or delete entries."""
    a, b = pair
    written = recording(a)

    def step(change: Any) -> Any:
        def mutate(doc: Doc) -> None:
            change(doc)
            doc["lastModified"] += 1

        return mutate

    def nested(doc: Doc) -> None:
        doc["attributes"]["deep"] = {"value": {"a": {"b": [1, {"c": 2}]}}, "created": 1.0}

    def nested_replaced(doc: Doc) -> None:
        deep = doc["attributes"]["deep"]
        doc["attributes"]["deep"] = {**deep, "value": {"a": {"b": [3]}, "z": None}}  # a new value

    def lists_and_strings(doc: Doc) -> None:
        doc["tags"] = ["x", 1]
        doc["title"] = "one"
        doc["attributes"]["list"] = [1, 2, 3]
        doc["attributes"]["str"] = "s"

    def lists_and_strings_replaced(doc: Doc) -> None:
        doc["tags"] = [*doc["tags"], {"y": 2}]
        doc["title"] = "two"
        doc["attributes"]["list"] = [*doc["attributes"]["list"], 4]
        doc["attributes"]["str"] = "t"

    def links_added(doc: Doc) -> None:
        doc["links"] = {"l0": {"id": "g-0"}, "l1": {"id": "g-1"}}

    def links_set(doc: Doc) -> None:
        doc["links"]["l2"] = {"id": "g-2"}

    def attributes_replaced(doc: Doc) -> None:
        doc["attributes"] = {"fresh": {"value": 1}, **doc["attributes"]}  # a new dict, new order

    def top_deleted(doc: Doc) -> None:
        del doc["links"]

    def top_added_again(doc: Doc) -> None:
        doc["links"] = {"l9": {"id": "g-9"}}  # now after lastModified

    def methods(doc: Doc) -> None:
        attrs = doc["attributes"]
        attrs.setdefault("sd", {"value": "default"})
        attrs.setdefault("fresh", {"value": "not set"})
        attrs.update({"u1": 1}, u2=2)
        attrs |= {"o1": [1]}
        doc["links"].update(l10={"id": "g-10"})

    def methods_deleting(doc: Doc) -> None:
        attrs = doc["attributes"]
        attrs.pop("u1")
        attrs.pop("absent", None)
        attrs["u1"] = "back, last"
        doc["links"].popitem()
        doc["links"]["l11"] = {"id": "g-11"}

    def cleared(doc: Doc) -> None:
        doc["links"].clear()
        doc["links"]["only"] = {"id": "g-12"}

    def moved(doc: Doc) -> None:
        doc["links"], doc["attributes"] = doc["attributes"], doc["links"]  # swapped, untouched

    def same_twice(doc: Doc) -> None:
        doc["copy"] = doc["links"]  # one untouched dictionary under two keys

    changes = [nested, nested_replaced, lists_and_strings, lists_and_strings_replaced, links_added, links_set,
               attributes_replaced, links_set, top_deleted, top_added_again, methods, methods_deleting,
               cleared, moved, same_twice, links_set]  # fmt: skip
    for i, change in enumerate(changes):
        doc = await written_as_returned(a, written, step(change))
        assert orjson.loads(orjson.dumps(doc)) == await stored(b), f"after {change.__name__}"
        if i == 5:  # another process replaces an entry: this one starts again from a read
            await b.update(KEY, setting("str", "by b"), "group", reuse=True)
    doc = await stored(a)
    assert list(doc) == ["id", "attributes", "lastModified", "tags", "title", "links", "copy"]
    assert doc["attributes"] == {"only": {"id": "g-12"}}
    assert doc["links"]["str"] == {"value": "by b"} and list(doc["links"])[-2:] == ["u1", "l2"]


async def test_pieces_are_not_reused_after_another_writer_changed_an_entry(pair: tuple[Documents, Documents]) -> None:
    """This process remembers x = 1 (and its serialization); another process sets x = 2 and
    y; this one then sets only z: it must write x = 2 (from the fresh read), not its own x's
    remembered piece."""
    a, b = pair
    written = recording(a)
    for name in ("x", "w", "x"):  # twice remembered: pieces for "attributes" kept
        await written_as_returned(a, written, setting(name, 1))
    await b.update(KEY, setting("x", 2), "group", reuse=True)
    await b.update(KEY, setting("y", 3), "group", reuse=True)
    doc = await written_as_returned(a, written, setting("z", 4))
    assert doc["attributes"] == {"x": {"value": 2}, "w": {"value": 1}, "y": {"value": 3}, "z": {"value": 4}}
    doc = await written_as_returned(a, written, setting("x", 5))  # remembered again, from the read
    assert list(doc["attributes"]) == ["x", "w", "y", "z"]


async def test_unchanged_or_refused_on_a_remembered_document_then_written_from_a_read(
    pair: tuple[Documents, Documents],
) -> None:
    """Unchanged, or refused by ``check``, on the remembered document; decided again on a
    fresh read, which another process changed: what is written is the whole fresh document."""
    a, b = pair
    written = recording(a)
    for name in ("x", "m", "v"):
        await written_as_returned(a, written, setting(name, 1))
    await b.update(KEY, setting("x", 2), "group", reuse=True)
    await written_as_returned(a, written, setting("x", 1))  # "same" on the remembered: written on the read
    assert (await stored(b))["attributes"]["x"] == {"value": 1}
    await written_as_returned(a, written, setting("v", 2))  # remembered again

    await b.update(KEY, deleting("m"), "group", reuse=True)

    def no_m(doc: Doc, size: int) -> None:
        if "m" in doc["attributes"]:
            raise ValueError("m present")

    doc = await written_as_returned(a, written, setting("k", 1), check=no_m)
    assert list(doc["attributes"]) == ["x", "v", "k"]
    with pytest.raises(ValueError):  # refused on the fresh read too: nothing written
        await a.update(KEY, setting("m", 1), "group", reuse=True, check=no_m)
    doc = await written_as_returned(a, written, setting("j", 1))
    assert list(doc["attributes"]) == ["x", "v", "k", "j"]


async def test_keys_and_values_of_other_types_are_refused_or_written_as_whole(
    pair: tuple[Documents, Documents],
) -> None:
    """A non-str key fails as ``orjson.dumps`` of the whole document fails, and nothing is
    written; a tuple (not JSON's own type) is written as dumps writes it and the document is
    not remembered; later updates write the whole document."""
    a, b = pair
    written = recording(a)
    for name in ("x", "y"):
        await written_as_returned(a, written, setting(name, 1))
    before = await stored(b)

    def int_key(doc: Doc) -> None:
        doc["attributes"][7] = {"value": 1}

    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps({7: 1})
    with pytest.raises(orjson.JSONEncodeError):
        await a.update(KEY, int_key, "group", reuse=True)
    assert await stored(b) == before
    with pytest.raises(orjson.JSONEncodeError):
        await a.update(KEY, int_key, "group", reuse=True)  # from a fresh read this time
    await written_as_returned(a, written, setting("z", 1))
    await written_as_returned(a, written, setting("t", (1, 2)))
    assert len(a.memo) == 0
    doc = await written_as_returned(a, written, setting("u", 1))
    assert doc["attributes"]["t"] == {"value": [1, 2]}


async def test_concurrent_updates_of_one_key_in_one_process_each_write_their_document(
    pair: tuple[Documents, Documents],
) -> None:
    """Many updates of one key at once in this process (and some by another): each takes the
    remembered document (and its pieces) alone or reads; every write is its own document's
    serialization, and none is lost."""
    a, b = pair
    written = recording(a)
    await written_as_returned(a, written, setting("start", 0))
    await written_as_returned(a, written, setting("start", 1))

    async def one(i: int) -> Doc:
        if i % 7 == 3:
            doc, _ = await b.update(KEY, setting(f"b{i}", i), "group", reuse=True)
            return doc
        doc, _ = await a.update(KEY, setting(f"a{i}", i), "group", reuse=True)
        return doc

    docs = await asyncio.gather(*(one(i) for i in range(40)))
    for i, doc in enumerate(docs):
        if i % 7 != 3:
            assert orjson.dumps(doc) in written, i
    final = await written_as_returned(a, written, setting("end", 1))
    assert set(final["attributes"]) == {"start", "end"} | {f"{'b' if i % 7 == 3 else 'a'}{i}" for i in range(40)}


async def test_memo_eviction_keeps_every_write_whole(
    pair: tuple[Documents, Documents], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for two documents, updates of five keys in turn clear the memo over and over:
    each write is still its document's serialization."""
    a, _ = pair
    monkeypatch.setattr(documents_module, "MEMO_DOCS", 2)
    written = recording(a)
    keys = [f"db/objects/g-{i}.json" for i in range(5)]
    for key in keys:
        await a.put(key, {"id": key, "attributes": {}, "lastModified": 0.0})
    for round_ in range(4):
        for i, key in enumerate(keys):
            for repeat in range(i % 3):  # some keys twice in a row: remembered with pieces
                await written_as_returned(a, written, setting(f"r{round_}.{repeat}", round_), key)
            await written_as_returned(a, written, setting(f"s{round_}", [round_]), key)
        assert len(a.memo) <= 2
    for key in keys:
        doc = (await a.get(key))
        assert doc is not None and list(doc.doc["attributes"])[-1] == "s3"
