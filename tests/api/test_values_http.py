"""Dataset values over plain HTTP: selections against numpy, points, queries, append, errors."""

from __future__ import annotations

import hashlib
import json
import threading

import numpy as np
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import Client, RawStore

OCTET = {"Accept": "application/octet-stream"}
PUT_OCTET = {"Content-Type": "application/octet-stream"}


def make_dataset(c: Client, shape: list[int], chunks: list[int], dtype: str = "H5T_IEEE_F64LE", **props: object) -> str:
    root = c.get("/").json()["root"]
    body = {
        "type": dtype,
        "shape": shape,
        "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": chunks}, **props},
        "link": {"id": root, "name": "d"},
    }
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def slice_text(s: slice) -> str:
    start = "" if s.start is None else str(s.start)
    stop = "" if s.stop is None else str(s.stop)
    return f"{start}:{stop}" + (f":{s.step}" if s.step not in (None, 1) else "")


@st.composite
def slices(draw: st.DrawFn, n: int) -> slice:
    start = draw(st.integers(0, n - 1))
    stop = draw(st.integers(start + 1, n))
    step = draw(st.integers(1, 5))
    return slice(start, stop, step)


def test_random_hyperslabs_match_numpy(client: Client) -> None:
    shape = [37, 23, 5]
    data = np.random.default_rng(1).normal(size=shape)
    did = make_dataset(client, shape, [8, 7, 3])
    r = client.put(f"/datasets/{did}/value", data=data.tobytes(), headers=PUT_OCTET)
    assert r.status_code == 200

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.tuples(slices(37), slices(23), slices(5)), st.booleans())
    def check(sel: tuple[slice, ...], as_json: bool) -> None:
        text = "[" + ",".join(slice_text(s) for s in sel) + "]"
        if as_json:
            got = np.array(client.get(f"/datasets/{did}/value", params={"select": text}).json()["value"])
        else:
            raw = client.get(f"/datasets/{did}/value", params={"select": text}, headers=OCTET).content
            got = np.frombuffer(raw, "<f8").reshape(data[sel].shape)
        np.testing.assert_array_equal(got, data[sel])

    check()


def test_random_writes_match_numpy(client: Client) -> None:
    shape = [30, 17]
    model = np.zeros(shape, "<i4")
    did = make_dataset(client, shape, [7, 5], "H5T_STD_I32LE")

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.tuples(slices(30), slices(17)), st.integers(-1000, 1000))
    def check(sel: tuple[slice, ...], value: int) -> None:
        text = "[" + ",".join(slice_text(s) for s in sel) + "]"
        block = np.full(model[sel].shape, value, "<i4") + np.arange(model[sel].size, dtype="<i4").reshape(model[sel].shape)
        r = client.put(f"/datasets/{did}/value", params={"select": text}, data=block.tobytes(), headers=PUT_OCTET)
        assert r.status_code == 200
        model[sel] = block
        got = np.frombuffer(client.get(f"/datasets/{did}/value", headers=OCTET).content, "<i4").reshape(shape)
        np.testing.assert_array_equal(got, model)

    check()


def test_points_binary_and_json(client: Client) -> None:
    data = np.arange(40 * 30, dtype="<f8").reshape(40, 30)
    did = make_dataset(client, [40, 30], [16, 16])
    client.put(f"/datasets/{did}/value", data=data.tobytes(), headers=PUT_OCTET)
    pts = np.array([[0, 0], [39, 29], [17, 3], [17, 3], [5, 20]], dtype="<u8")
    r = client.post(f"/datasets/{did}/value", data=pts.tobytes(), headers={**PUT_OCTET, **OCTET})
    assert np.frombuffer(r.content, "<f8").tolist() == [data[tuple(p)] for p in pts.astype(int)]
    r = client.post(f"/datasets/{did}/value", json={"points": pts.tolist()})
    assert r.json()["value"] == [data[tuple(p)] for p in pts.astype(int)]
    r = client.put(f"/datasets/{did}/value", json={"points": [[1, 1], [2, 2]], "value": [-1.0, -2.0]})
    assert r.status_code == 200
    got = np.array(client.get(f"/datasets/{did}/value", params={"select": "[0:3,0:3]"}).json()["value"])
    assert got[1, 1] == -1.0 and got[2, 2] == -2.0 and got[0, 0] == 0.0
    bad = np.array([[40, 0]], "<u8")
    assert client.post(f"/datasets/{did}/value", data=bad.tobytes(), headers=PUT_OCTET).status_code == 400
    # a select too long for a URL comes as a JSON POST with no Content-Type
    req = requests.Request("POST", client.endpoint + f"/datasets/{did}/value", params={"domain": client.domain},
                           data=json.dumps({"select": "[0:2,[" + ",".join(str(i) for i in range(0, 30, 2)) + "]]"}),
                           headers=OCTET, auth=client.session.auth).prepare()
    req.headers.pop("Content-Type", None)
    r = client.session.send(req)
    assert r.status_code == 200
    np.testing.assert_array_equal(np.frombuffer(r.content, "<f8").reshape(2, 15), data[0:2, 0:30:2])


def test_fill_value_sparse_and_stats(client: Client) -> None:
    did = make_dataset(client, [100, 100], [10, 10], "H5T_STD_I16LE", fillValue=42)
    r = client.get(f"/datasets/{did}/value", params={"select": "[5:7,5:7]"})
    assert r.json()["value"] == [[42, 42], [42, 42]]
    client.put(f"/datasets/{did}/value", params={"select": "[0:1,0:1]"}, json={"value": [[7]]})
    got = client.get(f"/datasets/{did}/value", params={"select": "[0:2,0:2]"}).json()["value"]
    assert got == [[7, 42], [42, 42]]


def test_append_and_extend(client: Client) -> None:
    root = client.get("/").json()["root"]
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [0], "maxdims": ["H5S_UNLIMITED"],
                                        "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [4]}},
                                        "link": {"id": root, "name": "log"}})
    did = r.json()["id"]
    for batch in ([1, 2, 3], [4, 5]):
        r = client.put(f"/datasets/{did}/value", params={"append": len(batch), "append_dim": 0}, json={"value": batch})
        assert r.status_code == 200, r.text
    assert client.get(f"/datasets/{did}/value").json()["value"] == [1, 2, 3, 4, 5]
    assert client.put(f"/datasets/{did}/shape", json={"extend": 3, "extend_dim": 0}).status_code == 201
    assert client.get(f"/datasets/{did}/value").json()["value"] == [1, 2, 3, 4, 5, 0, 0, 0]


def test_a_json_append_must_hold_the_appended_rows(client: Client) -> None:
    # as HSDS: no broadcast into an append without element_count, and the refused append
    # leaves the dataset as it was (the value is read before the dataset grows)
    r = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [1, 3], "maxdims": ["H5S_UNLIMITED", 3]})
    did = r.json()["id"]
    assert client.put(f"/datasets/{did}/value", json={"value": [[1, 2, 3]]}).status_code == 200
    for bad in ({"value": [4, 5, 6], "append": 2}, {"value": [[4, 5, 6]], "append": 2}, {"value": [4, 5], "append": 1}):
        r = client.put(f"/datasets/{did}/value", json=bad)
        assert r.status_code == 400, (bad, r.text)
        assert client.get(f"/datasets/{did}").json()["shape"]["dims"] == [1, 3]
    assert client.put(f"/datasets/{did}/value", json={"value": [4, 5, 6], "append": 1}).status_code == 200
    r = client.put(f"/datasets/{did}/value", json={"value": [7, 8, 9], "append": 2, "element_count": 3})
    assert r.status_code == 200, r.text  # broadcast asked for
    assert client.get(f"/datasets/{did}/value").json()["value"] == [[1, 2, 3], [4, 5, 6], [7, 8, 9], [7, 8, 9]]


def test_element_count_broadcast(client: Client) -> None:
    did = make_dataset(client, [6, 6], [3, 3], "H5T_STD_U8LE")
    r = client.put(f"/datasets/{did}/value", params={"select": "[1:5,1:5]"}, data=b"\x09", headers=PUT_OCTET)
    assert r.status_code == 200
    got = np.array(client.get(f"/datasets/{did}/value").json()["value"])
    assert (got[1:5, 1:5] == 9).all() and got.sum() == 9 * 16


def test_compound_query(client: Client) -> None:
    root = client.get("/").json()["root"]
    ctype = {"class": "H5T_COMPOUND", "fields": [
        {"name": "city", "type": {"class": "H5T_STRING", "length": 8, "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD"}},
        {"name": "temp", "type": "H5T_IEEE_F32LE"}]}
    r = client.post("/datasets", json={"type": ctype, "shape": [6], "link": {"id": root, "name": "t"}})
    did = r.json()["id"]
    rows = [["Boston", 31.0], ["Paris", 20.5], ["Boston", 12.0], ["Oslo", -3.0], ["Rome", 35.0], ["Boston", 40.0]]
    assert client.put(f"/datasets/{did}/value", json={"value": rows}).status_code == 200
    r = client.get(f"/datasets/{did}/value", params={"query": "(temp > 30) & (city == b'Boston')"})
    assert r.json()["index"] == [0, 5]
    assert [v[1] for v in r.json()["value"]] == [31.0, 40.0]
    r = client.get(f"/datasets/{did}/value", params={"query": "temp > 0", "Limit": 2})
    assert r.json()["index"] == [0, 1]
    r = client.get(f"/datasets/{did}/value", params={"query": "temp >"})
    assert r.status_code == 400
    r = client.put(f"/datasets/{did}/value", params={"query": "city == b'Oslo'"}, json={"value": {"temp": 1.5}})
    assert r.status_code == 200
    assert client.get(f"/datasets/{did}/value", params={"select": "[3:4]"}).json()["value"] == [["Oslo", 1.5]]
    r = client.put(f"/datasets/{did}/value", params={"fields": "temp", "select": "[0:2]"},
                   data=np.array([1.0, 2.0], "<f4").tobytes(), headers=PUT_OCTET)
    assert r.status_code == 200
    assert client.get(f"/datasets/{did}/value", params={"select": "[0:2]"}).json()["value"] == [["Boston", 1.0], ["Paris", 2.0]]


def test_value_errors(client: Client) -> None:
    did = make_dataset(client, [10, 10], [5, 5])
    cases = [
        ("GET", {"select": "[11:12,0:5]"}, None),
        ("GET", {"select": "[0:5]"}, None),
        ("GET", {"select": "[a:b,0:1]"}, None),
        ("GET", {"select": "[5:2,0:1]"}, None),
        ("PUT", {"select": "[0:2,0:2]"}, b"\x00" * 7),
    ]
    for method, params, body in cases:
        headers = PUT_OCTET if body else {}
        r = client.request(method, f"/datasets/{did}/value", params=params, data=body, headers=headers)
        assert r.status_code == 400, (params, r.text)
        assert r.json()["error"]["message"]
    r = client.put(f"/datasets/{did}/value", json={"value": [[1, 2], [3, 4]]}, params={"select": "[0:3,0:3]"})
    assert r.status_code == 400
    assert client.get("/datasets/d-00000000-00000000-0000-000000-000000/value").status_code == 404


def test_concurrent_writers_same_chunk(client: Client) -> None:
    """Clients writing different elements of one chunk at the same time all keep their data."""
    did = make_dataset(client, [64], [64], "H5T_STD_I32LE")
    errors: list[str] = []

    def writer(i: int) -> None:
        s = requests.Session()
        s.auth = client.session.auth
        for k in range(4):
            pos = i * 4 + k
            r = s.put(client.endpoint + f"/datasets/{did}/value", params={"domain": client.domain, "select": f"[{pos}:{pos + 1}]"},
                      data=np.array([pos + 1], "<i4").tobytes(), headers=PUT_OCTET)
            if r.status_code != 200:
                errors.append(r.text)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = client.get(f"/datasets/{did}/value").json()["value"]
    assert got == list(range(1, 65))


def test_chunk_objects_follow_seed_schema(client: Client, raw_store: RawStore) -> None:
    # 160 KB: too large to keep its values in the document (compact storage)
    did = make_dataset(client, [200, 200], [10, 10], "H5T_STD_I32LE")
    data = np.arange(400, dtype="<i4").reshape(20, 20)
    client.put(f"/datasets/{did}/value", params={"select": "[10:20,0:10]"}, data=data[10:, :10].tobytes(), headers=PUT_OCTET)
    chunk_id = f"c-{did[2:]}_1_0"
    key = hashlib.md5(chunk_id.encode()).hexdigest()[:5] + "-" + chunk_id
    raw = raw_store.read(key)
    assert raw is not None
    np.testing.assert_array_equal(np.frombuffer(raw, "<i4").reshape(10, 10), data[10:, :10])
    other = f"c-{did[2:]}_0_0"
    assert raw_store.read(hashlib.md5(other.encode()).hexdigest()[:5] + "-" + other) is None


def test_catalogs_and_stats_converge(client: Client, raw_store: RawStore) -> None:
    import time

    did = make_dataset(client, [200, 200], [10, 10], "H5T_STD_I32LE")  # too large for compact storage
    block = np.ones((20, 10), "<i4")
    client.put(f"/datasets/{did}/value", params={"select": "[0:20,0:10]"}, data=block.tobytes(), headers=PUT_OCTET)
    catalog = client.domain.lstrip("/") + f"/.{did}.chunks.txt"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and raw_store.read(catalog) is None:
        time.sleep(0.2)
    lines = sorted(line.split() for line in (raw_store.read(catalog) or b"").decode().splitlines())
    assert [line[0] for line in lines] == ["0_0", "1_0"]
    assert all(len(line) == 4 and int(line[3]) == 400 and len(line[1]) >= 8 for line in lines)
    stats = client.get(f"/datasets/{did}", params={"verbose": 1}).json()["stats"]
    assert stats["allocatedChunkCount"] == 2 and stats["logicalChunkCount"] == 400
    assert stats["allocatedSize"] == 800 and stats["logicalSize"] == 200 * 200 * 4
    assert stats["storage"] == "chunks"
    datasets_txt = client.domain.lstrip("/") + "/.datasets.txt"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and did not in (raw_store.read(datasets_txt) or b"").decode():
        time.sleep(0.2)
    text = (raw_store.read(datasets_txt) or b"").decode()
    fields = next(line.split() for line in text.splitlines() if line.startswith(did))
    assert fields[4:] == ["2", "800"]
    summary = client.get("/", params={"verbose": 1}).json()
    assert summary["num_datasets"] == 1 and summary["num_chunks"] == 2 and summary["allocated_bytes"] == 800
