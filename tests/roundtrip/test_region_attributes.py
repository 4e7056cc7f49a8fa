"""Region references in attributes (and JSON values), in the form h5pyd 1.0 sends and reads:
h5json's object ``{"id", "select_type", "selection"}`` (or ``selection_dict``), which HSDS stores
as given. h5lake took only its base64 blob there (400), so an h5pyd user could not write such an
attribute, and h5pyd could not read one loaded from a file (docs/fidelity.md)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import pytest
import requests
from h5py import h5r

from h5lake.client.common import ToolError
from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings

pytestmark = pytest.mark.one_backend

DATA = np.arange(100).reshape(10, 10)


def _open(settings: Settings, domain: str, mode: str) -> h5pyd.File:
    return h5pyd.File(domain, mode, endpoint=settings.endpoint, username=settings.username, password=settings.password)


def _write_with_h5pyd(settings: Settings, domain: str) -> None:
    with _open(settings, domain, "w") as f:
        d = f.create_dataset("d", data=DATA)
        f.attrs["box"] = d.regionref[1:3, 2:5]
        f.attrs["points"] = d.regionref[[1, 4], [2, 5]]
        f.attrs["stepped"] = d.regionref[0:10:3, 1]  # h5json's selection_dict form
        f.attrs["whole"] = d.regionref[...]
        f.attrs["empty"] = d.regionref[0:0, :]  # h5json: a block ending before its start, [[0, 0], [-1, 9]]
        f["g"] = f["d"]  # a second name; the references name the dataset by id
        f.attrs.create("two", [d.regionref[0, 0:2], d.regionref[9, 8:]], dtype=h5pyd.special_dtype(ref=h5pyd.RegionReference))


def _root_attribute(settings: Settings, domain: str, name: str) -> requests.Response:
    auth = (settings.username, settings.password)
    root = requests.get(f"{settings.endpoint}/", params={"domain": domain}, auth=auth, timeout=30).json()["root"]
    return requests.get(f"{settings.endpoint}/groups/{root}/attributes/{name}", params={"domain": domain}, auth=auth, timeout=30)


def test_h5pyd_writes_and_reads_region_reference_attributes(settings: Settings, new_domain: Callable[[str], str]) -> None:
    domain = new_domain("regionattrs")
    _write_with_h5pyd(settings, domain)
    with _open(settings, domain, "r") as f:
        d = f["d"]
        for name, expect in [("box", DATA[1:3, 2:5]), ("points", np.array([12, 45])), ("whole", DATA)]:
            ref = f.attrs[name]
            assert isinstance(ref, h5pyd.RegionReference), name
            assert f[ref.id].id.uuid == d.id.uuid
            np.testing.assert_array_equal(np.ravel(d[ref]), np.ravel(expect), err_msg=name)
        two = f.attrs["two"]
        assert two.shape == (2,)
        np.testing.assert_array_equal(np.ravel(d[two[1]]), [98, 99])
        assert f.attrs["stepped"].id == d.id.uuid
        assert d[f.attrs["empty"]].size == 0
    # in JSON: h5json's object, the id as h5lake names datasets elsewhere
    value = _root_attribute(settings, domain, "box").json()["value"]
    assert value["select_type"] == "H5S_SEL_HYPERSLABS" and value["selection"] == [[[1, 2], [2, 4]]]
    with _open(settings, domain, "r") as f:
        assert value["id"] == "datasets/" + f["d"].id.uuid


def test_region_references_h5pyd_wrote_export_to_hdf5(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    domain = new_domain("regionexport")
    _write_with_h5pyd(settings, domain)
    target = tmp_path / "out.h5"
    export_domain(RestClient(settings, domain), target, workers=2)
    with h5py.File(target, "r") as f:
        d = f["d"]
        for name, expect in [("box", DATA[1:3, 2:5]), ("points", [12, 45]), ("stepped", DATA[0:10:3, 1]), ("whole", DATA)]:
            ref = f.attrs[name]
            assert isinstance(ref, h5r.RegionReference) and f[ref].name in ("/d", "/g"), name
            np.testing.assert_array_equal(np.ravel(d[ref]), np.ravel(expect), err_msg=name)
        np.testing.assert_array_equal(np.ravel(d[f.attrs["two"][0]]), [0, 1])
        assert d[f.attrs["empty"]].size == 0


def test_h5pyd_reads_region_reference_attributes_of_a_loaded_file(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    source = tmp_path / "regions.h5"
    with h5py.File(source, "w") as f:
        d = f.create_dataset("d", data=DATA)
        space = d.id.get_space()
        space.select_elements(np.array([[0, 0], [9, 9], [3, 4]]))
        f.attrs["box"] = d.regionref[1:3, 2:5]
        f.attrs["points"] = h5r.create(d.id, b".", h5r.DATASET_REGION, space)
        f.attrs["pair"] = np.array([d.regionref[1:3, 2:5], d.regionref[4, :]], dtype=h5py.regionref_dtype)
    domain = new_domain("regionload")
    client = RestClient(settings, domain)
    load_file(source, client, workers=2)
    with _open(settings, domain, "r") as f:
        d = f["d"]
        np.testing.assert_array_equal(d[f.attrs["box"]], DATA[1:3, 2:5])
        np.testing.assert_array_equal(d[f.attrs["points"]], [0, 99, 34])
        np.testing.assert_array_equal(d[f.attrs["pair"][1]], DATA[4:5, :])
    # and back out: the blob answered as JSON reads back as the same blob
    target = tmp_path / "out.h5"
    export_domain(client, target, workers=2)
    with h5py.File(target, "r") as f:
        np.testing.assert_array_equal(f["d"][f.attrs["points"]], [0, 99, 34])
        np.testing.assert_array_equal(f["d"][f.attrs["pair"][0]], DATA[1:3, 2:5])


@pytest.mark.parametrize("value, words", [
    ({"id": "groups/g-00000000-00000000-0000-000000-000000", "select_type": "H5S_SEL_ALL"}, "not a dataset id"),
    ({"id": None}, "must be a string"),
    ({"id": "d-1234", "select_type": "H5S_SEL_POINTS", "selection": [[1, 2]]}, "not a dataset id"),
    ({"select_type": "H5S_SEL_ALL"}, "must be a string"),
    ({"id": "DSET", "select_type": "H5S_SEL_BOXES", "selection": []}, "select_type must be one of"),
    ({"id": "DSET", "select_type": "H5S_SEL_POINTS", "selection": [[1, 2], [3]]}, "mixes ranks"),
    ({"id": "DSET", "select_type": "H5S_SEL_POINTS", "selection": [[1, -2]]}, "non-negative integers"),
    ({"id": "DSET", "select_type": "H5S_SEL_HYPERSLABS", "selection": [[[1, 2]]]}, "[start, end] blocks"),
    ({"id": "DSET", "select_type": "H5S_SEL_POINTS", "selection": [[1, 2]], "extra": 1}, "unknown key 'extra'"),
    ({"id": "DSET", "selection_dict": {"shape": [10], "slices": [{"type": "slice", "start": 0, "stop": 3, "step": 0}]}}, "positive step"),
])
def test_bad_region_reference_objects_are_refused(settings: Settings, new_domain: Callable[[str], str], value: dict[str, object], words: str) -> None:
    domain = new_domain("regionbad")
    with _open(settings, domain, "w") as f:
        dset = f.create_dataset("d", data=DATA).id.uuid
    auth = (settings.username, settings.password)
    root = requests.get(f"{settings.endpoint}/", params={"domain": domain}, auth=auth, timeout=30).json()["root"]
    if value.get("id") == "DSET":
        value = {**value, "id": dset[2:]}  # a real dataset's id, in h5json's bare form
    body = {"type": {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}, "shape": "H5S_SCALAR", "value": value}
    r = requests.put(f"{settings.endpoint}/groups/{root}/attributes/a", params={"domain": domain}, json=body, auth=auth, timeout=30)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"]
    # the null reference and a good object go in
    for good in (None, {"id": dset, "select_type": "H5S_SEL_NONE"}):
        body["value"] = good
        r = requests.put(f"{settings.endpoint}/groups/{root}/attributes/a", params={"domain": domain, "replace": 1},
                         json=body, auth=auth, timeout=30)
        assert r.status_code in (200, 201), r.text


def test_region_references_h5pyd_wrote_to_a_dataset_export_to_hdf5(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    """h5pyd 1.0 writes a dataset of region references in binary, each in h5json's own binary
    form (``RegionReference.tobytes``); export stopped at them ("not in h5lake's format")."""
    domain = new_domain("regiondset")
    picks = [np.s_[1:3, 2:5], np.s_[[1, 4], [2, 5]], np.s_[0:10:3, 1], np.s_[...], np.s_[2, [1, 3, 8]]]
    with _open(settings, domain, "w") as f:
        d = f.create_dataset("d", data=DATA)
        dt = h5pyd.special_dtype(ref=h5pyd.RegionReference)
        refs = np.empty(len(picks) + 1, dtype=dt)
        for i, ix in enumerate(picks):
            refs[i] = d.regionref[ix]
        refs[-1] = None
        f.create_dataset("refs", data=refs)
    target = tmp_path / "out.h5"
    export_domain(RestClient(settings, domain), target, workers=2)
    with h5py.File(target, "r") as f:
        d, refs = f["d"], f["refs"][...]
        expect = [DATA[1:3, 2:5], [12, 45], DATA[0:10:3, 1], DATA, DATA[2, [1, 3, 8]]]
        for ref, want in zip(refs, expect, strict=False):
            assert f[ref].name == "/d"
            np.testing.assert_array_equal(np.ravel(d[ref]), np.ravel(want))
        assert not refs[-1]


def _lists(n: int) -> dict[str, object]:
    return {"shape": [10, 10], "slices": [{"type": "list", "values": [i % 10 for i in range(n)]}] * 2}


@pytest.mark.parametrize("value, words", [
    # two index lists of 2,100 indices: 4.4 million points, each made a Python tuple (the
    # export's memory grew without bound with longer lists)
    ({"id": "DSET", "selection_dict": _lists(2100)}, "more than 4194304 points"),
    # blobs in base64, which any client may store: no id, no slices
    (base64.b64encode(b'{"id": 5}').decode(), "neither h5lake's form nor h5pyd's"),
    ("DSET-BLOB", "not a selection (KeyError"),
])
def test_regions_that_select_nothing_sane_end_the_export_with_a_message(
        tmp_path: Path, settings: Settings, new_domain: Callable[[str], str], value: object, words: str) -> None:
    """A region reference any client stored that is no selection, or one of millions of points,
    ends the export with a ToolError naming the attribute (it raised KeyError or AttributeError
    out of the export, or took memory without bound)."""
    domain = new_domain("regionexport")
    with _open(settings, domain, "w") as f:
        dset = f.create_dataset("d", data=DATA).id.uuid
    if isinstance(value, dict):
        value = {**value, "id": dset}
    elif value == "DSET-BLOB":
        value = base64.b64encode(b'{"id": "datasets/%s", "selection_dict": {"shape": [10, 10]}}' % dset.encode()).decode()
    auth = (settings.username, settings.password)
    root = requests.get(f"{settings.endpoint}/", params={"domain": domain}, auth=auth, timeout=30).json()["root"]
    body = {"type": {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}, "shape": "H5S_SCALAR", "value": value}
    r = requests.put(f"{settings.endpoint}/groups/{root}/attributes/r", params={"domain": domain}, json=body, auth=auth, timeout=30)
    assert r.status_code == 201, r.text
    with pytest.raises(ToolError, match=re.escape(words)):
        export_domain(RestClient(settings, domain), tmp_path / "out.h5", workers=2)

