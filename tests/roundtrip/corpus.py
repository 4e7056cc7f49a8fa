"""The round-trip corpus: one small HDF5 file per feature, made with h5py at test time.

Each builder writes one file and returns nothing; ``build(name, directory)`` makes one and
``build_all(directory)`` every one. The low-level h5py API is used wherever the high-level one
cannot say exactly what HDF5 can (string padding, bitfields, opaque tags, big-endian types,
region references, fill and allocation times, filters by id, link and attribute creation order).
``REFUSED`` builds files h5lake must refuse, each with the words its error must contain.

Run as a script to write the corpus into a directory: ``python -m tests.roundtrip.corpus DIR``.
"""

from __future__ import annotations

import pickle
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import lzokay
import numpy as np
from h5py import h5a, h5d, h5p, h5r, h5s, h5t

from h5lake.client import h5native

Builder = Callable[[Path], None]
CORPUS: dict[str, Builder] = {}
REFUSED: dict[str, tuple[Builder, tuple[str, ...]]] = {}


def feature(name: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        CORPUS[name] = fn
        return fn

    return register


def refused(name: str, *words: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        REFUSED[name] = (fn, words)
        return fn

    return register


# -- low-level helpers ---------------------------------------------------------------------------


def _space(shape: tuple[int, ...] | None, maxshape: tuple[int | None, ...] | None = None) -> Any:
    if shape is None:
        return h5s.create(h5s.NULL)
    if shape == ():
        return h5s.create(h5s.SCALAR)
    maxdims = None if maxshape is None else tuple(h5s.UNLIMITED if m is None else m for m in maxshape)
    return h5s.create_simple(shape, maxdims)


def raw_dataset(
    loc: Any,
    name: str,
    tid: Any,
    shape: tuple[int, ...] | None,
    raw: bytes | np.ndarray | None = None,
    dcpl: Any = None,
    maxshape: tuple[int | None, ...] | None = None,
) -> Any:
    """A dataset of exactly type ``tid``, written from raw bytes in that type's own layout."""
    dset = h5d.create(loc.id, name.encode(), tid, _space(shape, maxshape), dcpl=dcpl)
    if raw is not None:
        buf = np.frombuffer(bytes(raw), dtype=np.uint8).copy()
        dset.write(h5s.ALL, h5s.ALL, buf, mtype=tid)
    return dset


def raw_attr(obj: Any, name: str, tid: Any, shape: tuple[int, ...] | None, raw: bytes | None = None) -> None:
    attr = h5a.create(obj.id, name.encode(), tid, _space(shape))
    if raw is not None:
        attr.write(np.frombuffer(raw, dtype=np.uint8).copy(), mtype=tid)


def string_type(length: int | None, pad: int = h5t.STR_NULLPAD, cset: int = h5t.CSET_ASCII) -> Any:
    tid = h5t.C_S1.copy()
    tid.set_size(h5t.VARIABLE if length is None else length)
    tid.set_strpad(pad)
    tid.set_cset(cset)
    return tid


# -- the corpus ----------------------------------------------------------------------------------


@feature("empty")
def empty(path: Path) -> None:
    with h5py.File(path, "w"):
        pass


@feature("groups_links")
def groups_links(path: Path) -> None:
    with h5py.File(path, "w") as f:
        a = f.create_group("a")
        b = a.create_group("b")
        c = b.create_group("c")
        d = c.create_dataset("data", data=np.arange(6, dtype="i4").reshape(2, 3))
        f["hard_to_data"] = d  # a second hard link to one dataset
        a["hard_to_c"] = c  # and to one group
        b["loop"] = a  # a cycle
        f["soft"] = h5py.SoftLink("/a/b/c/data")
        f["soft_relative"] = h5py.SoftLink("b/c")
        a["dangling"] = h5py.SoftLink("/nowhere")
        f["external"] = h5py.ExternalLink("other.h5", "/some/path")
        a["external_root"] = h5py.ExternalLink("/abs/dir/file.h5", "/")
        f.create_group("empty_group")
        f.create_group("nameé ü")  # a UTF-8 link name


@feature("creation_order")
def creation_order(path: Path) -> None:
    with h5py.File(path, "w", track_order=True) as f:
        for name in ("zeta", "alpha", "mu", "beta"):
            f.create_group(name, track_order=True)
        f["zeta"].create_dataset("z2", data=[1])
        f["zeta"].create_dataset("a1", data=[2])
        f["zeta"]["s"] = h5py.SoftLink("/alpha")
        for name in ("z", "y", "b", "a"):
            f.attrs[name] = len(name)
        d = f.create_dataset("tracked", data=np.arange(3), track_order=True)
        for name in ("c", "b", "a"):
            d.attrs[name] = name
        untracked = f.create_group("untracked", track_order=False)
        for name in ("z", "a", "m"):
            untracked.create_group(name)
            untracked.attrs[name] = 1


@feature("attr_spaces")
def attr_spaces(path: Path) -> None:
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        d = f.create_dataset("d", data=[1.0, 2.0])
        f["committed"] = np.dtype("<i2")
        for obj in (f, g, d, f["committed"]):
            obj.attrs["scalar"] = np.int32(7)
            obj.attrs["simple"] = np.arange(6, dtype="f8").reshape(2, 3)
            obj.attrs["null"] = h5py.Empty("f4")
            obj.attrs["null_str"] = h5py.Empty(h5py.string_dtype())
            obj.attrs["one"] = np.array([5], dtype="u1")
            obj.attrs["zero_size"] = np.zeros((0,), dtype="i8")
            obj.attrs["scalar_str"] = "text"
        f.attrs["name with space"] = 1
        f.attrs["ünïcode"] = 2


@feature("integers_floats")
def integers_floats(path: Path) -> None:
    with h5py.File(path, "w") as f:
        for kind in "iu":
            for size in (1, 2, 4, 8):
                for order in "<>":
                    dt = np.dtype(f"{order}{kind}{size}")
                    info = np.iinfo(dt)
                    values = np.array([info.min, 0, 1, info.max], dtype=dt)
                    f.create_dataset(f"{kind}{size}{'le' if order == '<' else 'be'}", data=values)
                    f.attrs[f"{kind}{size}{order}"] = values
        for size in (2, 4, 8):
            for order in "<>":
                dt = np.dtype(f"{order}f{size}")
                values = np.array([np.finfo(dt).min, -0.0, 1.5, np.finfo(dt).max, np.finfo(dt).tiny], dtype=dt)
                f.create_dataset(f"f{size}{'le' if order == '<' else 'be'}", data=values)
                f.attrs[f"f{size}{order}"] = values
        f.create_dataset("scalar_int", data=np.int64(-5))


@feature("nan_values")
def nan_values(path: Path) -> None:
    with h5py.File(path, "w") as f:
        values = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-310], dtype="f8")
        f.create_dataset("f8", data=values)
        f.create_dataset("f4be", data=values.astype(">f4"))
        f.create_dataset("f2", data=values.astype("f2"))
        f.attrs["nan"] = np.nan
        f.attrs["list"] = values
        f.attrs["f4"] = values.astype("f4")
        f.create_dataset("fill_nan", shape=(4,), dtype="f8", fillvalue=np.nan, chunks=(2,))
        cplx = np.array([1 + 2j, np.nan + 1j], dtype="c16")
        f.create_dataset("complex", data=cplx)
        f.attrs["complex"] = cplx


@feature("bitfield")
def bitfield(path: Path) -> None:
    with h5py.File(path, "w") as f:
        for bits in (8, 16, 32, 64):
            for order in ("LE", "BE"):
                tid = getattr(h5t, f"STD_B{bits}{order}")
                dt = np.dtype(f"{'<' if order == 'LE' else '>'}u{bits // 8}")
                raw = np.array([0, 1, 2**bits - 1, 0xA5], dtype=dt).tobytes()
                raw_dataset(f, f"b{bits}{order.lower()}", tid, (4,), raw)
                raw_attr(f, f"b{bits}{order.lower()}", tid, (4,), raw)
        raw_attr(f, "scalar", h5t.STD_B8LE, (), b"\x81")


@feature("opaque")
def opaque(path: Path) -> None:
    with h5py.File(path, "w") as f:
        tagged = h5t.create(h5t.OPAQUE, 6)
        tagged.set_tag(b"vendor sample v1")
        raw = bytes(range(6)) + b"\xff" * 6 + b"\x00" * 6
        raw_dataset(f, "tagged", tagged, (3,), raw)
        raw_attr(f, "tagged", tagged, (3,), raw)
        untagged = h5t.create(h5t.OPAQUE, 3)
        untagged.set_tag(b"")
        raw_dataset(f, "untagged", untagged, (2,), b"abcdef")
        raw_attr(f, "scalar", tagged, (), b"\x01\x02\x03\x04\x05\x06")
        tagged.copy().commit(f.id, b"committed_opaque")


@feature("strings_fixed")
def strings_fixed(path: Path) -> None:
    pads = {"nullterm": h5t.STR_NULLTERM, "nullpad": h5t.STR_NULLPAD, "spacepad": h5t.STR_SPACEPAD}
    csets = {"ascii": h5t.CSET_ASCII, "utf8": h5t.CSET_UTF8}
    with h5py.File(path, "w") as f:
        for pname, pad in pads.items():
            for cname, cset in csets.items():
                tid = string_type(8, pad, cset)
                text = ["ab", "", "12345678", "x y"] if cname == "ascii" else ["ab", "", "héllo", "€12"]
                filler = b" " if pad == h5t.STR_SPACEPAD else b"\0"
                raw = b"".join(t.encode().ljust(8, filler)[:8] for t in text)
                raw_dataset(f, f"{pname}_{cname}", tid, (4,), raw)
                raw_attr(f, f"{pname}_{cname}", tid, (4,), raw)
                raw_attr(f, f"scalar_{pname}_{cname}", tid, (), raw[:8])
        f.attrs["numpy_bytes"] = np.bytes_(b"plain")
        f.create_dataset("one_char", data=np.array([b"a", b"b"], dtype="S1"))


@feature("strings_vlen")
def strings_vlen(path: Path) -> None:
    with h5py.File(path, "w") as f:
        utf8 = h5py.string_dtype("utf-8")
        ascii_ = h5py.string_dtype("ascii")
        f.create_dataset("utf8", data=np.array(["", "héllo", "ünï €", "a" * 300], dtype=object), dtype=utf8)
        f.create_dataset("ascii", data=np.array([b"abc", b"", b"z"], dtype=object), dtype=ascii_)
        f.create_dataset("scalar", data="just one", dtype=utf8)
        f.create_dataset("empty2d", shape=(2, 2), dtype=utf8)
        f.attrs["utf8"] = "ünïcode"
        f.attrs.create("ascii", b"bytes", dtype=ascii_)
        f.attrs.create("list", ["a", "bb", ""], dtype=utf8)
        raw_attr(f, "spacepad_vlen", string_type(None, h5t.STR_SPACEPAD, h5t.CSET_ASCII), None)


@feature("compound")
def compound(path: Path) -> None:
    with h5py.File(path, "w") as f:
        inner = np.dtype([("x", "<f4"), ("y", ">i2")])
        dt = np.dtype([("id", "<u8"), ("pos", inner), ("name", "S5"), ("arr", "<i4", (2,))])
        data = np.zeros(3, dtype=dt)
        data["id"] = [1, 2, 2**64 - 1]
        data["pos"]["x"] = [0.5, np.nan, -1]
        data["pos"]["y"] = [-3, 4, 5]
        data["name"] = [b"a", b"bcdef", b""]
        data["arr"] = [[1, 2], [3, 4], [5, 6]]
        f.create_dataset("nested", data=data)
        f.attrs["nested"] = data
        padded = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"], "offsets": [0, 8], "itemsize": 24})
        pdata = np.zeros(2, dtype=padded)
        pdata["a"], pdata["b"] = [1, 2], [1.5, 2.5]
        f.create_dataset("padded", data=pdata)
        f.attrs["padded"] = pdata[0]
        # a field order that differs from the offset order
        tid = h5t.create(h5t.COMPOUND, 12)
        tid.insert(b"late", 8, h5t.STD_I32BE)
        tid.insert(b"early", 0, h5t.IEEE_F64LE)
        raw_dataset(f, "reordered", tid, (1,), np.array([2.5], "<f8").tobytes() + np.array([7], ">i4").tobytes())


@feature("array_types")
def array_types(path: Path) -> None:
    with h5py.File(path, "w") as f:
        raw_dataset(f, "int_3", h5t.array_create(h5t.STD_I32LE, (3,)), (4,), np.arange(12, dtype="<i4").tobytes())
        arr2d = np.arange(2 * 2 * 3, dtype=">f8")
        raw_dataset(f, "f8be_2x3", h5t.array_create(h5t.IEEE_F64BE, (2, 3)), (2,), arr2d.tobytes())
        comp = h5t.create(h5t.COMPOUND, 4)
        comp.insert(b"a", 0, h5t.STD_I16LE)
        comp.insert(b"b", 2, string_type(2))
        raw_dataset(f, "of_compound", h5t.array_create(comp, (2,)), (2,), b"\x01\x00ab\x02\x00cd" * 2)
        raw_attr(f, "array_attr", h5t.array_create(h5t.STD_U16LE, (3,)), (2,), np.arange(6, dtype="<u2").tobytes())
        raw_dataset(f, "scalar_array", h5t.array_create(h5t.STD_I64LE, (4,)), (), np.arange(4, dtype="<i8").tobytes())


@feature("enums")
def enums(path: Path) -> None:
    with h5py.File(path, "w") as f:
        colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1")
        f.create_dataset("colors", data=np.array([0, 42, 1], dtype="i1"), dtype=colors)
        f.attrs.create("color", 42, dtype=colors)
        big = h5py.enum_dtype({"LOW": -(2**40), "HIGH": 2**40}, basetype=">i8")
        f.create_dataset("big", data=np.array([2**40], dtype=">i8"), dtype=big)
        unsigned = h5py.enum_dtype({"A": 0, "B": 65535}, basetype="<u2")
        f.create_dataset("unsigned", data=np.array([65535, 0], dtype="<u2"), dtype=unsigned)
        f.create_dataset("bools", data=np.array([True, False, True]))
        f.attrs["bool"] = np.bool_(True)


@feature("vlen_sequences")
def vlen_sequences(path: Path) -> None:
    with h5py.File(path, "w") as f:
        vi = h5py.vlen_dtype(np.dtype("i4"))
        d = f.create_dataset("vlen_int", shape=(3,), dtype=vi)
        d[0], d[1], d[2] = np.arange(3, dtype="i4"), np.array([], dtype="i4"), np.arange(10, dtype="i4")
        vf = h5py.vlen_dtype(np.dtype(">f8"))
        d = f.create_dataset("vlen_f8be", shape=(2,), dtype=vf)
        d[0], d[1] = np.array([1.5, np.nan]), np.array([-1.0])
        comp = np.dtype([("n", "i2"), ("seq", vi), ("s", h5py.string_dtype())])
        d = f.create_dataset("in_compound", shape=(2,), dtype=comp)
        d[0] = (1, np.array([1, 2], dtype="i4"), "one")
        d[1] = (2, np.array([], dtype="i4"), "")
        arr = np.dtype((vi, (2,)))
        d = f.create_dataset("in_array", shape=(2,), dtype=arr)
        d[0] = np.array([np.array([1], "i4"), np.array([2, 3], "i4")], dtype=object)
        strarr = np.dtype((h5py.string_dtype(), (2,)))
        d = f.create_dataset("strings_in_array", shape=(2,), dtype=strarr)
        d[0] = np.array(["a", "bb"], dtype=object)
        f.attrs.create("vlen_attr", np.array([np.arange(2, dtype="i4"), np.arange(3, dtype="i4")], dtype=object), dtype=vi)
        vv = h5py.vlen_dtype(vi)
        d = f.create_dataset("vlen_of_vlen", shape=(1,), dtype=vv)
        d[0] = np.array([np.array([1, 2], "i4"), np.array([3], "i4")], dtype=object)
        vc = h5py.vlen_dtype(np.dtype([("a", "u1"), ("b", "<f4")]))
        d = f.create_dataset("vlen_of_compound", shape=(1,), dtype=vc)
        d[0] = np.array([(1, 0.5), (2, 1.5)], dtype=[("a", "u1"), ("b", "<f4")])


@feature("object_refs")
def object_refs(path: Path) -> None:
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        d = g.create_dataset("d", data=[1, 2, 3])
        f["t"] = np.dtype("<i8")
        refs = np.array([f.ref, g.ref, d.ref, f["t"].ref, h5r.Reference()], dtype=h5py.ref_dtype)
        f.create_dataset("refs", data=refs)
        f.attrs["to_group"] = g.ref
        f.attrs["refs"] = refs
        d.attrs["self"] = d.ref
        f.create_dataset("refs2d", data=refs[:4].reshape(2, 2))
        comp = np.dtype([("target", h5py.ref_dtype), ("n", "i4")])
        f.create_dataset("in_compound", data=np.array([(g.ref, 1), (d.ref, 2)], dtype=comp))
        f.create_dataset("scalar_ref", data=d.ref, dtype=h5py.ref_dtype)


@feature("region_refs")
def region_refs(path: Path) -> None:
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(100).reshape(10, 10))
        box = d.regionref[1:3, 2:5]
        points = d.id.get_space()
        points.select_elements(np.array([[0, 0], [9, 9], [3, 4]]))
        pref = h5r.create(d.id, b".", h5r.DATASET_REGION, points)
        strided = d.id.get_space()
        strided.select_hyperslab((0, 0), (2, 2), (2, 3), (1, 2))
        sref = h5r.create(d.id, b".", h5r.DATASET_REGION, strided)
        union = d.id.get_space()
        union.select_hyperslab((0, 0), (1, 1), None, (2, 2))
        union.select_hyperslab((5, 5), (1, 1), None, (3, 3), op=h5s.SELECT_OR)
        uref = h5r.create(d.id, b".", h5r.DATASET_REGION, union)
        whole = d.regionref[...]
        refs = np.array([box, pref, sref, uref, whole, h5r.RegionReference()], dtype=h5py.regionref_dtype)
        f.create_dataset("regions", data=refs)
        f.attrs["region"] = box
        f.attrs["regions"] = refs[:3]


@feature("committed_types")
def committed_types(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f["types/point"] = np.dtype([("x", "<f8"), ("y", "<f8")])
        f["types/label"] = h5py.string_dtype("utf-8", 12)
        point, label = f["types/point"], f["types/label"]
        point.attrs["units"] = "m"
        f.create_dataset("a", data=np.zeros(2, dtype=point.dtype), dtype=point)
        f.create_dataset("b", shape=(3,), dtype=point)
        f.create_dataset("labels", data=np.array([b"x", b"y"], dtype=label.dtype), dtype=label)
        f.attrs.create("origin", np.zeros((), dtype=point.dtype), dtype=point)
        f["a"].attrs.create("label", np.array(b"abc", dtype=label.dtype), dtype=label)
        f["alias_of_point"] = point  # a second hard link to the committed type
        f["types/unused"] = np.dtype(">u4")


@feature("dataspaces")
def dataspaces(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("null", data=h5py.Empty("i4"))
        f.create_dataset("null_str", data=h5py.Empty(h5py.string_dtype()))
        f.create_dataset("scalar", data=np.float32(2.5))
        f.create_dataset("empty_1d", shape=(0,), dtype="i4")
        f.create_dataset("empty_2d", shape=(3, 0), dtype="f8")
        f.create_dataset("empty_growable", shape=(0, 4), maxshape=(None, 4), dtype="i2", chunks=(8, 4))
        d = f.create_dataset("growable", shape=(5, 3), maxshape=(None, 10), dtype="i4", chunks=(2, 2))
        d[...] = np.arange(15).reshape(5, 3)
        f.create_dataset("rank3", data=np.arange(24, dtype="u1").reshape(2, 3, 4))
        f.create_dataset("bounded", shape=(4,), maxshape=(8,), dtype="i4", chunks=(3,), data=[1, 2, 3, 4])


@feature("fill_alloc")
def fill_alloc(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("int_fill", shape=(10,), dtype="i4", fillvalue=-1, chunks=(4,))[2:3] = 5
        f.create_dataset("float_fill_contig", shape=(4,), dtype="f8", fillvalue=2.5)
        comp = np.dtype([("a", "i2"), ("b", "S3")])
        fv = np.array((7, b"abc"), dtype=comp)
        f.create_dataset("compound_fill", shape=(3,), dtype=comp, fillvalue=fv, chunks=(2,))
        f.create_dataset("string_fill", shape=(2,), dtype="S4", fillvalue=b"none")
        f.create_dataset("zero_user_fill", shape=(2,), dtype="i2", fillvalue=0)
        for time_name, fill_time in (("never", h5d.FILL_TIME_NEVER), ("alloc", h5d.FILL_TIME_ALLOC), ("ifset", h5d.FILL_TIME_IFSET)):
            for alloc_name, alloc in (("early", h5d.ALLOC_TIME_EARLY), ("late", h5d.ALLOC_TIME_LATE), ("incr", h5d.ALLOC_TIME_INCR)):
                dcpl = h5p.create(h5p.DATASET_CREATE)
                dcpl.set_chunk((4,))
                dcpl.set_fill_time(fill_time)
                dcpl.set_alloc_time(alloc)
                dcpl.set_fill_value(np.array(9, dtype="<i4"))
                d = raw_dataset(f, f"fill_{time_name}_{alloc_name}", h5t.STD_I32LE, (6,), None, dcpl)
                if time_name == "never":  # unwritten elements would be undefined: write them all
                    d.write(h5s.ALL, h5s.ALL, np.arange(6, dtype="<i4"))
                else:  # the second chunk stays unwritten and reads as the fill value
                    space = d.get_space()
                    space.select_hyperslab((0,), (3,))
                    d.write(h5s.create_simple((3,)), space, np.arange(3, dtype="<i4"))
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(b"\x01\x02", dtype="V2"))
        raw_dataset(f, "opaque_fill", h5t.create(h5t.OPAQUE, 2), (3,), None, dcpl)
        vstr = f.create_dataset("vlen_string_fill", shape=(4,), dtype=h5py.string_dtype(), fillvalue="n/a", chunks=(2,))
        vstr[0], vstr[3] = "set", "end"  # HDF5 cannot read an unallocated chunk of this read-only


@feature("layouts")
def layouts(path: Path) -> None:
    with h5py.File(path, "w") as f:
        data = np.arange(60, dtype="<i8").reshape(6, 10)
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_layout(h5d.COMPACT)
        raw_dataset(f, "compact", h5t.STD_I64LE, (6, 10), data.tobytes(), dcpl)
        f.create_dataset("contiguous", data=data)
        f.create_dataset("chunked_edges", data=data, chunks=(4, 3))
        f.create_dataset("chunked_one", data=data, chunks=(6, 10))
        f.create_dataset("chunked_tiny", data=data, chunks=(1, 1))
        sparse = f.create_dataset("sparse", shape=(100, 100), dtype="f4", chunks=(10, 10), fillvalue=-1)
        sparse[0:10, 0:10] = 1
        sparse[55, 55] = 2
        f.create_dataset("compact_scalar", data=np.int16(3))


@feature("filters")
def filters(path: Path) -> None:
    with h5py.File(path, "w") as f:
        data = np.arange(2000, dtype="<i4").reshape(40, 50) % 97
        floats = np.linspace(0, 1, 2000).reshape(40, 50)
        f.create_dataset("gzip", data=data, chunks=(10, 25), compression="gzip", compression_opts=7)
        f.create_dataset("shuffle_gzip", data=data, chunks=(10, 25), shuffle=True, compression="gzip")
        f.create_dataset("fletcher32", data=data, chunks=(10, 25), fletcher32=True)
        f.create_dataset("all_three", data=data, chunks=(10, 25), shuffle=True, compression="gzip", fletcher32=True)
        f.create_dataset("scaleoffset_int", data=data, chunks=(10, 25), scaleoffset=0)
        f.create_dataset("scaleoffset_float", data=floats, chunks=(10, 25), scaleoffset=3)
        f.create_dataset("lzf", data=data, chunks=(10, 25), compression="lzf")
        if h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
            f.create_dataset("szip", data=data, chunks=(10, 25), compression="szip", compression_opts=("nn", 8))
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((10, 25))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, 0, ())
        raw_dataset(f, "nbit", h5t.STD_I32LE, (40, 50), data.tobytes(), dcpl)
        f.create_dataset("gzip_edge", data=np.arange(1001, dtype="f8"), chunks=(100,), compression="gzip")


@feature("plugin_filters")
def plugin_filters(path: Path) -> None:
    with h5py.File(path, "w") as f:
        data = (np.arange(4000, dtype="<u2") % 251).reshape(40, 100)
        f.create_dataset("blosc_lz4", data=data, chunks=(20, 50), **hdf5plugin.Blosc(cname="lz4", clevel=5))
        f.create_dataset("blosc_zstd_bitshuffle", data=data, chunks=(20, 50),
                         **hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
        f.create_dataset("lz4", data=data, chunks=(20, 50), **hdf5plugin.LZ4())
        f.create_dataset("zstd", data=data, chunks=(20, 50), **hdf5plugin.Zstd(clevel=9))
        f.create_dataset("bitshuffle_lz4", data=data, chunks=(20, 50), **hdf5plugin.Bitshuffle(cname="lz4"))
        f.create_dataset("bzip2", data=data, chunks=(20, 50), **hdf5plugin.BZip2(blocksize=5))


@feature("plugin_filters_not_rerun")
def plugin_filters_not_rerun(path: Path) -> None:
    """Plugin filters h5lake has no codec for that export must not run again: SZ and SZ3, whose
    set_local refuses the cd_values it recorded (export failed), FCIDECOMP, whose set_local
    prepends the chunk shape again (the parameters grew), and ZFP at a fixed rate, which is lossy
    (export compressed the values a second time: they changed). Kept with their parameters;
    export writes their chunks with the filter skipped."""
    values = np.linspace(-1, 1, 400, dtype="<f4").reshape(20, 20)
    with h5py.File(path, "w") as f:
        f.create_dataset("sz", data=values, chunks=(10, 10), **hdf5plugin.SZ(absolute=1e-3))
        f.create_dataset("sz3", data=values, chunks=(10, 10), **hdf5plugin.SZ3(absolute=1e-3))
        f.create_dataset("zfp_rate", data=values, chunks=(10, 10), **hdf5plugin.Zfp(rate=8))
        f.create_dataset("fcidecomp", data=(values * 1000 + 1000).astype("<u2"), chunks=(10, 10), **hdf5plugin.FciDecomp())


@feature("external_storage")
def external_storage(path: Path) -> None:
    folder = path.parent
    with h5py.File(path, "w") as f:
        ext = [(f"{path.stem}_a.raw", 0, 24), (f"{path.stem}_b.raw", 8, 16)]
        d = f.create_dataset("external", shape=(5,), dtype="<i8", external=ext, efile_prefix=str(folder))
        d[...] = np.arange(5) * 11


@feature("dimension_scales")
def dimension_scales(path: Path) -> None:
    with h5py.File(path, "w") as f:
        data = f.create_dataset("data", data=np.zeros((3, 4)))
        x = f.create_dataset("x", data=np.arange(4.0))
        y = f.create_dataset("y", data=np.arange(3.0))
        y2 = f.create_dataset("y2", data=np.arange(3) * 2)
        x.make_scale("the x")
        y.make_scale()
        y2.make_scale("alternate y")
        data.dims[0].attach_scale(y)
        data.dims[0].attach_scale(y2)
        data.dims[1].attach_scale(x)
        data.dims[0].label = "rows"
        other = f.create_dataset("other", data=np.ones(4))
        other.dims[0].attach_scale(x)


@feature("comments")
def comments(path: Path) -> None:
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        d = g.create_dataset("d", data=[1, 2])
        f["t"] = np.dtype("<u2")
        for obj, text in ((f, "the root"), (g, "a group"), (d, "a dataset, with ünïcode"), (f["t"], "a type")):
            h5py.h5o.set_comment(obj.id, text.encode())


@feature("anonymous_datatype")
def anonymous_datatype(path: Path) -> None:
    """A committed datatype with no name, kept alive by the datasets that share it."""
    with h5py.File(path, "w") as f:
        tid = h5t.STD_I16BE.copy()
        h5native.commit_anonymous(f.id, tid)
        raw_dataset(f, "first", tid, (2,), np.array([1, 2], ">i2").tobytes())
        raw_dataset(f, "second", tid, (), np.array([3], ">i2").tobytes())


@feature("user_defined_links")
def user_defined_links(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_group("g")
        h5native.create_ud_link(f.id, b"ud_link", 187, b"opaque user data \x00\x01")
        h5native.create_ud_link(f["g"].id, b"empty_ud", 200, b"")


@feature("unicode_names")
def unicode_names(path: Path) -> None:
    with h5py.File(path, "w") as f:
        g = f.create_group("grüße")
        g.create_dataset("данные", data=[1, 2])
        g.attrs["ключ"] = "значение"
        f["ссылка"] = h5py.SoftLink("/grüße/данные")
        f.create_group("with.dots and spaces")
        f.create_group("pipe|and%percent")


@feature("many_chunks")
def many_chunks(path: Path) -> None:
    with h5py.File(path, "w") as f:
        rng = np.random.default_rng(7)
        data = rng.integers(0, 1000, size=(300, 200)).astype("<i4")
        f.create_dataset("gzip_chunks", data=data, chunks=(16, 16), compression="gzip", shuffle=True)
        f.create_dataset("big_contig", data=rng.random((1100, 1000)))


@refused("not_hdf5", "not an HDF5 file")
def not_hdf5(path: Path) -> None:
    path.write_bytes(b"this is plain text, not HDF5\n" * 10)


@refused("virtual_dataset_missing_source", "/vds", "virtual dataset", "source files are missing", "gone_source.h5")
def virtual_dataset_missing_source(path: Path) -> None:
    """A virtual dataset whose source file is gone: HDF5 would read fill values, so the load
    refuses it (one whose sources are there is loaded: tests/support/corpus_extra.py)."""
    layout = h5py.VirtualLayout(shape=(4,), dtype="i8")
    layout[:] = h5py.VirtualSource("gone_source.h5", "data", shape=(4,))
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("vds", layout)


# -- storage kinds and types (issue 17 items 5-6) -------------------------------------------------

MATLAB_HEADER = (
    b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  6 10:00:00 2025 HDF5 schema 1.00 ."
).ljust(116, b" ") + b"\0" * 8 + b"\x00\x02" + b"IM"  # text, subsystem offset, version, endian


def _write_user_block(path: Path, content: bytes) -> None:
    with open(path, "r+b") as raw:
        raw.write(content)


@feature("user_block")
def user_block(path: Path) -> None:
    """A MATLAB v7.3 .mat file: a 512-byte user block holding MATLAB's header, then HDF5."""
    with h5py.File(path, "w", userblock_size=512) as f:
        x = f.create_dataset("x", data=np.arange(12, dtype="<f8").reshape(3, 4).T)
        x.attrs.create("MATLAB_class", np.bytes_(b"double"))
        f.create_dataset("chunked", data=np.arange(1000, dtype="<i4"), chunks=(64,), compression="gzip")
        f.create_group("#refs#")
    _write_user_block(path, MATLAB_HEADER)


@feature("user_block_large")
def user_block_large(path: Path) -> None:
    """A 4 KiB user block filled to its last byte (nothing to trim), over contiguous data."""
    with h5py.File(path, "w", userblock_size=4096) as f:
        f.create_dataset("data", data=np.arange(100, dtype=">i8"))
    _write_user_block(path, bytes((i * 7 + 1) % 256 or 1 for i in range(4096)))


LZO_ID = 305


def pytables_lzo_chunk(raw: bytes, framed: bool) -> bytes:
    """One chunk as PyTables' LZO filter stores it (src/H5Zlzo.c): a bare LZO1X stream, as every
    PyTables since 0.8 writes it (its checksum code is compiled out); ``framed``: as PyTables 0.5
    to 0.7 wrote it, followed by the adler32 of the raw bytes and their count."""
    packed = lzokay.compress(raw)
    return packed + struct.pack("<II", zlib.adler32(raw), len(raw)) if framed else packed


def _lzo_dataset(
    f: h5py.File, name: str, data: np.ndarray, chunk: int, cd: tuple[int, ...], shuffle: bool = False, framed: bool = False
) -> None:
    """A PyTables-style LZO dataset written chunk by chunk with ``write_direct_chunk``, so no
    LZO filter is needed in HDF5 (PyTables from PyPI has none)."""
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((chunk,))
    if shuffle:
        dcpl.set_shuffle()
    dcpl.set_filter(LZO_ID, h5py.h5z.FLAG_OPTIONAL, cd)
    tid = h5t.py_create(data.dtype, logical=True)
    dset = h5d.create(f.id, name.encode(), tid, _space(data.shape), dcpl=dcpl)
    for start in range(0, len(data), chunk):
        piece = np.zeros(chunk, dtype=data.dtype)  # an edge chunk is stored whole
        piece[: len(data) - start] = data[start : start + chunk]
        raw = piece.tobytes()
        if shuffle:
            raw = np.frombuffer(raw, dtype="u1").reshape(-1, data.dtype.itemsize).T.tobytes()
        dset.write_direct_chunk((start,), pytables_lzo_chunk(raw, framed))


@feature("lzo_pytables")
def lzo_pytables(path: Path) -> None:
    """PyTables' LZO filter (305) with its cd_values ``(complevel, version * 10, object type)``:
    a Table of version 2.7, a CArray with shuffle, a Table of 1.0, all bare LZO1X streams as
    PyTables writes them, and an Array with the adler32-and-size trailer of PyTables 0.5 to 0.7."""
    rows = np.zeros(300, dtype=[("id", "<i8"), ("x", "<f4"), ("flag", "?"), ("name", "S6")])
    rows["id"] = np.arange(300)
    rows["x"] = np.linspace(-1, 1, 300)
    rows["flag"] = rows["id"] % 3 == 0
    rows["name"] = [b"row%d" % (i % 50) for i in range(300)]
    with h5py.File(path, "w") as f:
        _lzo_dataset(f, "table", rows, 64, (1, 27, 0))
        _lzo_dataset(f, "carray", (np.arange(1000) % 13).astype("<i4"), 256, (5, 10, 4), shuffle=True)
        _lzo_dataset(f, "old_table", rows[:100], 32, (1, 10, 0))
        _lzo_dataset(f, "legacy_array", np.arange(500, dtype="<f8"), 128, (1, 10, 1), framed=True)


@feature("matlab_cells")
def matlab_cells(path: Path) -> None:
    """A MATLAB v7.3 cell array: object references whose fill value is itself a reference, to
    the empty placeholder ``/#refs#/a``; the root tracks link order and the cell's link comes
    before ``#refs#``, so export writes the cell after the object its fill names."""
    with h5py.File(path, "w", userblock_size=512, track_order=True) as f:
        placeholder = f.create_dataset(None, data=np.zeros(2, dtype="<u8"))  # MATLAB's empty [] is a (2,) zero array
        placeholder.attrs["MATLAB_class"] = np.bytes_("double")
        placeholder.attrs["MATLAB_empty"] = np.uint8(1)
        values = [f.create_dataset(None, data=np.arange(i + 1, dtype="<f8").reshape(-1, 1)) for i in range(3)]
        dcpl = h5p.create(h5p.DATASET_CREATE)
        h5native.set_fill_value(dcpl, h5t.STD_REF_OBJ, struct.pack("=Q", h5py.h5o.get_info(placeholder.id).addr))
        dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
        cell = h5d.create(f.id, b"cell", h5t.STD_REF_OBJ, _space((3, 1)), dcpl=dcpl)
        refs = np.array([[v.ref] for v in values], dtype=h5py.ref_dtype)
        cell.write(h5s.ALL, h5s.ALL, refs)
        f["cell"].attrs["MATLAB_class"] = np.bytes_("cell")
        unwritten = h5d.create(f.id, b"unwritten_cell", h5t.STD_REF_OBJ, _space((2,)), dcpl=dcpl)  # reads as the fill
        del unwritten
        refs_group = f.create_group("#refs#")
        refs_group["a"] = placeholder
        for i, v in enumerate(values):
            refs_group[f"b{i}"] = v
    _write_user_block(path, MATLAB_HEADER)


@feature("long_double")
def long_double(path: Path) -> None:
    """x86-64 long double: 80-bit extended precision in 16 bytes, in datasets and attributes."""
    values = np.array([1.5, -0.0, np.inf, np.nan, 1 / 3], dtype=np.longdouble)
    values[4] = np.longdouble(1) / 3  # uses all 64 mantissa bits
    with h5py.File(path, "w") as f:
        f.create_dataset("ld", data=values)
        f.create_dataset("ld_chunked", data=np.tile(values, 40), chunks=(16,), compression="gzip", fillvalue=np.longdouble(-2))
        f.attrs["ld"] = values[:2]
        comp = np.dtype([("t", "<f8"), ("ld", np.longdouble)])
        f.create_dataset("in_compound", data=np.array([(1.0, values[4]), (2.0, values[0])], dtype=comp))
        quad = h5t.IEEE_F64LE.copy()  # IEEE binary128 (no numpy type on x86-64: written as bytes)
        quad.set_size(16)
        quad.set_precision(128)
        quad.set_fields(127, 112, 15, 0, 112)
        quad.set_ebias(16383)
        raw_dataset(f, "binary128", quad, (2,), bytes(range(32)))


@feature("int128_time")
def int128_time(path: Path) -> None:
    """16-byte integers (signed LE, unsigned BE) and the old H5T_TIME class."""
    with h5py.File(path, "w") as f:
        i128 = h5t.STD_I64LE.copy()
        i128.set_size(16)
        i128.set_precision(128)
        raw_dataset(f, "i128", i128, (3,), (2**127 - 1).to_bytes(16, "little") + (-5).to_bytes(16, "little", signed=True) + bytes(16))
        u128 = h5t.STD_U64BE.copy()
        u128.set_size(16)
        u128.set_precision(128)
        raw_dataset(f, "u128be", u128, (2,), (2**128 - 1).to_bytes(16, "big") + (12345).to_bytes(16, "big"))
        raw_attr(f, "i128", i128, (), (-(2**100)).to_bytes(16, "little", signed=True))
        raw_dataset(f, "time32", h5t.UNIX_D32LE, (2,), np.array([0, 1700000000], "<i4").tobytes())
        raw_dataset(f, "time64be", h5t.UNIX_D64BE, (2,), np.array([-1, 1700000000123], ">i8").tobytes())


@feature("bitfield_pytables")
def bitfield_pytables(path: Path) -> None:
    """PyTables' bool columns are 8-bit bitfields, also inside a Table's compound rows."""
    with h5py.File(path, "w") as f:
        raw_dataset(f, "bools", h5t.STD_B8LE, (4,), b"\x00\x01\x01\x00")
        row = h5t.create(h5t.COMPOUND, 9)
        row.insert(b"id", 0, h5t.STD_I64LE)
        row.insert(b"ok", 8, h5t.STD_B8LE)
        raw_dataset(f, "table", row, (2,), np.array([7], "<i8").tobytes() + b"\x01" + np.array([8], "<i8").tobytes() + b"\x00")


@refused("unknown_filter", "/data", "filter 40000 (unnamed)")
def unknown_filter(path: Path) -> None:
    """An optional filter no HDF5 plugin and no h5lake codec knows: named in the refusal."""
    with h5py.File(path, "w") as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_filter(40000, h5py.h5z.FLAG_OPTIONAL, (1, 2))
        dset = h5d.create(f.id, b"data", h5t.STD_I32LE, _space((8,)), dcpl=dcpl)
        dset.write_direct_chunk((0,), b"opaque bytes of filter 40000")

@refused("mandatory_plugin_filter", "dataset /sperr", "filter 32028", "not optional")
def mandatory_plugin_filter(path: Path) -> None:
    """hdf5plugin's SPERR filter, which makes itself mandatory (flags 0): h5lake has no codec for
    it and keeps a filter it cannot apply only when HDF5 may skip it. Was refused by the server
    halfway through the upload, naming a batch of datasets rather than this one."""
    with h5py.File(path, "w") as f:
        f.create_dataset("before", data=np.arange(4))
        f.create_dataset("sperr", data=np.linspace(0, 1, 64, dtype="<f4").reshape(8, 8), chunks=(8, 8), **hdf5plugin.Sperr())

# -- files as other projects write them (issue 17) ------------------------------------------------
# Made with the libraries that write such files in the wild (PyTables, netCDF4, h5netcdf) or, for
# what those write through HDF5's C API, with h5py's low-level API byte for byte.


@feature("pytables")
def pytables_file(path: Path) -> None:
    """A PyTables file: a Table of string/bool/int/float columns, a VLArray of 2-byte strings
    holding "66" (exported as "6" once: a null-terminated string filled to its last byte), an
    EArray, and attributes as PyTables sets them (CLASS/VERSION/TITLE, a pickled dict)."""
    import tables  # only this builder needs PyTables

    class Row(tables.IsDescription):
        name = tables.StringCol(8)
        flag = tables.BoolCol()
        count = tables.Int32Col()
        value = tables.Float64Col()

    with tables.open_file(str(path), "w", title="issue 17") as f:
        group = f.create_group("/", "run", "a run")
        table = f.create_table(group, "readings", Row, "readings")
        row = table.row
        for i, name in enumerate([b"alpha", b"b", b"", b"12345678"]):
            row["name"], row["flag"], row["count"], row["value"] = name, i % 2 == 0, i - 2, i / 3
            row.append()
        table.flush()
        table.attrs.units = "volts"
        table.attrs.meta = {"a": [1, 2], "b": None}  # PyTables pickles what is not a plain value
        strings = f.create_vlarray("/", "strings", tables.StringAtom(itemsize=2), "2-byte strings")
        strings.append(np.array([b"66", b"7", b"ab"], dtype="S2"))
        strings.append(np.array([], dtype="S2"))
        strings.append(np.array([b"xy"], dtype="S2"))
        ints = f.create_vlarray("/", "ints", tables.Int16Atom())
        ints.append(np.array([1, -2, 3], dtype="<i2"))
        ints.append(np.array([], dtype="<i2"))
        growing = f.create_earray("/", "growing", tables.Float32Atom(), (0, 3))
        growing.append(np.arange(12, dtype="f4").reshape(4, 3))
        f.root._v_attrs.creator = "pytables"


@feature("netcdf4")
def netcdf4_file(path: Path) -> None:
    """A netCDF-4 file by the netCDF4 library: dimensions (one unlimited), coordinate variables,
    a string variable, a compressed variable with a fill value, attributes, a subgroup."""
    import netCDF4  # only this builder needs netCDF4

    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as nc:
        nc.title = "issue 17"
        nc.history = "made by netCDF4"
        nc.createDimension("time", None)
        nc.createDimension("lat", 3)
        nc.createDimension("lon", 4)
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = [0.0, 1.0]
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat[:] = [-10.0, 0.0, 10.0]
        lat.units = "degrees_north"
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon[:] = [0.0, 90.0, 180.0, 270.0]
        temp = nc.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, fill_value=-999.0)
        temp.long_name = "temperature"
        temp[:] = np.arange(24, dtype="f4").reshape(2, 3, 4)
        names = nc.createVariable("station", str, ("lat",))
        names[:] = np.array(["north", "équateur", ""], dtype=object)
        sub = nc.createGroup("forecast")
        sub.createDimension("step", 2)
        step = sub.createVariable("step", "i4", ("step",))
        step[:] = [6, 12]
        sub.model = "toy"


@feature("h5netcdf")
def h5netcdf_file(path: Path) -> None:
    """A netCDF-4 file by h5netcdf (h5py underneath): dimensions, coordinates, attributes, groups."""
    import h5netcdf  # only this builder needs h5netcdf

    with h5netcdf.File(str(path), "w") as nc:
        nc.dimensions = {"x": 3, "t": None}
        x = nc.create_variable("x", ("x",), data=np.array([1.0, 2.0, 3.0]))
        x.attrs["units"] = "m"
        v = nc.create_variable("v", ("t", "x"), dtype="i4", chunks=(1, 3))
        nc.resize_dimension("t", 2)
        v[...] = np.arange(6, dtype="i4").reshape(2, 3)
        label = nc.create_variable("label", ("x",), dtype=h5py.string_dtype())
        label[...] = np.array(["a", "bb", "ccc"], dtype=object)
        nc.attrs["conventions"] = "CF-1.8"
        g = nc.create_group("extra")
        g.dimensions = {"y": 2}
        g.create_variable("y", ("y",), data=np.array([5, 6], dtype="i2"))


def _pickle_bytes() -> bytes:
    """Bytes of a pickle (protocol 4), as hickle keeps in string attributes: never UTF-8."""
    return pickle.dumps({"type": "dict", "values": [1.5, None, b"\xff"]}, protocol=4)


@feature("hickle_attrs")
def hickle_attrs(path: Path) -> None:
    """Fixed-length string attributes holding bytes that are not UTF-8 (a pickle, as hickle
    writes them; null-padded and null-terminated), and NaN payloads in float attributes."""
    blob = _pickle_bytes()
    with h5py.File(path, "w") as f:
        g = f.create_group("data_0")
        raw_attr(g, "type", string_type(len(blob)), (), blob)
        raw_attr(g, "base_type", string_type(len(blob) + 3, h5t.STR_NULLTERM), (), blob + b"\0\0\0")
        raw_attr(g, "latin1", string_type(4, h5t.STR_NULLPAD, h5t.CSET_UTF8), (2,), b"\xe9t\xe9\0caf\xe9")
        f.create_dataset("data_0/data", data=np.arange(3))
        payloads = np.array([0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000123], dtype="<u8")
        raw_attr(f, "nan_payloads", h5t.IEEE_F64LE, (3,), payloads.tobytes())
        raw_attr(f, "nan_f4", h5t.IEEE_F32BE, (), np.array([0x7FC00ABC], dtype=">u4").tobytes())


@feature("nested_variable")
def nested_variable(path: Path) -> None:
    """Compounds and arrays around variable-length members: a compound with a fixed string and
    an array of vlen strings (once a 500 on load), a vlen of compounds with a string and a
    big-endian integer, arrays of vlens in a compound, a space-padded compound inside an array beside a vlen
    string. Types are made exactly with the low-level API; h5py converts the values into them."""
    with h5py.File(path, "w") as f:
        dt = np.dtype([("key", "S4"), ("names", h5py.string_dtype(), (3,))])
        data = np.zeros(2, dt)
        data["key"] = [b"ab", b"abcd"]
        data["names"] = [["a", "bb", "ccc"], ["", "é", "x"]]
        f.create_dataset("tagged", data=data)
        f.attrs["tagged"] = data[0]
        row = h5t.create(h5t.COMPOUND, 6)
        row.insert(b"code", 0, string_type(2, h5t.STR_NULLPAD))  # h5py cannot read NULLTERM here
        row.insert(b"n", 2, h5t.STD_I32BE)
        # written as HDF5's own memory form (hvl_t: count, pointer), as C programs write it
        elements = [b"66" + _be32(7) + b"a\0" + _be32(-1), b"", b"\0\0" + _be32(2**31 - 1)]
        buffers = [np.frombuffer(e, dtype=np.uint8).copy() for e in elements]
        hvl = np.array(
            [(len(e) // 6, b.ctypes.data if len(e) else 0) for e, b in zip(elements, buffers, strict=True)],
            dtype=[("len", "=u8"), ("p", "=u8")],
        )
        dset = h5d.create(f.id, b"rows", h5t.vlen_create(row), _space((3,)))
        dset.write(h5s.ALL, h5s.ALL, hvl, mtype=h5t.vlen_create(row))
        avl_dt = np.dtype([("v", h5py.vlen_dtype(np.dtype("u1")), (2,)), ("w", "<f8")])
        avl = np.zeros(2, avl_dt)
        avl[0]["v"][0], avl[0]["v"][1] = np.array([1, 2], "u1"), np.array([], "u1")
        avl[1]["v"][0], avl[1]["v"][1] = np.array([255], "u1"), np.array([3, 4, 5], "u1")
        f.create_dataset("arrays_of_vlens", data=avl)
        inner = h5t.create(h5t.COMPOUND, 3)
        inner.insert(b"c", 0, string_type(3, h5t.STR_SPACEPAD))
        vstr = h5t.C_S1.copy()
        vstr.set_size(h5t.VARIABLE)
        vstr.set_cset(h5t.CSET_UTF8)
        outer = h5t.create(h5t.COMPOUND, 16 + 2 * 3)
        outer.insert(b"label", 0, vstr)
        outer.insert(b"pair", 16, h5t.array_create(inner, (2,)))
        out_dt = np.dtype([("label", h5py.string_dtype()), ("pair", [("c", "S3")], (2,))])
        value = np.zeros(2, out_dt)
        value["label"] = ["hello", ""]
        value["pair"] = [[(b"x",), (b"yz",)], [(b"abc",), (b"",)]]
        dset = h5d.create(f.id, b"compound_in_array", outer, _space((2,)))
        dset.write(h5s.ALL, h5s.ALL, value, mtype=h5t.py_create(out_dt))


# -- issue 15: references (region references, dangling references, undefined fill values) -------


def _undefined_fill(f: h5py.File, name: str, tid: Any, shape: tuple[int, ...], value: Any = None, chunks: tuple[int, ...] | None = None) -> None:
    """A dataset with no fill value (H5Pset_fill_value(NULL)), written with ``value`` if given."""
    dcpl = h5p.create(h5p.DATASET_CREATE)
    if chunks:
        dcpl.set_chunk(chunks)
    h5native.set_fill_value(dcpl, tid, None)
    dset = h5d.create(f.id, name.encode(), tid, _space(shape), dcpl=dcpl)
    if value is not None:
        dset.write(h5s.ALL, h5s.ALL, value)


@feature("region_refs_undefined_fill")
def region_refs_undefined_fill(path: Path) -> None:
    """Region references in datasets without a fill value whose values are all null (or all
    zero): export once left these unwritten, and HDF5 cannot read a dataset with no storage and
    no fill value ("dataset doesn't exist, no data can be read")."""
    with h5py.File(path, "w") as f:
        g = f.create_group("grp")
        d = g.create_dataset("d", data=np.arange(60.0).reshape(6, 10), chunks=(3, 4), compression="gzip")
        one = f.create_dataset("one", data=np.arange(20), maxshape=(None,), chunks=(4,))
        null = h5r.RegionReference()
        _undefined_fill(f, "nulls", h5t.STD_REF_DSETREG, (4,), np.array([null] * 4, dtype=h5py.regionref_dtype))
        mixed = np.array([d.regionref[1:3, 2:5], null, one.regionref[::3], null], dtype=h5py.regionref_dtype)
        _undefined_fill(f, "mixed", h5t.STD_REF_DSETREG, (4,), mixed)
        _undefined_fill(f, "chunked_nulls", h5t.STD_REF_DSETREG, (6,), np.array([null] * 6, dtype=h5py.regionref_dtype), chunks=(2,))
        _undefined_fill(f, "zeros", h5t.STD_I32LE, (3, 4), np.zeros((3, 4), "<i4"))
        _undefined_fill(f, "chunked_zeros", h5t.STD_I32LE, (8,), np.zeros(8, "<i4"), chunks=(2,))
        _undefined_fill(f, "obj_nulls", h5t.STD_REF_OBJ, (3,), np.array([h5r.Reference()] * 3, dtype=h5py.ref_dtype))
        refs = np.array([d.regionref[0:1, 0:1], null, null, null, null, d.regionref[5:6, 5:9], d.regionref[...], null], dtype=h5py.regionref_dtype)
        f.create_dataset("sparse_chunks", data=refs, chunks=(2,), maxshape=(None,))
        comp = np.dtype([("r", h5py.regionref_dtype), ("n", "i4")])
        f.create_dataset("in_compound", data=np.array([(mixed[0], 1), (null, 2)], dtype=comp))
        f.attrs["regions"] = mixed


@feature("dangling_refs")
def dangling_refs(path: Path) -> None:
    """Object and region references to objects deleted afterwards, as h5py leaves them."""
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(100).reshape(10, 10))
        e = f.create_dataset("gone/e", data=np.arange(10))
        g = f.create_group("gone/g")
        f["gone/t"] = np.dtype("<i2")
        t = f["gone/t"]
        regions = np.array([d.regionref[1:3, 2:5], e.regionref[2:4], h5r.RegionReference(), e.regionref[...]], dtype=h5py.regionref_dtype)
        objs = np.array([e.ref, g.ref, d.ref, t.ref, h5r.Reference()], dtype=h5py.ref_dtype)
        f.create_dataset("regions", data=regions)
        f.create_dataset("objs", data=objs)
        f.attrs["gone_region"] = e.regionref[1:2]
        f.attrs["gone_objects"] = objs[:2]
        d.attrs["kept"] = d.ref
        del f["gone"]


# -- issue 15: reduced precision and the N-bit filter ----------------------------------------------


def _reduced(base: Any, precision: int, offset: int = 0) -> Any:
    tid = base.copy()
    tid.set_precision(precision)
    tid.set_offset(offset)
    return tid


def _nbit_dcpl(chunks: tuple[int, ...], *more: tuple[int, tuple[int, ...]]) -> Any:
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL, ())
    for fid, cd in more:
        dcpl.set_filter(fid, h5py.h5z.FLAG_OPTIONAL, cd)
    return dcpl


def _converted(f: h5py.File, name: str, tid: Any, values: np.ndarray, dcpl: Any = None, mtype: Any = None) -> None:
    """A dataset of ``tid`` written from ``values`` (HDF5 converts them into the reduced type)."""
    dset = h5d.create(f.id, name.encode(), tid, _space(values.shape), dcpl=dcpl)
    dset.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(values), mtype=mtype or h5t.py_create(values.dtype))


@feature("nbit_precision")
def nbit_precision(path: Path) -> None:
    """Integers with fewer significant bits than their size or a bit offset, with and without
    the N-bit filter (the issue's case: 16-bit precision at bit offset 5 in a 4-byte integer)."""
    rng = np.random.default_rng(15)
    with h5py.File(path, "w") as f:
        i32 = rng.integers(-(1 << 15), 1 << 15, (40, 50)).astype("<i4")
        _converted(f, "nbit_i32", _reduced(h5t.STD_I32LE, 16, 5), i32, _nbit_dcpl((10, 25)))
        u16 = rng.integers(0, 1 << 11, 37).astype(">u2")
        _converted(f, "nbit_u16be_gzip", _reduced(h5t.STD_U16BE, 11, 3), u16, _nbit_dcpl((8,), (h5py.h5z.FILTER_DEFLATE, (6,))))
        _converted(f, "twelve_bits", _reduced(h5t.STD_I16LE, 12), np.array([1, -2, 2047, -2048], "<i2"))
        _converted(f, "u8_three_bits", _reduced(h5t.STD_U8LE, 3, 4), np.arange(8, dtype="u1"), _nbit_dcpl((3,)))
        _converted(f, "i64_40_bits", _reduced(h5t.STD_I64BE, 40, 20), rng.integers(-(1 << 39), 1 << 39, 30).astype(">i8"), _nbit_dcpl((7,)))
        full = rng.integers(0, 1000, (20,)).astype("<i4")
        _converted(f, "nbit_full_precision", h5t.STD_I32LE, full, _nbit_dcpl((5,)))
        dcpl = _nbit_dcpl((6,))
        h5native.set_fill_value(dcpl, h5t.STD_I32LE, np.array([-7], "<i4").tobytes())
        sparse = h5d.create(f.id, b"nbit_fill", _reduced(h5t.STD_I32LE, 20, 2), _space((24,)), dcpl=dcpl)
        sparse.write(h5s.create_simple((6,)), _select(sparse.get_space(), 6, 6), np.arange(6, dtype="<i4"), mtype=h5t.STD_I32LE)
        member = _reduced(h5t.STD_I16LE, 9, 2)
        ctype = h5t.create(h5t.COMPOUND, 16)
        ctype.insert(b"a", 0, member)
        ctype.insert(b"s", 2, h5t.C_S1.copy())
        ctype.insert(b"b", 8, _reduced(h5t.STD_U32BE, 20, 4))
        values = np.zeros(20, dtype=[("a", "<i2"), ("s", "S1"), ("b", ">u4")])
        values["a"] = rng.integers(-256, 256, 20)
        values["s"] = b"x"
        values["b"] = rng.integers(0, 1 << 20, 20)
        mtype = h5t.create(h5t.COMPOUND, values.dtype.itemsize)
        mtype.insert(b"a", 0, h5t.STD_I16LE)
        mtype.insert(b"s", 2, h5t.C_S1.copy())
        mtype.insert(b"b", 3, h5t.STD_U32BE)
        _converted(f, "nbit_compound", ctype, values, _nbit_dcpl((7,)), mtype)
        arr = rng.integers(-256, 256, (12, 3)).astype("<i2")
        dset = h5d.create(f.id, b"nbit_array", h5t.array_create(member, (3,)), _space((12,)), dcpl=_nbit_dcpl((5,)))
        dset.write(h5s.ALL, h5s.ALL, arr, mtype=h5t.array_create(h5t.STD_I16LE, (3,)))
        aid = h5a.create(f.id, b"reduced", _reduced(h5t.STD_I32LE, 16, 5), _space((3,)))
        aid.write(np.array([1, -1, 32767], "<i4"), mtype=h5t.STD_I32LE)


@feature("scaleoffset_kinds")
def scaleoffset_kinds(path: Path) -> None:
    """The scale-offset filter on integers (computed and fixed bit counts, with a fill value,
    big-endian, every bit needed) and on floats with decimal scaling."""
    rng = np.random.default_rng(6)
    with h5py.File(path, "w") as f:
        f.create_dataset("u2_be", data=rng.integers(0, 5000, 300).astype(">u2"), chunks=(50,), scaleoffset=0)
        f.create_dataset("i8", data=rng.integers(-(1 << 40), 1 << 40, 100).astype("<i8"), chunks=(20,), scaleoffset=0)
        f.create_dataset("i4_fixed", data=rng.integers(0, 100, 100).astype("<i4"), chunks=(20,), scaleoffset=8)
        f.create_dataset("i2_full", data=rng.integers(-32768, 32767, 100).astype("<i2"), chunks=(20,), scaleoffset=0)
        fill = np.where(rng.random(100) < 0.3, -1, rng.integers(0, 1000, 100)).astype("<i4")
        f.create_dataset("i4_fill", data=fill, chunks=(20,), scaleoffset=0, fillvalue=-1)
        f.create_dataset("f4_be", data=rng.standard_normal(400).astype(">f4") * 100, chunks=(100,), scaleoffset=1)
        f.create_dataset("f8_fill", data=np.where(rng.random(200) < 0.2, -999.0, rng.random(200) * 10), chunks=(50,), scaleoffset=2, fillvalue=-999.0)
        f.create_dataset("f8_edges", data=np.linspace(-5, 5, 1001), chunks=(100,), scaleoffset=3)


def _select(space: Any, start: int, count: int) -> Any:
    space.select_hyperslab((start,), (count,))
    return space


def _be32(n: int) -> bytes:
    return np.array([n], ">i4").tobytes()


def build(name: str, directory: Path) -> Path:
    path = directory / f"{name}.h5"
    builder = CORPUS[name] if name in CORPUS else REFUSED[name][0]
    builder(path)
    return path


def build_all(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return {name: build(name, directory) for name in CORPUS}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "corpus")
    for name, p in build_all(out).items():
        print(name, p)
    for name in REFUSED:
        print("refused:", name, build(name, out))
