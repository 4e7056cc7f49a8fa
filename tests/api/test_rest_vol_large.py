"""What the HDF5 REST VOL's own suite (``test_rest_vol``) makes and HDF5 accepts: attributes of
several megabytes (random dimensions of up to 16 per axis; kept outside the object's document,
docs/storage.md "Large attributes") and datasets of up to 32 dimensions whose extent holds more
than 2**63 bytes (chunked, never allocated). Requests formed as in ``test_rest_vol_forms``."""

from __future__ import annotations

import json
import math
import time
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
    for route in ("meta", "attr"):  # the web view's description of it
        r = vol.session.get(f"{vol.endpoint}/h5grove/{route}", params={"file": vol.domain, "path": "/shapes"}, timeout=60)
        assert r.status_code == 200, r.text[:300]
    view = vol.session.get(f"{vol.endpoint}/view/api/object", params={"domain": vol.domain, "path": "/shapes"}, timeout=60)
    assert view.status_code == 200, view.text[:300]
    plot = vol.session.get(f"{vol.endpoint}/view/api/preview", params={"domain": vol.domain, "path": "/shapes"}, timeout=60)
    assert plot.status_code < 500, plot.text[:300]
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


# --- large attributes ----------------------------------------------------------------------------

I32 = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
BIG = (40, 30, 1100)  # 1.32 million int32: 5.3 MB, past the 1 MiB kept in a document


def _values(shape: tuple[int, ...] = BIG, start: int = 0) -> np.ndarray:
    return (np.arange(math.prod(shape), dtype="<i4") + start).reshape(shape)


def _doc_size(raw_store: Any, obj_id: str) -> int:
    from h5lake.model.ids import object_key
    stored = raw_store.read(object_key(obj_id))
    assert stored is not None
    return len(stored)


def _value_keys(raw_store: Any, obj_id: str) -> list[str]:
    from h5lake.model.ids import attribute_values_prefix
    return raw_store.list_keys(attribute_values_prefix(obj_id))


def test_large_attribute_with_a_space_in_its_name_is_made_written_and_read(vol: VolRest, raw_store: Any) -> None:
    """test_create_attribute_with_space_in_name, test_url_encoding: H5Acreate (type and shape,
    no value) of several MB under a percent-encoded name, H5Awrite and H5Aread in binary."""
    root = root_of(vol)
    base = f"/groups/{root}/attributes/attr%20with%20space"
    r = vol.put(base, json.dumps({"type": I32, "shape": list(BIG)}))
    assert r.status_code == 201, r.text
    zeros = vol.get(base + "/value", binary=True)
    assert zeros.status_code == 200 and zeros.content == bytes(4 * math.prod(BIG))
    values = _values()
    assert vol.put(base + "/value", values.tobytes(), binary=True).status_code == 200
    got = vol.get(base + "/value", binary=True)
    assert got.status_code == 200 and got.content == values.tobytes()
    # H5Aopen: type and shape without the value
    info = vol.get(base + "?IncludeData=0").json()
    assert info["shape"]["dims"] == list(BIG) and "value" not in info and "valueObject" not in info
    # the JSON value, and the object's document stays small: the value is an object of its own
    assert vol.get(base).json()["value"][39][29][1099] == values[39, 29, 1099]
    assert _doc_size(raw_store, root) < 10_000
    assert len(_value_keys(raw_store, root)) == 1
    # a GET of the object without include_attrs does not carry it; with, it does
    plain = vol.get(f"/groups/{root}")
    assert plain.status_code == 200 and len(plain.content) < 10_000 and plain.json()["attributeCount"] == 1
    shown = vol.get(f"/groups/{root}?include_attrs=1").json()["attributes"]["attr with space"]
    assert shown["value"][1][2][3] == values[1, 2, 3] and "valueObject" not in shown
    # the domain's object listing (HSDS's getobjs) leaves the object out: its clients GET it
    objs = vol.get("/?getobjs=1").json()["domain_objs"]
    assert root not in objs
    # h5grove (the web view's attribute values) reads it too
    grove = vol.session.get(f"{vol.endpoint}/h5grove/attr", params={"file": vol.domain, "path": "/"}, timeout=60)
    assert grove.status_code == 200 and grove.json()["attr with space"][39][29][1099] == values[39, 29, 1099]
    # overwrite replaces the value object; delete removes it
    assert vol.put(base + "/value", _values(start=5).tobytes(), binary=True).status_code == 200
    assert vol.get(base + "/value", binary=True).content == _values(start=5).tobytes()
    assert len(_value_keys(raw_store, root)) == 1
    assert vol.delete(base).status_code == 200
    assert vol.get(base).status_code in (404, 410)
    assert _value_keys(raw_store, root) == []


def test_large_attributes_are_iterated_with_and_without_data(vol: VolRest) -> None:
    """test_attribute_iterate: H5Aiterate lists names (GET .../attributes); HSDS's IncludeData
    and base64 forms carry each value; max_data_size leaves a large one out."""
    did = create_dataset(vol, root_of(vol), "dset", I32, [4, 4])
    base = f"/datasets/{did}/attributes"
    small = np.arange(6, dtype="<i4")
    for name, shape, start in (("a_big", BIG, 0), ("b_small", (6,), 0), ("c_big", (300, 1000), 9)):
        assert vol.put(f"{base}/{name}", json.dumps({"type": I32, "shape": list(shape)})).status_code == 201
        data = small if name == "b_small" else _values(shape, start)
        assert vol.put(f"{base}/{name}/value", data.tobytes(), binary=True).status_code == 200
    listed = vol.get(base).json()["attributes"]
    assert [a["name"] for a in listed] == ["a_big", "b_small", "c_big"] and all("value" not in a for a in listed)
    with_data = vol.get(base + "?IncludeData=1").json()["attributes"]
    assert np.array_equal(np.array(with_data[2]["value"], dtype="<i4"), _values((300, 1000), 9))
    assert with_data[1]["value"] == small.tolist()
    b64 = vol.get(base + "?IncludeData=1&encoding=base64").json()["attributes"]
    import base64
    assert base64.b64decode(b64[0]["value"]) == _values().tobytes()
    capped = vol.get(base + "?IncludeData=1&max_data_size=1000").json()["attributes"]
    assert "value" not in capped[0] and capped[1]["value"] == small.tolist()
    paged = vol.get(base + "?IncludeData=1&Limit=1&Marker=b_small").json()["attributes"]
    assert [a["name"] for a in paged] == ["c_big"] and len(paged[0]["value"]) == 300


def test_large_attribute_of_a_committed_datatype_on_a_committed_datatype(vol: VolRest) -> None:
    """test_create_attribute_with_committed_type and attributes on a committed datatype."""
    r = vol.post("/datatypes", json.dumps({"type": I32, "link": {"id": root_of(vol), "name": "int_t"}}))
    assert r.status_code == 201, r.text
    tid = r.json()["id"]
    base = f"/datatypes/{tid}/attributes/big"
    assert vol.put(base, json.dumps({"type": tid, "shape": list(BIG)})).status_code == 201
    assert vol.put(base + "/value", _values().tobytes(), binary=True).status_code == 200
    assert vol.get(base + "/value", binary=True).content == _values().tobytes()
    assert vol.get(f"/datatypes/{tid}?include_attrs=1").json()["attributes"]["big"]["shape"]["dims"] == list(BIG)


def test_a_value_left_by_a_crash_is_invisible_and_goes_with_its_object(vol: VolRest, raw_store: Any) -> None:
    """A value object whose document update never came (a crash between the two puts) is
    named by no document, so nothing shows it; a large write to the object leaves it while it
    is young (it may be a write under way: tests/unit/test_attribute_values.py has the old
    one collected), and deleting the object deletes it."""
    from h5lake.model.ids import attribute_value_key
    gid = vol.post("/groups", json.dumps({"link": {"id": root_of(vol), "name": "g"}})).json()["id"]
    base = f"/groups/{gid}/attributes"
    assert vol.put(f"{base}/a", json.dumps({"type": I32, "shape": list(BIG)})).status_code == 201
    left = raw_store.root / attribute_value_key(gid, "0" * 32)  # one_backend: the local directory
    left.write_bytes(b"left by a crash")
    assert [a["name"] for a in vol.get(base + "?IncludeData=1").json()["attributes"]] == ["a"]
    assert vol.put(f"{base}/b", json.dumps({"type": I32, "shape": list(BIG)})).status_code == 201
    assert left.exists() and len(_value_keys(raw_store, gid)) == 3
    assert vol.delete(f"/groups/{gid}").status_code == 200
    for _ in range(400):  # deleted in the background after the delete's answer
        if not _value_keys(raw_store, gid):
            break
        time.sleep(0.05)
    assert _value_keys(raw_store, gid) == []


def test_racing_overwrites_of_a_large_attribute_keep_one_whole_value(vol: VolRest, raw_store: Any) -> None:
    """Writers racing to replace one large attribute: each answer is durable, the value read
    afterwards is one writer's whole value, and exactly one value object is left."""
    from concurrent.futures import ThreadPoolExecutor

    root = root_of(vol)
    base = f"/groups/{root}/attributes/raced"
    shape = (300, 1000)  # 1.2 MB
    assert vol.put(base, json.dumps({"type": I32, "shape": list(shape)})).status_code == 201
    written = {k: _values(shape, k * 1000).tobytes() for k in range(8)}

    def write(k: int) -> int:
        other = VolRest(vol.endpoint, vol.domain)
        return other.put(base + "/value", written[k], binary=True).status_code

    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(write, list(written) * 2))
    assert codes == [200] * len(codes)
    assert vol.get(base + "/value", binary=True).content in written.values()
    assert len(_value_keys(raw_store, root)) == 1
