"""Reading domains, versions and linked files through the Zarr bridge with the real clients
(zarr-python over fsspec's HTTP and obstore's HTTPStore, tensorstore, xarray), compared with
h5py's reading of the same file (docs/zarr.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest
import requests
import xarray as xr

import zarr
from tests.conftest import auth
from tests.support.server import Server
from tests.zarr.conftest import USER, Zarr, basic, load

AS_STORED = {"none", "gzip_shuffle", "fletcher_u1", "zstd", "blosc", "be", "cplx", "enum", "opaque", "strings", "compound"}
"""Datasets whose chunks are sent as stored: their filters all have zarr-python codecs."""


def every_filter(path: Path) -> Path:
    """A file with every filter h5lake supports and the types Zarr can hold (and two it cannot)."""
    data = (np.arange(1200, dtype="f4").reshape(30, 40) % 97) * 1.5
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "every filter"
        f.create_dataset("none", data=data, chunks=(8, 16))
        f.create_dataset("gzip_shuffle", data=data, chunks=(8, 16), compression="gzip", shuffle=True)
        f.create_dataset("fletcher_u1", data=np.arange(77, dtype="u1"), chunks=(7,), fletcher32=True)
        f.create_dataset("lzf", data=data, chunks=(8, 16), compression="lzf")
        f.create_dataset("szip", data=data.astype("i4"), chunks=(8, 16), compression="szip")
        f.create_dataset("scaleoffset", data=data.astype("i4"), chunks=(8, 16), scaleoffset=0)
        f.create_dataset("zstd", data=data, chunks=(8, 16), **hdf5plugin.Zstd())
        f.create_dataset("blosc", data=data, chunks=(8, 16), **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
        f.create_dataset("lz4", data=data, chunks=(8, 16), **hdf5plugin.LZ4())
        f.create_dataset("bitshuffle", data=data, chunks=(8, 16), **hdf5plugin.Bitshuffle())
        f.create_dataset("be", data=data.astype(">f8"), chunks=(8, 16), compression="gzip")
        f.create_dataset("cplx", data=(data + 1j * data).astype("c8"), chunks=(8, 16))
        f.create_dataset("scalar", data=np.float64(3.5))
        sparse = f.create_dataset("sparse", shape=(100,), chunks=(10,), dtype="i2", fillvalue=-7)
        sparse[:10] = 1
        f.create_dataset("nanfill", shape=(5,), dtype="f4", fillvalue=np.nan)
        f.create_dataset("enum", data=np.array([0, 1, 2, 1], dtype="u1"), dtype=h5py.enum_dtype({"a": 0, "b": 1, "c": 2}, basetype="u1"))
        f.create_dataset("bools", data=np.array([True, False, True]))
        f.create_dataset("opaque", data=np.array([b"abcd", b"efgh"], dtype="V4"))
        f.create_dataset("strings", data=np.array([b"ab", b"cde", b""], dtype="S3"), chunks=(2,))
        f.create_dataset("vlen_utf8", data=np.array(["x", "yé", ""], dtype=object), dtype=h5py.string_dtype(), chunks=(2,),
                         compression="gzip")
        f.create_dataset("compound", data=np.array([(1, 2.0), (3, 4.5)], dtype=[("a", "<i4"), ("b", "<f8")]))
        f.create_dataset("compound_be", data=np.array([(1, 2.0), (3, 4.5)], dtype=[("a", ">i4"), ("b", "<f8")]))
        g = f.create_group("grp")
        g.attrs["n"] = 3
        g.attrs["nan"] = np.float32(np.nan)
        g.create_dataset("inner", data=np.arange(6, dtype="<u8").reshape(2, 3))
        f.create_dataset("ref", data=np.array([f["none"].ref]), dtype=h5py.ref_dtype)
        f["soft"] = h5py.SoftLink("/none")
    return path


def same(served: np.ndarray, h5: np.ndarray) -> bool:
    if h5.dtype.kind == "O":
        h5 = np.array([v.decode() if isinstance(v, bytes) else v for v in h5.ravel()], dtype=object).reshape(h5.shape)
        return [str(v) for v in np.asarray(served, dtype=object).ravel()] == list(h5.ravel())
    if h5.dtype.names is not None:
        return bool(served.tolist() == h5.tolist())
    return bool(np.array_equal(served, h5, equal_nan=h5.dtype.kind in "fc"))


@pytest.fixture(scope="module")
def filters_file(sources: Path) -> Path:
    return every_filter(sources / "every_filter.h5")


@pytest.mark.parametrize("link", [False, True], ids=["copied", "linked"])
def test_zarr_python_reads_every_dataset_as_h5py(zserver: Server, filters_file: Path, tmp_path: Path, link: bool) -> None:
    z = load(zserver, filters_file, tmp_path, link=link)
    group = zarr.open_group(z.fsspec(), mode="r", zarr_format=3, use_consolidated=True)
    omitted = group.attrs["_h5lake_omitted"]
    assert set(omitted) == {"ref", "soft"} and "reference" in omitted["ref"]
    with h5py.File(filters_file) as f:
        names = [n for n in f if isinstance(f[n], h5py.Dataset) and n not in ("ref", "soft")]
        for name in names:
            assert same(group[name][...], f[name][...]), name
        assert same(group["grp/inner"][...], f["grp/inner"][...])
        assert group["grp"].attrs["n"] == 3 and group["grp"].attrs["nan"] == "NaN"
        assert group["enum"].attrs["_h5lake_enum"] == {"a": 0, "b": 1, "c": 2}
        assert group["bools"].dtype == np.bool_ and group["cplx"].dtype == np.complex64
        assert group["sparse"].fill_value == -7 and np.isnan(group["nanfill"].fill_value)
        # chunks whose codecs are the stored format are sent as stored: a linked file's bytes
        for name in ("gzip_shuffle", "zstd", "blosc", "fletcher_u1", "be") if link else ():
            index = (0,) * f[name].ndim
            mask, raw = f[name].id.read_direct_chunk(index)
            assert mask == 0
            got = z.get(f"{name}/c/" + "/".join("0" for _ in index))
            assert got.status_code == 200 and got.content == raw, name
        # a chunk never written is 404 (read as the fill value)
        assert z.get("sparse/c/5").status_code == 404
        assert z.get("sparse/c/0").status_code == 200


def test_zarr_python_reads_through_obstore(zserver: Server, filters_file: Path, tmp_path: Path) -> None:
    z = load(zserver, filters_file, tmp_path)
    group = zarr.open_group(z.obstore(), mode="r", zarr_format=3, use_consolidated=True)
    with h5py.File(filters_file) as f:
        for name in ("gzip_shuffle", "szip", "vlen_utf8", "compound_be", "scalar"):
            assert same(group[name][...], f[name][...]), name


def test_tensorstore_reads_numbers_with_core_codecs(zserver: Server, filters_file: Path, tmp_path: Path) -> None:
    z = load(zserver, filters_file, tmp_path, link=True)
    with h5py.File(filters_file) as f:
        for name in ("none", "zstd", "blosc", "szip", "lz4", "cplx", "bools", "grp/inner"):
            assert same(z.tensorstore(name).read().result(), f[name][...]), name
        # numcodecs.* codecs are not tensorstore's: the core profile decodes them on the server
        for name in ("gzip_shuffle", "be", "fletcher_u1"):
            with pytest.raises(ValueError, match="not registered"):
                z.tensorstore(name)
            assert same(z.tensorstore(name, core=True).read().result(), f[name][...]), name
    assert z.get("none/zarr.json", headers={"X-H5lake-Zarr-Codecs": "other"}).status_code == 400


def netcdf4_file(path: Path) -> Path:
    saved = os.environ.get("HDF5_PLUGIN_PATH")
    import netCDF4

    if saved is None:
        os.environ.pop("HDF5_PLUGIN_PATH", None)
    else:
        os.environ["HDF5_PLUGIN_PATH"] = saved
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "zarr bridge"
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 2000-01-01", "standard"
        t[:] = np.arange(4.0)
        x = ds.createVariable("x", "i4", ("x",))
        x[:] = [10, 20, 30]
        v = ds.createVariable("temp", "f4", ("time", "x"), zlib=True, complevel=4, fill_value=-999.0)
        v.units = "K"
        v[:] = np.ma.masked_array(np.arange(12, dtype="f4").reshape(4, 3), mask=np.eye(4, 3, dtype=bool))
        s = ds.createVariable("station", str, ("x",))
        s[:] = np.array(["north", "bé", "z"], dtype=object)
        g = ds.createGroup("obs")
        g.createDimension("n", 2)
        g.createVariable("count", "i8", ("n",))[:] = [5, 6]
    return path


def test_xarray_open_zarr_equals_open_dataset(zserver: Server, sources: Path, tmp_path: Path) -> None:
    local = netcdf4_file(sources / "air.nc")
    z = load(zserver, local, tmp_path)
    for group in (None, "obs"):
        with xr.open_dataset(local, group=group) as mine:
            served = xr.open_zarr(z.fsspec(), group=group, consolidated=True, zarr_format=3)
            xr.testing.assert_equal(mine.load(), served.load())
            assert dict(mine.attrs) == dict(served.attrs)
            assert set(mine.coords) == set(served.coords)


def test_versions_are_read_only_with_strong_etags(zserver: Server, filters_file: Path, tmp_path: Path) -> None:
    z = load(zserver, filters_file, tmp_path)
    r = requests.post(f"{z.endpoint}/versions", params={"domain": z.domain}, json={"message": "one"}, auth=auth(USER), timeout=30)
    assert r.status_code == 201, r.text
    version = r.json()["id"]
    head = zarr.open_group(z.fsspec(read_only=False), mode="r+", zarr_format=3)
    head["none"][0:8, 0:16] = -1  # the head changes, the version does not
    pinned = Zarr(z.endpoint, f"{z.domain}@{version}")
    with h5py.File(filters_file) as f:
        group = zarr.open_group(pinned.fsspec(), mode="r", zarr_format=3, use_consolidated=True)
        assert same(group["none"][...], f["none"][...])
        assert float(zarr.open_group(z.fsspec(), mode="r")["none"][0, 0]) == -1
    for key in ("zarr.json", "none/zarr.json", "none/c/0/0"):
        got = pinned.get(key)
        assert got.status_code == 200
        etag = got.headers["ETag"]
        assert etag.startswith('"') and "immutable" in got.headers["Cache-Control"]
        again = pinned.get(key, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
    # a REF that may name another version later is revalidated, never cached for good
    latest = Zarr(z.endpoint, f"{z.domain}@~0").get("none/c/0/0")
    assert latest.status_code == 200 and "no-cache" in latest.headers["Cache-Control"]
    assert pinned.put("none/c/0/0", data=b"\0" * 512).status_code == 405
    assert pinned.delete("none/c/0/0").status_code == 405
    assert pinned.put("new/zarr.json", json={"zarr_format": 3, "node_type": "group"}).status_code == 405
    head_chunk = z.get("none/c/0/0")  # the head changes: an ETag to revalidate with, never cached for good
    assert head_chunk.headers["ETag"] not in (None, etag) and "no-cache" in head_chunk.headers["Cache-Control"]


def test_access_follows_the_domain_acls(zserver: Server, filters_file: Path, tmp_path: Path) -> None:
    z = load(zserver, filters_file, tmp_path)
    assert requests.get(f"{z.url}/zarr.json", timeout=30).status_code == 401
    other = requests.get(f"{z.url}/none/c/0/0", auth=auth("test_user2"), timeout=30)
    r = requests.get(f"{z.endpoint}/acls/default", params={"domain": z.domain}, auth=auth(USER), timeout=30)
    readable_by_default = r.ok and r.json().get("acl", {}).get("read")
    assert other.status_code == (200 if readable_by_default else 403)
    assert requests.put(f"{z.url}/none/c/0/0", data=b"\0" * 512, auth=auth("test_user2"), timeout=30).status_code == 403


def _meta(z: Zarr, key: str) -> Any:
    r = z.get(key)
    assert r.status_code == 200, r.text
    return r.json()


def test_root_consolidates_the_hierarchy(zserver: Server, filters_file: Path, tmp_path: Path) -> None:
    z = load(zserver, filters_file, tmp_path)
    root = _meta(z, "zarr.json")
    flat = root["consolidated_metadata"]["metadata"]
    assert flat["grp/inner"] == _meta(z, "grp/inner/zarr.json")
    assert flat["grp"]["attributes"] == _meta(z, "grp/zarr.json")["attributes"]
    assert "ref" not in flat and "soft" not in flat and root["attributes"]["title"] == "every filter"
    assert z.get("nope/zarr.json").status_code == 404
    assert z.get("none/c/9/0").status_code == 404  # outside the chunk grid
    assert z.get("none/c/x/0").status_code == 404
    assert z.get("ref/zarr.json").status_code == 404


def test_members_listed_without_consolidated_metadata(zserver: Server, filters_file: Path, tmp_path: Path) -> None:
    """zarr-python lists a group's members from the store: fsspec's HTTP file system parses the
    links of the group's page, obstore's HTTPStore sends a WebDAV PROPFIND (Depth 1; obstore
    0.12 gives the paths it lists from the server's root, so its store is rooted there and the
    group opened at its path)."""
    from obstore.store import HTTPStore
    from zarr.storage import ObjectStore

    z = load(zserver, filters_file, tmp_path)
    flat = _meta(z, "zarr.json")["consolidated_metadata"]["metadata"]
    rooted = ObjectStore(HTTPStore.from_url(z.endpoint + "/", client_options={"default_headers": {"Authorization": basic()},
                                                                               "allow_http": True}))
    for name, store, path in (("fsspec", z.fsspec(), ""), ("obstore", rooted, "zarr" + z.domain)):
        group = zarr.open_group(store, path=path, mode="r", zarr_format=3, use_consolidated=False)
        assert group.metadata.consolidated_metadata is None
        found = {name: type(node).__name__ for name, node in group.members(max_depth=None)}
        assert found == {path: ("Group" if m["node_type"] == "group" else "Array") for path, m in flat.items()}, name
        assert "ref" not in found and "soft" not in found  # the omitted are not listed
    dav = requests.request("PROPFIND", f"{z.url}/grp", headers={"Depth": "1"}, auth=auth(USER), timeout=30)
    assert dav.status_code == 207 and "<D:href>" in dav.text and "/grp/inner/</D:href>" in dav.text
    deep = requests.request("PROPFIND", f"{z.url}/grp", headers={"Depth": "infinity"}, auth=auth(USER), timeout=30)
    assert deep.status_code == 403 and "Depth" in deep.json()["error"]["message"]
    assert requests.get(f"{z.url}/grp", timeout=30).status_code == 401
    assert z.get("nope").status_code == 404


def test_large_chunks_are_sent_as_stored_with_their_length_etag_and_versions(zserver: Server, sources: Path, tmp_path: Path) -> None:
    """Chunks past the store's inline read size (here 512 KiB) are sent from the stored object
    as they are (storage/mapped.py on the local store): the bytes, never content-coded whatever
    the client accepts, with Content-Length, the ETag, 304, HEAD; a version keeps its chunk's
    bytes when the head's chunk is replaced."""
    rng = np.random.default_rng(5)
    plain = rng.random((256, 1024), dtype="f4")
    path = sources / "large_chunks.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=plain, chunks=(128, 1024))
        f.create_dataset("noisy_gz", data=plain, chunks=(128, 1024), compression="gzip", shuffle=True)
    z = load(zserver, path, tmp_path)
    accept = {"Accept-Encoding": "gzip, deflate, br"}
    for i in (0, 1):
        got = z.get(f"plain/c/{i}/0", headers=accept)
        assert got.status_code == 200 and "Content-Encoding" not in got.headers
        assert got.content == plain[i * 128 : (i + 1) * 128].tobytes()
        assert int(got.headers["Content-Length"]) == len(got.content) == 512 * 1024
        assert z.get(f"plain/c/{i}/0", headers={"If-None-Match": got.headers["ETag"]}).status_code == 304
        head = requests.head(f"{z.url}/plain/c/{i}/0", auth=auth(USER), timeout=60)
        assert head.status_code == 200 and head.headers["Content-Length"] == str(512 * 1024) and head.content == b""
        assert head.headers["ETag"] == got.headers["ETag"]
    with h5py.File(path) as f:
        group = zarr.open_group(z.fsspec(), mode="r", zarr_format=3)
        assert np.array_equal(group["noisy_gz"][...], f["noisy_gz"][...]) and np.array_equal(group["plain"][...], plain)
    r = requests.post(f"{z.endpoint}/versions", params={"domain": z.domain}, json={"message": "one"}, auth=auth(USER), timeout=30)
    assert r.status_code == 201, r.text
    pinned = Zarr(z.endpoint, f"{z.domain}@{r.json()['id']}")
    before = pinned.get("plain/c/0/0")
    assert before.status_code == 200 and before.content == plain[:128].tobytes()
    assert z.put("plain/c/0/0", data=np.full((128, 1024), 2, "f4").tobytes()).status_code == 200
    assert before.content == pinned.get("plain/c/0/0").content == plain[:128].tobytes()
    assert z.get("plain/c/0/0").content == np.full((128, 1024), 2, "f4").tobytes()
    assert z.get("plain/c/1/0").content == plain[128:].tobytes()
