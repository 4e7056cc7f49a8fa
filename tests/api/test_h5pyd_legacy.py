"""Request forms of h5pyd before 1.0 (the 0.2x line, whose test suite runs against HSDS), over
plain HTTP: ``T`` for a flag, a flush in the PUT body that reads ``dn_ids``, ``maxdims`` 0 for an
unlimited dimension of extent 0, predefined type names without a byte order, enums read through
``mapping``, and the default ACL read by whoever may read the domain (dev/h5pyd_suite.py runs
that client's own suite; docs/fidelity.md)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.api.test_h5pyd_metadata import open_file
from tests.conftest import Client

pytestmark = pytest.mark.one_backend  # older h5pyd's request forms, the same on every store


def test_flags_spelled_as_hsds_reads_them(client: Client) -> None:
    root = client.get("/").json()["root"]
    client.put(f"/groups/{root}/attributes/a", json={"type": "H5T_STD_I32LE", "value": 7})
    for spelling in ("T", "true", "TRUE", "2"):
        r = client.get(f"/groups/{root}", params={"include_attrs": spelling})
        assert r.status_code == 200 and "a" in r.json()["attributes"], (spelling, r.text)
    for spelling in ("F", "0", "false"):
        assert "attributes" not in client.get(f"/groups/{root}", params={"include_attrs": spelling}).json()
    r = client.get(f"/groups/{root}", params={"include_attrs": "maybe"})
    assert r.status_code == 400 and "include_attrs" in r.json()["error"]["message"]


def test_a_flag_spelled_true_does_not_skip_the_check_of_the_id(client: Client) -> None:
    """``follow_links=true`` (a flag HSDS reads) walks the group's descendants: an id that is
    not a group's is still a 400, not an error inside the walk."""
    r = client.get("/groups/[+-]?\\d+/links", params={"follow_links": "true"})
    assert r.status_code == 400 and "id" in r.json()["error"]["message"], r.text
    root = client.get("/").json()["root"]
    assert client.get(f"/groups/{root}/links", params={"follow_links": "true"}).status_code == 200


def test_flush_in_the_body_answers_dn_ids(client: Client) -> None:
    r = client.put("/", json={"flush": 1, "getdnids": 1})
    assert r.status_code == 200 and r.json() == {"dn_ids": []}
    assert client.put("/", json={"flush": 1}).status_code == 204
    assert client.put("/", json={"flush": 1}, params={"domain": client.domain + ".missing"}).status_code == 404
    # the domain is untouched: a second create still conflicts
    assert client.put("/").status_code == 409


def test_maxdims_zero_is_unlimited_even_at_extent_zero(client: Client) -> None:
    body = {"type": "H5T_IEEE_F32LE", "shape": [0], "maxdims": [0],
            "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [2]}}}
    r = client.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    assert client.get(f"/datasets/{did}").json()["shape"]["maxdims"] == ["H5S_UNLIMITED"]
    assert client.put(f"/datasets/{did}/shape", json={"shape": [5]}).status_code in (200, 201)
    grid = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [2, 0], "maxdims": [2, 0]}).json()["id"]
    assert client.put(f"/datasets/{grid}/value", params={"append": 3, "append_dim": 1},
                      json={"value": [[1, 2, 3], [4, 5, 6]]}).status_code == 200
    assert client.get(f"/datasets/{grid}/value").json()["value"] == [[1, 2, 3], [4, 5, 6]]


def test_type_names_without_byte_order_mean_little_endian(client: Client) -> None:
    r = client.post("/datasets", json={"shape": [2], "type": {"class": "H5T_VLEN", "base": "H5T_STD_I32"}})
    assert r.status_code == 201, r.text
    assert r.json()["type"]["base"] == {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    r = client.post("/datasets", json={"shape": [2], "type": "H5T_IEEE_F64"})
    assert r.status_code == 201 and r.json()["type"] == {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
    assert client.post("/datasets", json={"shape": [2], "type": "H5T_STD_I33"}).status_code == 400


def test_enum_types_carry_mapping_and_h5pyd_still_reads_them(endpoint: str, domain: str) -> None:
    colors = np.dtype("u1", metadata={"enum": {"RED": 0, "GREEN": 1, "BLUE": 42}})
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("c", data=np.array([42, 0, 1], dtype="u1"), dtype=colors)
        f.create_dataset("b", data=np.array([True, False]))
        ids = {name: f[name].id.id for name in ("c", "b")}
    c = Client(endpoint, "test_user1", domain)
    t = c.get(f"/datasets/{ids['c']}").json()["type"]
    assert t["mapping"] == {"RED": 0, "GREEN": 1, "BLUE": 42} and [m["name"] for m in t["members"]] == ["RED", "GREEN", "BLUE"]
    listed = c.get(f"/datasets/{ids['b']}/type").json()["type"]
    assert listed["mapping"] == {"FALSE": 0, "TRUE": 1}
    with open_file(endpoint, domain, "r") as f:
        assert f["b"].dtype == np.bool_ and f["b"][...].tolist() == [True, False]
        assert f["c"][...].tolist() == [42, 0, 1]
        assert np.dtype(f["c"].dtype).metadata["enum"] == {"RED": 0, "GREEN": 1, "BLUE": 42}


def test_default_acl_is_readable_by_readers(client: Client) -> None:
    other = Client(client.endpoint, "test_user2", client.domain)
    assert other.get("/acls/default").status_code == 403  # may not read the domain at all
    assert client.put("/acls/default", json={"read": True}).status_code == 201
    r = other.get("/acls/default")
    assert r.status_code == 200 and r.json()["acl"]["read"] is True and r.json()["acl"]["update"] is False
    assert other.get("/acls/test_user1").status_code == 403  # someone else's: readACL needed
    assert other.get("/acls").status_code == 403


def test_lz4_level_is_kept_as_sent(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("z", data=np.arange(3200, dtype="i4").reshape(40, 80), compression="lz4", compression_opts=5)
    with open_file(endpoint, domain, "r") as f:
        assert f["z"].compression == "lz4" and f["z"].compression_opts == 5
        np.testing.assert_array_equal(f["z"][...], np.arange(3200).reshape(40, 80))
