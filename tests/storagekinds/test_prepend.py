"""Growth at the front (``PUT /datasets/{id}/shape`` with ``prepend``): plain HTTP and h5pyd,
checked against numpy (the fill value concatenated before the old values), for random counts
and chunk shapes, with chunks never rewritten, and an export round trip checked by h5diff."""

from __future__ import annotations

import subprocess
from pathlib import Path

import h5py
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from h5lake.client.export import export_domain
from h5lake.client.rest import RestClient, Settings
from tests.api.test_h5pyd_metadata import open_file
from tests.conftest import Client, RawStore
from tests.storagekinds.conftest import all_keys
from tests.support.server import USERS

OCTET = {"Accept": "application/octet-stream"}
PUT_OCTET = {"Content-Type": "application/octet-stream"}
FILL = -1.5


def make(c: Client, shape: list[int], chunks: list[int], maxdims: list[int | str] | None = None, name: str = "d") -> str:
    root = c.get("/").json()["root"]
    body: dict[str, object] = {
        "type": "H5T_IEEE_F64LE",
        "shape": shape,
        "maxdims": maxdims if maxdims is not None else ["H5S_UNLIMITED"] * len(shape),
        "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": chunks}, "fillValue": FILL},
        "link": {"id": root, "name": name},
    }
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def read_all(c: Client, did: str, shape: tuple[int, ...]) -> np.ndarray:
    r = c.get(f"/datasets/{did}/value", headers=OCTET)
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, dtype="<f8").reshape(shape)


def write(c: Client, did: str, select: str, values: np.ndarray) -> None:
    r = c.put(f"/datasets/{did}/value", params={"select": select}, data=values.astype("<f8").tobytes(), headers=PUT_OCTET)
    assert r.status_code == 200, r.text


def chunk_objects(raw: RawStore, did: str) -> dict[str, bytes]:
    uuid = did[2:]
    return {k: raw.read(k) or b"" for k in all_keys(raw) if f"-c-{uuid}_" in k}


def chunks_touched(n: int, chunk: int, origin: int) -> int:
    return len({(i - origin) // chunk for i in range(n)})


def test_prepend_shifts_values_without_rewriting_chunks(kind_client: Client, kind_raw: RawStore, storage_kind: str) -> None:
    client = kind_client
    data = np.arange(12 * 5, dtype="f8").reshape(12, 5)
    did = make(client, [12, 5], [5, 3])
    write(client, did, "[0:12,0:5]", data)
    before = chunk_objects(kind_raw, did)
    assert len(before) == (6 if storage_kind == "chunks" else 0)
    r = client.put(f"/datasets/{did}/shape", json={"prepend": 7, "prepend_dim": 0})
    assert r.status_code == 201, r.text
    assert r.json()["selection"] == "[0:7,0:5]"
    assert client.get(f"/datasets/{did}/shape").json()["shape"]["dims"] == [19, 5]
    expect = np.concatenate([np.full((7, 5), FILL), data])
    np.testing.assert_array_equal(read_all(client, did, (19, 5)), expect)
    assert {k: v for k, v in chunk_objects(kind_raw, did).items() if k in before} == before
    # the layout records the grid origin; the creation properties are what was asked
    doc = client.get(f"/datasets/{did}").json()
    assert doc["layout"]["origin"] == [7, 0]
    assert doc["creationProperties"]["layout"] == {"class": "H5D_CHUNKED", "dims": [5, 3]}
    # writes, partial writes, points and selections across the old front
    write(client, did, "[2:9,1:4]", np.full((7, 3), 9.0))
    expect[2:9, 1:4] = 9.0
    r = client.put(f"/datasets/{did}/value", json={"points": [[0, 0], [18, 4]], "value": [3.0, 4.0]})
    assert r.status_code == 200, r.text
    expect[0, 0], expect[18, 4] = 3.0, 4.0
    np.testing.assert_array_equal(read_all(client, did, (19, 5)), expect)
    got = client.post(f"/datasets/{did}/value", json={"points": [[0, 0], [6, 2], [7, 0], [18, 4]]}).json()["value"]
    assert got == [expect[0, 0], expect[6, 2], expect[7, 0], expect[18, 4]]
    got = client.get(f"/datasets/{did}/value", params={"select": "[1:17:3,::2]"}).json()["value"]
    np.testing.assert_array_equal(np.array(got), expect[1:17:3, ::2])
    # a second prepend along the other dimension, then an append
    assert client.put(f"/datasets/{did}/shape", json={"prepend": 2, "prepend_dim": 1}).status_code == 201
    expect = np.concatenate([np.full((19, 2), FILL), expect], axis=1)
    assert client.put(f"/datasets/{did}/shape", json={"extend": 3, "extend_dim": 0}).status_code == 201
    expect = np.concatenate([expect, np.full((3, 7), FILL)])
    np.testing.assert_array_equal(read_all(client, did, (22, 7)), expect)
    stats = client.get(f"/datasets/{did}", params={"verbose": 1}).json()["stats"]
    assert stats["logicalChunkCount"] == chunks_touched(22, 5, 7) * chunks_touched(7, 3, 2)
    assert stats["storage"] == ("chunks" if storage_kind == "chunks" else "compact")


def test_prepend_refusals(kind_client: Client) -> None:
    client = kind_client
    did = make(client, [4], [2], maxdims=[6], name="bounded")
    r = client.put(f"/datasets/{did}/shape", json={"prepend": 3})
    assert r.status_code == 409 and "maximum" in r.json()["error"]["message"]
    assert client.put(f"/datasets/{did}/shape", json={"prepend": 2}).status_code == 201
    fixed = make(client, [4], [2], maxdims=[4], name="fixed")
    assert client.put(f"/datasets/{fixed}/shape", json={"prepend": 1}).status_code == 409
    for bad in ({"prepend": -1}, {"prepend": "2"}, {"prepend": 1, "prepend_dim": 1}, {"prepend": 1, "extend": 1}):
        r = client.put(f"/datasets/{did}/shape", json=bad)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["message"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    n = draw(st.integers(1, 30))
    chunk = draw(st.integers(1, 9))
    first = draw(st.integers(0, 25))
    second = draw(st.integers(0, 12))
    cols = draw(st.integers(1, 4))
    return n, chunk, first, second, cols


def test_prepend_matches_numpy(kind_client: Client) -> None:
    client = kind_client
    counter = iter(range(10_000))

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(), st.integers(0, 2**31))
    def check(case: tuple[int, int, int, int, int], seed: int) -> None:
        n, chunk, first, second, cols = case
        rng = np.random.default_rng(seed)
        data = rng.normal(size=(n, cols))
        did = make(client, [n, cols], [chunk, 2], name=f"p{next(counter)}")
        write(client, did, f"[0:{n},0:{cols}]", data)
        expect = data
        for k in (first, second):
            assert client.put(f"/datasets/{did}/shape", json={"prepend": k, "prepend_dim": 0}).status_code == 201
            expect = np.concatenate([np.full((k, cols), FILL), expect])
        np.testing.assert_array_equal(read_all(client, did, expect.shape), expect)
        # a random hyperslab write after the prepends
        a = int(rng.integers(0, expect.shape[0]))
        b = int(rng.integers(a + 1, expect.shape[0] + 1))
        vals = rng.normal(size=(b - a, cols))
        write(client, did, f"[{a}:{b},0:{cols}]", vals)
        expect[a:b] = vals
        np.testing.assert_array_equal(read_all(client, did, expect.shape), expect)

    check()


def test_prepend_through_h5pyd_and_export(endpoint: str, domain: str, tmp_path: Path, raw_store: RawStore) -> None:
    data = np.arange(40, dtype="i4").reshape(10, 4)
    big = np.arange(5000 * 4, dtype="i4").reshape(5000, 4)  # two chunks of 48 KB: chunk objects
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("d", data=data, chunks=(3, 4), maxshape=(None, 4), fillvalue=-9)
        b = f.create_dataset("big", data=big, chunks=(3000, 4), maxshape=(None, 4), fillvalue=-9)
        did, bid = d.id.id, b.id.id
    assert chunk_objects(raw_store, did) == {} and len(chunk_objects(raw_store, bid)) == 2
    c = Client(endpoint, "test_user1", domain)
    r = c.put(f"/datasets/{did}/shape", json={"prepend": 5, "prepend_dim": 0})
    assert r.status_code == 201, r.text
    assert c.put(f"/datasets/{bid}/shape", json={"prepend": 1234}).status_code == 201
    expect = np.concatenate([np.full((5, 4), -9, "i4"), data])
    expect_big = np.concatenate([np.full((1234, 4), -9, "i4"), big])
    with open_file(endpoint, domain, "r+") as f:
        d = f["d"]
        assert d.shape == (15, 4) and f["big"].shape == (6234, 4)
        np.testing.assert_array_equal(d[...], expect)
        np.testing.assert_array_equal(f["big"][...], expect_big)
        d[3:7, 1] = [100, 101, 102, 103]
        expect[3:7, 1] = [100, 101, 102, 103]
        f["big"][1000:1300, 2] = 7
        expect_big[1000:1300, 2] = 7
        d.resize((17, 4))
    expect = np.concatenate([expect, np.full((2, 4), -9, "i4")])
    with open_file(endpoint, domain, "r") as f:
        d = f["d"]
        np.testing.assert_array_equal(d[...], expect)
        np.testing.assert_array_equal(d[4:6], expect[4:6])
        np.testing.assert_array_equal(f["big"][1200:1240], expect_big[1200:1240])
    assert len(chunk_objects(raw_store, bid)) == 3  # the old two, untouched but for the one written, and one new
    out = tmp_path / "out.h5"
    export_domain(RestClient(Settings(endpoint, "test_user1", USERS["test_user1"]), domain), out, workers=2)
    ref = tmp_path / "ref.h5"
    with h5py.File(ref, "w") as f:
        f.create_dataset("d", data=expect, chunks=(3, 4), maxshape=(None, 4), fillvalue=-9)
        f.create_dataset("big", data=expect_big, chunks=(3000, 4), maxshape=(None, 4), fillvalue=-9)
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["d"][...], expect)
        np.testing.assert_array_equal(f["big"][...], expect_big)
    result = subprocess.run(["h5diff", "-v", str(ref), str(out)], check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
