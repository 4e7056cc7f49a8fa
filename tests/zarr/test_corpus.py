"""Every dataset of the load/export corpus (tests/roundtrip/corpus.py) through the Zarr bridge:
loaded, then walked link by link beside h5py. A dataset is either read by zarr-python with
values equal to h5py's, or named with a reason in its group's ``_h5lake_omitted``, or a netCDF-4
dimension without a variable (left out so that xarray sees the file's dimensions: docs/zarr.md).
Nothing is passed over unchecked."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import requests
from h5py import h5s, h5t

import zarr
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings
from tests.conftest import auth
from tests.roundtrip.corpus import CORPUS, build
from tests.support.server import Server
from tests.zarr.conftest import USER, Zarr
from tests.zarr.test_read import same

# one store: the corpus on S3 is tests/roundtrip/test_roundtrip.py, the Zarr bridge on S3
# tests/zarr/test_read.py and test_write.py; here, what the bridge makes of every kind of file
pytestmark = pytest.mark.one_backend
NETCDF_DIMENSION = "This is a netCDF dimension but not a netCDF variable"


def _as_h5py(served: np.ndarray, want: np.ndarray) -> np.ndarray:
    """zarr-python's array in h5py's form where the Zarr type is another spelling of it."""
    if want.dtype.kind == "c" or want.dtype.kind == served.dtype.kind:
        return served
    if want.dtype.kind == "S" and served.dtype.kind == "O":
        return np.array([v if isinstance(v, bytes) else bytes(v) for v in served.ravel()], dtype=object).reshape(served.shape)
    return served


def _x87(served: np.ndarray, want: np.ndarray) -> bool:
    """A long double (x87's 80 bits in 16 bytes) Zarr serves as raw bytes: the 10 that hold it."""
    a = np.frombuffer(np.ascontiguousarray(served).tobytes(), "u1").reshape(-1, 16)[:, :10]
    b = np.frombuffer(np.ascontiguousarray(want).tobytes(), "u1").reshape(-1, 16)[:, :10]
    return bool(np.array_equal(a, b))


def _equal(served: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype.kind == "f" and want.dtype.itemsize == 16 and served.dtype.kind == "V":
        return _x87(served, want)
    if want.dtype.names and served.dtype.names == want.dtype.names:
        return all(_equal(served[n], want[n]) for n in want.dtype.names)
    if want.dtype.kind == "S" and served.dtype.kind == "U":  # a variable-length ASCII string: h5py gives bytes
        return bool(np.array_equal(np.char.encode(served, "ascii"), want))
    if want.dtype.kind == "O" and want.size and isinstance(want.ravel()[0], bytes) and served.dtype.kind == "O":
        return [bytes(v) if not isinstance(v, bytes) else v for v in served.ravel()] == list(want.ravel())
    return same(_as_h5py(served, want), want)


def _h5py_values(obj: h5py.Dataset) -> tuple[np.ndarray, bool]:
    """The dataset's values as h5py reads them; when it has no numpy type for them (bitfields,
    opaque with a tag, 128-bit integers, long doubles) the stored elements' bytes (True)."""
    try:
        return np.asarray(obj[()]), False
    except (OSError, TypeError, ValueError):
        tid = obj.id.get_type()
        raw = np.empty(obj.shape, dtype=f"V{tid.get_size()}")
        obj.id.read(h5s.ALL, h5s.ALL, raw, mtype=tid)
        return raw, True


def _walk(f: h5py.File, h5: h5py.Group, zgroup: Any, flat: dict[str, Any], prefix: str, out: dict[str, str]) -> None:
    omitted = zgroup.attrs.get("_h5lake_omitted", {}) if prefix else flat[""]["attributes"].get("_h5lake_omitted", {})
    for name in h5:
        path = f"{prefix}/{name}" if prefix else name
        try:
            link = type(h5.get(name, getlink=True)).__name__
        except TypeError:  # h5py names no class for a user-defined link
            link = "user-defined link"
        if path not in flat:
            reason = omitted.get(name)
            if reason:
                out[path] = f"omitted: {reason}"
                continue
            obj = h5.get(name)
            assert isinstance(obj, h5py.Dataset) and str(obj.attrs.get("NAME", b"")).find(NETCDF_DIMENSION) >= 0, \
                f"{path} ({link}) is neither served nor named in _h5lake_omitted"
            out[path] = "netCDF dimension"
            continue
        node = flat[path]
        obj = h5[name]
        if node["node_type"] == "group":
            assert isinstance(obj, h5py.Group), path
            _walk(f, obj, zgroup[name], flat, path, out)
            continue
        assert isinstance(obj, h5py.Dataset), path
        want, raw = _h5py_values(obj)
        got = np.asarray(zgroup[name][()])
        assert got.shape == want.shape, f"{path}: shape {got.shape} != {want.shape}"
        if raw:  # compared as stored elements
            served = np.ascontiguousarray(got)
            assert served.dtype.itemsize == want.dtype.itemsize, f"{path}: {served.dtype} for {want.dtype}"
            if served.dtype.kind != "V":  # a number: in the file's byte order (h5py's raw read gives it so)
                big = obj.id.get_type().get_order() == h5t.ORDER_BE
                served = served.astype(served.dtype.newbyteorder(">" if big else "<"))
            assert served.tobytes() == want.tobytes(), f"{path}: stored bytes differ"
        else:
            assert _equal(got, want), f"{path}: values differ\nzarr: {got!r}\nh5py: {want!r}"
        out[path] = "read"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_file_reads_through_zarr_python(zserver: Server, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # h5py finds a dataset's external files from here
    source = build(name, tmp_path)
    domain = f"/home/{USER}/corpus-{uuid.uuid4().hex[:10]}.h5"
    user, password = auth(USER)
    load_file(source, RestClient(Settings(zserver.endpoint, user, password), domain), workers=2)
    z = Zarr(zserver.endpoint, domain)
    r = requests.get(f"{z.url}/zarr.json", auth=auth(USER), timeout=60)
    assert r.status_code == 200, r.text
    root = r.json()
    flat = {"": root, **root["consolidated_metadata"]["metadata"]}
    # obstore percent-encodes keys ('#' in MATLAB's "#refs#"); fsspec's HTTP sends them as they are
    group = zarr.open_group(z.obstore(), mode="r", zarr_format=3, use_consolidated=True)
    seen: dict[str, str] = {}
    with h5py.File(source, "r") as f:
        _walk(f, f, group, flat, "", seen)
        datasets: list[str] = []
        f.visititems(lambda p, o: datasets.append(p) if isinstance(o, h5py.Dataset) else None)
    # every dataset h5py reaches is accounted for under one of its paths at least
    assert all(any(p == s or p.startswith(s + "/") for s in seen) for p in datasets), (datasets, seen)
