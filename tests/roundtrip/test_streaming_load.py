"""``h5lake load`` as one streaming walk (client/loadplan.py, client/upload.py): what the walk
keeps, objects met out of the walk's order (references, committed types, several hard links),
groups wider than one POST item carries, and ``--overwrite`` with a refused file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

from h5lake.client import loadplan
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
