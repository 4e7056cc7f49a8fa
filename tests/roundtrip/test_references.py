"""References through load and export (issue 15 item 1): region references, references to
objects that no longer exist, and datasets without a fill value, which export must always leave
readable by HDF5."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import requests
from h5py import h5r, h5t

from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.loadplan import DANGLING_NOTE
from h5lake.client.rest import RestClient, Settings
from tests.roundtrip.conftest import RoundTrip
from tests.roundtrip.corpus import _undefined_fill


def _h5pyd(settings: Settings, domain: str) -> h5pyd.File:
    return h5pyd.File(domain, "r", endpoint=settings.endpoint, username=settings.username, password=settings.password)


def test_dangling_references_stay_dangling(round_trip: Callable[[str], RoundTrip], settings: Settings) -> None:
    result = round_trip("dangling_refs")
    assert DANGLING_NOTE in result.load_notes
    with h5py.File(result.source, "r") as src, h5py.File(result.exported, "r") as out:
        assert "gone" not in out
        for f in (src, out):
            objs = f["objs"][...]
            assert [bool(r) for r in objs] == [True, True, True, True, False]
            np.testing.assert_array_equal(f[objs[2]][...], np.arange(100).reshape(10, 10))
            for ref in (*objs[:2], objs[3], f["regions"][1], f["regions"][3], f.attrs["gone_region"]):
                try:
                    f[ref]
                except (KeyError, ValueError, RuntimeError, OSError):
                    continue
                raise AssertionError(f"{f.filename}: a reference to a deleted object can be followed")
            assert f[f["regions"][0]].name == "/d"
            np.testing.assert_array_equal(f["d"][f["regions"][0]], src["d"][1:3, 2:5])
    # in the domain: ids that no object has; the server answers 404 for them, h5pyd sees the ids
    auth = (settings.username, settings.password)
    reply = requests.get(f"{settings.endpoint}/", params={"domain": result.domain}, auth=auth, timeout=30).json()
    root = reply["root"]
    links = requests.get(f"{settings.endpoint}/groups/{root}/links", params={"domain": result.domain}, auth=auth, timeout=30).json()
    objs_id = next(link["id"] for link in links["links"] if link["title"] == "objs")
    values = requests.get(f"{settings.endpoint}/datasets/{objs_id}/value", params={"domain": result.domain}, auth=auth, timeout=30).json()["value"]
    gone = values[:2]
    assert all(v.startswith("groups/g-") for v in gone) and len(set(gone)) == 2
    for ref in gone:
        r = requests.get(f"{settings.endpoint}/{ref}", params={"domain": result.domain}, auth=auth, timeout=30)
        assert r.status_code == 404, r.text
    with _h5pyd(settings, result.domain) as f:
        kept = f["objs"][...]
        assert [r.decode() for r in kept[:2]] == gone
        assert f[kept[2]].name == "/d"
        for ref in kept[:2]:
            try:
                f[ref]
            except OSError as exc:  # h5pyd: "[Errno 404] Not Found"
                assert "404" in str(exc)
            else:
                raise AssertionError("h5pyd follows a reference to a deleted object")


def test_region_blob_of_a_dangling_reference_names_only_an_id(round_trip: Callable[[str], RoundTrip], settings: Settings) -> None:
    result = round_trip("dangling_refs")
    client = RestClient(settings, result.domain)
    root = client.get_json("/")["root"]
    links = client.get_json(f"/groups/{root}/links")["links"]
    regions = next(link["id"] for link in links if link["title"] == "regions")
    blobs = client.get_json(f"/datasets/{regions}/value")["value"]  # h5json's object form
    assert blobs[0]["select_type"] == "H5S_SEL_HYPERSLABS" and blobs[2] is None
    assert set(blobs[1]) == {"id"} and blobs[1]["id"].startswith("datasets/d-")
    assert client.request("GET", f"/{blobs[1]['id']}", ok=(404,)).status_code == 404


def test_no_storage_and_no_fill_value_exports_readable(tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    """A dataset never written and without a fill value cannot be read even in its own file;
    the load copies nothing for it and the export writes it as zeros (a file HDF5 reads)."""
    source = tmp_path / "unwritten.h5"
    with h5py.File(source, "w") as f:
        f.create_dataset("d", data=np.arange(10.0))
        _undefined_fill(f, "refs", h5t.STD_REF_DSETREG, (4,))
        _undefined_fill(f, "ints", h5t.STD_I32LE, (4,), chunks=(2,))
        _undefined_fill(f, "contiguous", h5t.IEEE_F64LE, (3,))
    with h5py.File(source, "r") as f:
        try:
            f["contiguous"][...]
        except OSError as exc:
            assert "no data can be read" in str(exc)
        else:
            raise AssertionError("HDF5 reads a dataset with no storage and no fill value")
    client = RestClient(settings, new_domain("unwritten"))
    load_file(source, client, workers=2)
    target = tmp_path / "out.h5"
    export_domain(client, target, workers=2)
    with h5py.File(target, "r") as f:
        assert f["refs"].id.get_create_plist().fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED
        assert [bool(r) for r in f["refs"][...]] == [False] * 4
        np.testing.assert_array_equal(f["ints"][...], np.zeros(4, "<i4"))
        np.testing.assert_array_equal(f["contiguous"][...], np.zeros(3))
        np.testing.assert_array_equal(f["d"][...], np.arange(10.0))
        assert isinstance(f["refs"][0], h5r.RegionReference)
