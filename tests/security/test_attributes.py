"""An object's attributes live in its document, which every read of the object parses: the
attributes kept there together are bounded (``--max-attribute-bytes``), a larger one is kept
outside it, one attribute is bounded by what a request carries (``--max-json-bytes``), refused
with a 413 that says to use a dataset, and a refused attribute changes nothing."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest
import requests

from h5lake.service.objects.attributes import ATTRIBUTES_PER_OBJECT
from tests.support.cli import clean_env, run_h5lake
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
    srv = start_server(tmp_path_factory.mktemp("attrs"), extra=["--max-attribute-bytes", str(LIMIT),
                                                                          "--max-json-bytes", str(2**20)])
    yield Target(srv)
    assert srv.process.poll() is None
    srv.stop()
    assert "Traceback" not in srv.log.read_text()


def _refused(reply: requests.Response, setting: str = "--max-attribute-bytes") -> str:
    assert reply.status_code == 413, (reply.status_code, reply.text[:300])
    message: str = reply.json()["error"]["message"]
    assert setting in message and "dataset" in message, message
    return message


def _get(target: Target, gid: str, name: str, **params: str) -> requests.Response:
    return requests.get(f"{target.ep}/groups/{gid}/attributes/{name}", params={"domain": DOMAIN, **params}, auth=A,
                        timeout=30)


def test_one_attribute_is_bounded_by_what_a_request_carries_in_every_form(target: Target) -> None:
    """Past ``--max-attribute-bytes`` an attribute's value is kept outside its object's document
    (docs/storage.md, "Large attributes"); past the JSON limit (here 1 MiB) it is refused."""
    gid = target.group()
    n = 200_000  # 1.6 MB of float64: over the one-attribute limit
    values = np.arange(n) / 7
    one = "--max-json-bytes"
    # refused from the declared shape, before the value is looked at (a larger body: by the JSON limit)
    _refused(target.put(gid, "json", {"type": "H5T_IEEE_F64LE", "shape": [n], "value": values[:1000].tolist()}), one)
    _refused(target.put(gid, "b64", {"type": "H5T_IEEE_F64LE", "shape": [n],
                                     "value_base64": base64.b64encode(values[:1000].tobytes()).decode()}), one)
    binary = requests.put(f"{target.ep}/groups/{gid}/attributes/bin", auth=A, timeout=30, data=values.tobytes(),
                          params={"domain": DOMAIN, "type": "H5T_IEEE_F64LE", "shape": f"[{n}]"},
                          headers={"Content-Type": "application/octet-stream"})
    _refused(binary, one)
    # no value: the type's zeros would take as much
    _refused(target.put(gid, "zeros", {"type": "H5T_IEEE_F64LE", "shape": [n]}), one)
    # inline in a create: nothing is made
    made = requests.post(target.ep + "/groups", params={"domain": DOMAIN}, auth=A, timeout=10,
                         json={"attributes": {"big": {"type": "H5T_IEEE_F64LE", "shape": [n]}}})
    _refused(made, one)
    assert target.names(gid) == []
    # past the document's limit and within the request's: kept, in every form
    middle = values[:50_000]  # 400 KB
    assert target.put(gid, "json", {"type": "H5T_IEEE_F64LE", "shape": [50_000], "value": middle.tolist()}).status_code == 201
    assert target.put(gid, "b64", {"type": "H5T_IEEE_F64LE", "shape": [50_000],
                                   "value_base64": base64.b64encode(middle.tobytes()).decode()}).status_code == 201
    strings = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}
    assert target.put(gid, "text", {"type": strings, "shape": [100], "value": ["x" * 2000] * 100}).status_code == 201
    assert target.put(gid, "one_text", {"type": strings, "shape": [], "value": "x" * (LIMIT + 1)}).status_code == 201
    for name in ("json", "b64"):
        got = _get(target, gid, name, encoding="base64").json()["value"]
        assert base64.b64decode(got) == middle.tobytes(), name
    assert _get(target, gid, "text").json()["value"] == ["x" * 2000] * 100
    assert _get(target, gid, "one_text").json()["value"] == "x" * (LIMIT + 1)
    # an attribute holding references stays in the document (a fork renames them): its limit
    refs = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
    _refused(target.put(gid, "refs", {"type": refs, "shape": [6000], "value": [f"groups/{gid}"] * 6000}))
    # the value route keeps the attribute's shape: more bytes than it holds are refused
    small = values[:2000]
    assert target.put(gid, "fits", {"type": "H5T_IEEE_F64LE", "shape": [2000], "value": small.tolist()}).status_code == 201
    big = requests.put(f"{target.ep}/groups/{gid}/attributes/fits/value", params={"domain": DOMAIN}, auth=A, timeout=10,
                       data=values[:4000].tobytes(), headers={"Content-Type": "application/octet-stream"})
    assert big.status_code == 400, big.text[:200]
    assert np.array_equal(np.asarray(_get(target, gid, "fits").json()["value"]), small)


def test_an_objects_document_keeps_a_bounded_share_of_its_attributes(target: Target) -> None:
    """The attributes kept in a document together are bounded: past that, new values are kept
    outside it (those holding references cannot be, and are refused)."""
    gid = target.group()
    each = 3000  # float64 values as JSON: ~50 KB, under the limit of one
    values = np.arange(each) / 7
    for i in range(2 * ATTRIBUTES_PER_OBJECT):
        reply = target.put(gid, f"a{i}", {"type": "H5T_IEEE_F64LE", "shape": [each], "value": (values + i).tolist()})
        assert reply.status_code == 201, reply.text[:300]
    assert sorted(target.names(gid)) == sorted(f"a{i}" for i in range(2 * ATTRIBUTES_PER_OBJECT))
    document = requests.get(f"{target.ep}/groups/{gid}", params={"domain": DOMAIN}, auth=A, timeout=10)
    assert len(document.content) < 1000  # the object's own GET carries none of them
    for i in range(2 * ATTRIBUTES_PER_OBJECT):
        assert np.array_equal(np.asarray(_get(target, gid, f"a{i}").json()["value"]), values + i)
    # created with them inline: kept too
    inline = {f"a{i}": {"type": "H5T_IEEE_F64LE", "shape": [each], "value": (values + i).tolist()}
              for i in range(2 * ATTRIBUTES_PER_OBJECT)}
    made = requests.post(target.ep + "/groups", params={"domain": DOMAIN}, json={"attributes": inline}, auth=A, timeout=60)
    assert made.status_code == 201, made.text[:300]
    assert np.array_equal(np.asarray(_get(target, made.json()["id"], "a7").json()["value"]), values + 7)
    # references stay in the document: bounded together
    refs = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
    other = target.group()
    stored = []
    for i in range(2 * ATTRIBUTES_PER_OBJECT):
        reply = target.put(other, f"r{i}", {"type": refs, "shape": [1000], "value": [f"groups/{gid}"] * 1000})
        if reply.status_code != 201:
            assert "for one object" in _refused(reply)
            break
        stored.append(f"r{i}")
    assert ATTRIBUTES_PER_OBJECT <= len(stored) < 2 * ATTRIBUTES_PER_OBJECT
    assert sorted(target.names(other)) == sorted(stored)
    # replacing an attribute by a smaller one still works
    assert target.put(other, "r0", {"type": "H5T_STD_I32LE", "shape": [], "value": 1}).status_code in (200, 201)


def test_an_objects_description_leaves_out_values_past_the_request_limit(target: Target) -> None:
    """``include_attrs`` (h5pyd's and the REST VOL's way to read attributes) reads the values kept
    outside the document up to what one request carries together (here 1 MiB), and shows the
    rest without their values rather than failing the object's GET; one at a time, each reads."""
    gid = target.group()
    n = 200_000  # uint8: 200 KB each, past the 64 KiB kept in a document
    for i in range(6):
        body = {"type": "H5T_STD_U8LE", "shape": [n], "value_base64": base64.b64encode(bytes([i]) * n).decode()}
        assert target.put(gid, f"v{i}", body).status_code == 201
    got = requests.get(f"{target.ep}/groups/{gid}", params={"domain": DOMAIN, "include_attrs": 1}, auth=A, timeout=30)
    assert got.status_code == 200, got.text[:300]
    shown = got.json()["attributes"]
    with_values = [name for name, a in shown.items() if "value" in a]
    assert sorted(shown) == [f"v{i}" for i in range(6)] and len(with_values) == 5
    for name in with_values:
        assert shown[name]["value"][:3] == [int(name[1:])] * 3
    listing = requests.get(f"{target.ep}/groups/{gid}/attributes", params={"domain": DOMAIN, "IncludeData": 1}, auth=A,
                           timeout=30)
    assert listing.status_code == 413, listing.text[:300]  # a listing asked for every value: all or 413
    assert "--max-json-bytes" in listing.json()["error"]["message"]
    for i in range(6):
        value = _get(target, gid, f"v{i}", encoding="base64").json()["value"]
        assert base64.b64decode(value) == bytes([i]) * n


def test_opening_an_attribute_whose_json_passes_the_reply_limit(target: Target) -> None:
    """The HDF5 REST VOL opens an attribute with a plain GET (no IncludeData) and reads its type
    and shape: a value whose JSON would pass ``--max-json-bytes`` is left out there; asked for
    as JSON it is a 413 saying to read it in binary, which gives it."""
    gid = target.group()
    values = np.arange(100_000) / 7  # 800 KB binary, ~2 MB as JSON
    made = requests.put(f"{target.ep}/groups/{gid}/attributes/big", auth=A, timeout=30, data=values.tobytes(),
                        params={"domain": DOMAIN, "type": "H5T_IEEE_F64LE", "shape": f"[{values.size}]"},
                        headers={"Content-Type": "application/octet-stream"})
    assert made.status_code == 201, made.text[:300]
    opened = _get(target, gid, "big")
    assert opened.status_code == 200, opened.text[:300]
    assert opened.json()["shape"]["dims"] == [values.size] and "value" not in opened.json()
    asked = _get(target, gid, "big", IncludeData="1")
    assert asked.status_code == 413 and "binary" in asked.json()["error"]["message"]
    binary = requests.get(f"{target.ep}/groups/{gid}/attributes/big/value", params={"domain": DOMAIN}, auth=A, timeout=30,
                          headers={"Accept": "application/octet-stream"})
    assert binary.status_code == 200 and binary.content == values.tobytes()


def test_values_read_for_many_objects_are_bounded_together(target: Target) -> None:
    """One request that reads attribute values of several objects (POST ``obj_ids``,
    ``follow_links`` with data) reads at most what one request carries (here 1 MiB) together,
    not that much per object: past it a 413, as for one object's listing."""
    parent = target.group()
    n = 400_000  # uint8: 400 KB each, outside the document; three take 1.2 MB together
    gids = []
    for i in range(3):
        gid = target.group()
        body = {"type": "H5T_STD_U8LE", "shape": [n], "value_base64": base64.b64encode(bytes([i]) * n).decode()}
        assert target.put(gid, "v", body).status_code == 201
        link = requests.put(f"{target.ep}/groups/{parent}/links/g{i}", params={"domain": DOMAIN}, auth=A, timeout=10,
                            json={"id": gid})
        assert link.status_code in (200, 201), link.text[:300]
        gids.append(gid)
    b64 = {"domain": DOMAIN, "encoding": "base64"}  # each value's JSON would pass the limit alone
    many = requests.post(f"{target.ep}/groups/{target.root}/attributes", params=b64, auth=A, timeout=60,
                         json={"obj_ids": gids})
    assert many.status_code == 413, (many.status_code, many.text[:300])
    assert "--max-json-bytes" in many.json()["error"]["message"]
    followed = requests.get(f"{target.ep}/groups/{parent}/attributes", auth=A, timeout=60,
                            params={**b64, "follow_links": 1, "IncludeData": 1})
    assert followed.status_code == 413, (followed.status_code, followed.text[:300])
    # two of them fit: both read whole
    two = requests.post(f"{target.ep}/groups/{target.root}/attributes", params=b64, auth=A, timeout=60,
                        json={"obj_ids": gids[:2]})
    assert two.status_code == 200, two.text[:300]
    got = [base64.b64decode(two.json()["attributes"][g][0]["value"]) for g in gids[:2]]
    assert got == [bytes([0]) * n, bytes([1]) * n]


def test_a_new_value_keeps_the_attributes_name_character_set(target: Target) -> None:
    """``PUT .../attributes/{name}/value`` changes the value only: the character set HDF5 records
    for the name (``nameCharSet``, kept by load and export) stays, for a small and a large value."""
    gid = target.group()
    for name, n in (("small", 4), ("large", 100_000)):  # 100 KB: kept outside the document
        body = {"type": "H5T_STD_U8LE", "shape": [n], "nameCharSet": "H5T_CSET_UTF8",
                "value_base64": base64.b64encode(bytes(n)).decode()}
        assert target.put(gid, name, body).status_code == 201
        assert _get(target, gid, name).json().get("nameCharSet") == "H5T_CSET_UTF8"
        new = requests.put(f"{target.ep}/groups/{gid}/attributes/{name}/value", params={"domain": DOMAIN}, auth=A,
                           timeout=30, data=bytes([1]) * n, headers={"Content-Type": "application/octet-stream"})
        assert new.status_code in (200, 201), new.text[:300]
        got = _get(target, gid, name, encoding="base64").json()
        assert base64.b64decode(got["value"]) == bytes([1]) * n
        assert got.get("nameCharSet") == "H5T_CSET_UTF8", (name, got.get("nameCharSet"))


def test_export_writes_values_an_objects_description_leaves_out(target: Target, tmp_path: Path) -> None:
    """``h5lake export`` reads objects with ``include_attrs``, which leaves out a large value
    whose JSON passes the reply limit (here 1 MiB) or past what one request carries together:
    the file must still get every value, not an attribute of zeros."""
    domain = "/home/admin/attrs-export.h5"
    root = requests.put(target.ep + "/", params={"domain": domain}, auth=A, timeout=10).json()["root"]
    values = np.arange(100_000) / 7  # 800 KB binary, ~2 MB as JSON
    made = requests.put(f"{target.ep}/groups/{root}/attributes/big", auth=A, timeout=30, data=values.tobytes(),
                        params={"domain": domain, "type": "H5T_IEEE_F64LE", "shape": f"[{values.size}]"},
                        headers={"Content-Type": "application/octet-stream"})
    assert made.status_code == 201, made.text[:300]
    env = clean_env(tmp_path, {"HS_ENDPOINT": target.ep, "HS_USERNAME": A[0], "HS_PASSWORD": A[1]})
    out = tmp_path / "out.h5"
    done = run_h5lake("export", domain, str(out), cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    with h5py.File(out) as f:
        assert np.array_equal(f.attrs["big"], values)


def test_malformed_obj_ids_of_an_attribute_read_are_a_400(target: Target) -> None:
    """``POST`` (and ``PUT``) ``.../attributes`` with ``obj_ids``: ids that are not strings and
    name lists that are not lists of strings are a 400 naming the problem, never a 500."""
    gid = target.group()
    assert target.put(gid, "a", {"type": "H5T_STD_I32LE", "shape": [], "value": 1}).status_code == 201
    for obj_ids in ([5], [None], {gid: 5}, {gid: "a"}, {gid: [{}]}, {gid: [["a"]]}):
        r = requests.post(f"{target.ep}/groups/{target.root}/attributes", params={"domain": DOMAIN}, auth=A,
                          timeout=10, json={"obj_ids": obj_ids})
        assert r.status_code == 400, (obj_ids, r.status_code, r.text[:200])
    for body in ({"obj_ids": [5], "attributes": {}}, {"obj_ids": [None], "attributes": {"b": {"type": "H5T_STD_I32LE"}}}):
        r = requests.put(f"{target.ep}/groups/{target.root}/attributes", params={"domain": DOMAIN}, auth=A,
                         timeout=10, json=body)
        assert r.status_code == 400, (body, r.status_code, r.text[:200])
    good = requests.post(f"{target.ep}/groups/{target.root}/attributes", params={"domain": DOMAIN}, auth=A,
                         timeout=10, json={"obj_ids": {gid: ["a"]}})
    assert good.status_code == 200 and good.json()["attributes"][gid][0]["value"] == 1
