"""Hostile request bodies and parameters get a 400 naming the limit, never a 500, and the server
stays up with earlier data intact."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import requests

from h5lake.model.query import MAX_NESTING, query_mask
from tests.security.conftest import module_on
from tests.support.server import Server

A = ("admin", "admin-pw")
COMPOUND = {
    "class": "H5T_COMPOUND",
    "fields": [
        {"name": "a", "type": "H5T_STD_I32LE"},
        {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": 4, "strPad": "H5T_STR_NULLPAD"}},
    ],
}


class Target:
    def __init__(self, srv: Server) -> None:
        self.ep = srv.endpoint
        self.domain = "/home/admin/hostile.h5"
        requests.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        assert requests.put(self.ep + "/", params={"domain": self.domain}, auth=A, timeout=10).status_code == 201
        made = requests.post(self.ep + "/datasets", params={"domain": self.domain}, json={"type": COMPOUND, "shape": [10]},
                             auth=A, timeout=10)
        self.table = made.json()["id"]
        rows = [[i, f"r{i}"] for i in range(10)]
        assert requests.put(self.value_url(self.table), params={"domain": self.domain}, json={"value": rows},
                            auth=A, timeout=10).status_code == 200
        self.rows = rows

    def value_url(self, dsid: str) -> str:
        return f"{self.ep}/datasets/{dsid}/value"

    def intact(self) -> bool:
        got = requests.get(self.value_url(self.table), params={"domain": self.domain}, auth=A, timeout=10)
        return got.status_code == 200 and got.json()["value"] == self.rows


@pytest.fixture(scope="module")
def target(shared_server: Server) -> Iterator[Target]:
    with module_on(shared_server) as srv:
        yield Target(srv)


def _query(t: Target, text: str) -> requests.Response:
    return requests.get(t.value_url(t.table), params={"domain": t.domain, "query": text}, auth=A, timeout=30)


@pytest.mark.parametrize(
    "name, send, words",
    [
        ("deep json", lambda t: requests.post(t.ep + "/groups", params={"domain": t.domain}, data="[" * 100_000 + "]" * 100_000,
                                              auth=A, timeout=30), "nested"),
        ("parentheses", lambda t: _query(t, "(" * 3000 + "a > 1" + ")" * 3000), "parentheses"),
        ("negations", lambda t: _query(t, "not " * 2400 + "a > 1"), "negations"),
        ("number in query", lambda t: _query(t, "a > " + "9" * 5000), "number"),
        ("number in select", lambda t: requests.get(t.value_url(t.table), params={"domain": t.domain, "select": "[" + "9" * 5000 + "]"},
                                                    auth=A, timeout=30), "out of range"),
        ("update with a string", lambda t: requests.put(t.value_url(t.table), params={"domain": t.domain, "query": "a >= 0"},
                                                        json={"value": {"a": "abc"}}, auth=A, timeout=30), "does not fit"),
        ("update with a list", lambda t: requests.put(t.value_url(t.table), params={"domain": t.domain, "query": "a >= 0"},
                                                      json={"value": {"a": [1, 2]}}, auth=A, timeout=30), "does not fit"),
        ("update out of range", lambda t: requests.put(t.value_url(t.table), params={"domain": t.domain, "query": "a >= 0"},
                                                       data=f'{{"value": {{"a": {2**40}}}}}', auth=A, timeout=30), "does not fit"),
        ("delete char in domain", lambda t: requests.put(t.ep + "/", params={"domain": "/home/admin/a\x7fb.h5"}, auth=A, timeout=10),
         "invalid character"),
        ("long domain", lambda t: requests.put(t.ep + "/", params={"domain": "/home/admin/" + "a" * 1100}, auth=A, timeout=10),
         "too long"),
    ],
)
def test_hostile_input_is_refused(target: Target, name: str, send: object, words: str) -> None:
    reply = send(target)  # type: ignore[operator]
    assert reply.status_code == 400, (name, reply.status_code, reply.text[:200])
    assert words in reply.json()["error"]["message"], reply.text[:300]
    assert target.intact()


def test_long_chains_evaluate_flat() -> None:
    """A thousand alternatives are one wide node, not a thousand-deep tree."""
    arr = np.arange(2000, dtype=np.int32)
    mask = query_mask(" | ".join(f"x == {i}" for i in range(0, 1000, 3)), arr)
    assert mask.sum() == len(range(0, 1000, 3))
    mask = query_mask("(" * MAX_NESTING + "x < 5" + ")" * MAX_NESTING, arr)
    assert mask.sum() == 5
