"""Map keys and buckets, pure parts: ids and chunk keys of maps, merging pairs, lookups, the
bucket format."""

from __future__ import annotations

import numpy as np
import pytest

from h5lake.errors import InvalidInput
from h5lake.maps import data as md
from h5lake.model.ids import Collection, chunk_key, new_object_id, new_root_id, parse_chunk_key, parse_id

I64 = {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}
VSTR = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}


def test_map_ids_and_bucket_keys() -> None:
    root = new_root_id()
    map_id = new_object_id(Collection.MAPS, root)
    assert map_id.startswith("m-") and parse_id(map_id) is Collection.MAPS
    key = chunk_key(map_id, (123456789012,))
    assert "-c-m-" in key and parse_chunk_key(key) == (map_id, (123456789012,))
    dset = new_object_id(Collection.DATASETS, root)
    assert parse_chunk_key(chunk_key(dset, (1, 2))) == (dset, (1, 2))  # datasets unchanged


def _ints(values: list[int]) -> np.ndarray:
    return md.KeyCodec({"class": "H5T_INTEGER", "base": "H5T_STD_I16LE"}).from_json(values)


def _strs(values: list[int]) -> np.ndarray:
    return md.KeyCodec(VSTR).from_json([str(v) for v in values])


@pytest.mark.parametrize("variable", [False, True])
def test_merge_matches_sorting_everything(variable: bool) -> None:
    rng = np.random.default_rng(3)
    make = _strs if variable else _ints
    for _ in range(100):
        old_keys = rng.integers(-50, 50, rng.integers(0, 60)).tolist()
        new_keys = rng.integers(-50, 50, rng.integers(0, 60)).tolist()
        old = md.Pairs(make(old_keys), np.frombuffer(rng.random(len(old_keys)).tobytes(), "V8").copy())
        new = md.Pairs(make(new_keys), np.frombuffer(rng.random(len(new_keys)).tobytes(), "V8").copy())
        base, _, _ = md.merge(md.empty_pairs(False, 8), old, np.zeros(len(old_keys), bool), variable)
        deleted = rng.random(len(new_keys)) < 0.3
        fast = md.merge(base, new, deleted, variable)
        slow = md._merge_by_sorting(base, new, deleted, variable)
        assert fast[1:] == slow[1:]
        assert fast[0].keys.tolist() == slow[0].keys.tolist()
        assert fast[0].values.tobytes() == slow[0].values.tobytes()
        model = dict(zip(old_keys, range(len(old_keys))))
        for k, gone in zip(new_keys, deleted):
            if gone:
                model.pop(k, None)
            else:
                model[k] = -1
        assert sorted(int(k) for k in md.KeyCodec(VSTR if variable else {"class": "H5T_INTEGER", "base": "H5T_STD_I16LE"}).to_json(fast[0].keys)) == sorted(model)


def test_lookup_finds_present_keys_only() -> None:
    keys = _ints(list(range(0, 600, 2)))
    pairs, _, _ = md.merge(md.empty_pairs(False, 8), md.Pairs(keys, np.zeros(len(keys), "V8")),
                           np.zeros(len(keys), bool), False)
    for want in ([4], [5], list(range(0, 100))):  # a scan, and a search by hash
        at = md.lookup(pairs, _ints(want), False)
        assert [bool(i >= 0) for i in at] == [w % 2 == 0 for w in want]
        hit = at >= 0
        assert pairs.keys[at[hit]].tolist() == _ints([w for w in want if w % 2 == 0]).tolist()


def test_bucket_round_trip_and_refusals() -> None:
    kc, vc = md.KeyCodec(VSTR), md.ValueCodec({"class": "H5T_VLEN", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}})
    pairs, _, _ = md.merge(md.empty_pairs(True, 0), md.Pairs(kc.from_json(["a", "", "é"]), vc.from_json([[1], [], [2, 3]], 3)),
                           np.zeros(3, bool), True)
    payload = md.leaf_payload(pairs, True, True)
    back = md.parse_leaf(payload, 3, kc, vc)
    assert kc.to_json(back.keys) == kc.to_json(pairs.keys) and vc.to_json(back.values) == vc.to_json(pairs.values)
    header = md.parse_header(md.leaf_bytes(2, 3, True, True, b""))
    assert (header.split, header.depth, header.count) == (False, 2, 3)
    assert md.parse_header(md.split_marker(1, (5, 6))).children == (5, 6)
    with pytest.raises(InvalidInput):
        kc.from_json(["a\0b"])  # NUL cannot be in a variable-length string key
    with pytest.raises(InvalidInput):
        md.check_key_type({"class": "H5T_VLEN", "base": I64})
    with pytest.raises(InvalidInput):
        md.KeyCodec(I64).from_text("1.5")
    with pytest.raises(InvalidInput):
        md.KeyCodec({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}).from_text("1.5")  # batch bodies only
