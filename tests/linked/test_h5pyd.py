"""Linked datasets through h5pyd 1.0, and the REST side of h5pyd's ``hsload --link``."""

from __future__ import annotations

import logging
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import h5py
import h5pyd
import numpy as np
import orjson
import pytest
from h5pyd._apps import utillib

from h5lake.chunks.filters import from_h5py_dcpl
from h5lake.model.typecheck import type_from_dtype
from tests.conftest import Client
from tests.linked.helpers import create_linked

RNG = np.random.default_rng(11)


def _source(folder: Path) -> Path:
    path = folder / f"{uuid.uuid4().hex[:10]}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("contig", data=RNG.standard_normal((500, 40)).astype("<f8"))
        f.create_dataset("few", data=np.arange(60 * 30, dtype=">i4").reshape(60, 30), chunks=(30, 15), compression="gzip")
        f.create_dataset("many", data=RNG.integers(0, 1000, (400, 300), dtype="<i2"), chunks=(20, 25), shuffle=True, compression="lzf")
    return path


def _opts(lc: Client) -> dict[str, str]:
    """Explicit connection options: h5pyd caches HS_* settings process-wide on first use."""
    user, password = lc.session.auth  # type: ignore[misc]
    return {"endpoint": lc.endpoint, "username": user, "password": password}


@pytest.mark.usefixtures("h5pyd_env")
def test_reads_through_h5pyd_match_h5py(lc: Client, sources: Path) -> None:
    path = _source(sources)
    ids = {}
    with h5py.File(path) as f:
        ids["contig"] = create_linked(lc, f["contig"], str(path))
        ids["few"] = create_linked(lc, f["few"], str(path))
        ids["many"] = create_linked(lc, f["many"], str(path), inline_chunks=10)
        for name, did in ids.items():
            r = lc.put("/groups/" + lc.get("/").json()["root"] + "/links/" + name, json={"id": did})
            assert r.status_code == 201, r.text
    with h5py.File(path) as src, h5pyd.File(lc.domain, "r", **_opts(lc)) as out:
        for name in ids:
            a, b = src[name], out[name]
            assert b.shape == a.shape and b.dtype == a.dtype
            assert np.array_equal(b[...], a[...])
            assert np.array_equal(b[7:9, 3:20:4], a[7:9, 3:20:4])
            assert np.array_equal(b[[1, 5, 44], 2:6], a[[1, 5, 44], 2:6])
        assert out["contig"].chunks is None  # as h5py: contiguous has no chunks
        assert out["many"].chunks == (20, 25)
        assert out["many"].id.layout["class"] == "H5D_CHUNKED_REF_INDIRECT"


def _hsload_env(lc: Client) -> dict[str, str]:
    return dict(os.environ, HS_ENDPOINT=lc.endpoint, HS_USERNAME="test_user1", HS_PASSWORD="test1-pw")


def test_hsload_link_aborts_inside_h5pyd(lc: Client, sources: Path) -> None:
    """h5pyd 1.0.0's ``hsload --link`` fails client-side (h5json refuses a resizable dataset
    whose layout is not H5D_CHUNKED, and hsload always sends maxdims) before any dataset
    request: shown here, the REST side is tested below with the requests it would send."""
    path = _source(sources)
    target = f"/home/test_user1/{uuid.uuid4().hex[:10]}.h5"
    p = subprocess.run(
        ["hsload", "--link", "--linkpath", str(path), str(path), target],
        env=_hsload_env(lc), capture_output=True, text=True, timeout=120, check=False,
    )
    assert p.returncode != 0
    assert "Only datasets with 'H5D_CHUNKED' layout can be resizable" in p.stderr


@pytest.mark.usefixtures("h5pyd_env")
def test_hsload_link_requests_are_accepted_and_read_back(lc: Client, sources: Path) -> None:
    """The dataset-creation requests hsload --link makes (layouts from hsload's own
    ``create_chunktable``, chunk tables filled by its ``update_chunktable``) work here."""
    path = _source(sources)
    logging.getLogger().setLevel(logging.WARNING)
    with h5py.File(path) as src, h5pyd.File(lc.domain, "a", **_opts(lc)) as fout:
        ctx: dict[str, Any] = {"fout": fout, "dataload": "link", "s3path": str(path), "verbose": False, "ignore_error": False}
        layouts = {}
        for name in ("contig", "few", "many"):
            dobj = src[name]
            layouts[name] = utillib.create_chunktable(dobj, dobj.shape, ctx)
        fout.flush()  # the anonymous chunk tables go out first, as in hsload
        root = fout.id.id
        for name, chunks in layouts.items():
            dobj = src[name]
            dcpl: dict[str, Any] = {"layout": chunks}
            filters = from_h5py_dcpl(dobj)
            if filters:
                dcpl["filters"] = filters
            body = {
                "shape": list(dobj.shape),
                "maxdims": list(dobj.maxshape),
                "type": type_from_dtype(dobj.dtype),
                "creationProperties": dcpl,
                "link": {"id": root, "name": name},
            }
            r = lc.post("/datasets", data=orjson.dumps(body))
            assert r.status_code == 201, r.text
        assert {layouts[n]["class"] for n in layouts} == {"H5D_CONTIGUOUS_REF", "H5D_CHUNKED_REF", "H5D_CHUNKED_REF_INDIRECT"}
    with h5py.File(path) as src, h5pyd.File(lc.domain, "r+", **_opts(lc)) as fout:
        ctx = {"fout": fout, "dataload": "link", "s3path": str(path), "verbose": False, "ignore_error": False}
        for name in ("contig", "few", "many"):
            utillib.update_chunktable(src[name], fout[name], ctx)
    with h5py.File(path) as src, h5pyd.File(lc.domain, "r", **_opts(lc)) as out:
        for name in ("contig", "few", "many"):
            assert np.array_equal(out[name][...], src[name][...]), name
    p = subprocess.run(["hsls", "-r", "-v", lc.domain], env=_hsload_env(lc), capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert "H5D_CHUNKED_REF_INDIRECT" in p.stdout and "linked chunks" in p.stdout


def test_table_and_dataset_in_one_post_as_an_h5pyd_flush_sends_them(lc: Client, sources: Path) -> None:
    """h5pyd flushes new datasets as one POST list: the chunk table comes just before the
    linked dataset naming it, with ids chosen by the client."""
    from h5lake.client import load_link as link
    from h5lake.model.ids import Collection, new_object_id

    path = _source(sources)
    root = lc.get("/").json()["root"]
    tid, did = new_object_id(Collection.DATASETS, root), new_object_id(Collection.DATASETS, root)
    with h5py.File(path) as f:
        plan = link.plan_link(f["many"], str(path), inline_chunks=0)
        assert plan is not None and plan.table is not None
        table = {"id": tid, "type": plan.table.type_json, "shape": list(plan.table.shape), "creationProperties": plan.table.creation_properties()}
        dset = {"id": did, "type": type_from_dtype(f["many"].dtype), "shape": plan.shape, "creationProperties": plan.with_table(tid)}
        r = lc.post("/datasets", data=orjson.dumps([table, dset]))
        assert r.status_code == 201, r.text
        r = lc.put(f"/datasets/{tid}/value", data=plan.table.body(), headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 200, r.text
        expect = f["many"][...]
    r = lc.get(f"/datasets/{did}/value", headers={"Accept": "application/octet-stream"})
    assert np.array_equal(np.frombuffer(r.content, expect.dtype).reshape(expect.shape), expect)
    assert lc.delete(f"/datasets/{did}").status_code == 200
    assert lc.get(f"/datasets/{did}").status_code in (404, 410)
