"""/h5grove/ answers next to h5grove's own (the ``h5grove`` package, 4.x, in the test extra), for
tests/support/h5web_file.py's file: h5grove reads the source file with h5py, h5lake serves the
domain loaded from it. Where the two differ on purpose (docs/api.md, "H5Web") the test says so.

A small second file holds the types h5grove has no form for (16-byte integers, HDF5's time
class): h5py, and so h5grove, fails on them; h5lake describes them as opaque.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import orjson
import pytest
import requests
import tifffile
from h5grove.content import DatasetContent, get_content_from_file
from h5grove.encoders import encode
from h5py import h5a, h5d, h5s, h5t
from tests.conftest import auth
from tests.support.server import USERS
from tests.view.conftest import ViewDomain
from tests.view.test_h5grove_h5web import datasets, every_path, get

pytestmark = pytest.mark.one_backend  # the h5grove answers H5Web reads, the same on every store


class H5GroveError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def reference(file: Path, path: str, answer: str, **params: Any) -> Any:
    """h5grove's answer (``meta``, ``stats`` or ``data``) for ``path`` of the source file, as its
    servers encode it: JSON parsed, other formats as bytes."""
    with get_content_from_file(str(file), path, H5GroveError) as content:
        if answer == "meta":
            return orjson.loads(encode(content.metadata(), "json").content)
        assert isinstance(content, DatasetContent)
        if answer == "stats":
            return orjson.loads(encode(content.data_stats(params.get("selection")), "json").content)
        fmt = params.get("format", "json")
        data = content.data(params.get("selection"), params.get("flatten", False), params.get("dtype", "origin"))
        body = encode(data, fmt).content
        return orjson.loads(body) if fmt == "json" else body


def numeric(file: Path, path: str) -> bool:
    """A dataset h5py reads as numbers (booleans and complex included), with values."""
    with h5py.File(file) as f:
        d = f[path]
        return d.shape is not None and (d.dtype.kind in "biufc")


def test_meta_is_h5groves(h5web_domain: ViewDomain) -> None:
    """``meta`` of every path, key for key what h5grove answers for the source file."""
    for path in every_path(h5web_domain):
        r = get(h5web_domain, "meta", path=path)
        assert r.status_code == 200, (path, r.text)
        assert r.json() == reference(h5web_domain.file, path, "meta"), path


def same_stats(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Equal, integers exactly; floats to the last bits numpy's summation order may change."""
    if got.keys() != want.keys():
        return False
    for k, w in want.items():
        g = got[k]
        if isinstance(w, float) and isinstance(g, float):
            if not math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-300):
                return False
        elif g != w or type(g) is not type(w):
            return False
    return True


def test_stats_are_h5groves(h5web_domain: ViewDomain) -> None:
    """``stats`` of every numeric dataset as h5grove computes them (over the finite values), a
    long double included (numpy's longdouble, answered as floats); a 2-D selection too. h5grove
    answers complex numbers with their real parts truncated to integers: h5lake refuses them
    (422)."""
    f = h5web_domain.file
    checked = []
    for path in datasets(h5web_domain):
        if not numeric(f, path):
            r = get(h5web_domain, "stats", path=path)
            assert r.status_code == 422, (path, r.text)
            continue
        got = get(h5web_domain, "stats", path=path)
        with h5py.File(f) as h5:
            is_complex = h5[path].dtype.kind == "c"
        if is_complex:
            with pytest.warns(np.exceptions.ComplexWarning):
                truncated = reference(f, path, "stats")
            assert all(isinstance(v, int) for v in truncated.values()), truncated
            assert got.status_code == 422 and "numeric" in got.json()["message"], path
            continue
        assert got.status_code == 200, (path, got.text)
        want = reference(f, path, "stats")
        assert same_stats(got.json(), want), (path, got.json(), want)
        checked.append(path)
    assert "/data/ldouble" in checked and "/data/cube" in checked and "/data/bools" in checked
    sliced = get(h5web_domain, "stats", path="/data/cube", selection="3,:,:")
    assert sliced.json() == reference(f, "/data/cube", "stats", selection="3,:,:")


def test_long_double_stats_keep_its_precision(h5web_domain: ViewDomain) -> None:
    """The statistics of a long double are numpy's on its longdouble values (then made floats),
    not on float64 copies: the mean and std h5py's values give."""
    with h5py.File(h5web_domain.file) as f:
        values = f["/data/ldouble"][()]
    assert values.dtype == np.longdouble
    r = get(h5web_domain, "stats", path="/data/ldouble", selection="3:11")
    assert r.status_code == 200, r.text
    part = values[3:11]
    assert r.json() == {"strict_positive_min": float(part[part > 0].min()), "positive_min": float(part.min()),
                        "min": float(part.min()), "max": float(part.max()), "mean": float(np.mean(part)),
                        "std": float(np.std(part))}


def tiff_pages(body: bytes) -> tuple[int, np.ndarray]:
    with tifffile.TiffFile(io.BytesIO(body)) as t:
        return len(t.pages), t.asarray()


@pytest.mark.parametrize("path,selection", [
    ("/data/image", None), ("/data/cube", None), ("/data/cube", "1:4,:,:"), ("/data/cube", "2,:,:"),
    ("/data/complex2d", None), ("/images/rgb", None), ("/data/bools2d", None),
])
def test_tiff_is_h5groves(h5web_domain: ViewDomain, path: str, selection: str | None) -> None:
    """``format=tiff`` of two or more dimensions: h5grove's file, byte for byte (tifffile, grey
    scale, one page per image of the last two axes, the array's shape recorded). Booleans are
    the one difference: 8-bit integers here, 1-bit samples in h5grove's file."""
    params = {"format": "tiff", **({"selection": selection} if selection else {})}
    r = get(h5web_domain, "data", path=path, **params)
    assert r.status_code == 200 and r.headers["content-type"] == "image/tiff", (path, r.text)
    want = reference(h5web_domain.file, path, "data", **params)
    with h5py.File(h5web_domain.file) as f:
        values = f[path][()] if selection is None else f[path][tuple(
            int(p) if ":" not in p else slice(*(int(x) if x else None for x in p.split(":"))) for p in selection.split(",")
        )]
    pages, got = tiff_pages(r.content)
    assert pages == math.prod(values.shape[:-2]) and got.shape == values.shape
    if values.dtype.kind == "b":
        assert got.dtype == np.uint8 and got.tolist() == values.astype("u1").tolist()
        assert tiff_pages(want)[1].tolist() == values.tolist()
    else:
        assert r.content == want, path


def test_tiff_of_one_dimension_is_refused(h5web_domain: ViewDomain) -> None:
    """One dimension is no image: 422 (h5grove's tifffile call fails there, a 500)."""
    r = get(h5web_domain, "data", path="/data/line", format="tiff")
    assert r.status_code == 422 and "2 or more dimensions" in r.json()["message"]
    with pytest.raises(IndexError):
        reference(h5web_domain.file, "/data/line", "data", format="tiff")


@pytest.mark.filterwarnings("ignore:metadata on a dtype is not saved:UserWarning")  # h5grove's npy of h5py's enums
@pytest.mark.parametrize("params", [{"format": "bin", "dtype": "safe"}, {"format": "npy"},
                                    {"format": "json", "dtype": "safe", "flatten": "true"}])
def test_numbers_are_h5groves(h5web_domain: ViewDomain, params: dict[str, str]) -> None:
    """The numbers of every numeric dataset, in the forms H5Web asks for and downloads, as
    h5grove answers them (``dtype=safe`` JSON of float16: the same float32 values, written here
    with all their digits, by h5grove with the fewest that read back as that float32)."""
    f = h5web_domain.file
    for path in datasets(h5web_domain):
        if not numeric(f, path):
            continue
        r = get(h5web_domain, "data", path=path, **params)
        assert r.status_code == 200, (path, r.text)
        want = reference(f, path, "data", **{**params, "flatten": params.get("flatten") == "true"})
        if params["format"] == "json" and path == "/data/half":  # the same float32 values
            assert np.array_equal(np.array(r.json(), "<f4"), np.array(want, "<f4")), path
        elif params["format"] == "json":
            assert r.json() == want, path
        else:
            assert r.content == want, path


# --- types h5grove has no form for ------------------------------------------------------------


def make_unusual(path: Path) -> Path:
    """16-byte integers (signed little-endian, unsigned big-endian) and HDF5 time types, with
    values, plus a 2-D long double."""
    with h5py.File(path, "w") as f:
        raw = np.frombuffer(bytes(range(64)), "V16")
        for name, base in (("int128", h5t.STD_I64LE), ("uint128be", h5t.STD_U64BE)):
            t = base.copy()
            t.set_size(16)
            d = h5d.create(f.id, name.encode(), t, h5s.create_simple((4,)))
            d.write(h5s.ALL, h5s.ALL, raw, mtype=t)  # the file's bytes, unconverted
        for name, t, n in (("time32", h5t.UNIX_D32LE, 4), ("time64be", h5t.UNIX_D64BE, 8)):
            d = h5d.create(f.id, name.encode(), t, h5s.create_simple((3,)))
            d.write(h5s.ALL, h5s.ALL, np.frombuffer(bytes(range(3 * n)), f"V{n}"), mtype=t)  # the file's bytes, unconverted
        f["ldouble2d"] = (np.arange(12).reshape(3, 4) / 7).astype(np.longdouble)
        wide = h5t.STD_I64LE.copy()
        wide.set_size(16)
        row = h5t.create(h5t.COMPOUND, 4 + 16)
        row.insert(b"n", 0, h5t.STD_I32LE)
        row.insert(b"wide", 4, wide)
        d = h5d.create(f.id, b"rows", row, h5s.create_simple((2,)))
        d.write(h5s.ALL, h5s.ALL, np.frombuffer(bytes(range(40)), "V20"), mtype=row)
        a = h5a.create(d, b"when", h5t.UNIX_D32LE, h5s.create_simple((2,)))
        a.write(np.frombuffer(bytes(range(8)), "V4"), mtype=h5t.UNIX_D32LE)
    return path


@pytest.fixture(scope="module")
def unusual(endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> ViewDomain:
    requests.put(endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=auth("test_user1"))
    source = make_unusual(tmp_path_factory.mktemp("unusual") / "unusual.h5")
    domain = f"/home/test_user1/unusual-{uuid.uuid4().hex[:8]}.h5"
    subprocess.run([sys.executable, "-m", "h5lake.cli.command", "load", str(source), domain,
                    "-e", endpoint, "-u", "test_user1", "-p", USERS["test_user1"]],
                   check=True, capture_output=True, timeout=300)
    return ViewDomain(endpoint, domain, source)


@pytest.mark.parametrize("path,size", [("/int128", 16), ("/uint128be", 16), ("/time32", 4), ("/time64be", 8)])
def test_types_h5grove_cannot_read_are_opaque(unusual: ViewDomain, path: str, size: int) -> None:
    """h5py has no numpy type for a 16-byte integer or an ``H5T_TIME`` (``TypeError``), so an
    h5grove server fails on the path (500). h5lake describes it as opaque (class 5) of its size,
    which H5Web shows as raw bytes, and answers ``format=bin`` with the file's bytes."""
    with pytest.raises(TypeError):
        reference(unusual.file, path, "meta")
    r = get(unusual, "meta", path=path)
    assert r.status_code == 200, r.text
    assert r.json()["type"] == {"class": 5, "dtype": f"|V{size}", "size": size, "tag": ""}
    body = get(unusual, "data", path=path, format="bin")
    with h5py.File(unusual.file) as f:
        dsid = f[path.lstrip("/")].id
        want = np.empty(dsid.shape, f"V{size}")
        dsid.read(h5s.ALL, h5s.ALL, want, mtype=dsid.get_type().copy())
    assert body.status_code == 200 and body.content == want.tobytes()
    assert get(unusual, "stats", path=path).status_code == 422


def test_members_and_attributes_h5grove_cannot_read_are_opaque(unusual: ViewDomain) -> None:
    """The same types as a compound member and as an attribute: h5grove fails on the path (its
    ``meta`` lists attribute types; ``attr`` reads the values); h5lake describes them as opaque and
    gives attribute values in base64, as for opaque attributes, and no other answer fails."""
    with pytest.raises(TypeError):
        reference(unusual.file, "/rows", "meta")
    meta = get(unusual, "meta", path="/rows").json()
    assert meta["type"]["members"][1] == {"name": "wide", "class": 5, "dtype": "|V16", "size": 16, "tag": ""}
    assert meta["attributes"] == [{"name": "when", "shape": [2], "type": {"class": 5, "dtype": "|V4", "size": 4, "tag": ""}}]
    attr = get(unusual, "attr", path="/rows")
    assert attr.status_code == 200 and attr.json() == {"when": ["AAECAw==", "BAUGBw=="]}
    body = get(unusual, "data", path="/rows", format="bin")
    assert body.status_code == 200 and body.content == bytes(range(40))
    for fmt in ("npy", "csv", "tiff"):
        assert get(unusual, "data", path="/rows", format=fmt).status_code == 422
    assert get(unusual, "data", path="/rows", dtype="safe").status_code == 422
    assert get(unusual, "stats", path="/rows").status_code == 422
    with pytest.raises(TypeError):  # h5grove's listing of the group describes each child's type
        reference(unusual.file, "/", "meta")
    assert get(unusual, "meta", path="/").status_code == 200


def test_tiff_of_a_long_double_is_its_float64_values(unusual: ViewDomain) -> None:
    """TIFF has no sample format for the 80-bit float: the image holds its float64 values (an
    h5grove file of 16-byte samples reads back as no array)."""
    r = get(unusual, "data", path="/ldouble2d", format="tiff")
    assert r.status_code == 200, r.text
    with h5py.File(unusual.file) as f:
        values = f["ldouble2d"][()]
    pages, got = tiff_pages(r.content)
    assert pages == 1 and got.dtype == np.float64 and got.tolist() == values.astype("<f8").tolist()
    stats = get(unusual, "stats", path="/ldouble2d").json()
    assert stats == reference(unusual.file, "/ldouble2d", "stats")
