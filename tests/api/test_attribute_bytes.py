"""Attributes keep bytes their JSON value cannot hold (issue 17 case 2).

A pickle in a fixed-length string attribute (as hickle and PyTables write) is not UTF-8, and a
NaN payload is not JSON: sent in binary, both come back exactly from the binary read, from
``encoding=base64`` and as ``value_base64`` in the attribute JSON.
"""

from __future__ import annotations

import base64
import pickle

import numpy as np
import orjson
from tests.conftest import Client

BLOB = pickle.dumps({"a": [1.5, None]}, protocol=4)
STRING = {"class": "H5T_STRING", "length": len(BLOB), "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD"}
NAN_PAYLOADS = np.array([0x7FF8000000000001, 0xFFF8000000000000], dtype="<u8").tobytes()


def _root(c: Client) -> str:
    return str(c.get("/").json()["root"])


def test_non_utf8_string_and_nan_payload_attributes_keep_their_bytes(client: Client) -> None:
    root = _root(client)
    body = {"attributes": {
        "pickle": {"type": STRING, "shape": {"class": "H5S_SCALAR"}, "value_base64": base64.b64encode(BLOB).decode()},
        "nans": {"type": "H5T_IEEE_F64LE", "shape": [2], "value_base64": base64.b64encode(NAN_PAYLOADS).decode()},
        "plain": {"type": STRING, "shape": {"class": "H5S_SCALAR"}, "value_base64": base64.b64encode(b"x" * len(BLOB)).decode()},
    }}
    r = client.put(f"/groups/{root}/attributes", data=orjson.dumps(body))
    assert r.status_code in (200, 201), r.text
    for name, raw in (("pickle", BLOB), ("nans", NAN_PAYLOADS)):
        binary = client.get(f"/groups/{root}/attributes/{name}", headers={"Accept": "application/octet-stream"})
        assert binary.status_code == 200 and binary.content == raw, name
        b64 = client.get(f"/groups/{root}/attributes/{name}", params={"encoding": "base64"}).json()
        assert base64.b64decode(b64["value"]) == raw, name
        as_json = client.get(f"/groups/{root}/attributes/{name}").json()
        assert base64.b64decode(as_json["value_base64"]) == raw, name
    listed = client.get(f"/groups/{root}", params={"include_attrs": 1}).json()["attributes"]
    assert base64.b64decode(listed["pickle"]["value_base64"]) == BLOB
    assert "value_base64" not in listed["plain"]  # JSON holds plain text exactly: nothing extra
