"""An object's attributes live in its document, which every read of the object parses: one
attribute and an object's attributes together are bounded (``--max-attribute-bytes``), refused
with a 413 that says to use a dataset, and a refused attribute changes nothing."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import numpy as np
import pytest
import requests

from h5lake.service.attributes import ATTRIBUTES_PER_OBJECT
from tests.support.server import Server, start_server

A = ("admin", "admin-pw")
LIMIT = 64 * 1024
DOMAIN = "/home/admin/attrs.h5"


class Target:
    def __init__(self, srv: Server) -> None:
        self.ep = srv.endpoint
        requests.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        self.root = requests.put(self.ep + "/", params={"domain": DOMAIN}, auth=A, timeout=10).json()["root"]

    def group(self) -> str:
        gid: str = requests.post(self.ep + "/groups", params={"domain": DOMAIN}, auth=A, timeout=10).json()["id"]
        return gid

    def put(self, gid: str, name: str, body: object) -> requests.Response:
        return requests.put(f"{self.ep}/groups/{gid}/attributes/{name}", params={"domain": DOMAIN}, json=body, auth=A,
                            timeout=60)

    def names(self, gid: str) -> list[str]:
        got = requests.get(f"{self.ep}/groups/{gid}/attributes", params={"domain": DOMAIN}, auth=A, timeout=10)
        return [a["name"] for a in got.json()["attributes"]]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    srv = start_server(tmp_path_factory.mktemp("attrs"), extra=["--max-attribute-bytes", str(LIMIT)])
    yield Target(srv)
    assert srv.process.poll() is None
    srv.stop()
    assert "Traceback" not in srv.log.read_text()


def _refused(reply: requests.Response) -> str:
    assert reply.status_code == 413, (reply.status_code, reply.text[:300])
    message: str = reply.json()["error"]["message"]
    assert "--max-attribute-bytes" in message and "dataset" in message, message
    return message


def test_one_large_attribute_is_refused_in_every_form(target: Target) -> None:
    gid = target.group()
    n = 50_000  # 400 KB of float64, several times the limit
    values = np.arange(n) / 7
    _refused(target.put(gid, "json", {"type": "H5T_IEEE_F64LE", "shape": [n], "value": values.tolist()}))
    _refused(target.put(gid, "b64", {"type": "H5T_IEEE_F64LE", "shape": [n],
                                     "value_base64": base64.b64encode(values.tobytes()).decode()}))
    # no value: the type's zeros would take as much
    _refused(target.put(gid, "zeros", {"type": "H5T_IEEE_F64LE", "shape": [n]}))
    strings = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}
    _refused(target.put(gid, "text", {"type": strings, "shape": [100], "value": ["x" * 2000] * 100}))
    _refused(target.put(gid, "one_text", {"type": strings, "shape": [], "value": "x" * (LIMIT + 1)}))
    # inline in a create: nothing is made
    made = requests.post(target.ep + "/groups", params={"domain": DOMAIN}, auth=A, timeout=10,
                         json={"attributes": {"big": {"type": "H5T_IEEE_F64LE", "shape": [n], "value": values.tolist()}}})
    _refused(made)
    assert target.names(gid) == []
    # within the limit: stored and read back
    small = values[:2000]
    assert target.put(gid, "fits", {"type": "H5T_IEEE_F64LE", "shape": [2000], "value": small.tolist()}).status_code == 201
    # the value route keeps the attribute's shape: more bytes than it holds are refused
    big = requests.put(f"{target.ep}/groups/{gid}/attributes/fits/value", params={"domain": DOMAIN}, auth=A, timeout=10,
                       data=values.tobytes(), headers={"Content-Type": "application/octet-stream"})
    assert big.status_code == 400, big.text[:200]
    got = requests.get(f"{target.ep}/groups/{gid}/attributes/fits", params={"domain": DOMAIN}, auth=A, timeout=10)
    assert np.array_equal(np.asarray(got.json()["value"]), small)


def test_an_objects_attributes_together_are_bounded(target: Target) -> None:
    gid = target.group()
    each = 3000  # float64 values as JSON: ~50 KB, under the limit of one
    values = np.arange(each) / 7
    stored = []
    for i in range(2 * ATTRIBUTES_PER_OBJECT):
        reply = target.put(gid, f"a{i}", {"type": "H5T_IEEE_F64LE", "shape": [each], "value": (values + i).tolist()})
        if reply.status_code != 201:
            message = _refused(reply)
            assert "for one object" in message
            break
        stored.append(f"a{i}")
    assert ATTRIBUTES_PER_OBJECT <= len(stored) < 2 * ATTRIBUTES_PER_OBJECT
    assert sorted(target.names(gid)) == sorted(stored)
    # nor may an object be created with them inline
    inline = {f"a{i}": {"type": "H5T_IEEE_F64LE", "shape": [each], "value": (values + i).tolist()}
              for i in range(2 * ATTRIBUTES_PER_OBJECT)}
    made = requests.post(target.ep + "/groups", params={"domain": DOMAIN}, json={"attributes": inline}, auth=A, timeout=60)
    assert "for one object" in _refused(made)
    # what was stored is intact, and replacing an attribute by a smaller one still works
    first = requests.get(f"{target.ep}/groups/{gid}/attributes/a0", params={"domain": DOMAIN}, auth=A, timeout=10).json()
    assert np.array_equal(np.asarray(first["value"]), values)
    assert target.put(gid, "a0", {"type": "H5T_STD_I32LE", "shape": [], "value": 1}).status_code in (200, 201)
    assert requests.get(f"{target.ep}/groups/{gid}", params={"domain": DOMAIN}, auth=A, timeout=10).status_code == 200
