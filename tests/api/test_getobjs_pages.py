"""`GET /?getobjs=1&Limit=N[&Marker=P]`: a domain's objects a page at a time (docs/api.md),
with small datasets' values when asked (``include_values=1``); `h5lake export` reads a domain
through those pages instead of one GET per object."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import h5py
import h5pyd
import numpy as np
import pytest
from tests.conftest import Client
from tests.support.server import USERS

from h5lake.client.export import export_domain
from h5lake.client.rest import RestClient, Settings

USER = "test_user1"


def make_tree(endpoint: str, domain: str) -> None:
    """3 groups of 3 groups, each inner one with a small dataset and an attribute; a second
    hard link to one group, and a link back to the root (a cycle)."""
    with h5pyd.File(domain, "w", endpoint=endpoint, username=USER, password=USERS[USER]) as f:
        for i in range(3):
            top = f.create_group(f"t{i}")
            for j in range(3):
                g = top.create_group(f"g{j}")
                g.attrs["n"] = np.int32(10 * i + j)
                g.create_dataset("v", data=np.arange(5, dtype="<i4") + 10 * i + j)
        f["t0"]["again"] = f["t1"]["g1"]
        f["t2"]["up"] = f["/"]
        f.create_dataset("big", data=np.arange(1000, dtype="<f8"))


def pages(client: Client, limit: int, **extra: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    params: dict[str, Any] = {"getobjs": 1, "Limit": limit, **extra}
    while True:
        r = client.get("/", params=params)
        assert r.status_code == 200, r.text
        out.append(r.json())
        if "nextMarker" not in out[-1]:
            return out
        assert len(out) < 100, "the pages never end"
        params["Marker"] = out[-1]["nextMarker"]


def test_pages_list_every_object_within_the_limit(client: Client, endpoint: str) -> None:
    make_tree(endpoint, client.domain)
    whole = client.get("/", params={"getobjs": 1}).json()["domain_objs"]  # the unpaged listing
    assert len(whole) == 1 + 3 + 9 + 9 + 1
    found = pages(client, 4)
    assert len(found) > 1
    listed: dict[str, Any] = {}
    for page in found:
        assert 0 < len(page["domain_objs"]) <= 4
        listed.update(page["domain_objs"])
    assert listed.keys() == whole.keys()
    for oid, shown in whole.items():  # each object described as the unpaged listing does
        assert listed[oid] == shown


def test_a_page_of_one_object_still_goes_on(client: Client, endpoint: str) -> None:
    make_tree(endpoint, client.domain)
    found = pages(client, 1)
    assert all(len(page["domain_objs"]) <= 1 for page in found) and len(found) >= 23
    ids = {oid for page in found for oid in page["domain_objs"]}
    assert len(ids) == 23


def test_a_marker_that_leads_nowhere_is_refused(client: Client, endpoint: str) -> None:
    make_tree(endpoint, client.domain)
    for marker in ("t0/g0", "/nothing/here", "/t0/g0/v/x"):
        r = client.get("/", params={"getobjs": 1, "Limit": 5, "Marker": marker})
        assert r.status_code == 400, (marker, r.text)
        assert "Marker" in r.json()["error"]["message"]


def test_small_values_are_listed_as_their_packed_bytes(client: Client, endpoint: str) -> None:
    make_tree(endpoint, client.domain)
    listed: dict[str, Any] = {}
    for page in pages(client, 50, include_values=1):
        listed.update(page["domain_objs"])
    datasets = {oid: doc for oid, doc in listed.items() if oid.startswith("d-")}
    small = [oid for oid, doc in datasets.items() if doc["shape"]["dims"] == [5]]
    assert len(small) == 9
    for oid in small:
        binary = client.get(f"/datasets/{oid}/value", headers={"Accept": "application/octet-stream"})
        assert binary.status_code == 200
        assert base64.b64decode(datasets[oid]["value_base64"]) == binary.content
    (big,) = [doc for doc in datasets.values() if doc["shape"]["dims"] == [1000]]
    assert "value_base64" not in big  # 8,000 bytes: read on its own
    assert all("value_base64" not in doc for page in pages(client, 50) for doc in page["domain_objs"].values())


def test_listed_values_of_number_types_are_their_packed_bytes(client: Client, endpoint: str) -> None:
    """Values the listing takes from the document as stored (byte orders, ranks, a scalar, a
    filtered one, a partial chunk) are the bytes GET /datasets/{id}/value answers."""
    with h5pyd.File(client.domain, "w", endpoint=endpoint, username=USER, password=USERS[USER]) as f:
        f.create_dataset("be", data=np.arange(7, dtype=">i2") - 3)
        f.create_dataset("f4", data=np.linspace(0, 1, 9, dtype="<f4"))
        f.create_dataset("scalar", data=np.int64(-5))
        f.create_dataset("grid", data=np.arange(12, dtype="i1").reshape(3, 4))
        f.create_dataset("zipped", data=np.arange(20, dtype="<u4"), chunks=(20,), compression="gzip")
        f.create_dataset("part", data=np.arange(6, dtype="<f8"), chunks=(4,))
        f.create_dataset("unwritten", shape=(4,), dtype="<i4", fillvalue=7)
    listed: dict[str, Any] = {}
    for page in pages(client, 50, include_values=1):
        listed.update(page["domain_objs"])
    datasets = {oid: doc for oid, doc in listed.items() if oid.startswith("d-")}
    assert len(datasets) == 7
    for oid, doc in datasets.items():
        binary = client.get(f"/datasets/{oid}/value", headers={"Accept": "application/octet-stream"})
        assert binary.status_code == 200
        assert base64.b64decode(doc["value_base64"]) == binary.content, doc["shape"]


class CountingClient(RestClient):
    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.sent: list[str] = []

    def request(self, method: str, path: str, **kw: Any) -> Any:
        self.sent.append(f"{method} {path}")
        return super().request(method, path, **kw)


@pytest.mark.parametrize("groups", [60])
def test_export_reads_the_hierarchy_in_few_requests(client: Client, endpoint: str, tmp_path: Path, groups: int) -> None:
    with h5pyd.File(client.domain, "w", endpoint=endpoint, username=USER, password=USERS[USER]) as f:
        for i in range(groups):
            g = f.create_group(f"g{i:03d}")
            g.attrs["index"] = np.int64(i)
            d = g.create_dataset("values", data=np.arange(10, dtype="<i4") + i)
            d.attrs["units"] = "counts"
    rest = CountingClient(Settings(endpoint, USER, USERS[USER]), client.domain)
    target = tmp_path / "out.h5"
    export_domain(rest, target)
    assert len(rest.sent) <= 5, rest.sent  # GET / twice and a page, not one GET per object
    with h5py.File(target, "r") as out:
        assert sorted(out) == [f"g{i:03d}" for i in range(groups)]
        for i in range(groups):
            assert int(out[f"g{i:03d}"].attrs["index"]) == i
            assert out[f"g{i:03d}/values"].attrs["units"] == "counts"
            assert out[f"g{i:03d}/values"][()].tolist() == list(range(i, i + 10))


def test_export_collects_young_objects_less_often(client: Client, endpoint: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """While export writes, Python's youngest generation is collected after 50,000 allocations,
    not 700 (the pages' parsed JSON is not traversed again and again); the threshold is given
    back afterwards, also when the export fails."""
    import gc

    from h5lake.client import export
    from h5lake.client.exportwriter import Writer

    make_tree(endpoint, client.domain)
    before = gc.get_threshold()
    seen: list[int] = []
    write_all = Writer.write_all

    def watched(self: Writer, *args: Any) -> None:
        seen.append(gc.get_threshold()[0])
        write_all(self, *args)

    monkeypatch.setattr(Writer, "write_all", watched)
    rest = RestClient(Settings(endpoint, USER, USERS[USER]), client.domain)
    export_domain(rest, tmp_path / "out.h5")
    assert seen == [max(before[0], export.YOUNG_OBJECTS)] and gc.get_threshold() == before
    with pytest.raises(export.ToolError):
        export_domain(rest, tmp_path / "out.h5")  # (exists)
    assert gc.get_threshold() == before


def test_export_writes_pages_as_they_come_holding_few_objects(client: Client, endpoint: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 8 objects: the export holds at most a few pages of descriptions at once (not the
    domain's), yet writes the same file, the second link to a group and the cycle included; a
    large attribute met in a later page turns dense attribute storage on there."""
    from h5lake.client import exportfetch
    from h5lake.client.exportwriter import Writer

    make_tree(endpoint, client.domain)
    with h5pyd.File(client.domain, "a", endpoint=endpoint, username=USER, password=USERS[USER]) as f:
        for i in range(12):
            f.create_group(f"z{i:02d}").attrs["i"] = i
        f["z11"].attrs["large"] = np.arange(20_000, dtype="<i8")  # 160 kB: no room in an object header
    monkeypatch.setattr(exportfetch, "FIRST_PAGE", 8)
    monkeypatch.setattr(exportfetch, "PAGE", 8)
    held: list[int] = []
    take_page = Writer.take_page

    def counting(self: Writer, page: dict[str, Any]) -> None:
        take_page(self, page)
        held.append(len(self.fetcher.docs) + len(self.links_of))

    monkeypatch.setattr(Writer, "take_page", counting)
    target = tmp_path / "out.h5"
    stats, _ = export_domain(RestClient(Settings(endpoint, USER, USERS[USER]), client.domain), target)
    assert len(held) > 4  # pages
    assert max(held) <= 2 * 8 < stats.groups + stats.datasets  # two pages at most (of 26 groups, 10 datasets)
    with h5py.File(target, "r") as out:
        assert out["t0/again"] == out["t1/g1"] and out["t2/up"] == out["/"]
        assert sorted(out) == sorted([f"t{i}" for i in range(3)] + [f"z{i:02d}" for i in range(12)] + ["big"])
        for i in range(3):
            for j in range(3):
                assert int(out[f"t{i}/g{j}"].attrs["n"]) == 10 * i + j
                assert out[f"t{i}/g{j}/v"][()].tolist() == list(range(10 * i + j, 10 * i + j + 5))
        assert out["big"][()].tolist() == list(range(1000))
        assert out["z11"].attrs["large"].tolist() == list(range(20_000))
        assert [int(out[f"z{i:02d}"].attrs["i"]) for i in range(12)] == list(range(12))


def test_export_copies_stored_chunks_through_the_zarr_bridge(client: Client, endpoint: str, tmp_path: Path) -> None:
    """Chunks of 64 KiB and more with filters the Zarr bridge serves as stored are read from it
    and written with write_direct_chunk: the file's chunks are the bytes h5lake stores; unwritten
    chunks stay unwritten; smaller chunks and other filters take the decoded path."""
    from h5lake.client.load import load_file

    source = tmp_path / "in.h5"
    rng = np.random.default_rng(3)
    with h5py.File(source, "w") as f:
        f.create_dataset("gz", data=rng.normal(size=(64, 2048)).astype("<f4"), chunks=(32, 1024), compression="gzip", shuffle=True)
        sparse = f.create_dataset("sparse", shape=(4, 40_000), dtype="<f8", chunks=(2, 10_000), fillvalue=-1.0)
        sparse[3, 5:9] = 2.5
        f.create_dataset("lzf", data=np.arange(50_000, dtype="<i4"), chunks=(20_000,), compression="lzf")
        f.create_dataset("small", data=np.arange(5_000, dtype="<i2"), chunks=(1000,), compression="gzip")
    rest = CountingClient(Settings(endpoint, USER, USERS[USER]), client.domain)
    load_file(source, rest, overwrite=True)
    rest.sent.clear()
    target = tmp_path / "out.h5"
    export_domain(rest, target)
    zarr_reads = [s for s in rest.sent if s.startswith("GET /zarr/")]
    assert sum(s.endswith("/zarr.json") for s in zarr_reads) == 2  # gz and sparse
    assert len(zarr_reads) == 2 + 4 + 8  # their chunks, written or not
    with h5py.File(source, "r") as a, h5py.File(target, "r") as b:
        for name in ("gz", "sparse", "lzf", "small"):
            assert np.array_equal(a[name][()], b[name][()]) and a[name].chunks == b[name].chunks, name
            assert a[name].compression == b[name].compression and a[name].shuffle == b[name].shuffle, name
        assert b["sparse"].id.get_num_chunks() == a["sparse"].id.get_num_chunks() == 1
        stored = rest.get_json("/", getobjs=1, Limit=10)["domain_objs"]
        gz = next(oid for oid, doc in stored.items() if doc.get("shape", {}).get("dims") == [64, 2048])
        for i in range(4):
            offset = (i // 2 * 32, i % 2 * 1024)
            served = rest.request("GET", f"/zarr{client.domain}/gz/c/{i // 2}/{i % 2}", binary_reply=True).content
            assert b["gz"].id.read_direct_chunk(offset)[1] == served, (gz, offset)
