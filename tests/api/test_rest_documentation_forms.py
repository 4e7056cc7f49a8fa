"""Requests in the forms the HDF REST API documentation (HDFGroup/hdf-rest-api) shows, sent as
its pages send them: query indexes, szip as the documentation spells it, query updates with
start/stop/step, limits and long coordinate lists, `Limit=0` (docs/api.md)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import Client

from h5lake.service.values.core import MAX_QUERY_UPDATE_CHUNKS

pytestmark = pytest.mark.one_backend  # request and answer forms, the same on every store

COMPOUND = {"class": "H5T_COMPOUND", "fields": [
    {"name": "date", "type": "H5T_STD_I64LE"},
    {"name": "temp", "type": "H5T_STD_I64LE"},
]}


def test_query_index_names_elements_of_the_dataset(client: Client) -> None:
    # GET_Value "Query Batch": query=date == 23&Limit=5&select=[24:72] answers index [24, ...]
    rows = [[21 if i < 24 else 23, 60 + i % 7] for i in range(72)]
    r = client.post("/datasets", json={"type": COMPOUND, "shape": [72]})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    assert client.put(f"/datasets/{did}/value", json={"value": rows}).status_code == 200
    r = client.get(f"/datasets/{did}/value", params={"query": "date == 23", "Limit": "5", "select": "[24:72]"})
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [24, 25, 26, 27, 28]
    assert r.json()["value"] == rows[24:29]
    # a step: the index of each match in the dataset (HSDS's chunkQuery means the same)
    r = client.get(f"/datasets/{did}/value", params={"query": "(date == 23) & (temp >= 65)", "select": "[20:72:4]"})
    want = [i for i in range(20, 72, 4) if rows[i][0] == 23 and rows[i][1] >= 65]
    assert r.json()["index"] == want and r.json()["value"] == [rows[i] for i in want]
    # more dimensions: C-order positions in the dataset, also through a coordinate list
    arr = np.arange(20, dtype="<i4").reshape(4, 5) * 3
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [4, 5]})
    d2 = r.json()["id"]
    assert client.put(f"/datasets/{d2}/value", json={"value": arr.tolist()}).status_code == 200
    for select, key in (("[1:3,2:4]", np.s_[1:3, 2:4]), ("[[3,1],1:5:2]", np.s_[[3, 1], 1:5:2])):
        r = client.get(f"/datasets/{d2}/value", params={"query": "_ > 20", "select": select})
        assert r.status_code == 200, r.text
        positions = np.arange(20).reshape(4, 5)[key].reshape(-1)
        part = arr[key].reshape(-1)
        assert r.json()["index"] == positions[part > 20].tolist(), select
        assert r.json()["value"] == part[part > 20].tolist()


def test_szip_filter_as_the_documentation_spells_it(client: Client) -> None:
    # POST_Dataset "SZIP Compression with chunking", verbatim (h5pyd and the REST VOL connector
    # spell the key so too)
    body = {
        "creationProperties": {
            "filters": [{"bitsPerPixel": 8, "coding": "H5_SZIP_EC_OPTION_MASK", "id": 4,
                         "pixelsPerBlock": 32, "pixelsPerScanline": 100}],
            "layout": {"class": "H5D_CHUNKED", "dims": [100, 100]},
        },
        "shape": [1000, 1000],
        "type": "H5T_IEEE_F32LE",
    }
    r = client.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    (f,) = client.get(f"/datasets/{did}").json()["creationProperties"]["filters"]
    assert f["pixelsPerScanline"] == 100 and "pixelsPerScanLine" not in f
    block = (np.arange(200 * 150, dtype="<f4").reshape(200, 150) % 97).tolist()
    r = client.put(f"/datasets/{did}/value", params={"select": "[100:300,50:200]"}, json={"value": block})
    assert r.status_code == 200, r.text
    got = client.get(f"/datasets/{did}/value", params={"select": "[100:300,50:200]"}).json()["value"]
    assert got == block
    # the spelling h5lake answered before is still read (documents stored then); both is 400
    filt = {"id": 4, "coding": "H5_SZIP_NN_OPTION_MASK", "pixelsPerBlock": 16}
    for key, status in ((("pixelsPerScanLine",), 201), (("pixelsPerScanLine", "pixelsPerScanline"), 400)):
        r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [64], "creationProperties": {
            "filters": [{**filt, **{k: 32 for k in key}}], "layout": {"class": "H5D_CHUNKED", "dims": [64]}}})
        assert r.status_code == status, (key, r.text)


def test_query_update_changes_only_the_selected_elements(client: Client) -> None:
    # PUT value?query= with select: HSDS looks only at the selection (chunk_sn.PUT_Value passes
    # its slices to the query); every matching element of the dataset was changed before
    rows = [[21 if i < 24 else 23, i] for i in range(72)]

    def fresh() -> str:
        r = client.post("/datasets", json={"type": COMPOUND, "shape": [72],
                                           "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [10]}}})
        assert r.status_code == 201, r.text
        did = str(r.json()["id"])
        assert client.put(f"/datasets/{did}/value", json={"value": rows}).status_code == 200
        return did

    for params, body, changed in (
        ({"select": "[30:40]", "Limit": "3"}, {"value": {"temp": -1}}, [30, 31, 32]),
        ({"select": "[25:60:10]"}, {"temp": -1}, [25, 35, 45, 55]),
        ({}, {"value": {"temp": -1}, "select": "[[70,3,50]]"}, [50, 70]),  # 3 does not match
        ({"select": "[5:5]"}, {"temp": -1}, []),
    ):
        did = fresh()
        r = client.put(f"/datasets/{did}/value", params={"query": "date == 23", **params}, json=body)
        assert r.status_code == 200, r.text
        assert r.json()["index"] == changed, params
        now = client.get(f"/datasets/{did}/value").json()["value"]
        assert [i for i, row in enumerate(now) if row[1] == -1] == changed, params
    did = fresh()
    r = client.put(f"/datasets/{did}/value", params={"query": "date == 23", "select": "[0:73]"}, json={"temp": -1})
    assert r.status_code == 400 and "message" in r.json()["error"]


def test_query_update_honours_start_stop_step_beside_value(client: Client) -> None:
    # start/stop/step beside "value" select as in a value write's body (and as HSDS's _getSelect
    # reads them); the whole dataset was updated
    rows = [[23, i] for i in range(20)]
    r = client.post("/datasets", json={"type": COMPOUND, "shape": [20]})
    did = r.json()["id"]
    assert client.put(f"/datasets/{did}/value", json={"value": rows}).status_code == 200
    r = client.put(f"/datasets/{did}/value", params={"query": "date == 23"},
                   json={"value": {"temp": -1}, "start": 4, "stop": 12, "step": 3})
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [4, 7, 10]
    now = client.get(f"/datasets/{did}/value").json()["value"]
    assert [i for i, row in enumerate(now) if row[1] == -1] == [4, 7, 10]
    r = client.put(f"/datasets/{did}/value", params={"query": "date == 23"},
                   json={"value": {"temp": -2}, "start": 4, "select": "[0:2]"})
    assert r.status_code == 400 and "message" in r.json()["error"]
    assert [row[1] for row in client.get(f"/datasets/{did}/value").json()["value"]].count(-2) == 0


def test_query_update_honours_a_limit_beside_value(client: Client) -> None:
    # HSDS reads Limit from the body of a query update too (the body's wins over the query
    # parameter); h5lake ignored it there and changed every match
    rows = [[23, i] for i in range(10)]
    r = client.post("/datasets", json={"type": COMPOUND, "shape": [10]})
    did = r.json()["id"]
    assert client.put(f"/datasets/{did}/value", json={"value": rows}).status_code == 200
    r = client.put(f"/datasets/{did}/value", params={"query": "date == 23", "Limit": "5"},
                   json={"value": {"temp": -1}, "Limit": 2})
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [0, 1]
    now = client.get(f"/datasets/{did}/value").json()["value"]
    assert [i for i, row in enumerate(now) if row[1] == -1] == [0, 1]
    for bad in (-1, "2", True, 1.5):
        r = client.put(f"/datasets/{did}/value", params={"query": "date == 23"},
                       json={"value": {"temp": -2}, "Limit": bad})
        assert r.status_code == 400 and "message" in r.json()["error"], bad
    assert [row[1] for row in client.get(f"/datasets/{did}/value").json()["value"]].count(-2) == 0


def test_query_update_of_a_sparse_selection_reads_only_its_chunks(client: Client) -> None:
    # a coordinate list, or a step longer than a chunk, holds elements of a few chunks far apart:
    # the update looks at those chunks, not at every chunk between (it was 413 past
    # MAX_QUERY_UPDATE_CHUNKS chunks, for two elements)
    n = MAX_QUERY_UPDATE_CHUNKS + 2
    r = client.post("/datasets", json={"type": COMPOUND, "shape": [n],
                                       "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1]}}})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    for at in (0, n - 1):
        r = client.put(f"/datasets/{did}/value", params={"select": f"[{at}:{at + 1}]"}, json={"value": [[23, at]]})
        assert r.status_code == 200, r.text
    for select, limit in ((f"[[{n - 1},0]]", None), (f"[0:{n}:{n - 1}]", None), (f"[0:{n}:{n - 1}]", "1")):
        params = {"query": "date == 23", "select": select, **({"Limit": limit} if limit else {})}
        r = client.put(f"/datasets/{did}/value", params=params, json={"temp": -1})
        assert r.status_code == 200, (select, r.text)
        want = [0] if limit else [0, n - 1]
        assert r.json()["index"] == want, select
        r = client.get(f"/datasets/{did}/value", params={"query": "temp == -1"})
        assert r.json()["index"] == want, select
        for at in (0, n - 1):
            client.put(f"/datasets/{did}/value", params={"select": f"[{at}:{at + 1}]"}, json={"value": [[23, at]]})


def test_query_update_with_a_long_coordinate_list(client: Client) -> None:
    # a selection of 100,000 coordinates (a body select) over 2,000 chunks: each chunk looks up
    # its own coordinates; every chunk searched the whole list (numpy.isin), and this update
    # ran past the client's timeout
    n, step = 2_000_000, 20
    r = client.post("/datasets", json={"type": COMPOUND, "shape": [n],
                                       "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1000]}}})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    matching = (0, 20, 25, 1, n - step, n - 1)
    for at in matching:
        r = client.put(f"/datasets/{did}/value", params={"select": f"[{at}:{at + 1}]"}, json={"value": [[23, at]]})
        assert r.status_code == 200, r.text
    coords = list(range(0, n, step))
    r = client.put(f"/datasets/{did}/value", params={"query": "date == 23"},
                   json={"value": {"temp": -1}, "select": [coords]})
    assert r.status_code == 200, r.text
    want = [at for at in sorted(matching) if at % step == 0]
    assert r.json()["index"] == want
    assert client.get(f"/datasets/{did}/value", params={"query": "temp == -1"}).json()["index"] == want


def test_limit_zero_lists_everything(client: Client, home_folder: str) -> None:
    # openapi.yaml: Limit "must be an integer N >= 0"; HSDS takes 0 as no limit (links and
    # attributes pass it on only when non-zero, collections and domain lists test it so)
    root = client.get("/").json()["root"]
    for name in ("a", "b", "c"):
        r = client.post("/groups", json={"link": {"id": root, "name": name}})
        assert r.status_code == 201, r.text
        assert client.put(f"/groups/{root}/attributes/{name}", json={"type": "H5T_STD_I8LE", "value": 1}).status_code == 201
        client.post("/datatypes", json={"type": "H5T_STD_I8LE", "link": {"id": root, "name": "t" + name}})
    for path, key in ((f"/groups/{root}/links", "links"), (f"/groups/{root}/attributes", "attributes"),
                      ("/groups", "groups"), ("/datatypes", "datatypes")):
        whole = client.get(path).json()[key]
        assert len(whole) >= 3
        r = client.get(path, params={"Limit": "0"})
        assert r.status_code == 200, (path, r.text)
        assert r.json()[key] == whole, path
        assert len(client.get(path, params={"Limit": "2"}).json()[key]) == 2
        assert client.get(path, params={"Limit": "-1"}).status_code == 400
    r = client.get("/domains", params={"domain": home_folder, "Limit": "0"})
    assert r.status_code == 200 and client.domain in [d["name"] for d in r.json()["domains"]]
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [6]})
    did = r.json()["id"]
    client.put(f"/datasets/{did}/value", json={"value": [5, 1, 5, 2, 5, 5]})
    r = client.get(f"/datasets/{did}/value", params={"query": "_ == 5", "Limit": "0"})
    assert r.status_code == 200 and r.json()["index"] == [0, 2, 4, 5]
