"""Files as other libraries write them, beyond tests/support/corpus_extra.py: each builder uses
the library that writes such files in the wild (netCDF4, h5netcdf, PyTables, pandas, anndata)
or h5py as that library would (Keras weights, NeXus), plus HDF5 storage forms h5py reaches only
with its low-level API (dense attribute storage, szip, arrays of compounds, vlens of vlens).

``WILD`` maps a name to a builder writing one small file; ``build_wild(directory)`` writes them all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np
from h5py import h5d, h5p, h5s, h5t

from tests.roundtrip.corpus import MATLAB_HEADER, _write_user_block, raw_attr, raw_dataset, string_type

Builder = Callable[[Path], None]
WILD: dict[str, Builder] = {}
# Builders whose library cannot live in the test environment: anndata needs pandas < 3, which
# the test extra's pandas is not. dev/corpus_check.py runs them where the library imports.
OPTIONAL: dict[str, Builder] = {}


def wild(name: str, optional: bool = False) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        (OPTIONAL if optional else WILD)[name] = fn
        return fn

    return register


@wild("netcdf4_storage")
def netcdf4_storage(path: Path) -> None:
    """netCDF4: chunking with zlib, shuffle and fletcher32, quantize (all three modes), a
    variable without fill, a contiguous one, a scalar, NC_CHAR, NC_STRING attributes, fill values
    of every kind of type, nested groups with their own unlimited dimensions."""
    import netCDF4

    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as nc:
        nc.createDimension("t", None)
        nc.createDimension("x", 6)
        nc.createDimension("nchar", 4)
        values = np.linspace(-3.14159, 2.71828, 12, dtype="f4").reshape(2, 6)
        full = nc.createVariable("full", "f4", ("t", "x"), zlib=True, complevel=4, shuffle=True, fletcher32=True, chunksizes=(1, 3), fill_value=1e20)
        full[:] = values
        for mode in ("BitGroom", "GranularBitRound", "BitRound"):
            digits = 3 if mode != "BitRound" else 9
            q = nc.createVariable(f"q_{mode}", "f8", ("t", "x"), zlib=True, significant_digits=digits, quantize_mode=mode)
            q[:] = values.astype("f8")
        nofill = nc.createVariable("nofill", "i2", ("x",), fill_value=False)
        nofill[:] = np.arange(6, dtype="i2")
        contig = nc.createVariable("contig", "u8", ("x",), contiguous=True)
        contig[:] = np.arange(6, dtype="u8") * 10**15
        scalar = nc.createVariable("scalar", "f8")
        scalar.assignValue(42.5)
        chars = nc.createVariable("chars", "S1", ("x", "nchar"))
        chars[:] = netCDF4.stringtochar(np.array(["ab", "cdef", "", "g", "hi", "jkl"], dtype="S4"))
        partial = nc.createVariable("partial", "i8", ("t", "x"), fill_value=-7)
        partial[0, :2] = [1, 2]
        nc.setncattr_string("one_string", "NC_STRING scalar")
        nc.setncattr_string("strings", ["α", "", "βγ"])
        nc.setncattr("char_attr", "NC_CHAR text")
        nc.setncattr("ints", np.array([1, 2, 3], dtype="i1"))
        nc.setncattr("u64", np.uint64(2**63 + 5))
        full.setncattr("valid_range", np.array([-10, 10], dtype="f4"))
        g = nc.createGroup("level1").createGroup("level2")
        g.createDimension("s", None)
        gv = g.createVariable("s", "f4", ("s",), fill_value=np.float32(np.nan))
        gv[:3] = [1.0, np.nan, 3.0]
        g.setncattr_string("note", "deep")


@wild("netcdf4_plugins")
def netcdf4_plugins(path: Path) -> None:
    """netCDF-C's own compression plugins (netCDF4 points HDF5_PLUGIN_PATH at them): zstd, bzip2,
    blosc with four compressors, szip, and quantize before zstd."""
    import netCDF4

    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as nc:
        nc.createDimension("x", 40)
        nc.createDimension("y", 30)
        data = np.arange(1200, dtype="f4").reshape(40, 30) / 7
        for comp in ("zstd", "bzip2", "blosc_lz", "blosc_lz4", "blosc_zlib", "blosc_zstd"):
            extra = {"blosc_shuffle": 1} if comp.startswith("blosc") else {}
            nc.createVariable(comp, "f4", ("x", "y"), chunksizes=(10, 30), compression=comp, complevel=4, **extra)[:] = data
        nc.createVariable("szip", "i4", ("x", "y"), chunksizes=(10, 30), compression="szip", szip_coding="nn", szip_pixels_per_block=8)[:] = data.astype("i4")
        nc.createVariable("quant_zstd", "f8", ("x", "y"), compression="zstd", significant_digits=4)[:] = data


@wild("netcdf4_usertypes")
def netcdf4_usertypes(path: Path) -> None:
    """netCDF4 user types: a compound holding a nested compound and a char array, a vlen of a
    compound, an enum variable with a fill, vlen strings with a fill, a user type in an attribute."""
    import netCDF4

    inner = np.dtype([("lo", "<i2"), ("hi", "<i2")], align=True)
    outer = np.dtype([("id", "<u4"), ("range", inner), ("code", "S1", (3,))], align=True)
    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as nc:
        nc.createDimension("n", 3)
        nc.createDimension("u", None)
        inner_t = nc.createCompoundType(inner, "range_t")
        outer_t = nc.createCompoundType(outer, "record_t")
        rec = nc.createVariable("records", outer_t, ("n",))
        data = np.zeros(3, dtype=outer)
        data["id"] = [1, 2, 3]
        data["range"]["lo"] = [-1, -2, -3]
        data["range"]["hi"] = [10, 20, 30]
        data["code"] = [[b"a", b"b", b"c"], [b"d", b"", b"f"], [b"", b"", b""]]
        rec[:] = data
        assert inner_t.name == "range_t"
        vl = nc.createVLType(np.float64, "series_t")
        series = nc.createVariable("series", vl, ("u",))
        for i in range(3):
            series[i] = np.arange(i + 1, dtype="f8") / 3
        enum_t = nc.createEnumType(np.int16, "state_t", {"off": 0, "on": 1, "unknown": -1})
        state = nc.createVariable("state", enum_t, ("u",), fill_value=-1)
        state[:4] = np.array([0, 1, 1, -1], dtype="i2")
        text = nc.createVariable("text", str, ("u",), fill_value="missing")
        text[0] = "first"
        text[2] = "third ✓"
        rec.setncattr("first_record", data[0])
        state.setncattr("default", np.array([1], dtype="i2"))


@wild("h5netcdf_features")
def h5netcdf_features(path: Path) -> None:
    """h5netcdf: enum and vlen user types, a compound, an invalid-netCDF complex and bool
    variable, string attributes, groups with dimensions inherited from the parent."""
    import h5netcdf

    with h5netcdf.File(str(path), "w", invalid_netcdf=True) as nc:
        nc.dimensions = {"x": 4, "time": None}
        nc.create_variable("x", ("x",), data=np.arange(4, dtype="f8"))
        c = nc.create_variable("cplx", ("x",), data=np.array([1 + 1j, 2, 3j, -1], dtype="c16"))
        c.attrs["kind"] = "complex"
        nc.create_variable("flags", ("x",), data=np.array([True, False, True, True]))
        t = nc.create_variable("time", ("time",), dtype="f8")
        nc.resize_dimension("time", 3)
        t[:] = [0.5, 1.5, 2.5]
        t.attrs["units"] = "hours since 2020-01-01"
        t.attrs["list"] = np.array([1.0, 2.0])
        if hasattr(nc, "create_enumtype"):
            et = nc.create_enumtype(np.uint8, "level_t", {"low": 0, "high": 1})
            ev = nc.create_variable("level", ("x",), dtype=et, fillvalue=0)  # 0 is "low": given, not warned about
            ev[:] = np.array([0, 1, 1, 0], dtype="u1")
            vt = nc.create_vltype(np.int32, "ints_t")
            vv = nc.create_variable("ragged", ("x",), dtype=vt)
            vv[0] = np.array([1, 2], "i4")
            vv[3] = np.array([3], "i4")
            ct = nc.create_cmptype(np.dtype([("a", "<f4"), ("b", "<i8")]), "pair_t")
            cv = nc.create_variable("pairs", ("x",), dtype=ct)
            cv[:] = np.array([(1.0, 1), (2.0, 2), (3.0, 3), (4.0, 4)], dtype=ct.dtype)
        g = nc.create_group("sub")
        g.create_variable("v", ("x",), data=np.arange(4, dtype="i2"))


@wild("pytables_features")
def pytables_features(path: Path) -> None:
    """PyTables: a Table with indexed columns (the index's hidden groups and arrays), enum,
    complex, time and unicode-less string columns, a VLArray of pickled objects, CArrays with
    bzip2 and LZO, an EArray with blosc, soft and external links, a leaf's attribute list."""
    import tables

    class Row(tables.IsDescription):
        key = tables.Int64Col(pos=0)
        name = tables.StringCol(6, pos=1)
        color = tables.EnumCol(["red", "green", "blue"], "red", base="uint8", pos=2)
        z = tables.ComplexCol(16, pos=3)
        when = tables.Time32Col(pos=4)
        score = tables.Float32Col(pos=5, dflt=-1.0)

    with tables.open_file(str(path), "w", title="wild") as f:
        t = f.create_table("/", "indexed", Row, "indexed table", filters=tables.Filters(complevel=1, complib="zlib"))
        row = t.row
        colors = t.get_enum("color")
        for i in range(40):
            row["key"], row["name"], row["color"] = (i * 7919) % 101, f"n{i}".encode(), colors[("red", "green", "blue")[i % 3]]
            row["z"], row["when"], row["score"] = complex(i, -i), 1_600_000_000 + i, i / 4
            row.append()
        t.flush()
        t.cols.key.create_index()
        t.cols.score.create_csindex()
        objs = f.create_vlarray("/", "objects", tables.ObjectAtom())
        objs.append({"a": 1, "b": [1, 2]})
        objs.append("text")
        objs.append(None)
        for lib in ("bzip2", "lzo", "blosc:zstd"):
            if tables.which_lib_version(lib.split(":")[0]) is None:
                continue
            f.create_carray("/", f"carray_{lib.replace(':', '_')}", obj=np.arange(300, dtype="<i4").reshape(30, 10), filters=tables.Filters(complevel=5, complib=lib, shuffle=True))
        e = f.create_earray("/", "earray", tables.Float64Atom(), (0, 2), filters=tables.Filters(complevel=1, complib="blosc", bitshuffle=True), expectedrows=10)
        e.append(np.arange(10.0).reshape(5, 2))
        f.create_soft_link("/", "soft_to_table", "/indexed")
        f.create_external_link("/", "ext", "other.h5:/node")
        arr = f.create_array("/", "plain", np.array([[1, 2], [3, 4]], dtype=">i2"), "big-endian")
        arr.attrs.list_attr = [1, 2, 3]
        arr.attrs.np_attr = np.array([1.5, 2.5])
        arr.attrs.str_attr = "string"
        arr.attrs.bytes_attr = b"bytes"
        arr.attrs.bool_attr = True
        arr.attrs.none_attr = None
        uarr = f.create_vlarray("/", "unicode", tables.VLUnicodeAtom())
        uarr.append("añb")
        uarr.append("")


@wild("pandas_hdfstore")
def pandas_hdfstore(path: Path) -> None:
    """pandas HDFStore: a fixed-format frame (object strings pickled into a VLArray), a
    table-format frame with data columns, compression, a datetime index and a categorical, a Series."""
    import pandas as pd

    n = 12
    frame = pd.DataFrame(
        {
            "i": np.arange(n, dtype="i8"),
            "f": np.linspace(0, 1, n),
            "s": [f"s{i}" * (i % 3) for i in range(n)],
            "b": np.arange(n) % 2 == 0,
            "t": pd.date_range("2024-01-01", periods=n, freq="h"),
        }
    )
    with pd.HDFStore(str(path), "w") as store:
        store.put("fixed", frame, format="fixed", track_times=True)
        store.put("table", frame, format="table", data_columns=["i", "s"], complevel=5, complib="zlib", track_times=True)
        store.append("grown", frame.iloc[:6], format="table", min_itemsize={"s": 8})
        store.append("grown", frame.iloc[6:], format="table")
        store.put("series", pd.Series(np.arange(5.0), index=list("abcde")), track_times=True)
        cat = pd.DataFrame({"c": pd.Categorical(["x", "y", "x", "z"]), "v": [1, 2, 3, 4]})
        store.put("categorical", cat, format="table", track_times=True)
        store.put("timed", pd.DataFrame({"v": np.arange(4)}, index=pd.date_range("2020", periods=4, tz="UTC")), format="fixed", track_times=True)


@wild("anndata", optional=True)
def anndata_file(path: Path) -> None:
    """anndata .h5ad: a dense X, sparse layers (CSR and CSC groups), obs/var frames with
    categoricals, strings and nullable integers, uns with nested dicts and scalars."""
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    x = rng.random((6, 4)).astype("f4")
    obs = pd.DataFrame(
        {"cell": pd.Categorical(["a", "b", "a", "c", "b", "a"]), "n": np.arange(6), "ok": [True, False] * 3, "nullable": pd.array([1, None, 3, 4, None, 6], dtype="Int32")},
        index=[f"cell{i}" for i in range(6)],
    )
    var = pd.DataFrame({"gene": [f"g{i}" for i in range(4)]}, index=[f"v{i}" for i in range(4)])
    adata = ad.AnnData(X=x, obs=obs, var=var)
    adata.layers["csr"] = sp.csr_matrix(np.where(x > 0.5, x, 0))
    adata.layers["csc"] = sp.csc_matrix(np.where(x > 0.5, x, 0))
    adata.obsm["pca"] = rng.random((6, 2))
    adata.uns["params"] = {"k": 3, "name": "run", "vals": np.array([1.0, 2.0]), "nested": {"flag": True}}
    adata.uns["strings"] = np.array(["u", "v"], dtype=object)
    adata.write_h5ad(str(path))


@wild("keras_weights")
def keras_weights(path: Path) -> None:
    """A Keras (2.x, .h5) model file as Keras writes it with h5py: model_config as JSON text,
    layer_names and weight_names as arrays of fixed-length byte strings, weight datasets with a
    ':' in their names, an optimizer_weights group."""
    config = {"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "config": {"units": 3}}]}}
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = b"2.15.0"
        f.attrs["backend"] = b"tensorflow"
        f.attrs["model_config"] = json.dumps(config).encode()
        f.attrs["training_config"] = json.dumps({"loss": "mse"})
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = np.array([b"dense", b"dense_1"], dtype="S7")
        weights.attrs["backend"] = b"tensorflow"
        for layer, shape in (("dense", (4, 3)), ("dense_1", (3, 1))):
            g = weights.create_group(layer)
            names = [f"{layer}/kernel:0".encode(), f"{layer}/bias:0".encode()]
            g.attrs["weight_names"] = np.array(names, dtype=f"S{max(len(n) for n in names)}")
            inner = g.create_group(layer)
            inner.create_dataset("kernel:0", data=np.arange(np.prod(shape), dtype="f4").reshape(shape))
            inner.create_dataset("bias:0", data=np.zeros(shape[1], dtype="f4"))
        opt = f.create_group("optimizer_weights")
        opt.attrs["weight_names"] = np.array([b"Adam/iter:0"], dtype="S11")
        opt.create_group("Adam").create_dataset("iter:0", data=np.int64(10))


@wild("nexus")
def nexus(path: Path) -> None:
    """A NeXus file: NX_class attributes (fixed-length and variable-length), @default chains,
    @signal/@axes with string arrays, a linked dataset with its @target, a soft link, an
    external link, units attributes, a 2-D detector image with compression."""
    utf8_fixed = h5py.string_dtype("utf-8", 8)
    with h5py.File(path, "w") as f:
        f.attrs["NX_class"] = "NXroot"
        f.attrs["default"] = "entry"
        f.attrs["file_name"] = str(path.name)
        f.attrs["HDF5_Version"] = h5py.version.hdf5_version
        entry = f.create_group("entry")
        entry.attrs.create("NX_class", "NXentry", dtype=utf8_fixed)
        entry.attrs["default"] = "data"
        inst = entry.create_group("instrument")
        inst.attrs["NX_class"] = np.bytes_("NXinstrument")
        det = inst.create_group("detector")
        det.attrs["NX_class"] = "NXdetector"
        img = det.create_dataset("data", data=np.arange(64, dtype="<u2").reshape(8, 8), chunks=(4, 8), compression="gzip", compression_opts=4)
        img.attrs["units"] = "counts"
        img.attrs["target"] = "/entry/instrument/detector/data"
        x = det.create_dataset("x_pixel_offset", data=np.linspace(0, 1, 8))
        x.attrs["units"] = "mm"
        data = entry.create_group("data")
        data.attrs["NX_class"] = "NXdata"
        data.attrs["signal"] = "data"
        data.attrs["axes"] = np.array([".", "x_pixel_offset"], dtype=h5py.string_dtype())
        data.attrs["x_pixel_offset_indices"] = np.int32(1)
        data["data"] = img  # NeXus links are hard links with @target naming the original
        data["x_pixel_offset"] = h5py.SoftLink("/entry/instrument/detector/x_pixel_offset")
        entry["external_scan"] = h5py.ExternalLink("scan_0001.nxs", "/entry/data")
        entry.create_dataset("title", data="a scan")
        entry.create_dataset("start_time", data=np.bytes_("2024-01-01T00:00:00"))


@wild("h5py_storage_forms")
def h5py_storage_forms(path: Path) -> None:
    """Storage forms h5py writes with libver='latest': dense attribute storage (many attributes,
    tracked order, on a group, a dataset and a committed type), compact layout near its limit,
    szip, scaleoffset on a chunked dataset with a fill, committed types used by attributes only,
    an attribute on the root of a null space with a compound type."""
    with h5py.File(path, "w", libver="latest", track_order=True) as f:
        g = f.create_group("dense_attrs", track_order=True)
        for i in reversed(range(30)):
            g.attrs[f"a{i:02d}"] = np.arange(i, dtype="i2")
        t = f.create_group("dense_links", track_order=True)
        for i in reversed(range(40)):
            t.create_group(f"g{i:02d}")
        d = f.create_dataset("dense_on_dataset", data=np.arange(3), track_order=True)
        for i in range(20):
            d.attrs[f"z{19 - i}"] = "x" * i
        f["ctype"] = np.dtype([("a", "<i4"), ("b", "<f8")])
        for i in range(12):
            f["ctype"].attrs[f"t{i}"] = i
        ct = f["ctype"]
        f.attrs.create("uses_committed", data=np.array([(1, 2.0), (3, 4.0)], dtype=ct.dtype), dtype=ct)
        f.attrs.create("null_compound", data=h5py.Empty(np.dtype([("a", "<i4")])))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        raw_dataset(f, "compact_big", h5t.STD_I32LE, (15000,), np.arange(15000, dtype="<i4").tobytes(), dcpl)
        if h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
            f.create_dataset("szip", data=np.arange(1000, dtype="<i4").reshape(10, 100), chunks=(5, 100), compression="szip", compression_opts=("nn", 8))
        f.create_dataset("so_fill", data=np.arange(100, dtype="<i2") - 50, chunks=(30,), scaleoffset=0, fillvalue=3)
        f.create_dataset("so_float", data=np.linspace(-1, 1, 64, dtype="<f4"), chunks=(16,), scaleoffset=3)


@wild("h5py_types")
def h5py_types(path: Path) -> None:
    """Types the corpora did not hold: an array of compounds, a compound of arrays of compounds,
    a vlen of vlens, a vlen of an array, opaque with a long tag in a compound, an enum of a
    big-endian base, a fixed UTF-8 string in a dataset with space padding, a fixed string
    attribute with NUL padding holding embedded NULs."""
    with h5py.File(path, "w") as f:
        point = np.dtype([("x", "<f4"), ("y", ">i2")])
        arr = np.zeros(3, dtype=np.dtype((point, (2,))))
        arr["x"] = [[1, 2], [3, 4], [5, 6]]
        arr["y"] = [[-1, -2], [-3, -4], [-5, -6]]
        f.create_dataset("array_of_compound", data=arr)
        outer = np.dtype([("id", "<u2"), ("pts", point, (2,))])
        o = np.zeros(2, dtype=outer)
        o["id"] = [7, 8]
        o["pts"]["x"] = [[1.5, 2.5], [3.5, 4.5]]
        f.create_dataset("compound_of_array_of_compound", data=o)
        f.attrs["compound_of_array_of_compound"] = o
        vv_tid = h5t.vlen_create(h5t.vlen_create(h5t.STD_I16LE))
        raw_dataset(f, "vlen_of_vlen", vv_tid, (2,))
        tag_t = h5t.create(h5t.OPAQUE, 4)
        tag_t.set_tag(b"a tag of some length " * 4)
        cmp = h5t.create(h5t.COMPOUND, 8)
        cmp.insert(b"raw", 0, tag_t)
        cmp.insert(b"n", 4, h5t.STD_U32BE)
        raw_dataset(f, "opaque_in_compound", cmp, (2,), b"\x01\x02\x03\x04\x00\x00\x00\x05abcd\x00\x00\x01\x00")
        et = h5t.enum_create(h5t.STD_I32BE)
        et.enum_insert(b"neg", -5)
        et.enum_insert(b"big", 1 << 20)
        raw_dataset(f, "enum_be", et, (2,), np.array([-5, 1 << 20], dtype=">i4").tobytes())
        raw_dataset(f, "utf8_spacepad", string_type(6, h5t.STR_SPACEPAD, h5t.CSET_UTF8), (2,), "é a   ".encode().ljust(6, b" ")[:6] + b"ab    ")
        raw_attr(f, "nul_inside", string_type(6, h5t.STR_NULLPAD), (2,), b"a\0b\0\0\0cdefgh")
        raw_attr(f, "nullterm", string_type(4, h5t.STR_NULLTERM), (), b"abc\0")


@wild("native_complex")
def native_complex(path: Path) -> None:
    """HDF5 2.0's native complex numbers (H5T_COMPLEX, as h5py built on HDF5 2.0 writes them when
    asked, and as C and Fortran programs do with H5T_NATIVE_DOUBLE_COMPLEX): every IEEE part
    size, both byte orders, chunked with deflate, in an attribute, a compound and an array. The
    load refused them ("datatype class 11")."""
    values = np.array([1 + 2j, -3.5 + 0.25j, np.nan + 1j, -0.0 - np.inf * 1j], dtype="<c16")
    with h5py.File(path, "w") as f:
        for name in ("COMPLEX_IEEE_F16LE", "COMPLEX_IEEE_F32BE", "COMPLEX_IEEE_F64LE", "COMPLEX_IEEE_F64BE"):
            tid = getattr(h5t, name)
            half = tid.get_super().get_size()
            dt = np.dtype(f"{'>' if name.endswith('BE') else '<'}c{2 * half}") if half > 2 else None
            raw = values.astype(dt).tobytes() if dt is not None else np.stack([values.real, values.imag], -1).astype("<f2").tobytes()
            raw_dataset(f, name.lower(), tid, (4,), raw)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((2,))
        dcpl.set_deflate(4)
        d = raw_dataset(f, "chunked", h5t.COMPLEX_IEEE_F64LE, (4,), values.tobytes(), dcpl)
        raw_attr(h5py.Dataset(d), "attr", h5t.COMPLEX_IEEE_F32LE, (2,), values[:2].astype("<c8").tobytes())
        member = h5t.create(h5t.COMPOUND, 12)
        member.insert(b"z", 0, h5t.COMPLEX_IEEE_F32LE)
        member.insert(b"n", 8, h5t.STD_I32LE)
        raw_dataset(f, "in_compound", member, (2,), values[:2].astype("<c8").tobytes()[:8] + b"\x01\0\0\0" + values[1:2].astype("<c8").tobytes() + b"\x02\0\0\0")
        raw_dataset(f, "in_array", h5t.array_create(h5t.COMPLEX_IEEE_F64LE, (2,)), (2,), values.tobytes())


# -- storage forms and types (docs/fidelity.md, "Files from elsewhere, read through h5pyd") --


def _vals(shape: tuple[int, ...], dtype: str = "<f4") -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 251).reshape(shape).astype(dtype)


@wild("chunk_index_edges")
def chunk_index_edges(path: Path) -> None:
    """libver latest, the chunk indexes at their edges: a fixed array with paged data blocks
    (> 1024 chunks), an extensible array of 1667 chunks, a v2 B-tree of several levels, an
    implicit index with a fill value and partial edge chunks, and chunks written with a filter
    skipped (filter mask 1, ``write_direct_chunk``) in each index and a single chunk."""
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("fa_paged", data=_vals((64, 40), "<i2"), chunks=(2, 1))
        d = f.create_dataset("ea_many", shape=(5000,), maxshape=(None,), chunks=(3,), dtype="<i4")
        d[:] = np.arange(5000)
        f.create_dataset("bt2_levels", data=_vals((200, 200), "<u1"), chunks=(3, 5), maxshape=(None, None))
        f.create_dataset("single_filtered", data=_vals((7, 9)), chunks=(7, 9), compression="gzip", shuffle=True, fletcher32=True)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 4))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_value(np.array(-9, "<i8"))
        implicit = h5py.h5d.create(f.id, b"implicit_fill", h5t.STD_I64LE, h5py.h5s.create_simple((10, 10)), dcpl=dcpl)
        h5py.Dataset(implicit)[1:3, 1:3] = 5
        for name, maxshape in (("fa_mask", (40,)), ("ea_mask", (None,)), ("bt2_mask", (None,))):
            ds = f.create_dataset(name, shape=(40,), dtype="<i4", chunks=(10,), compression="gzip", maxshape=maxshape)
            ds[0:10] = np.arange(10)
            ds.id.write_direct_chunk((10,), np.arange(10, 20, dtype="<i4").tobytes(), filter_mask=1)
            ds[20:30] = np.arange(20, 30)
        ds = f.create_dataset("bt2_mask_2d", shape=(4, 4), dtype="<i4", chunks=(2, 2), compression="gzip", maxshape=(None, None))
        ds.id.write_direct_chunk((2, 2), np.arange(4, dtype="<i4").tobytes(), filter_mask=1)
        ds = f.create_dataset("single_mask", shape=(4, 4), dtype="<i4", chunks=(4, 4), compression="gzip")
        ds.id.write_direct_chunk((0, 0), np.arange(16, dtype="<i4").tobytes(), filter_mask=1)


@wild("layouts_alloc_times")
def layouts_alloc_times(path: Path) -> None:
    """Compact and contiguous layouts with every allocation time, written or never written,
    with a fill value; a contiguous dataset allocated early whose fill is never written; empty
    chunked (with gzip) and contiguous datasets."""
    with h5py.File(path, "w") as f:
        for layout in (h5py.h5d.COMPACT, h5py.h5d.CONTIGUOUS):
            for alloc in (h5py.h5d.ALLOC_TIME_EARLY, h5py.h5d.ALLOC_TIME_LATE, h5py.h5d.ALLOC_TIME_INCR):
                if layout == h5py.h5d.COMPACT and alloc != h5py.h5d.ALLOC_TIME_EARLY:
                    continue  # HDF5 allocates compact storage early, always
                for written in (True, False):
                    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                    dcpl.set_layout(layout)
                    dcpl.set_alloc_time(alloc)
                    dcpl.set_fill_value(np.array(3.5, "<f8"))
                    raw = np.arange(6, dtype="<f8").tobytes() if written else None
                    raw_dataset(f, f"l{layout}_a{alloc}_{'w' if written else 'n'}", h5t.IEEE_F64LE, (6,), raw, dcpl)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        raw_dataset(f, "early_fill_never", h5t.STD_I32LE, (5,), np.arange(5, dtype="<i4").tobytes(), dcpl)
        f.create_dataset("empty_chunked_gzip", shape=(0, 0), maxshape=(None, None), chunks=(4, 4), dtype="<f4", compression="gzip")
        f.create_dataset("empty_contiguous", shape=(0,), dtype="<i4")


@wild("scalars_and_nulls")
def scalars_and_nulls(path: Path) -> None:
    """A scalar dataset of every type class (integer, big-endian float, fixed and variable
    strings, compound, array, enum, opaque, object and region references, a vlen of compounds,
    bitfield, bool) and null-space datasets and attributes of several classes."""
    with h5py.File(path, "w") as f:
        f.create_dataset("s_int", data=np.int8(-3))
        f.create_dataset("s_be", data=np.array(2.5, ">f8"))
        f.create_dataset("s_fixstr", data=np.bytes_("abc"))
        f.create_dataset("s_vstr", data="héllo", dtype=h5py.string_dtype())
        f.create_dataset("s_cmp", data=np.array((1, 2.0, b"xy"), dtype=[("a", "<i4"), ("b", ">f4"), ("c", "S2")]))
        raw_dataset(f, "s_arr", h5t.array_create(h5t.STD_I16LE, (3,)), (), np.array([1, 2, 3], "<i2").tobytes())
        f.create_dataset("s_enum", data=np.array(2, "u1"), dtype=h5py.enum_dtype({"R": 0, "G": 1, "B": 2}, basetype="u1"))
        f.create_dataset("s_opaque", data=np.void(b"abcde"))
        g = f.create_group("g")
        f.create_dataset("s_ref", data=g.ref, dtype=h5py.ref_dtype)
        target = f.create_dataset("target", data=np.arange(10))
        f.create_dataset("s_regionref", data=target.regionref[2:5], dtype=h5py.regionref_dtype)
        pair = np.dtype([("x", "<i2"), ("y", "<f4")])
        f.create_dataset("s_vlen_cmp", shape=(), dtype=h5py.vlen_dtype(pair))[()] = np.array([(1, 1.5), (2, 2.5)], dtype=pair)
        raw_dataset(f, "s_bitfield", h5t.STD_B16BE, (), b"\x12\x34")
        f.create_dataset("s_bool", data=np.bool_(True))
        for name, tid in (("int", h5t.STD_I32LE), ("str", string_type(4)), ("vstr", string_type(None)), ("cmp", h5t.py_create(np.dtype([("a", "<i4")])))):
            raw_dataset(f, f"null_{name}", tid, None)
            raw_attr(f, f"null_{name}", tid, None)


@wild("attribute_classes")
def attribute_classes(path: Path) -> None:
    """Attributes of every type class on a group with tracked order: a vlen of compounds, a
    compound with a vlen string, region and object references, a 2-D array type, a big-endian
    enum, opaque, vlen strings (ASCII ones holding a byte that is not UTF-8), half floats, big-endian complex, extreme
    64-bit integers, an empty string, a rank-3 attribute of no elements, a bitfield; and a
    group of 1000 small attributes, dense with an indexed creation order."""
    with h5py.File(path, "w", libver="latest") as f:
        g = f.create_group("g", track_order=True)
        d = f.create_dataset("d", data=np.arange(10))
        pair = np.dtype([("x", "<i2"), ("y", ">f8")])
        seqs = np.empty(2, dtype=object)
        seqs[0], seqs[1] = np.array([(1, 1.5)], dtype=pair), np.array([], dtype=pair)
        g.attrs.create("vlen_cmp", data=seqs, dtype=h5py.vlen_dtype(pair))
        g.attrs.create("cmp_vstr", data=np.array([(1, "α"), (2, "")], dtype=[("a", "<i4"), ("s", h5py.string_dtype())]))
        g.attrs.create("rref", data=np.array([d.regionref[1:3], d.regionref[[0, 5, 9]]], dtype=h5py.regionref_dtype), dtype=h5py.regionref_dtype)
        g.attrs.create("oref", data=np.array([d.ref, g.ref, f.ref], dtype=h5py.ref_dtype), dtype=h5py.ref_dtype)
        g.attrs.create("arr2d", data=np.arange(12, dtype=">u2").reshape(2, 2, 3), dtype=np.dtype((">u2", (2, 3))))
        g.attrs.create("enum_be", data=np.array([1, 0], ">i2"), dtype=h5py.enum_dtype({"a": 0, "b": 1}, basetype=">i2"))
        g.attrs.create("opaque", data=np.void(b"\x00\x01\x02"))
        g.attrs.create("vstr_list", data=["a", "bb", "ççç"], dtype=h5py.string_dtype())
        g.attrs.create("bytes_vlen", data=[b"a\xffb"], dtype=h5py.string_dtype("ascii"))
        g.attrs.create("f16", data=np.array([1.5, -2], "<f2"))
        g.attrs.create("c8be", data=np.array([1 + 2j], ">c8"))
        g.attrs.create("u64max", data=np.uint64(2**64 - 1))
        g.attrs.create("i64min", data=np.int64(-(2**63)))
        g.attrs.create("empty_str", data=np.bytes_(""))
        g.attrs.create("rank3_empty", data=np.zeros((2, 0, 3), "<i4"))
        raw_attr(g, "bitfield", h5t.STD_B8LE, (3,), b"\x01\x02\xff")
        many = f.create_group("many", track_order=True)
        for i in range(1000):
            many.attrs[f"a{i}"] = i


@wild("odd_names_and_links")
def odd_names_and_links(path: Path) -> None:
    """Names a URL must escape or a path parser may trip on (spaces, ``..``, ``%2F``, ``?``,
    ``#``, ``&``, ``+``, backslash, tab, newline, emoji, quotes), as links and as attribute
    names (``a/b``, ``.``, ``/`` too); compound members and enum names with spaces and dots;
    cycles of hard links (to a parent, to the root, to itself), relative, ``..`` and dangling
    soft links, external links to the file itself and to a missing file, a committed type
    with two names, 60 links in tracked (reversed) creation order."""
    names = ["with space", " lead", "trail ", "dot.dot", "..", "...", "a%2Fb", "q?x=1&y=2", "hash#x", "plus+sign", "back\\slash",
             "tab\tname", "nl\nname", "emoji😀", "semi;colon", 'quote"s', "apos's", "<tag>", "pct%", "%", "~tilde", "star*", "colon:x", "a" * 300]
    with h5py.File(path, "w", libver="latest", track_order=True) as f:
        odd = f.create_group("odd")
        for i, name in enumerate(names):
            odd.create_dataset(name, data=[i])
            odd.attrs[name] = i
        for i, name in enumerate(["a/b", ".", "/"]):
            f.attrs[name] = i
        odd.create_group("sub.grp")["x"] = h5py.SoftLink("/odd/with space")
        f["soft to odd"] = h5py.SoftLink("/odd/q?x=1&y=2")
        f["ext odd"] = h5py.ExternalLink("other file#.h5", "/path with space")
        f.create_dataset("cmp_names", data=np.ones(2, [("a b", "<i4"), ("c.d", "<f4"), ("é", "u1")]))
        f.create_dataset("enum_names", data=np.array([0, 1], "u1"), dtype=h5py.enum_dtype({"a b": 0, "ü.x": 1}, basetype="u1"))
        a = f.create_group("a", track_order=True)
        b = a.create_group("b")
        b["up"], b["root"], a["self"] = a, f["/"], a
        f["dangling"] = h5py.SoftLink("/nowhere/at/all")
        f["relative"] = h5py.SoftLink("a/b")
        f["dotdot"] = h5py.SoftLink("../a")
        f["ext_self"] = h5py.ExternalLink(path.name, "/a")
        f["ext_missing"] = h5py.ExternalLink("missing.h5", "/x")
        for i in range(60):
            f.create_dataset(f"d{59 - i}", data=[i])
        f["committed"] = np.dtype("<i4")
        a["committed_hard"] = f["committed"]


@wild("big_endian_everything")
def big_endian_everything(path: Path) -> None:
    """Big-endian integers, floats (half too) and complex numbers, chunked with gzip and
    shuffle and as attributes; a big-endian compound (with an array and a nested compound)
    with a compound fill value; a vlen, an array and an enum of big-endian bases; scale-offset
    of big-endian integers and floats."""
    with h5py.File(path, "w") as f:
        for t in (">i1", ">u2", ">i4", ">u8", ">f2", ">f4", ">f8", ">c16"):
            f.create_dataset("ch_" + t[1:], data=_vals((10, 7), t), chunks=(3, 3), compression="gzip", shuffle=True)
            f.attrs["a_" + t[1:]] = _vals((3,), t)
        cmp = np.dtype([("a", ">i4"), ("b", ">f8", (2,)), ("c", [("d", ">u2")])])
        f.create_dataset("be_cmp", data=np.zeros(4, cmp), chunks=(2,), fillvalue=np.array((7, (1.5, 2.5), (3,)), cmp))
        seqs = np.empty(2, dtype=object)
        seqs[0], seqs[1] = np.array([1, 2], ">i4"), np.array([3], ">i4")
        f.create_dataset("be_vlen", data=seqs, dtype=h5py.vlen_dtype(">i4"))
        f.create_dataset("be_arr", data=np.ones(2, np.dtype((">f4", (2, 2)))))
        f.create_dataset("be_enum", data=np.array([1, 2], ">u4"), dtype=h5py.enum_dtype({"x": 1, "y": 2}, basetype=">u4"))
        f.create_dataset("be_so", data=_vals((50,), ">i4"), chunks=(10,), scaleoffset=0)
        f.create_dataset("be_so_f", data=_vals((50,), ">f8") / 7, chunks=(10,), scaleoffset=2)


@wild("filters_alone")
def filters_alone(path: Path) -> None:
    """Filters without deflate: fletcher32 alone, shuffle alone, shuffle + fletcher32 + gzip 9,
    a mandatory N-bit filter (flags 0) of a 16-bit integer at offset 8, scale-offset of an
    unsigned type with a fill value, an optional deflate; compound fill values, chunked and
    contiguous."""
    with h5py.File(path, "w") as f:
        f.create_dataset("fletcher_only", data=_vals((30, 10)), chunks=(7, 10), fletcher32=True)
        f.create_dataset("shuffle_only", data=_vals((30, 10), "<i8"), chunks=(7, 10), shuffle=True)
        f.create_dataset("shuffle_fletcher_gzip9", data=_vals((30, 10), "<u2"), chunks=(7, 3), shuffle=True, fletcher32=True, compression="gzip", compression_opts=9)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT, 0, ())
        t = h5t.STD_I32LE.copy()
        t.set_precision(16)
        t.set_offset(8)
        raw_dataset(f, "nbit_mandatory", t, (25,), (np.arange(25, dtype="<i4") << 8).tobytes(), dcpl)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_scaleoffset(h5py.h5z.SO_INT, 0)
        dcpl.set_fill_value(np.array(5, "<u2"))
        raw_dataset(f, "so_u2_fill", h5t.STD_U16LE, (25,), (np.arange(25, dtype="<u2") * 100).tobytes(), dcpl)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(h5py.h5z.FILTER_DEFLATE, h5py.h5z.FLAG_OPTIONAL, (1,))
        raw_dataset(f, "deflate_optional", h5t.STD_I32LE, (25,), np.arange(25, dtype="<i4").tobytes(), dcpl)
        ct = np.dtype([("a", "<i2"), ("b", "<f8"), ("s", "S3")])
        f.create_dataset("cmp_fill", shape=(10,), chunks=(4,), dtype=ct, fillvalue=np.array((-1, 2.5, b"xy"), ct))
        f["cmp_fill"][4] = (1, 1.0, b"a")
        f.create_dataset("cmp_fill_contiguous", shape=(4,), dtype=ct, fillvalue=np.array((9, -0.5, b"zz"), ct))


@wild("types_both_layouts")
def types_both_layouts(path: Path) -> None:
    """Every fixed-size type class chunked (gzip) and contiguous, so linked datasets of each are
    read by byte range: fixed strings, opaque, enum, a big-endian array type, a compound of
    half float, complex, string, array and bool members, half floats, big-endian complex,
    a big-endian bitfield; plugin filters (zstd, lz4, bitshuffle, blosc with bitshuffle,
    bzip2, reversible ZFP); an object header churned by deleted and re-added attributes."""
    with h5py.File(path, "w", libver="latest") as f:
        for lay in ("chunked", "contig"):
            kw: dict[str, object] = {"chunks": (3,), "compression": "gzip"} if lay == "chunked" else {}
            f.create_dataset(f"{lay}/fixstr", data=np.array([b"a", b"bcd", b""] * 3, "S5"), **kw)
            f.create_dataset(f"{lay}/opaque", data=np.array([b"\x01\x02\x03\x04"] * 9, "V4"), **kw)
            f.create_dataset(f"{lay}/enum", data=np.arange(9, dtype="i1") % 3, dtype=h5py.enum_dtype({"a": 0, "b": 1, "c": 2}, "i1"), **kw)
            f.create_dataset(f"{lay}/array", shape=(9,), dtype=np.dtype((">i2", (2, 3))), **kw)[...] = _vals((9, 2, 3), ">i2")
            cmp = np.dtype([("a", ">f2"), ("b", "<c16"), ("c", "S3"), ("d", ">u8", (2,)), ("e", "?")])
            z = np.zeros(9, cmp)
            z["a"], z["b"], z["c"], z["e"] = np.arange(9), np.arange(9) * (1 + 1j), b"xyz", np.arange(9) % 2
            z["d"] = [[i, 2**64 - 1] for i in range(9)]
            f.create_dataset(f"{lay}/compound", data=z, **kw)
            f.create_dataset(f"{lay}/f16", data=_vals((9,), "<f2") / 3, **kw)
            f.create_dataset(f"{lay}/c8be", data=(_vals((9,)) + 1j).astype(">c8"), **kw)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            if lay == "chunked":
                dcpl.set_chunk((3,))
                dcpl.set_deflate(1)
            raw_dataset(f[lay], "bitfield", h5t.STD_B32BE, (9,), bytes(range(36)), dcpl)
        f.create_dataset("plug/zstd", data=_vals((50, 40)), chunks=(10, 10), **hdf5plugin.Zstd())
        f.create_dataset("plug/lz4", data=_vals((50, 40)), chunks=(10, 10), **hdf5plugin.LZ4())
        f.create_dataset("plug/bitshuffle", data=_vals((50, 40), "<i4"), chunks=(10, 10), **hdf5plugin.Bitshuffle())
        f.create_dataset("plug/blosc_bitshuffle", data=_vals((50, 40), ">f8"), chunks=(10, 10), **hdf5plugin.Blosc(cname="zstd", shuffle=hdf5plugin.Blosc.BITSHUFFLE))
        f.create_dataset("plug/bzip2", data=_vals((50, 40), ">f8"), chunks=(10, 10), **hdf5plugin.BZip2())
        f.create_dataset("plug/zfp_reversible", data=_vals((50, 40), "<f8"), chunks=(10, 10), **hdf5plugin.Zfp(reversible=True))
        d = f.create_dataset("churn", data=np.arange(4))
        for i in range(40):
            d.attrs[f"x{i}"] = np.arange(i)
        for i in range(0, 40, 2):
            del d.attrs[f"x{i}"]
        for i in range(5):
            d.attrs[f"y{i}"] = "again" * i


@wild("hdf5_tools_output")
def hdf5_tools_output(path: Path) -> None:
    """A file as HDF5's own tools leave it: repacked by ``h5repack`` with paged aggregation
    (``-S PAGE -G 4096``, persisted free space) and a group copied in by ``h5copy``, then a
    user block of 1120 bytes added by ``h5jam`` (padded to 2048, every address shifted)."""
    work = path.with_name(path.stem + "_work")
    work.mkdir(exist_ok=True)
    src = work / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("a", data=_vals((100, 50)), chunks=(25, 25), compression="gzip")
        f.create_dataset("b", data=np.arange(1000, dtype="<i8"))
        f.create_dataset("c", data=_vals((30,), "<i2"))
        f.attrs["note"] = "repacked"
        f.create_group("g").attrs["x"] = np.arange(3)
    paged = work / "paged.h5"
    subprocess.run(["h5repack", "-S", "PAGE", "-G", "4096", "-P", "1", str(src), str(paged)], check=True, capture_output=True)
    subprocess.run(["h5copy", "-i", str(src), "-o", str(paged), "-s", "/g", "-d", "/deep/copied", "-p"], check=True, capture_output=True)
    block = work / "ub.txt"
    block.write_bytes(b"USER BLOCK TEXT\n" * 70)
    subprocess.run(["h5jam", "-i", str(paged), "-u", str(block), "-o", str(path)], check=True, capture_output=True)


# -- further families of files (docs/fidelity.md, "Files from elsewhere, read through h5pyd") --

STRUCT_METADATA = """GROUP=SwathStructure
\tGROUP=SWATH_1
\t\tSwathName="Swath1"
\t\tGROUP=Dimension
\t\t\tOBJECT=Dimension_1
\t\t\t\tDimensionName="nTimes"
\t\t\t\tSize=4
\t\t\tEND_OBJECT=Dimension_1
\t\t\tOBJECT=Dimension_2
\t\t\t\tDimensionName="nXtrack"
\t\t\t\tSize=5
\t\t\tEND_OBJECT=Dimension_2
\t\tEND_GROUP=Dimension
\tEND_GROUP=SWATH_1
END_GROUP=SwathStructure
GROUP=GridStructure
\tGROUP=GRID_1
\t\tGridName="Grid1"
\t\tXDim=6
\t\tYDim=3
\t\tUpperLeftPointMtrs=(-180000000.000000,90000000.000000)
\t\tLowerRightMtrs=(180000000.000000,-90000000.000000)
\t\tProjection=HE5_GCTP_GEO
\t\tGridOrigin=HE5_HDFE_GD_UL
\tEND_GROUP=GRID_1
END_GROUP=GridStructure
END
"""

@wild("hdfeos5")
def hdfeos5(path: Path) -> None:
    """HDF-EOS5 as the HE5 library writes it: /HDFEOS/{SWATHS,GRIDS}, /HDFEOS INFORMATION with
    StructMetadata.0 as a 32000-byte NULLTERM scalar string dataset, HDFEOSVersion, swath
    Geolocation/Data Fields with _FillValue, MissingValue, ScaleFactor attributes of their own
    types, a grid field with chunked deflate, a dimension-list-free layout, names with spaces."""
    with h5py.File(path, "w") as f:
        info = f.create_group("HDFEOS INFORMATION")
        raw_attr(info, "HDFEOSVersion", string_type(32, h5t.STR_NULLTERM), (), b"HDFEOS_5.1.16".ljust(32, b"\0"))
        raw_dataset(info, "StructMetadata.0", string_type(32000, h5t.STR_NULLTERM), (), STRUCT_METADATA.encode().ljust(32000, b"\0"))
        eos = f.create_group("HDFEOS")
        add = eos.create_group("ADDITIONAL/FILE_ATTRIBUTES")
        add.attrs["InstrumentName"] = np.bytes_("OMI")
        add.attrs.create("OrbitNumber", np.array([12345], ">i4"))
        sw = eos.create_group("SWATHS/Swath1")
        geo = sw.create_group("Geolocation Fields")
        lat = geo.create_dataset("Latitude", data=np.linspace(-80, 80, 20, dtype="f4").reshape(4, 5), chunks=(2, 5), compression="gzip")
        lat.attrs["_FillValue"] = np.float32(-1.0e30)
        lat.attrs["Units"] = np.bytes_("deg")
        lat.attrs["Title"] = np.bytes_("Geodetic Latitude")
        geo.create_dataset("Time", data=np.arange(4, dtype=">f8") * 2.5e8)
        dfl = sw.create_group("Data Fields")
        packed = dfl.create_dataset("Radiance", data=(np.arange(20, dtype="i2").reshape(4, 5) * 37) - 300, fillvalue=-32767, chunks=(4, 5), shuffle=True, compression="gzip")
        packed.attrs["ScaleFactor"] = np.float64(0.01)
        packed.attrs["Offset"] = np.float64(0.0)
        packed.attrs["MissingValue"] = np.array([-32767], "i2")
        packed.attrs["_FillValue"] = np.array([-32767], "i2")
        packed.attrs["UniqueFieldDefinition"] = np.bytes_("OMI-Specific")
        gr = eos.create_group("GRIDS/Grid1/Data Fields")
        gf = gr.create_dataset("Temperature", data=np.arange(18, dtype="<f4").reshape(3, 6), chunks=(3, 3), compression="gzip", compression_opts=6, fillvalue=-9999.0)
        gf.attrs["_FillValue"] = np.float32(-9999.0)
        eos.create_group("ZAS")
        eos.create_group("POINTS")


@wild("matlab_v73")
def matlab_v73(path: Path) -> None:
    """A MATLAB v7.3 .mat file as MATLAB writes it: the 512-byte user block; doubles stored
    transposed with MATLAB_class; a char array as uint16 with MATLAB_int_decode 2; logical as
    uint8; complex as a compound (real, imag); a struct as a group (MATLAB_class struct,
    MATLAB_fields a vlen of 1-char strings); a struct array with fields of references; a
    sparse matrix (data, ir, jc, MATLAB_sparse); empty arrays (MATLAB_empty, a shape array);
    a cell of cells through /#refs#; int8, uint64 and single classes."""
    vchar = h5py.vlen_dtype(np.dtype("S1"))
    def fields(names):
        arr = np.empty(len(names), dtype=object)
        for i, n in enumerate(names):
            arr[i] = np.array(list(n.encode()), dtype="S1").view("S1")
        return arr
    with h5py.File(path, "w", userblock_size=512, libver="earliest") as f:
        refs = f.create_group("#refs#")
        a = refs.create_dataset("a", data=np.array([0, 0], "<u8"))
        a.attrs["MATLAB_class"] = np.bytes_("canonical empty")
        a.attrs["MATLAB_empty"] = np.uint8(1)
        x = f.create_dataset("x", data=np.arange(12, dtype="<f8").reshape(4, 3).T)
        x.attrs["MATLAB_class"] = np.bytes_("double")
        s = f.create_dataset("s", data=np.array([[ord(c)] for c in "hello"], "<u2").T)
        s.attrs["MATLAB_class"] = np.bytes_("char")
        s.attrs["MATLAB_int_decode"] = np.int32(2)
        b = f.create_dataset("flag", data=np.array([[1, 0, 1]], "u1"))
        b.attrs["MATLAB_class"] = np.bytes_("logical")
        b.attrs["MATLAB_int_decode"] = np.int32(1)
        cplx = np.zeros((2, 2), dtype=[("real", "<f8"), ("imag", "<f8")])
        cplx["real"], cplx["imag"] = [[1, 2], [3, 4]], [[-1, 0], [0.5, 9]]
        c = f.create_dataset("z", data=cplx)
        c.attrs["MATLAB_class"] = np.bytes_("double")
        for name, dt in (("i8", "<i1"), ("u64", "<u8"), ("single", "<f4")):
            d = f.create_dataset(name, data=np.arange(6, dtype=dt).reshape(2, 3))
            d.attrs["MATLAB_class"] = np.bytes_({"i8": "int8", "u64": "uint64", "single": "single"}[name])
        st = f.create_group("st")
        st.attrs["MATLAB_class"] = np.bytes_("struct")
        st.attrs.create("MATLAB_fields", data=fields(["alpha", "b"]), dtype=vchar)
        st.create_dataset("alpha", data=np.array([[3.5]])).attrs["MATLAB_class"] = np.bytes_("double")
        e = st.create_dataset("b", data=np.array([0, 0], "<u8"))
        e.attrs["MATLAB_class"] = np.bytes_("double")
        e.attrs["MATLAB_empty"] = np.uint8(1)
        # struct array: each field a (1, n) array of references into #refs#
        sa = f.create_group("sa")
        sa.attrs["MATLAB_class"] = np.bytes_("struct")
        sa.attrs.create("MATLAB_fields", data=fields(["v"]), dtype=vchar)
        items = [refs.create_dataset(f"v{i}", data=np.full((1, i + 1), float(i))) for i in range(3)]
        for it in items:
            it.attrs["MATLAB_class"] = np.bytes_("double")
        sa.create_dataset("v", data=np.array([[it.ref for it in items]], dtype=h5py.ref_dtype))
        # sparse 3x4 with 3 nonzeros
        sp = f.create_group("sp")
        sp.attrs["MATLAB_class"] = np.bytes_("double")
        sp.attrs["MATLAB_sparse"] = np.uint64(3)
        sp.create_dataset("data", data=np.array([1.0, 2.0, 3.0]))
        sp.create_dataset("ir", data=np.array([0, 2, 1], "<u8"))
        sp.create_dataset("jc", data=np.array([0, 1, 1, 2, 3], "<u8"))
        # cell of cells
        inner = refs.create_dataset("inner", data=np.array([[items[0].ref, a.ref]], dtype=h5py.ref_dtype))
        inner.attrs["MATLAB_class"] = np.bytes_("cell")
        outer = f.create_dataset("cc", data=np.array([[inner.ref], [items[2].ref]], dtype=h5py.ref_dtype))
        outer.attrs["MATLAB_class"] = np.bytes_("cell")
        em = f.create_dataset("empty_str", data=np.array([0, 0], "<u8"))
        em.attrs["MATLAB_class"] = np.bytes_("char")
        em.attrs["MATLAB_empty"] = np.uint8(1)
    _write_user_block(path, MATLAB_HEADER)


@wild("xarray_cf")
def xarray_cf(path: Path) -> None:
    """xarray's CF encodings through netCDF4 and h5netcdf: packed int16 with scale_factor,
    add_offset and _FillValue, times as 'days since' int64 with calendar, timedeltas, a string
    dimension coordinate, a bool (int8 with dtype attribute), NaN fills, a 2-D coordinate,
    a grouped dataset, chunked and compressed encodings."""
    import pandas as pd
    import xarray as xr
    t = pd.date_range("2000-01-01", periods=5, freq="D")
    temp = np.linspace(-5, 30, 15).reshape(5, 3)
    temp[1, 1] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "station"), temp, {"units": "degC", "long_name": "temperature"}),
            "ok": (("time",), np.array([True, False, True, True, False])),
            "lag": (("time",), pd.to_timedelta(np.arange(5), unit="h")),
            "grid": (("y", "x"), np.arange(6.0).reshape(2, 3)),
        },
        coords={"time": t, "station": ["north", "süd", "e"], "lon": (("y", "x"), np.arange(6.0).reshape(2, 3) + 100)},
        attrs={"Conventions": "CF-1.8", "history": "made by xarray"},
    )
    enc = {
        "temp": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 10.0, "_FillValue": -32768, "zlib": True, "chunksizes": (2, 3)},
        "time": {"units": "days since 1999-12-31", "calendar": "proleptic_gregorian", "dtype": "int64"},
        "grid": {"_FillValue": None},
    }
    ds.to_netcdf(path, engine="netcdf4", encoding=enc)
    sub = xr.Dataset({"v": (("n",), np.array([1.5, np.nan], "f4"))}, coords={"n": [10, 20]})
    sub.to_netcdf(path, mode="a", group="sub/deeper", engine="h5netcdf", encoding={"v": {"compression": "gzip", "_FillValue": np.float32(-1)}})


@wild("keras3_weights")
def keras3_weights(path: Path) -> None:
    """Keras 3 files as its saving code writes them with h5py: a ``.weights.h5`` tree of
    ``layers/<name>/vars/<i>`` with empty ``vars`` groups for layers without weights, the
    optimizer's variables, and a legacy ``.h5`` whose layer_names/weight_names attributes are
    byte-string arrays long enough to be split (``weight_names0``, ``weight_names1``: Keras
    splits attributes over 64 KiB), and a top-level attribute of a JSON model config."""
    with h5py.File(path, "w") as f:
        layers = f.create_group("layers")
        for name, shapes in (("dense", [(4, 3), (3,)]), ("dropout", []), ("dense_1", [(3, 1), (1,)])):
            vars_ = layers.create_group(name).create_group("vars")
            for i, shape in enumerate(shapes):
                vars_.create_dataset(str(i), data=np.arange(int(np.prod(shape)), dtype="f4").reshape(shape))
        opt = f.create_group("optimizer").create_group("vars")
        opt.create_dataset("0", data=np.int64(7))
        for i in range(1, 5):
            opt.create_dataset(str(i), data=np.zeros((2,), "f4"))
        f.create_group("vars")
        legacy = f.create_group("legacy")
        names = [f"layer_with_a_long_name_{i:05d}".encode() for i in range(3000)]
        legacy.attrs["layer_names0"] = np.array(names[:2000], dtype="S30")
        legacy.attrs["layer_names1"] = np.array(names[2000:], dtype="S30")
        legacy.attrs["model_config"] = json.dumps({"class_name": "Functional", "layers": [{"n": i} for i in range(200)]})
        legacy.attrs["keras_version"] = "3.15.1"


@wild("attribute_sizes")
def attribute_sizes(path: Path) -> None:
    """Attributes of every size class (libver latest): tiny ones in the object header, one just
    under the 64 KiB header-message limit, and ones over it (100 KiB, 400 KiB) that HDF5 keeps
    only in dense storage (a fractal heap), on a group, a dataset and the root; h5py Empty
    attributes of every kind of type; a large vlen string attribute."""
    with h5py.File(path, "w", libver="latest") as f:
        for obj in (f, f.create_group("g"), f.create_dataset("d", data=np.arange(4))):
            obj.attrs["tiny"] = np.int8(1)
            obj.attrs["near_64k"] = np.arange(8000, dtype="<f8")  # 64000 bytes
            obj.attrs["over_64k"] = np.arange(100_000 // 8, dtype="<f8")
            obj.attrs["big_ints"] = np.arange(100_000, dtype="<u4")
        f["g"].attrs["long_text"] = "x" * 200_000
        f["g"].attrs["long_fixed"] = np.bytes_(b"y" * 70_000)
        e = f.create_group("empties")
        for name, dt in (("f4", "<f4"), ("i8", ">i8"), ("S5", "S5"), ("vstr", h5py.string_dtype()), ("bytes_vstr", h5py.string_dtype("ascii")),
                         ("cmp", np.dtype([("a", "<i4"), ("b", "S2")])), ("enum", h5py.enum_dtype({"a": 0, "b": 1}, "u1")), ("vlen", h5py.vlen_dtype("<i2")),
                         ("bool", "?"), ("c16", "<c16"), ("opaque", "V3"), ("ref", h5py.ref_dtype)):
            e.attrs.create(name, h5py.Empty(np.dtype(dt)))
        raw_attr(e, "arr", h5t.array_create(h5t.STD_I16LE, (2,)), None)


@wild("link_storage")
def link_storage(path: Path, links: int = 3000) -> None:
    """Link storage at scale and in odd shapes: a group of 3000 links (12 000 in dev/corpus_check.py runs: same forms) with tracked,
    indexed order
    (dense storage, a fractal heap and two v2 B-trees), compact-to-dense phase change thresholds
    set by hand, soft-link loops (a to b to a, a self loop, a chain through a group), external
    links to a missing file and to a missing object, object headers grown into continuation
    blocks (attributes added after later objects) in both file formats."""
    with h5py.File(path, "w", libver=("v110", "latest"), track_order=True) as f:
        big = f.create_group("big", track_order=True)
        for i in range(links):
            big[f"l{links - 1 - i:05d}"] = h5py.SoftLink(f"/t{i % 3}")
        for i in range(3):
            f.create_dataset(f"t{i}", data=[i])
        gcpl = h5p.create(h5p.GROUP_CREATE)
        gcpl.set_attr_phase_change(2, 1)
        gcpl.set_link_creation_order(h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)
        ph = h5py.Group(h5py.h5g.create(f.id, b"phase", gcpl=gcpl))
        for i in range(5):
            ph.create_group(f"p{4 - i}")
        f["loop_a"] = h5py.SoftLink("/loop_b")
        f["loop_b"] = h5py.SoftLink("/loop_a")
        f["self"] = h5py.SoftLink("/self")
        g = f.create_group("chain")
        g["back"] = h5py.SoftLink("/chain/through/back")
        g["through"] = h5py.SoftLink("/chain")
        f["ext_missing_file"] = h5py.ExternalLink("no_such_file.h5", "/x")
        f["ext_missing_obj"] = h5py.ExternalLink(path.name, "/no/such/object")
        objs = [f.create_dataset(f"grow{i}", data=np.arange(3)) for i in range(4)]
        for round_ in range(6):
            for o in objs:
                o.attrs[f"r{round_}"] = np.arange(20 * round_, dtype="<i4")


@wild("vlen_edges")
def vlen_edges(path: Path) -> None:
    """Variable-length data at its edges: datasets whose every element is of length 0 (vlen of
    ints, vlen strings, chunked with gzip), a ragged vlen of compounds (with a string member and
    an empty element) chunked and contiguous, a vlen of compounds in an attribute, vlen strings
    with a fill value, a 2-D vlen of big-endian floats, fixed strings NULLPAD and SPACEPAD with
    their padding bytes and UTF-8, datasets allocated early (H5D_ALLOC_TIME_EARLY) with fill
    values, chunked and contiguous, never written."""
    pair = np.dtype([("id", "<i4"), ("x", ">f8"), ("tag", "S3")])
    with h5py.File(path, "w", libver="v110") as f:
        zero = np.empty(5, dtype=object)
        for i in range(5):
            zero[i] = np.array([], "<i4")
        f.create_dataset("zero_len_ints", data=zero, dtype=h5py.vlen_dtype("<i4"), chunks=(2,), compression="gzip")
        f.create_dataset("zero_len_strs", data=[""] * 4, dtype=h5py.string_dtype())
        f.create_dataset("zero_len_bytes", data=[b""] * 3, dtype=h5py.string_dtype("ascii"), chunks=(3,))
        rag = np.empty(4, dtype=object)
        rag[0] = np.array([(1, 1.5, b"a"), (2, -2.5, b"bcd")], pair)
        rag[1] = np.array([], pair)
        rag[2] = np.array([(3, np.nan, b"")], pair)
        rag[3] = np.array([(i, i / 3, b"zz") for i in range(50)], pair)
        f.create_dataset("ragged_cmp_chunked", data=rag, dtype=h5py.vlen_dtype(pair), chunks=(2,), compression="gzip", shuffle=True)
        f.create_dataset("ragged_cmp_contig", data=rag, dtype=h5py.vlen_dtype(pair))
        f.attrs.create("ragged_cmp", data=rag[:3], dtype=h5py.vlen_dtype(pair))
        f.create_dataset("vstr_fill", shape=(4,), dtype=h5py.string_dtype(), fillvalue="none", chunks=(2,))[:] = ["", "one", "two", ""]
        v2 = np.empty((2, 2), dtype=object)
        for i in range(4):
            v2.flat[i] = np.arange(i, dtype=">f4")
        f.create_dataset("vlen_2d_be", data=v2, dtype=h5py.vlen_dtype(">f4"))
        raw_dataset(f, "nullpad", string_type(5, h5t.STR_NULLPAD), (3,), b"ab\0\0\0abcde\0\0\0\0\0")
        raw_dataset(f, "spacepad", string_type(5, h5t.STR_SPACEPAD), (3,), b"ab   abcde     ")
        raw_dataset(f, "spacepad_utf8", string_type(6, h5t.STR_SPACEPAD, h5t.CSET_UTF8), (2,), "é     ".encode()[:6] + "ñé    ".encode()[:6])
        raw_attr(f, "spacepad_attr", string_type(4, h5t.STR_SPACEPAD), (2,), b"a   bb  ")
        for layout in ("chunked", "contig"):
            dcpl = h5p.create(h5p.DATASET_CREATE)
            if layout == "chunked":
                dcpl.set_chunk((3,))
            dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
            dcpl.set_fill_value(np.array(-5, "<i2"))
            raw_dataset(f, f"early_{layout}", h5t.STD_I16LE, (7,), None, dcpl)
            dcpl2 = h5p.create(h5p.DATASET_CREATE)
            if layout == "chunked":
                dcpl2.set_chunk((3,))
            dcpl2.set_alloc_time(h5d.ALLOC_TIME_EARLY)
            dcpl2.set_fill_value(np.array((1, 2.0, b"f"), pair))
            raw_dataset(f, f"early_cmp_{layout}", h5t.py_create(pair), (4,), None, dcpl2)


@wild("storage_odds")
def storage_odds(path: Path) -> None:
    """The 1.8 file format (libver earliest): a chunk far larger than its unlimited extent,
    chunks allocated early with gzip and never (or partly) written, compact datasets of vlen
    strings and of a compound holding one, scale-offset with shuffle, a 4000-byte attribute
    name and a 3000-byte group name, object headers grown into continuation blocks, one
    dataset hard-linked from 200 groups, a partly written chunked compound with a vlen string,
    an empty extendible vlen dataset with gzip, a uint64 fill of 2**64 - 1 and a NaN fill of a
    big-endian float. (h5py 3.16 writes a compound fill value holding a vlen string as a bad
    heap pointer: HDF5 then cannot read that dataset's creation properties, which the load now
    names, tests/linked/test_fresh_wild.py.)"""
    pair = np.dtype([("id", "<i4"), ("s", h5py.string_dtype())])
    with h5py.File(path, "w", libver="earliest") as f:
        # chunks larger than the extent, unlimited
        f.create_dataset("big_chunk", data=np.arange(3, dtype="<f8"), chunks=(1000,), maxshape=(None,), compression="gzip")
        # early alloc, gzip, never written
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_deflate(5)
        dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_value(np.array(7, "<i4"))
        raw_dataset(f, "early_gzip", h5t.STD_I32LE, (10,), None, dcpl)
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_deflate(5)
        dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_value(np.array(7, "<i4"))
        raw_dataset(f, "early_gzip_part", h5t.STD_I32LE, (10,), None, dcpl)
        f["early_gzip_part"][5] = 1
        # compact vlen strings and compact compound with vlen
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_layout(h5d.COMPACT)
        d = h5d.create(f.id, b"compact_vstr", h5t.py_create(h5py.string_dtype(), logical=True), h5s.create_simple((3,)), dcpl=dcpl)
        h5py.Dataset(d)[:] = ["a", "", "ccc"]
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_layout(h5d.COMPACT)
        d = h5d.create(f.id, b"compact_cmp_vstr", h5t.py_create(pair, logical=True), h5s.create_simple((2,)), dcpl=dcpl)
        h5py.Dataset(d)[:] = np.array([(1, "x"), (2, "yy")], pair)
        # scaleoffset + fletcher32
        f.create_dataset("so_fletcher", data=np.arange(100, dtype="<i4"), chunks=(30,), scaleoffset=0, shuffle=True)
        # long names
        f.attrs["n" * 4000] = 1
        f.create_group("g" * 3000)
        # object header continuation in the 1.8 format
        objs = [f.create_dataset(f"grow{i}", data=np.arange(3)) for i in range(3)]
        for r in range(8):
            for o in objs:
                o.attrs[f"r{r}"] = np.arange(50 * r, dtype="<i4")
        # a dataset linked from many groups
        shared = f.create_dataset("shared", data=[1, 2])
        for i in range(200):
            f.create_group(f"h/{i}")["x"] = shared
        # fill value of a vlen compound and a chunked vlen-compound dataset partly written
        f.create_dataset("cmp_vstr_part", shape=(6,), chunks=(2,), dtype=pair, compression="gzip")[0:2] = np.array([(1, "a"), (2, "b")], pair)
        # zero-extent with unlimited, vlen, gzip
        f.create_dataset("empty_vlen", shape=(0,), maxshape=(None,), chunks=(4,), dtype=h5py.vlen_dtype("<i2"), compression="gzip")
        # integer with a fill outside its sign range written as bytes, uint64 max fill
        f.create_dataset("u64fill", shape=(5,), dtype="<u8", fillvalue=2**64 - 1, chunks=(2,))
        f.create_dataset("f_nan_fill", shape=(5,), dtype=">f4", fillvalue=np.nan, chunks=(2,))[0] = 1



@wild("types_odds")
def types_odds(path: Path) -> None:
    """Small odd cases: 2-D and empty vlen string attributes, an empty vlen attribute, bool and
    enum fill values, a committed vlen string type used by an attribute, an opaque type without
    a tag, a dataset 60 groups deep, rank-32 datasets (HDF5's largest rank; chunked with gzip
    too), 1-byte UTF-8 strings, a scalar vlen, float specials (inf, -0.0, NaN, subnormals) in a
    dataset and an attribute. (A maximum extent of 0 comes back unlimited: docs/fidelity.md.)"""
    with h5py.File(path, "w", libver="latest") as f:
        f.attrs.create("vstr_2d", data=np.array([["a", "bb"], ["", "dddd"]], dtype=object), dtype=h5py.string_dtype())
        f.attrs.create("vstr_empty", data=np.array([], dtype=object), dtype=h5py.string_dtype())
        f.attrs.create("vlen_empty_shape", data=np.empty(0, dtype=object), dtype=h5py.vlen_dtype("<i4"))
        f.create_dataset("bool_fill", shape=(5,), dtype="?", fillvalue=True, chunks=(2,))[0] = False
        et = h5py.enum_dtype({"lo": -1, "hi": 7}, basetype="<i2")
        f.create_dataset("enum_fill", shape=(5,), dtype=et, fillvalue=7, chunks=(2,))[0] = -1
        f["vstr_t"] = h5py.string_dtype()
        f.attrs.create("uses_vstr_t", data=["x", "yy"], dtype=f["vstr_t"])
        raw_dataset(f, "opaque_notag", h5t.create(h5t.OPAQUE, 3), (2,), b"abcdef")
        g = f
        for i in range(60):
            g = g.create_group(f"level{i}")
        g.create_dataset("deep", data=[1])
        f.create_dataset("rank32", data=np.arange(2, dtype="<i2").reshape((2,) + (1,) * 31))
        f.create_dataset("rank32_chunked", data=np.arange(4, dtype="<i2").reshape((2, 2) + (1,) * 30), chunks=(1,) * 32, compression="gzip")
        raw_dataset(f, "utf8_1", string_type(1, h5t.STR_NULLTERM, h5t.CSET_UTF8), (3,), b"a\0b")
        f.create_dataset("scalar_vlen", shape=(), dtype=h5py.vlen_dtype("<i8"))[()] = np.array([1, 2, 3], "<i8")
        f.create_dataset("float_specials", data=np.array([np.inf, -np.inf, -0.0, np.nan, 5e-324, np.finfo("f8").max]))
        f.attrs["float_specials"] = np.array([np.inf, -np.inf, -0.0, np.nan, 5e-324], "<f4")

def build_wild(directory: Path, optional: bool = False) -> dict[str, Path]:
    """Every builder's file in ``directory``; with ``optional`` also those of OPTIONAL whose
    library imports (the others are left out, and named on stderr)."""
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, builder in [*WILD.items(), *(OPTIONAL.items() if optional else ())]:
        path = directory / f"w_{name}.h5"
        try:
            builder(path)
        except ImportError as exc:
            if name not in OPTIONAL:
                raise
            print(f"corpus_wild: {name} left out ({exc})", file=sys.stderr)
            continue
        out[name] = path
    return out


if __name__ == "__main__":
    for name, p in build_wild(Path(sys.argv[1]), optional=True).items():
        print(name, p)
