"""``h5lake load`` as one streaming walk (client/loadplan.py, client/upload.py): what the walk
keeps, objects met out of the walk's order (references, committed types, several hard links),
groups wider than one POST item carries, and ``--overwrite`` with a refused file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

from h5lake.client import loadplan, upload
from h5lake.client.common import ToolError
from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.loadplan import Planner
from h5lake.client.rest import RestClient, Settings
from h5lake.client.upload import INLINE_LINKS
from tests.roundtrip.compare import compare_files


def test_the_walk_keeps_no_entry_per_object(tmp_path: Path) -> None:
    """Objects with one hard link, met through it, leave nothing behind in the walk: its memory
    is the queue of objects found and not read, not a table of all objects."""
    path = tmp_path / "tree.h5"
    with h5py.File(path, "w") as f:
        for i in range(30):
            g = f.create_group(f"g{i}")
            g.create_dataset("d", data=np.arange(3))
            g.attrs["i"] = i
        f["twice"] = f["g0/d"]  # a second hard link: remembered
    with h5py.File(path, "r") as f:
        planner = Planner(f)
        planner.root_id = "g-00000000-00000000-0000-000000-000000"
        widest = 0
        seen = []
        for node in planner.walk():
            seen.append(node.path)
            widest = max(widest, len(planner.queue))
        assert len(seen) == 61 and len(set(seen)) == 61  # every object once
        assert len(planner.by_addr) == 1  # only the dataset with two hard links
        assert widest <= 31  # at most the widest level


def _tricky(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.attrs["points_late"] = f.create_group("a/b/c/deep").ref  # its target comes later in the walk
        f.create_dataset("first", data=np.arange(4.0))
        f.create_group("a/b/c/deep/more")
        f["late/kind"] = np.dtype([("x", "<i4"), ("y", "<f8")])  # committed, linked deep and late
        f.create_dataset("typed", data=np.zeros(3, dtype=f["late/kind"].dtype), dtype=f["late/kind"])
        f["typed"].attrs.create("with_kind", np.zeros(2, dtype=f["late/kind"].dtype), dtype=f["late/kind"])
        f["also_first"] = f["first"]  # two hard links
        refs = f.create_dataset("refs", (2,), dtype=h5py.ref_dtype)
        refs[0] = f["a/b/c/deep/more"].ref  # met before its link in the walk
        refs[1] = f["first"].ref
        wide = f.create_group("wide")
        for i in range(INLINE_LINKS + 100):  # more links than go with the group's POST
            wide[f"s{i:05d}"] = h5py.SoftLink(f"/first{i}")
        wide.attrs["region"] = f["first"].regionref[1:3]


@pytest.mark.parametrize("open_queued", [4096, 3])
def test_objects_out_of_the_walks_order_and_wide_groups_round_trip(
    open_queued: int, tmp_path: Path, settings: Settings, new_domain: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``open_queued`` 3 nearly every object waits in the walk's queue as a reference."""
    monkeypatch.setattr(loadplan, "OPEN_QUEUED", open_queued)
    source = tmp_path / "tricky.h5"
    _tricky(source)
    client = RestClient(settings, new_domain("tricky"))
    stats, _ = load_file(source, client, workers=4)
    assert stats.links >= INLINE_LINKS + 100
    exported = tmp_path / "out.h5"
    export_domain(client, exported, workers=4)
    assert compare_files(str(source), str(exported)) == []  # (h5diff cannot compare references across files)
    with h5py.File(exported, "r") as f:
        assert f[f["refs"][0]].name == "/a/b/c/deep/more"
        assert f[f.attrs["points_late"]].name == "/a/b/c/deep"


def test_overwrite_with_a_refused_file_leaves_the_domain(
    tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]
) -> None:
    good, bad = tmp_path / "good.h5", tmp_path / "bad.h5"
    with h5py.File(good, "w") as f:
        f.create_dataset("kept", data=np.arange(3))
    with h5py.File(bad, "w") as f:
        f.create_dataset("fine", data=np.arange(3))
        f.create_group("g").attrs["n" * 5000] = 1  # a name longer than the server keeps
    domain = new_domain("overwrite")
    load_file(good, RestClient(settings, domain))
    with pytest.raises(ToolError, match="has a name of 5000 bytes"):
        load_file(bad, RestClient(settings, domain), overwrite=True)
    client = RestClient(settings, domain)
    root = client.get_json("/")["root"]
    assert [link["title"] for link in client.get_json(f"/groups/{root}/links")["links"]] == ["kept"]


def test_values_sent_from_each_workers_kept_buffer_arrive_whole(
    tmp_path: Path, settings: Settings, new_domain: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values are read into a buffer each load worker keeps and sent from it (client/h5bulk.py):
    with boxes of 64 KiB, many per worker, every box arrives as read, whatever its type's path
    (memory bytes the wire's, or converted), and a view of a wider type is sent whole."""
    monkeypatch.setattr(upload, "BLOCK_BYTES", 64 * 1024)
    source = tmp_path / "boxes.h5"
    rng = np.random.default_rng(5)
    with h5py.File(source, "w") as f:
        f.create_dataset("f8", data=rng.random((1000, 300)), chunks=(50, 300))
        f.create_dataset("i4be", data=rng.integers(-9, 9, (700, 100)).astype(">i4"), chunks=(64, 100))
        pair = np.dtype([("x", "<i2"), ("y", "<f8")])
        f.create_dataset("pairs", data=np.zeros(20000, dtype=pair), chunks=(3000,))
        f["pairs"]["x"] = np.arange(20000) % 100
        f.create_dataset("flat", data=rng.random(50000).astype("<f4"))  # contiguous: blocks of the extent
    client = RestClient(settings, new_domain("boxes"))
    stats, _ = load_file(source, client, workers=2)
    assert stats.value_bytes == 1000 * 300 * 8 + 700 * 100 * 4 + 20000 * (2 + 8) + 50000 * 4  # packed wire bytes
    exported = tmp_path / "out.h5"
    export_domain(client, exported, workers=2)
    assert compare_files(str(source), str(exported)) == []
    view = np.arange(12.0).data  # a view of float64: its 96 bytes, not its 12 elements
    root = client.get_json("/")["root"]
    made = client.post_json("/datasets", {"type": "H5T_IEEE_F64LE", "shape": [12], "link": {"id": root, "name": "v"}})
    client.put_bytes(f"/datasets/{made['id']}/value", view)
    assert np.frombuffer(client.get_bytes(f"/datasets/{made['id']}/value"), "<f8").tolist() == list(np.arange(12.0))
