"""Object ids and the seed's storage key schema."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h5lake.errors import InvalidInput, NotFound
from h5lake.model import ids
from h5lake.model.ids import Collection


def test_root_id_form_and_child_ids() -> None:
    root = ids.new_root_id()
    assert ids.parse_id(root) is Collection.GROUPS
    digits = ids.hex_digits(root)
    assert len(digits) == 32
    assert all(int(b, 16) == (int(a, 16) + 8) % 16 for a, b in zip(digits[:16], digits[16:]))
    for c in Collection:
        child = ids.new_object_id(c, root)
        assert ids.parse_id(child, c) is c
        assert ids.same_domain(child, root)
        assert child[0] == c.value and [len(p) for p in child[2:].split("-")] == [8, 8, 4, 6, 6]
    assert not ids.same_domain(ids.new_object_id(Collection.GROUPS, ids.new_root_id()), root)


@pytest.mark.parametrize("bad", ["", "g-123", "x-b76eacdd-d16f54ec-3fe6-245559-e7dc64", "g-B76EACDD-d16f54ec-3fe6-245559-e7dc64",
                                 "g-b76eacdd-d16f54ec-3fe6-245559-e7dc6", 5, "g-b76eacdd-d16f54ec-3fe6-245559-e7dc64\n",
                                 "g-1b7b3d44-67d3-11ef-93f3-b5ccef5b8c51\n"])
def test_bad_ids_are_invalid_input(bad: object) -> None:
    if isinstance(bad, str) and ids.is_valid_id(bad[:-1]):
        ids.parse_id(bad[:-1])  # the id without the newline is known (remembered) first
    with pytest.raises(InvalidInput):
        ids.parse_id(bad)  # type: ignore[arg-type]


def test_ids_of_another_grouping_are_not_found() -> None:
    with pytest.raises(NotFound):  # a uuid1 as HSDS's tests make up: well formed, names nothing here
        ids.parse_id("g-1b7b3d44-67d3-11ef-93f3-b5ccef5b8c51")


def test_wrong_collection_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        ids.parse_id("d-b76eacdd-d16f54ec-3fe6-245559-e7dc64", Collection.GROUPS)


def test_object_and_chunk_keys_follow_the_seed() -> None:
    gid = "g-2428ae0e-a082-11e6-9d93-0242ac110005"
    assert ids.object_key(gid) == hashlib.md5(gid.encode()).hexdigest()[:5] + "-" + gid
    assert ids.object_key(gid).startswith("a860f-")  # the seed's group object example
    did = "d-4ab77230-9c0e-11e6-8fdd-0242ac110005"
    key = ids.chunk_key(did, (1, 3))
    chunk = "c-4ab77230-9c0e-11e6-8fdd-0242ac110005_1_3"
    assert key == hashlib.md5(chunk.encode()).hexdigest()[:5] + "-" + chunk
    assert ids.parse_chunk_key(key) == (did, (1, 3))
    assert ids.chunk_key(did, ()).endswith("_0")  # a scalar dataset's one chunk


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=6))
def test_chunk_keys_round_trip(index: list[int]) -> None:
    did = "d-4ab77230-9c0e-11e6-8fdd-0242ac110005"
    assert ids.parse_chunk_key(ids.chunk_key(did, tuple(index))) == (did, tuple(index))


def test_domain_keys() -> None:
    assert ids.domain_key("/home/test_user1/my_domain") == "home/test_user1/my_domain/.domain.json"
    assert ids.parent_domain("/home/test_user1/my_domain") == "/home/test_user1"
    assert ids.parent_domain("/home") == "/"
    assert ids.normalize_domain("home/a/") == "/home/a"
    assert ids.chunk_catalog_key("/home/a", "d-x") == "home/a/.d-x.chunks.txt"
    assert ids.catalog_key("/home/a", ".groups.txt") == "home/a/.groups.txt"


@pytest.mark.parametrize("bad", ["/a/../b", "/a/./b", "/a//b", "/a/b\\c", "/a/\x01", "/a/.domain.json", "/a/.groups.txt",
                                 "/.h5lake/pending", "/a/" + "x" * 300, ""])
def test_domain_paths_that_could_escape_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInput):
        ids.normalize_domain(bad)


def test_a_collection_is_found_by_its_path_segment_only() -> None:
    for c in Collection:
        assert Collection.from_path(c.path) is c
    for wrong in ("group", "Groups", "g", "", "groups/", "links"):
        with pytest.raises(InvalidInput):
            Collection.from_path(wrong)
