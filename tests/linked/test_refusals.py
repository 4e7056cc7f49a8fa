"""What linked datasets refuse: writes, files outside the allowed roots, changed files,
filters the server cannot decode, types that cannot be linked."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest

from h5lake.client import load_link as link
from tests.conftest import Client
from tests.linked.helpers import OCTET, create_linked, post_dataset, read

F4 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}


def _file(folder: Path, **kw: object) -> Path:
    path = folder / f"{uuid.uuid4().hex[:10]}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(400, dtype="<f4").reshape(20, 20), **kw)  # type: ignore[arg-type]
    return path


def _contig(path: Path, uri: str | None = None) -> dict[str, object]:
    with h5py.File(path) as f:
        d = f["x"]
        lay = {"class": "H5D_CONTIGUOUS_REF", "file_uri": uri or str(path), "offset": d.id.get_offset(), "size": d.id.get_storage_size()}
    return {"type": F4, "shape": [20, 20], "creationProperties": {"layout": lay}}


def test_writes_are_405(lc: Client, sources: Path) -> None:
    path = _file(sources, chunks=(5, 5))
    with h5py.File(path) as f:
        chunked = create_linked(lc, f["x"], str(path))
    contig = post_dataset(lc, _contig(_file(sources))).json()["id"]
    for did in (chunked, contig):
        r = lc.put(f"/datasets/{did}/value", data=np.zeros(400, "<f4").tobytes(), headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 405 and "read-only" in r.text
        r = lc.put(f"/datasets/{did}/value", json={"value": 1.0}, params={"select": "[0:1,0:1]"})
        assert r.status_code == 405
        r = lc.put(f"/datasets/{did}/value", json={"points": [[1, 1]], "value": [2.0]})
        assert r.status_code == 405
        r = lc.put(f"/datasets/{did}/shape", json={"shape": [30, 20]})
        assert r.status_code == 405
        r = lc.put(f"/datasets/{did}/shape", json={"shape": [10, 20]})  # shrinking alike
        assert r.status_code == 405
        assert read(lc, did, np.dtype("<f4"), (20, 20))[3, 4] == 64.0  # still intact


@pytest.mark.parametrize("where", ["outside", "dotdot", "symlink", "symlinked-dir"])
def test_sources_outside_the_roots_are_403(lc: Client, sources: Path, outside: Path, where: str) -> None:
    target = _file(outside)
    if where == "outside":
        uri = str(target)
    elif where == "dotdot":
        uri = str(sources / ".." / outside.name / target.name)
    elif where == "symlink":
        link_path = sources / f"ln-{uuid.uuid4().hex[:8]}.h5"
        link_path.symlink_to(target)
        uri = str(link_path)
    else:
        link_dir = sources / f"dir-{uuid.uuid4().hex[:8]}"
        link_dir.symlink_to(outside, target_is_directory=True)
        uri = "file://" + str(link_dir / target.name)
    r = post_dataset(lc, _contig(target, uri))
    assert r.status_code == 403, r.text


@pytest.mark.parametrize(
    "uri", ["relative/file.h5", "http://example.com/x.h5", "file://otherhost/tmp/x.h5", "gs://b/k.h5", ""]
)
def test_malformed_sources_are_400(lc: Client, sources: Path, uri: str) -> None:
    body = _contig(_file(sources))
    body["creationProperties"]["layout"]["file_uri"] = uri  # type: ignore[index]
    r = post_dataset(lc, body)
    assert r.status_code == 400, r.text


def test_missing_file_is_400(lc: Client, sources: Path) -> None:
    path = _file(sources)
    body = _contig(path)
    path.unlink()
    assert post_dataset(lc, body).status_code == 400


def test_s3_without_an_allowed_s3_root_is_403(lc: Client, sources: Path) -> None:
    body = _contig(_file(sources), "s3://bucket/data/file.h5")
    assert post_dataset(lc, body).status_code == 403


def test_changed_source_is_409_not_wrong_bytes(lc: Client, sources: Path) -> None:
    path = _file(sources, chunks=(5, 5), compression="gzip")
    with h5py.File(path) as f:
        did = create_linked(lc, f["x"], str(path))
    contig_path = _file(sources)
    contig = post_dataset(lc, _contig(contig_path)).json()["id"]
    assert read(lc, did, np.dtype("<f4"), (20, 20))[0, 1] == 1.0
    time.sleep(0.01)
    for p in (path, contig_path):
        with h5py.File(p, "r+") as f:
            f["x"][...] = -1.0  # same size, new bytes and mtime
        os.utime(p, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    for d in (did, contig):
        r = lc.get(f"/datasets/{d}/value", headers=OCTET)
        assert r.status_code == 409, r.text
        assert "changed" in r.text


def test_unsupported_filter_is_400_at_ingest(lc: Client, sources: Path) -> None:
    path = sources / f"{uuid.uuid4().hex[:10]}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(400, dtype="<i4").reshape(20, 20), chunks=(5, 5), scaleoffset=0)
    with h5py.File(path) as f:
        d = f["x"]
        assert link.copy_reason(d) is None  # scale-offset is decoded by the server (issue 15)
        chunks: dict[str, list[int]] = {}
        d.id.chunk_iter(lambda i: chunks.__setitem__("_".join(str(o // 5) for o in i.chunk_offset), [i.byte_offset, i.size]))
        filters = [{"class": "H5Z_FILTER_SCALEOFFSET", "id": 6, "name": "scaleoffset", "scaleType": "H5Z_SO_FLOAT_ESCALE", "scaleOffset": 0}]
    lay = {"class": "H5D_CHUNKED_REF", "file_uri": str(path), "dims": [5, 5], "chunks": chunks}
    body = {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}, "shape": [20, 20], "creationProperties": {"layout": lay, "filters": filters}}
    r = post_dataset(lc, body)
    assert r.status_code == 400 and "scaleoffset" in r.text, r.text  # E-scaling: HDF5 has none either
    body["creationProperties"]["filters"] = [{"class": "H5Z_FILTER_USER", "id": 32017, "name": "sz", "parameters": [1, 2]}]  # type: ignore[index]
    r = post_dataset(lc, body)
    assert r.status_code == 400, r.text


def test_unlinkable_types_and_spaces_are_400(lc: Client, sources: Path) -> None:
    body = _contig(_file(sources))
    vlen = dict(body, type={"class": "H5T_STRING", "length": "H5T_VARIABLE", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM"})
    assert post_dataset(lc, vlen).status_code == 400
    scalar = {k: v for k, v in body.items() if k != "shape"}
    assert post_dataset(lc, scalar).status_code == 400
    too_short = _contig(_file(sources))
    too_short["creationProperties"]["layout"]["size"] = 100  # type: ignore[index]
    assert post_dataset(lc, too_short).status_code == 400
    past_end = _contig(_file(sources))
    past_end["creationProperties"]["layout"]["offset"] = 10**9  # type: ignore[index]
    assert post_dataset(lc, past_end).status_code == 400
    contig_filters = _contig(_file(sources))
    contig_filters["creationProperties"]["filters"] = [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 4}]  # type: ignore[index]
    assert post_dataset(lc, contig_filters).status_code == 400


def test_chunk_table_naming_a_file_outside_the_roots_is_refused(lc: Client, sources: Path, outside: Path) -> None:
    """Per-chunk file URIs are checked when the chunk table is written: 403, nothing stored."""
    inside = _file(sources, chunks=(20, 20))
    evil = _file(outside, chunks=(20, 20))
    table_type = link.table_type_json(with_uri=True)
    r = post_dataset(lc, {"type": table_type, "shape": [1, 1], "maxdims": [0, 1]})
    tid = r.json()["id"]
    lay = {"class": "H5D_CHUNKED_REF_INDIRECT", "dims": [20, 20], "chunk_table": tid}
    r = post_dataset(lc, {"type": F4, "shape": [20, 20], "maxdims": [0, 20], "creationProperties": {"layout": lay}})
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    with h5py.File(evil) as f:
        info = f["x"].id.get_chunk_info(0)
    r = lc.put(f"/datasets/{tid}/value", json={"value": [[[info.byte_offset, info.size, str(evil)]]]})
    assert r.status_code == 403, r.text
    assert (read(lc, did, np.dtype("<f4"), (20, 20)) == 0).all()  # nothing was stored
    with h5py.File(inside) as f:
        info = f["x"].id.get_chunk_info(0)
    r = lc.put(f"/datasets/{tid}/value", json={"value": [[[info.byte_offset, info.size, str(inside)]]]})
    assert r.status_code == 200, r.text
    assert read(lc, did, np.dtype("<f4"), (20, 20))[19, 19] == 399.0
