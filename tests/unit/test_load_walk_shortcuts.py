"""The load walk's shortcuts give what its general path gives: attributes read through ctypes
(client/h5fast.py), creation properties remembered by property list (`h5fast.PlistMemo`), small
raw values read whole (`upload._whole_raw_value`) and ids made from a prefix (`IdsWith`). Each
test walks a file twice, with the shortcut and without it, and also checks that the shortcut was
taken."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import orjson
import pytest
from h5py import h5d, h5p, h5s, h5t

from h5lake.client import h5fast, upload
from h5lake.client.loadplan import Planner
from h5lake.client.upload import Uploader
from h5lake.model.ids import Collection, IdsWith, object_id_with

ROOT = "g-0123abcd-4567ef01-89ab-cdef01-234567"
COPIES = 3  # objects of each kind: the first of a type or property list takes the general path


def _plan(path: Path) -> tuple[list[Any], list[str]]:
    with h5py.File(path, "r") as f:
        planner = Planner(f)
        planner.root_id = ROOT
        out = []
        for n in planner.walk():
            out.append((n.id, n.path, n.props, [dataclasses.astuple(a) for a in n.attrs],
                        [(link.name, link.body, link.target) for link in n.links], n.type, n.space,
                        n.attrs_weight, n.inline_attrs))
            n.handle = None
        return out, planner.notes


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each shortcut answered (not None)."""
    taken = {"attribute": 0, "find": 0, "value": 0}
    attribute, find, value = h5fast.attribute, h5fast.PlistMemo.find, upload._whole_raw_value

    def count(name: str, fn: Any) -> Any:
        def call(*args: Any) -> Any:
            result = fn(*args)
            taken[name] += (result[1] if name == "find" else result) is not None
            return result
        return call

    monkeypatch.setattr(h5fast, "attribute", count("attribute", attribute))
    monkeypatch.setattr(h5fast.PlistMemo, "find", count("find", find))
    monkeypatch.setattr(upload, "_whole_raw_value", count("value", value))
    return taken


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call to turn every shortcut off."""

    def off() -> None:
        monkeypatch.setattr(h5fast, "attribute", lambda *args: None)
        monkeypatch.setattr(h5fast, "plist_key", lambda plist: None)
        monkeypatch.setattr(upload, "_whole_raw_value", lambda node: None)

    yield off


def _attribute_kinds(obj: Any, i: int) -> None:
    a = obj.attrs
    a["i64"] = np.int64(-(2**63) + i)
    a["f64"] = np.float64(0.1 * i)
    a["u16be"] = np.array([1, 65535, i], ">u2")
    a["grid"] = np.arange(6, dtype="<f4").reshape(2, 3) + i
    a["empty"] = np.zeros((0,), "<i4")
    a["text"] = "counts"
    a["utf8"] = "µm" * i
    a["blank"] = ""
    a["words"] = np.array(["ab", "", "c\u00e9"], dtype=h5py.string_dtype())
    a.create("ascii", "x" * i, dtype=h5py.string_dtype("ascii"))
    a["fixed"] = np.bytes_(b"abc\0\xff")
    a.create("padded", np.array([b"ab", b"c"], "S4"))
    a["flag"] = np.bool_(i % 2)
    a["enum"] = np.array(1, dtype=h5py.enum_dtype({"a": 0, "b": 1}, basetype="i1"))
    a["pair"] = np.array((i, 2.5), dtype=[("x", "<i2"), ("y", "<f8")])
    a["spaced"] = np.array((i, 2.5), dtype=np.dtype({"names": ["x", "y"], "formats": ["<i2", "<f8"], "offsets": [0, 8], "itemsize": 24}))
    seq = np.empty(2, dtype=object)
    seq[0], seq[1] = np.arange(i + 1, dtype="<i2"), np.arange(1, dtype="<i2")
    a.create("seq", seq, dtype=h5py.vlen_dtype("<i2"))
    a.create("none", h5py.Empty("<i4"))
    a.create("growable", np.arange(3, dtype="<i8"))
    simple = h5s.create_simple((2,), (h5s.UNLIMITED,))
    h5py.h5a.create(obj.id, b"maxdims", h5t.STD_U8LE, simple).write(np.array([7, 8], "u1"))


def test_attributes_read_through_ctypes_are_what_h5py_reads(tmp_path: Path, counted: dict[str, int], general: Any) -> None:
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        f["named"] = np.dtype("<i8")
        for i in range(COPIES):
            g = f.create_group(f"g{i}")
            _attribute_kinds(g, i + 1)
            _attribute_kinds(g.create_dataset("d", data=np.arange(4)), i + 2)
            g.attrs.create("committed", 5, dtype=f["named"])
            g.attrs["ref"] = f["named"].ref
            big = f.create_group(f"big{i}")  # past the weight sent with the POST: read later
            for k in range(4):
                big.attrs[f"a{k}"] = np.arange(3000, dtype="<f8")
    fast = _plan(path)
    assert counted["attribute"] > 40
    general()
    assert fast == _plan(path)


def _datasets(f: h5py.File, i: int) -> None:
    g = f.create_group(f"g{i}")
    g.create_dataset("plain", data=np.arange(5))
    h5py.h5o.set_comment(g.create_dataset("noted", data=np.arange(5)).id, f"comment {i}".encode())
    g.create_dataset("chunked", data=np.arange(100.0), chunks=(10,), compression="gzip", shuffle=True, fillvalue=-1.5)
    g.create_dataset("chunked2", data=np.arange(100.0), chunks=(20,), fillvalue=-1.5)
    g.create_dataset("text", shape=(3,), dtype="S6", fillvalue=b"a\xff\xfe")  # fill bytes kept beside the JSON
    g.create_dataset("empty", shape=(0,), dtype="<i4")
    g.create_dataset("later", shape=(4,), dtype="<u2")  # never written
    g.create_dataset("scalar", data=np.float32(i))
    g.create_dataset("strings", data=["a", "bc"], dtype=h5py.string_dtype())
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_layout(h5d.COMPACT)
    dcpl.set_fill_time(h5d.FILL_TIME_NEVER)
    dcpl.set_obj_track_times(False)
    dcpl.set_attr_creation_order(h5p.CRT_ORDER_TRACKED)
    dsid = h5d.create(g.id, b"compact", h5t.STD_I16BE, h5s.create_simple((3,)), dcpl=dcpl)
    dsid.write(h5s.ALL, h5s.ALL, np.array([1, 2, i], ">i2"))
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((4,))
    dcpl.set_filter(h5py.h5z.FILTER_DEFLATE, 0, (4,))  # mandatory: HDF5's usual flag is optional (a note)
    h5d.create(g.id, b"flagged", h5t.STD_I32LE, h5s.create_simple((8,)), dcpl=dcpl).write(
        h5s.ALL, h5s.ALL, np.arange(8, dtype="<i4"))
    gcpl = h5p.create(h5p.GROUP_CREATE)
    gcpl.set_link_creation_order(h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)
    tracked = h5py.Group(h5py.h5g.create(g.id, b"tracked", gcpl=gcpl))
    for name in ("z", "a", "m"):
        tracked.create_group(name)
    h5py.h5o.set_comment(tracked["m"].id, b"the m group")


def test_remembered_creation_properties_are_each_objects_own(tmp_path: Path, counted: dict[str, int], general: Any) -> None:
    path = tmp_path / "props.h5"
    with h5py.File(path, "w") as f:
        for i in range(COPIES):
            _datasets(f, i)
    fast = _plan(path)
    assert counted["find"] > 30
    assert any("flags" in note for note in fast[1])
    general()
    assert fast == _plan(path)


class _Requests:
    """A client that keeps every request (stamps left out) instead of sending it."""

    domain = "/x.h5"

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def _keep(self, method: str, path: str, body: Any) -> None:
        text = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS)
        self.sent.append((method, path, orjson.loads(text.replace(b'"created":', b'"_":'))))

    def put_json(self, path: str, body: Any, **params: Any) -> Any:
        self._keep("PUT", path, _unstamped(body))
        return {"root": ROOT}

    def post_json(self, path: str, body: Any, **params: Any) -> Any:
        self._keep("POST", path, _unstamped(body))

    def put_bytes(self, path: str, data: bytes, **params: Any) -> None:
        self.sent.append(("PUT", path, data.hex(), sorted(params.items())))


def _unstamped(body: Any) -> Any:
    if isinstance(body, dict):
        return {k: (0 if k == "created" else _unstamped(v)) for k, v in body.items()}
    if isinstance(body, list):
        return [_unstamped(v) for v in body]
    return body


def _requests(path: Path) -> list[Any]:
    client = _Requests()
    with h5py.File(path, "r") as f:
        Uploader(client, f, Planner(f), workers=1).run()  # type: ignore[arg-type]
    return sorted(client.sent, key=repr)


def test_small_values_read_whole_are_what_their_boxes_read(tmp_path: Path, counted: dict[str, int], general: Any) -> None:
    path = tmp_path / "values.h5"
    with h5py.File(path, "w") as f:
        for i in range(COPIES):
            _datasets(f, i)
            g = f[f"g{i}"]
            g["pairs"] = np.array([(1, 2.0), (i, 3.5)], dtype=[("x", "<i2"), ("y", ">f8")])
            g["big"] = np.arange(5000, dtype="<f8")  # above the value sent with the POST
    fast = _requests(path)
    assert counted["value"] > 10
    general()
    assert fast == _requests(path)


@pytest.mark.parametrize("number", [0, 1, 0x1234, 2**63 + 5, 2**64 - 1])
def test_ids_made_from_a_prefix_are_object_id_with(number: int) -> None:
    ids = IdsWith(ROOT)
    for kind in Collection:
        assert ids(kind, number) == object_id_with(kind, ROOT, number)


def test_datasets_alike_but_for_their_chunk_shape_keep_each_its_own(tmp_path: Path) -> None:
    # HDF5's H5Pequal finds these two creation property lists equal; PyTables writes such pairs
    # (an index's zbounds of 8,192 elements a chunk after others of 1,024)
    path = tmp_path / "chunks.h5"
    with h5py.File(path, "w") as f:
        for i, chunk in enumerate((1024, 8192, 1024, 16384)):
            f.create_dataset(f"d{i}", (20000,), chunks=(chunk,), dtype="f4", maxshape=(None,))
    sent = _requests(path)
    dims = {item["id"]: item["creationProperties"]["layout"]["dims"]
            for method, where, body in (r[:3] for r in sent) if (method, where) == ("POST", "/datasets") for item in body}
    links = {name: link["id"] for method, where, body in (r[:3] for r in sent) if where.endswith("/links")
             for group in body["grp_ids"].values() for name, link in group["links"].items()}
    layouts = {name: dims[i] for name, i in links.items()}
    assert layouts == {"d0": [1024], "d1": [8192], "d2": [1024], "d3": [16384]}
