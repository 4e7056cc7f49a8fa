"""Files as other libraries write them, beyond tests/support/corpus_extra.py: each builder uses
the library that writes such files in the wild (netCDF4, h5netcdf, PyTables, pandas, anndata)
or h5py as that library would (Keras weights, NeXus), plus HDF5 storage forms h5py reaches only
with its low-level API (dense attribute storage, szip, arrays of compounds, vlens of vlens).

``WILD`` maps a name to a builder writing one small file; ``build_wild(directory)`` writes them all.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
from h5py import h5t

from tests.roundtrip.corpus import raw_attr, raw_dataset, string_type

Builder = Callable[[Path], None]
WILD: dict[str, Builder] = {}
# Builders whose library cannot live in the test environment: anndata needs pandas < 3, which
# the test extra's pandas is not. tools/corpus_check.py runs them where the library imports.
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
            ev = nc.create_variable("level", ("x",), dtype=et)
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
        store.put("fixed", frame, format="fixed")
        store.put("table", frame, format="table", data_columns=["i", "s"], complevel=5, complib="zlib")
        store.append("grown", frame.iloc[:6], format="table", min_itemsize={"s": 8})
        store.append("grown", frame.iloc[6:], format="table")
        store.put("series", pd.Series(np.arange(5.0), index=list("abcde")))
        cat = pd.DataFrame({"c": pd.Categorical(["x", "y", "x", "z"]), "v": [1, 2, 3, 4]})
        store.put("categorical", cat, format="table")
        store.put("timed", pd.DataFrame({"v": np.arange(4)}, index=pd.date_range("2020", periods=4, tz="UTC")), format="fixed")


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
