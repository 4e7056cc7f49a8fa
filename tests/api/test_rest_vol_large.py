"""What the HDF5 REST VOL's own suite (``test_rest_vol``) makes and HDF5 accepts: attributes of
several megabytes (random dimensions of up to 16 per axis; kept outside the object's document,
docs/storage.md "Large attributes") and datasets of up to 32 dimensions whose extent holds more
than 2**63 bytes (chunked, never allocated). Requests formed as in ``test_rest_vol_forms``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from tests.api.test_rest_vol_forms import FCPL, VolRest, create_dataset, root_of

pytestmark = pytest.mark.one_backend

BIG_COMPOUND = {"class": "H5T_COMPOUND", "fields": [
    {"name": "id", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}},
    {"name": "name", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLTERM",
                              "length": 200}},
    {"name": "xyz", "type": {"class": "H5T_ARRAY", "dims": [8], "base": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}}},
]}  # 272 bytes, as generate_random_datatype makes them


@pytest.fixture
def vol(endpoint: str, domain: str) -> Iterator[VolRest]:
    v = VolRest(endpoint, domain)
    r = v.put("/", json.dumps({"group": {"creationProperties": FCPL}}))
    assert r.status_code == 201, r.text
    yield v


def test_dataset_of_22_dimensions_past_2_63_bytes_is_made_and_reads_fill(vol: VolRest) -> None:
    """test_create_dataset_shapes: H5Dcreate2 with the default (here: chunked) layout of a
    random shape; HDF5 allocates nothing, so only the element count has to fit its index."""
    root = root_of(vol)
    dims = [8] * 20 + [3, 2]  # 6.9e18 elements (under 2**63) of 272 bytes: 1.9e21 bytes
    assert math.prod(dims) < 2**63 < math.prod(dims) * 272
    did = create_dataset(vol, root, "shapes", BIG_COMPOUND, dims)
    shape = vol.get(f"/datasets/{did}/shape").json()["shape"]
    assert shape["dims"] == dims
    layout = vol.get(f"/datasets/{did}").json()["layout"]
    assert len(layout["dims"]) == 22 and math.prod(layout["dims"]) * 272 <= 64 * 2**20
    # a small selection of it reads as fill (zeros), binary and JSON
    sel = "[" + ",".join(["0:1"] * 20 + ["1:3", "0:2"]) + "]"
    got = vol.get(f"/datasets/{did}/value?select={sel}", binary=True)
    assert got.status_code == 200, got.text[:300]
    assert got.content == bytes(4 * 272)
    last = "[" + ",".join(f"{d - 1}:{d}" for d in dims) + "]"
    got = vol.get(f"/datasets/{did}/value?select={last}")
    assert got.status_code == 200, got.text[:300]
    value: Any = got.json()["value"]
    while isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    assert value[0] == 0 and value[1] == ""
    # a write at the far corner lands there and nowhere else
    one = np.zeros((), dtype=[("id", "<i8"), ("name", "S200"), ("xyz", "<f8", (8,))])
    one["id"] = 7
    assert vol.put(f"/datasets/{did}/value?select={last}", one.tobytes(), binary=True).status_code == 200
    assert vol.get(f"/datasets/{did}/value?select={last}", binary=True).content == one.tobytes()
    assert vol.get(f"/datasets/{did}/value?select={sel}", binary=True).content == bytes(4 * 272)
    # verbose GET: the stats hold the logical size past 2**63
    stats = vol.get(f"/datasets/{did}?verbose=1")
    assert stats.status_code == 200, stats.text[:300]
    assert vol.get("/?verbose=1").status_code == 200
    # points (H5Sselect_elements): the far corner and the origin, as uint64 coordinates
    points = np.array([[d - 1 for d in dims], [0] * 22], dtype="<u8")
    r = vol.post(f"/datasets/{did}/value", points.tobytes(), binary=True, content_type="application/octet-stream")
    assert r.status_code == 200, r.text[:300]
    assert r.content == one.tobytes() + bytes(272)


def test_dataset_whose_element_count_overflows_is_refused_with_the_reason(vol: VolRest) -> None:
    root = root_of(vol)
    body = {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "shape": [16] * 22,
            "link": {"id": root, "name": "too_many"}}
    r = vol.post("/datasets", json.dumps(body))
    assert r.status_code == 400, r.text
    assert "elements" in r.json()["error"]["message"]
