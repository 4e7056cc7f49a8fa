"""The h5grove API under /h5grove/, asked as H5Web's h5grove provider asks (h5web
``packages/app/src/providers/h5grove/h5grove-api.ts``), with values compared to h5py's."""

from __future__ import annotations

import io

import h5py
import numpy as np
import pytest
import requests
from tests.conftest import auth
from tests.view.conftest import ViewDomain

pytestmark = pytest.mark.one_backend  # the h5grove routes' forms, the same on every store


def get(v: ViewDomain, route: str, user: str | None = "test_user1", **params: str) -> requests.Response:
    return requests.get(
        f"{v.endpoint}/h5grove/{route}", params={"file": v.domain, **params}, auth=auth(user) if user else None, timeout=60
    )


def test_root_answers_ok(endpoint: str) -> None:
    r = requests.get(endpoint + "/h5grove/", timeout=10)
    assert r.status_code == 200 and r.text == "ok"


def test_meta_of_root_lists_children_as_h5py_sees_them(view_domain: ViewDomain) -> None:
    r = get(view_domain, "meta", path="/")
    assert r.status_code == 200, r.text
    meta = r.json()
    assert meta["kind"] == "group" and meta["name"] == ""
    with h5py.File(view_domain.file) as f:
        assert [c["name"] for c in meta["children"]] == sorted(f.keys())
        kinds = {c["name"]: c["kind"] for c in meta["children"]}
        assert kinds["images"] == "group" and kinds["line"] == "dataset" and kinds["mytype"] == "datatype"
        assert kinds["alias"] == "dataset"  # a soft link that resolves is shown as its target
        assert sorted(a["name"] for a in meta["attributes"]) == sorted(f.attrs.keys())


def test_meta_of_datasets_has_h5grove_types(view_domain: ViewDomain) -> None:
    image = get(view_domain, "meta", path="/images/image").json()
    assert image["kind"] == "dataset" and image["shape"] == [40, 60]
    assert image["type"] == {"class": 1, "dtype": "<f4", "size": 4, "order": 0}
    assert image["chunks"] == [16, 16] and image["filters"][0]["id"] == 1
    assert image["attributes"] == [{"name": "units", "shape": [], "type": image["attributes"][0]["type"]}]
    cube = get(view_domain, "meta", path="/images/cube").json()
    assert cube["type"] == {"class": 0, "dtype": "<i2", "size": 2, "order": 0, "sign": 1}
    table = get(view_domain, "meta", path="/table").json()
    assert table["type"]["class"] == 6
    assert [m["name"] for m in table["type"]["members"]] == ["id", "name", "value"]
    assert table["type"]["members"][1]["class"] == 3 and table["type"]["members"][1]["vlen"] is False
    names = get(view_domain, "meta", path="/names").json()
    assert names["type"]["class"] == 3 and names["type"]["vlen"] is True and names["type"]["cset"] == 1
    scalar = get(view_domain, "meta", path="/scalar").json()
    assert scalar["shape"] == []


def test_missing_path_is_a_404_h5web_recognises(view_domain: ViewDomain) -> None:
    r = get(view_domain, "meta", path="/nope")
    assert r.status_code == 404
    assert "not a valid path" in r.json()["message"]
    r = requests.get(view_domain.endpoint + "/h5grove/meta", params={"file": "/home/test_user1/absent.h5"},
                     auth=auth("test_user1"), timeout=10)
    assert r.status_code == 404 and "File not found" in r.json()["message"]


def test_attr_values(view_domain: ViewDomain) -> None:
    r = get(view_domain, "attr", path="/")
    assert r.status_code == 200
    assert r.json() == {"title": "view test", "version": [1, 2, 3]}
    assert get(view_domain, "attr", path="/", attr_keys="title").json() == {"title": "view test"}


@pytest.mark.parametrize("path", ["/line", "/images/image", "/images/cube"])
def test_data_bin_safe_matches_h5py(view_domain: ViewDomain, path: str) -> None:
    """H5Web reads numeric data as ``format=bin&dtype=safe`` into a typed array."""
    with h5py.File(view_domain.file) as f:
        expected = f[path][()]
    r = get(view_domain, "data", path=path, format="bin", dtype="safe")
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    got = np.frombuffer(r.content, dtype=expected.dtype.newbyteorder("<")).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected)


def test_data_with_the_slice_selection_h5web_sends(view_domain: ViewDomain) -> None:
    """H5Web's dimension mapper sends ``selection=2,:,:`` for a 2-D slice of a 3-D dataset."""
    with h5py.File(view_domain.file) as f:
        expected = f["/images/cube"][2, :, :]
    r = get(view_domain, "data", path="/images/cube", selection="2,:,:", format="bin", dtype="safe")
    assert r.status_code == 200
    np.testing.assert_array_equal(np.frombuffer(r.content, "<i2").reshape(20, 30), expected)
    r = get(view_domain, "data", path="/images/cube", selection="1,3:7,::10")
    np.testing.assert_array_equal(np.array(r.json()), f_cube(view_domain)[1, 3:7, ::10])


def f_cube(v: ViewDomain) -> np.ndarray:
    with h5py.File(v.file) as f:
        return f["/images/cube"][()]


def test_data_json_flatten_for_compound_and_strings(view_domain: ViewDomain) -> None:
    """Non-numeric data comes as JSON with ``flatten=true``."""
    with h5py.File(view_domain.file) as f:
        rows = f["table"][()]
        names = [s.decode() for s in f["names"][()]]
    table = get(view_domain, "data", path="/table", flatten="true").json()
    assert table == [[int(r["id"]), r["name"].decode(), float(r["value"])] for r in rows]
    assert get(view_domain, "data", path="/names", flatten="true").json() == names
    assert get(view_domain, "data", path="/scalar").json() == 3.25
    scalar = get(view_domain, "data", path="/scalar", format="bin", dtype="safe")
    assert np.frombuffer(scalar.content, "<f8").tolist() == [3.25]


def test_data_npy_export(view_domain: ViewDomain) -> None:
    r = get(view_domain, "data", path="/images/image", format="npy", selection="5:10,::7")
    assert r.status_code == 200 and "data.npy" in r.headers["content-disposition"]
    with h5py.File(view_domain.file) as f:
        np.testing.assert_array_equal(np.load(io.BytesIO(r.content)), f["/images/image"][5:10, ::7])


def test_bad_arguments_are_422(view_domain: ViewDomain) -> None:
    assert get(view_domain, "data", path="/line", format="tiff2").status_code == 422
    assert get(view_domain, "data", path="/table", dtype="safe", format="bin").status_code == 422
    assert get(view_domain, "data", path="/line", selection="1,2").status_code == 422
    assert get(view_domain, "data", path="/line", selection="zz").status_code == 422


def test_stats_match_numpy(view_domain: ViewDomain) -> None:
    with h5py.File(view_domain.file) as f:
        image = f["/images/image"][()]
    got = get(view_domain, "stats", path="/images/image").json()
    assert got["min"] == pytest.approx(float(image.min())) and got["max"] == pytest.approx(float(image.max()))
    assert got["mean"] == pytest.approx(float(image.mean()), rel=1e-6)
    assert got["strict_positive_min"] == pytest.approx(float(image[image > 0].min()))
    sliced = get(view_domain, "stats", path="/images/cube", selection="4,:,:").json()
    assert sliced["max"] == int(f_cube(view_domain)[4].max())


def test_paths_list_every_object(view_domain: ViewDomain) -> None:
    r = get(view_domain, "paths", path="/")
    assert r.status_code == 200
    expected = ["/"]
    with h5py.File(view_domain.file) as f:
        f.id.links.visit(lambda name: expected.append("/" + name.decode()))  # as h5grove lists them
    assert sorted(r.json()) == sorted(expected)
    assert sorted(get(view_domain, "paths", path="/images").json()) == ["/images", "/images/cube", "/images/image"]


def test_refusals(view_domain: ViewDomain) -> None:
    """Another user gets h5grove's 403; no credentials get a 401 that asks for a login."""
    r = get(view_domain, "data", user="test_user2", path="/line")
    assert r.status_code == 403 and "Permission denied" in r.json()["message"]
    r = get(view_domain, "meta", user=None, path="/")
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Basic realm="h5lake"'
