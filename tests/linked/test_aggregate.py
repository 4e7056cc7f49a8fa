"""Aggregating files along an axis: one INDIRECT dataset, each chunk in its own file."""

from __future__ import annotations

import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest

from h5lake.client import load_link as link
from tests.conftest import Client
from tests.linked.helpers import create_linked, put_table, read

RNG = np.random.default_rng(3)


def _day(folder: Path, day: int, hours: int = 24) -> Path:
    path = folder / f"day-{uuid.uuid4().hex[:6]}-{day:03d}.h5"
    with h5py.File(path, "w") as f:
        data = (RNG.standard_normal((hours, 40, 30)) + day).astype("<f4")
        f.create_dataset("temp", data=data, chunks=(6, 20, 15), compression="gzip", shuffle=True)
    return path


def _append(c: Client, did: str, path: Path, axis: int = 0) -> None:
    target = c.get(f"/datasets/{did}").json()
    tid = target["creationProperties"]["layout"]["chunk_table"]
    table = c.get(f"/datasets/{tid}").json()
    with h5py.File(path) as f:
        plan = link.plan_append(f["temp"], str(path), target, table, axis)
    r = c.put(f"/datasets/{tid}/shape", json={"shape": plan.table_shape})
    assert r.status_code == 201, r.text
    put_table(c, tid, {"value": link.entries_json(plan.entries)}, plan.table_select)
    r = c.put(f"/datasets/{did}/shape", json={"shape": plan.new_shape})
    assert r.status_code == 201, r.text


def test_days_aggregate_to_their_concatenation(lc: Client, sources: Path) -> None:
    days = [_day(sources, d) for d in range(5)]
    with h5py.File(days[0]) as f:
        did = create_linked(lc, f["temp"], str(days[0]), aggregate=True, axis=0)
    for path in days[1:]:
        _append(lc, did, path)
    parts = []
    for path in days:
        with h5py.File(path) as f:
            parts.append(f["temp"][...])
    expect = np.concatenate(parts, axis=0)
    got = read(lc, did, np.dtype("<f4"), expect.shape)
    assert np.array_equal(got, expect)
    assert np.array_equal(read(lc, did, np.dtype("<f4"), (3, 1, 2), "[23:26,5:6,0:30:15]"), expect[23:26, 5:6, 0:30:15])
    layout = lc.get(f"/datasets/{did}").json()["creationProperties"]["layout"]
    assert layout["class"] == "H5D_CHUNKED_REF_INDIRECT" and "file_uri" not in layout
    # a dataset still grows (resize) but its values stay read-only
    r = lc.put(f"/datasets/{did}/value", json={"value": 0.0}, params={"select": "[0:1,0:1,0:1]"})
    assert r.status_code == 405
    r = lc.put(f"/datasets/{did}/shape", json={"shape": [expect.shape[0] - 1, *expect.shape[1:]]})
    assert r.status_code == 405 and "cannot shrink" in r.text  # its chunks are the files' own
    assert lc.get(f"/datasets/{did}/shape").json()["shape"]["dims"] == list(expect.shape)


def test_append_refuses_misaligned_and_unaggregated(lc: Client, sources: Path) -> None:
    first = _day(sources, 0, hours=9)  # 9 is not a multiple of the chunk extent 6
    with h5py.File(first) as f:
        did = create_linked(lc, f["temp"], str(first), aggregate=True, axis=0)
    with pytest.raises(link.LinkError, match="not a multiple"):
        _append(lc, did, _day(sources, 1))
    plain = _day(sources, 2)
    with h5py.File(plain) as f:
        single = create_linked(lc, f["temp"], str(plain), inline_chunks=0)
    with pytest.raises(link.LinkError, match="--append"):
        _append(lc, single, _day(sources, 3))


def test_resolve_axis_by_dimension_scale(sources: Path) -> None:
    path = sources / f"{uuid.uuid4().hex[:8]}.h5"
    with h5py.File(path, "w") as f:
        t = f.create_dataset("time", data=np.arange(4.0))
        t.make_scale("time")
        d = f.create_dataset("v", data=np.zeros((3, 4)), chunks=(3, 2))
        d.dims[1].attach_scale(t)
        assert link.resolve_axis(d, "time") == 1
        assert link.resolve_axis(d, "1") == 1
        assert link.resolve_axis(t, "time") == 0
        assert link.resolve_axis(d, "lat") is None
