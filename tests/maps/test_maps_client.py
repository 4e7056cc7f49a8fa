"""``h5lake.client.Map`` against a real server, and a map compared with a Python dict under
random puts, deletes and batches (hypothesis)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import h5pyd
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import USERS

from h5lake.client import Map, MapError


@pytest.fixture
def h5file(endpoint: str, domain: str, home_folder: str) -> Iterator[Any]:
    f = h5pyd.File(domain, "w", endpoint=endpoint, username="test_user1", password=USERS["test_user1"])
    yield f
    f.close()


def test_dict_like(h5file: Any) -> None:
    g = h5file.create_group("g")
    m = Map.create(g, "m", key_dtype="i8", value_dtype="f4")
    m[5] = 1.5
    m[np.int64(6)] = 2
    assert m[5] == np.float32(1.5) and m[6] == 2.0 and isinstance(m[5], np.float32)
    assert 5 in m and 7 not in m and len(m) == 2
    with pytest.raises(KeyError):
        m[7]
    assert m.get(7, "dflt") == "dflt"
    del m[5]
    with pytest.raises(KeyError):
        del m[5]
    assert m.update({1: 1.0, 2: 2.0, 6: 6.5}) == 2
    assert sorted(m) == [1, 2, 6] and dict(m.items()) == {1: 1.0, 2: 2.0, 6: 6.5}
    values, found = m.get_many([2, 3, 6])
    assert found.tolist() == [True, False, True] and values.dtype == np.float32 and values[[0, 2]].tolist() == [2.0, 6.5]
    assert m.delete_many([1, 2, 99]) == 2 and list(m) == [6]
    # the same map by path, from the file or the group, read-only too
    assert Map(h5file, "/g/m")[6] == 6.5 and Map(g, "m").id == m.id
    with pytest.raises(TypeError):
        Map(h5file, "g")  # a group, not a map
    with pytest.raises(ValueError):
        m.update({"x": 1.0})  # not an integer: numpy refuses it before any request
    with pytest.raises(MapError) as refused:
        m._json("PUT", f"/maps/{m.id}/keys", json={"keys": ["x"], "values": [1.0]})
    assert refused.value.status == 400


def test_batches_pages_and_types(h5file: Any) -> None:
    m = Map.create(h5file, "big", key_dtype="<i8", value_dtype=np.dtype([("a", "<f8"), ("b", "<i2")]),
                   bucket_bytes=8192)
    keys = np.arange(20_000, dtype=np.int64) * 7
    values = np.zeros(len(keys), dtype=m.value_dtype)
    values["a"], values["b"] = keys / 2, keys % 1000
    assert m.update(keys=keys, values=values, batch=6000) == len(keys)
    assert len(m) == len(keys)
    pages = list(m.pages(page=3000))
    assert len(pages) == 7 and sorted(k for p, _ in pages for k in p) == keys.tolist()
    probe = np.array([0, 7, 8, 139993], dtype=np.int64)
    got, found = m.get_many(probe, batch=3)
    assert found.tolist() == [True, True, False, True]
    assert got["a"][found].tolist() == [0.0, 3.5, 139993 / 2] and got["b"][found].tolist() == [0, 7, 993]
    s = Map.create(h5file, "names", key_dtype=h5pyd.string_dtype(), value_dtype=h5pyd.vlen_dtype(np.int32))
    s.update({"α": [1, 2], "b": [], "c c/d": [3]})
    assert s["α"] == [1, 2] and s["c c/d"] == [3] and "zz" not in s
    assert sorted(s) == ["b", "c c/d", "α"]
    del s["b"]
    assert len(s) == 2


def test_read_only_file_refuses_writes(h5file: Any, endpoint: str, domain: str) -> None:
    Map.create(h5file, "m", key_dtype="i4", value_dtype="i4")[1] = 2
    h5file.flush()
    with h5pyd.File(domain, "r", endpoint=endpoint, username="test_user1", password=USERS["test_user1"]) as ro:
        m = Map(ro, "m")
        assert m[1] == 2
        with pytest.raises(OSError):
            m[2] = 3


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(-40, 40), st.floats(allow_nan=False, width=64)),
        st.tuples(st.just("del"), st.integers(-40, 40)),
        st.tuples(st.just("update"), st.lists(st.tuples(st.integers(-40, 40), st.floats(allow_nan=False, width=64)),
                                              max_size=60)),
        st.tuples(st.just("delete_many"), st.lists(st.integers(-40, 40), max_size=20)),
    ),
    max_size=12,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_map_behaves_like_a_dict(h5file: Any, ops: list[Any]) -> None:
    m = Map.create(h5file, None, key_dtype="i2", value_dtype="f8", bucket_bytes=4096)
    model: dict[int, float] = {}
    for op in ops:
        if op[0] == "put":
            m[op[1]] = op[2]
            model[op[1]] = op[2]
        elif op[0] == "del":
            if op[1] in model:
                del m[op[1]]
                del model[op[1]]
            else:
                with pytest.raises(KeyError):
                    del m[op[1]]
        elif op[0] == "update":
            if op[1]:
                expected_new = len({k for k, _ in op[1]} - set(model))
                assert m.update(op[1]) == expected_new
                model.update(dict(op[1]))
        else:
            if op[1]:
                assert m.delete_many(op[1]) == len(set(op[1]) & set(model))
                for k in op[1]:
                    model.pop(k, None)
    assert dict(m.items()) == model
    assert len(m) == len(model)
    probe = list(range(-41, 42))
    values, found = m.get_many(probe)
    assert found.tolist() == [k in model for k in probe]
    assert [float(v) for v, f in zip(values, found) if f] == [model[k] for k in probe if k in model]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.dictionaries(st.text(min_size=0, max_size=12).filter(lambda s: "\0" not in s),
                                        st.text(max_size=30), max_size=80), max_size=5),
       gone=st.lists(st.text(max_size=12), max_size=10))
def test_string_map_behaves_like_a_dict(h5file: Any, batches: list[dict[str, str]], gone: list[str]) -> None:
    m = Map.create(h5file, None, key_dtype=h5pyd.string_dtype(), value_dtype=h5pyd.string_dtype(), bucket_bytes=4096)
    model: dict[str, str] = {}
    for batch in batches:
        m.update(batch)
        model.update(batch)
    m.delete_many([g for g in gone if "\0" not in g])
    for g in gone:
        model.pop(g, None)
    assert dict(m.items()) == model


def test_keys_and_values_that_do_not_convert_exactly_are_refused(h5file: Any) -> None:
    """numpy would store key 1.5 as 1 and a float32 value 1e40 as inf: every method refuses
    them, naming the key, before any request (issue 34)."""
    m = Map.create(h5file, "m", key_dtype="i8", value_dtype="f4")
    m[1] = 1.0
    not_int = "key 1.5 is not an integer (the map's key type is int64)"
    refused: list[Callable[[], Any]] = [
        lambda: m.__setitem__(1.5, 2.0), lambda: m[1.5], lambda: 1.5 in m, lambda: m.__delitem__(1.5),
        lambda: m.update({1.5: 2.0}), lambda: m.get_many([1, 1.5]), lambda: m.delete_many([1.5]),
        lambda: m.get(1.5),
    ]
    for call in refused:
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == not_int
    with pytest.raises(ValueError, match=r"key 4\.5 is not an integer"):
        m.update(keys=np.array([3.0, 4.5]), values=[3.0, 4.0])  # an array: checked in numpy's loops
    with pytest.raises(ValueError, match=r"key '2' is not an integer"):
        m["2"] = 2.0
    with pytest.raises(ValueError, match=r"value 1e\+40 of key 2 is out of range for float32"):
        m[2] = 1e40
    assert m[1.0] == 1.0 and 1.0 in m and m[np.int32(1)] == 1.0  # exact conversions are fine
    assert len(m) == 1 and dict(m.items()) == {1: 1.0}
    u = Map.create(h5file, "u", key_dtype="u1", value_dtype="i2")
    with pytest.raises(ValueError, match=r"key 300 is out of range for uint8"):
        300 in u  # noqa: B015 - the refusal is the point
    with pytest.raises(ValueError, match=r"value 1\.5 of key 1 is not an integer"):
        u[1] = 1.5
    with pytest.raises(ValueError, match=r"value 70000 of key 1 is out of range for int16"):
        u.update(keys=[0, 1], values=[1, 70000])
    assert len(u) == 0
    s = Map.create(h5file, "s", key_dtype=h5pyd.string_dtype(), value_dtype=h5pyd.vlen_dtype(np.int32))
    s["a"] = [1]
    for call in [lambda: s.__setitem__(5, [1]), lambda: s[5], lambda: 5 in s, lambda: s.__delitem__(5),
                 lambda: s.get_many([5]), lambda: s.delete_many(["a", 5])]:
        with pytest.raises(ValueError, match=r"^key 5 is not a string \(the map's key type is variable-length string\)$"):
            call()
    with pytest.raises(ValueError, match=r"value \[1\.5\] of key 'b': 1\.5 is not an integer"):
        s["b"] = [1.5]
    assert sorted(s) == ["a"]


def test_server_refusals_say_why(h5file: Any) -> None:
    """A HEAD reply has no body: ``in`` repeats a refused request as a GET for the server's
    message. The server names a bad key as a key (``keys[0]``), not ``value[0]``."""
    s = Map.create(h5file, "s", key_dtype=h5pyd.string_dtype(), value_dtype="i4")
    with pytest.raises(MapError) as e:
        "a\0b" in s  # noqa: B015 - the refusal is the point
    assert e.value.status == 400 and "cannot hold NUL" in str(e.value)
    with pytest.raises(MapError) as e:
        s._json("PUT", f"/maps/{s.id}/keys", json={"keys": [5], "values": [1]})
    assert "keys[0]: expected a string" in str(e.value) and "value[" not in str(e.value)
    with pytest.raises(MapError) as e:
        s._json("PUT", f"/maps/{s.id}/keys", json={"keys": ["k"], "values": ["x"]})
    assert "values[0]" in str(e.value)
