"""/h5grove/ answers in the exact forms the stock H5Web app (``@h5web/app`` 17, its h5grove
provider) depends on, for one of everything it shows (tests/support/h5web_file.py).

The reference is h5py: h5grove's own servers describe and read a file with h5py, so the
metadata each path should get is built here from h5py's low-level type API, and each dataset is
asked for as H5Web asks (``format=bin&dtype=safe`` into a typed array for numbers, booleans and
enums; ``format=bin`` for opaque; ``flatten=true`` JSON for anything else) and compared with
h5py's values. dev/h5web_check.py drives the real app over the same file.
"""

from __future__ import annotations

import io
from typing import Any

import h5py
import numpy as np
import pytest
import requests
import tifffile
from h5py import h5t
from tests.conftest import auth
from tests.view.conftest import ViewDomain

pytestmark = pytest.mark.one_backend  # the h5grove answers H5Web reads, the same on every store


def get(v: ViewDomain, route: str, **params: str) -> requests.Response:
    return requests.get(f"{v.endpoint}/h5grove/{route}", params={"file": v.domain, **params},
                        auth=auth("test_user1"), timeout=60)


def every_path(v: ViewDomain) -> list[str]:
    out = ["/"]
    with h5py.File(v.file) as f:
        f.id.links.visit(lambda name: out.append("/" + name.decode()))
    return out


# --- h5py's view of a type, as h5grove's metadata spells it -----------------------------------


def dtype_text(dt: np.dtype[Any]) -> Any:
    return dt.str if dt.fields is None else {name: dtype_text(dt.fields[name][0]) for name in dt.names or ()}


def type_of(tid: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"class": tid.get_class(), "dtype": dtype_text(tid.dtype), "size": tid.get_size()}
    if isinstance(tid, h5t.TypeIntegerID):
        out.update(order=tid.get_order(), sign=tid.get_sign())
    elif isinstance(tid, h5t.TypeFloatID | h5t.TypeBitfieldID):
        out.update(order=tid.get_order())
    elif isinstance(tid, h5t.TypeStringID):
        out.update(cset=tid.get_cset(), strpad=tid.get_strpad(), vlen=bool(tid.is_variable_str()))
    elif isinstance(tid, h5t.TypeOpaqueID):
        out.update(tag=tid.get_tag().decode())
    elif isinstance(tid, h5t.TypeCompoundID):
        out.update(members=[{"name": tid.get_member_name(i).decode(), **type_of(tid.get_member_type(i))}
                            for i in range(tid.get_nmembers())])
    elif isinstance(tid, h5t.TypeEnumID):
        out.update(members={tid.get_member_name(i).decode(): int(tid.get_member_value(i))
                            for i in range(tid.get_nmembers())}, base=type_of(tid.get_super()))
    elif isinstance(tid, h5t.TypeVlenID):
        out.update(base=type_of(tid.get_super()))
    elif isinstance(tid, h5t.TypeArrayID):
        out.update(dims=list(tid.get_array_dims()), base=type_of(tid.get_super()))
    return out


def shape_of(shape: tuple[int, ...] | None) -> list[int] | None:
    return None if shape is None else list(shape)


def expected_meta(f: h5py.File, path: str, with_children: bool = True) -> dict[str, Any]:
    name = path.rsplit("/", 1)[-1]
    link = f.get(path, getlink=True) if path != "/" else None
    try:
        obj = f[path]
    except (KeyError, OSError):
        if isinstance(link, h5py.ExternalLink):
            return {"kind": "external_link", "name": name, "target_file": link.filename, "target_path": link.path}
        assert isinstance(link, h5py.SoftLink)
        return {"kind": "soft_link", "name": name, "target_path": link.path}
    attrs = [{"name": a, "shape": shape_of(obj.attrs.get_id(a).shape), "type": type_of(obj.attrs.get_id(a).get_type())}
             for a in sorted(obj.attrs)]
    out: dict[str, Any] = {"attributes": attrs, "name": name}
    if isinstance(obj, h5py.Dataset):
        dcpl = obj.id.get_create_plist()
        filters = [{"id": fid, "name": fname.decode()}
                   for fid, _, _, fname in (dcpl.get_filter(i) for i in range(dcpl.get_nfilters()))]
        out.update(kind="dataset", chunks=shape_of(obj.chunks), filters=filters or None,
                   shape=shape_of(obj.shape), type=type_of(obj.id.get_type()))
    elif isinstance(obj, h5py.Datatype):
        out.update(kind="datatype", type=type_of(obj.id))
    else:
        out["kind"] = "group"
        if with_children:
            out["children"] = [expected_meta(f, f"{path.rstrip('/')}/{c}", False) for c in obj]
    return out


def test_meta_of_every_path_is_h5pys_description(h5web_domain: ViewDomain) -> None:
    """The same metadata h5grove gives for the file (types in HDF5's class codes with numpy
    dtypes, h5py's complex and long double, creation chunks and filters, links not followed when
    they do not resolve), key for key."""
    with h5py.File(h5web_domain.file) as f:
        for path in every_path(h5web_domain):
            r = get(h5web_domain, "meta", path=path)
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*", (path, r.text)
            assert r.json() == expected_meta(f, path), path


def test_types_h5web_branches_on(h5web_domain: ViewDomain) -> None:
    """The fields H5Web's provider turns into its types: complex from an ``r``/``i`` compound,
    booleans from a ``FALSE``/``TRUE`` enum, a long double as a 16-byte float (a Float64Array),
    a contiguous dataset without chunks, HDF5's filter name."""
    meta = {c["name"]: c for c in get(h5web_domain, "meta", path="/data").json()["children"]}
    assert meta["complex"]["type"]["class"] == 6 and meta["complex"]["type"]["dtype"] == "<c16"
    assert [m["name"] for m in meta["complex"]["type"]["members"]] == ["r", "i"]
    assert meta["bools"]["type"]["class"] == 8 and meta["bools"]["type"]["members"] == {"FALSE": 0, "TRUE": 1}
    assert meta["ldouble"]["type"] == {"class": 1, "dtype": "<f16", "size": 16, "order": 0}
    assert meta["line"]["chunks"] is None and meta["image"]["chunks"] == [16, 16]
    assert meta["image"]["filters"] == [{"id": 1, "name": "deflate"}]
    assert meta["empty"]["shape"] is None and meta["scalar"]["shape"] == []
    links = {c["name"]: c for c in get(h5web_domain, "meta", path="/links").json()["children"]}
    assert links["dangling"] == {"kind": "soft_link", "name": "dangling", "target_path": "/nowhere"}
    assert links["external"] == {"kind": "external_link", "name": "external", "target_file": "other.h5",
                                 "target_path": "/some/path"}
    assert links["soft"]["kind"] == "dataset"  # a soft link that resolves is its target


# --- values as H5Web asks for them ------------------------------------------------------------

#: numpy types of the typed arrays H5Web reads ``format=bin&dtype=safe`` answers into
TYPED = {(0, 1, True): "<i1", (0, 2, True): "<i2", (0, 4, True): "<i4", (0, 8, True): "<i8",
         (0, 1, False): "<u1", (0, 2, False): "<u2", (0, 4, False): "<u4", (0, 8, False): "<u8",
         (1, 2, None): "<f4", (1, 4, None): "<f4", (1, 8, None): "<f8", (1, 16, None): "<f8"}


def typed_array(t: dict[str, Any]) -> str | None:
    """The typed array H5Web reads a dataset of this type into, or None (it asks for JSON)."""
    if t["class"] == 8:  # enums and booleans: their base's
        return typed_array(t["base"])
    if t["class"] == 0:
        return TYPED[(0, t["size"], t["sign"] == 1)]
    if t["class"] == 1:
        return TYPED[(1, t["size"], None)]
    return None


def as_json(value: Any) -> Any:
    """h5py's value as JSON has it: bytes as text, complex as [real, imaginary], records as lists."""
    if isinstance(value, np.ndarray):
        return as_json(value[()]) if value.ndim == 0 else [as_json(v) for v in value]
    if isinstance(value, np.void) and value.dtype.names:
        return [as_json(value[n]) for n in value.dtype.names]
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, complex | np.complexfloating):
        return [float(value.real), float(value.imag)]
    if isinstance(value, np.generic):
        return value.item()
    return value


def datasets(v: ViewDomain) -> list[str]:
    with h5py.File(v.file) as f:
        return [p for p in every_path(v) if p != "/" and isinstance(f.get(p), h5py.Dataset) and f[p].shape is not None]


def test_every_dataset_read_as_h5web_reads_it(h5web_domain: ViewDomain) -> None:
    with h5py.File(h5web_domain.file) as f:
        for path in datasets(h5web_domain):
            t = get(h5web_domain, "meta", path=path).json()["type"]
            expected = f[path][()]
            if t["class"] == 5:  # opaque: the bytes
                r = get(h5web_domain, "data", path=path, format="bin")
                assert r.status_code == 200 and r.content == np.asarray(expected).tobytes(), path
                continue
            typed = typed_array(t)
            if typed is not None:
                r = get(h5web_domain, "data", path=path, format="bin", dtype="safe")
                assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream", path
                got = np.frombuffer(r.content, typed)
                want = np.asarray(expected).astype(typed).reshape(-1)
                assert got.tobytes() == want.tobytes(), path
                continue
            r = get(h5web_domain, "data", path=path, flatten="true")
            assert r.status_code == 200 and r.headers["content-type"] == "application/json", path
            flat = np.asarray(expected).reshape(-1) if np.ndim(expected) else expected
            assert r.json() == as_json(flat), path


def test_slices_of_the_cube_as_the_dimension_slider_asks(h5web_domain: ViewDomain) -> None:
    with h5py.File(h5web_domain.file) as f:
        cube = f["/data/cube"][()]
    for index in range(cube.shape[0]):
        r = get(h5web_domain, "data", path="/data/cube", selection=f"{index},:,:", format="bin", dtype="safe")
        assert np.frombuffer(r.content, "<i2").reshape(cube.shape[1:]).tolist() == cube[index].tolist()
    r = get(h5web_domain, "data", path="/data/cube", selection="1:4,5,:", format="bin", dtype="safe")
    assert np.frombuffer(r.content, "<i2").reshape(3, 40).tolist() == cube[1:4, 5, :].tolist()


def test_attribute_values(h5web_domain: ViewDomain) -> None:
    """``/attr`` of every attribute (H5Web asks without ``attr_keys``), as h5grove writes them:
    strings as text, booleans as JSON booleans, complex as a pair, an empty attribute as null."""
    r = get(h5web_domain, "attr", path="/")
    assert r.status_code == 200
    assert r.json() == {"default": "entry", "flag": True, "nothing": None, "ratio": 0.5, "title": "H5Web check",
                        "version": [1, 2, 3], "z": [1.0, 2.0]}
    nxdata = get(h5web_domain, "attr", path="/entry/map").json()
    assert nxdata == {"NX_class": "NXdata", "axes": ["y", "x"], "signal": "counts"}
    image = get(h5web_domain, "attr", path="/images/rgb").json()
    assert image["CLASS"] == "IMAGE" and image["IMAGE_SUBCLASS"] == "IMAGE_TRUECOLOR"


def test_export_tiff_as_the_heatmap_offers_it(h5web_domain: ViewDomain) -> None:
    """H5Web's heatmap offers ``format=tiff`` (and npy) of the shown 2-D slice; more dimensions
    are a page per image, as h5grove writes them (tests/view/test_h5grove_reference.py)."""
    with h5py.File(h5web_domain.file) as f:
        image, cube, bools = f["/data/image"][()], f["/data/cube"][()], f["/data/bools2d"][()]
    r = get(h5web_domain, "data", path="/data/image", format="tiff")
    assert r.status_code == 200 and r.headers["content-type"] == "image/tiff"
    assert 'filename="data.tiff"' in r.headers["content-disposition"]
    got = tifffile.imread(io.BytesIO(r.content))
    assert got.dtype == np.float32 and got.tolist() == image.tolist()
    got = tifffile.imread(io.BytesIO(get(h5web_domain, "data", path="/data/cube", format="tiff", selection="2,:,:").content))
    assert got.dtype == np.int16 and got.tolist() == cube[2].tolist()
    got = tifffile.imread(io.BytesIO(get(h5web_domain, "data", path="/data/bools2d", format="tiff").content))
    assert got.tolist() == bools.astype("u1").tolist()
    whole = get(h5web_domain, "data", path="/data/cube", format="tiff")  # a page per 2-D slice
    with tifffile.TiffFile(io.BytesIO(whole.content)) as tiff:
        assert len(tiff.pages) == cube.shape[0] and tiff.asarray().tolist() == cube.tolist()
    line = get(h5web_domain, "data", path="/data/line", format="tiff")
    assert line.status_code == 422 and "2 or more dimensions" in line.json()["message"]
    strings = get(h5web_domain, "data", path="/data/strings", format="tiff")
    assert strings.status_code == 422 and "non-numeric" in strings.json()["message"]


@pytest.mark.parametrize("path", ["/data/complex", "/data/ldouble", "/data/half", "/data/bigendian"])
def test_npy_and_safe_of_h5pys_numbers(h5web_domain: ViewDomain, path: str) -> None:
    """Complex and long double are numbers to h5py: ``npy`` holds h5py's array, ``dtype=safe``
    its JavaScript-safe form (float16 widened, long double narrowed to float64, little-endian)."""
    with h5py.File(h5web_domain.file) as f:
        expected = f[path][()]
    r = get(h5web_domain, "data", path=path, format="npy")
    assert r.status_code == 200
    got = np.load(io.BytesIO(r.content))
    assert got.dtype == expected.dtype.newbyteorder("<") or got.dtype == expected.dtype
    assert got.tobytes() == expected.astype(got.dtype).tobytes()
    safe = {"c": expected.dtype.newbyteorder("<"), "f": np.dtype("<f8") if expected.dtype.itemsize > 8 else
            np.dtype("<f4") if expected.dtype.itemsize < 4 else expected.dtype.newbyteorder("<")}.get(
        expected.dtype.kind, expected.dtype.newbyteorder("<"))
    r = get(h5web_domain, "data", path=path, format="bin", dtype="safe")
    assert r.status_code == 200 and r.content == expected.astype(safe).tobytes()


def test_empty_dataset(h5web_domain: ViewDomain) -> None:
    """An empty (null) dataspace has no values: JSON null, no bytes, and no numbers to convert."""
    assert get(h5web_domain, "data", path="/data/empty").json() is None
    r = get(h5web_domain, "data", path="/data/empty", format="bin")
    assert r.status_code == 200 and r.content == b""
    for params in ({"format": "bin", "dtype": "safe"}, {"format": "npy"}, {"format": "tiff"}):
        r = get(h5web_domain, "data", path="/data/empty", **params)
        assert r.status_code == 422 and "non-numeric" in r.json()["message"], params


def test_search_paths(h5web_domain: ViewDomain) -> None:
    """H5Web's search box lists ``/paths`` from the root: every link, as h5py visits them."""
    r = get(h5web_domain, "paths", path="/")
    assert r.status_code == 200 and sorted(r.json()) == sorted(every_path(h5web_domain))
