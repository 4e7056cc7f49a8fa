"""More HDF5 files as other projects write them, beside the round-trip corpus (tests/roundtrip/corpus.py).

File-level and storage features that corpus does not vary: every chunk index of the 1.10 file
format (single chunk, implicit, fixed array, extensible array, version 2 B-tree) and the
version 1 B-tree of the earliest format, SWMR-written files, free-space paging, many links
(compact and dense link storage), very long names, PyTables CArray/EArray/nested tables with
blosc2 and zlib, netCDF-4 enums/vlen/compound types. ``build_extra(directory)`` writes them all.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np

Builder = Callable[[Path], None]
EXTRA: dict[str, Builder] = {}


def extra(name: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        EXTRA[name] = fn
        return fn

    return register


def _values(shape: tuple[int, ...], dtype: str = "<f4") -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 251).reshape(shape).astype(dtype)


@extra("chunk_indexes_latest")
def chunk_indexes_latest(path: Path) -> None:
    """libver latest: HDF5 picks the chunk index from the maxshape and the filters."""
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("single_chunk", data=_values((20, 30)), chunks=(20, 30))
        f.create_dataset("single_chunk_gzip", data=_values((20, 30)), chunks=(20, 30), compression="gzip")
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 8))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)  # implicit index: early allocation, no filter
        space = h5py.h5s.create_simple((20, 30))
        implicit = h5py.h5d.create(f.id, b"implicit", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
        implicit.write(h5py.h5s.ALL, h5py.h5s.ALL, _values((20, 30)))
        f.create_dataset("fixed_array", data=_values((40, 30), "<i2"), chunks=(8, 8), compression="gzip")
        f.create_dataset("extensible_array", data=_values((40, 30), ">i4"), chunks=(8, 8), maxshape=(None, 30), shuffle=True, compression="gzip")
        f.create_dataset("btree_v2", data=_values((40, 30), "<f8"), chunks=(8, 8), maxshape=(None, None), compression="lzf")
        f.create_dataset("btree_v2_sparse", shape=(100, 100), dtype="<u2", chunks=(10, 10), maxshape=(None, None), fillvalue=7)
        f["btree_v2_sparse"][55:65, 3] = 9
        f.create_group("g", track_order=True).attrs["x"] = 1


@extra("chunk_index_earliest")
def chunk_index_earliest(path: Path) -> None:
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("btree_v1", data=_values((40, 30), "<f8"), chunks=(8, 8), maxshape=(None, None), compression="gzip")
        f.create_dataset("partial", shape=(50,), dtype="<i4", chunks=(10,), fillvalue=-1)
        f["partial"][12:18] = 5


@extra("swmr")
def swmr(path: Path) -> None:
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset("stream", shape=(0, 4), maxshape=(None, 4), chunks=(16, 4), dtype="<f8")
        f.create_dataset("counter", data=np.arange(3))
        f.swmr_mode = True
        for i in range(5):
            d.resize((i + 1) * 7, axis=0)
            d[i * 7 :] = _values((7, 4), "<f8") + i
            d.flush()


@extra("paged")
def paged(path: Path) -> None:
    with h5py.File(path, "w", fs_strategy="page", fs_persist=True, fs_page_size=4096, libver="latest") as f:
        f.create_dataset("a", data=_values((100, 50)), chunks=(25, 25), compression="gzip")
        f.create_dataset("b", data=np.arange(1000, dtype="<i8"))
        del f["b"]
        f.create_dataset("c", data=np.arange(30, dtype="<i2"))
        f.attrs["note"] = "free-space paging"


@extra("many_links")
def many_links(path: Path) -> None:
    with h5py.File(path, "w") as f:
        g = f.create_group("dense")
        for i in range(10_000):
            g[f"link{i:05d}"] = h5py.SoftLink(f"/target{i % 3}")
        for i in range(3):
            f.create_group(f"target{i}")
        h = f.create_group("hard_many")
        d = f.create_dataset("shared", data=[1, 2, 3])
        for i in range(300):
            h[f"d{i}"] = d
        a = f.create_group("attrs_dense")
        for i in range(200):
            a.attrs[f"attr{i:03d}"] = i


@extra("long_names")
def long_names(path: Path) -> None:
    with h5py.File(path, "w") as f:
        long = "n" * 2000
        g = f.create_group(long)
        g.create_dataset("x" * 1000, data=[1.5])
        g.attrs["a" * 1000] = "v" * 5000
        f[long + "_soft"] = h5py.SoftLink("/" + long + "/" + "x" * 1000)
        f.create_group("ключ/データ/🙂")
        f["ключ"].attrs["ü" * 100] = np.arange(3)


@extra("pytables_arrays")
def pytables_arrays(path: Path) -> None:
    """PyTables CArray/EArray with blosc2 (PyTables' default compressor since 3.8) and zlib,
    and a Table with nested columns."""
    import tables

    class Inner(tables.IsDescription):
        x = tables.Float32Col()
        y = tables.Int16Col(shape=(2,))

    class Row(tables.IsDescription):
        name = tables.StringCol(5)
        inner = Inner()
        when = tables.Time64Col()

    with tables.open_file(str(path), "w") as f:
        f.create_carray("/", "carray_zlib", obj=_values((60, 40)), filters=tables.Filters(complevel=5, complib="zlib", shuffle=True))
        f.create_carray("/", "carray_blosc", obj=_values((60, 40), "<i8"), filters=tables.Filters(complevel=5, complib="blosc:lz4"))
        f.create_carray("/", "carray_blosc2", obj=_values((60, 40), "<f8"), filters=tables.Filters(complevel=5, complib="blosc2:zstd"))
        e = f.create_earray("/", "earray_blosc2", atom=tables.Int32Atom(), shape=(0, 5), filters=tables.Filters(complevel=3, complib="blosc2"))
        e.append(_values((30, 5), "<i4"))
        t = f.create_table("/", "nested", Row, filters=tables.Filters(complevel=1, complib="zlib"))
        row = t.row
        for i in range(50):
            row["name"], row["inner/x"], row["inner/y"], row["when"] = f"r{i}".encode(), i / 7, (i, -i), 1.6e9 + i
            row.append()
        t.flush()
        vl = f.create_vlarray("/", "vlstrings", tables.VLUnicodeAtom())
        vl.append("héllo")
        vl.append("")


@extra("netcdf4_types")
def netcdf4_types(path: Path) -> None:
    import netCDF4

    with netCDF4.Dataset(str(path), "w", format="NETCDF4") as nc:
        nc.createDimension("n", None)
        nc.createDimension("m", 3)
        cloud = nc.createEnumType(np.uint8, "cloud_t", {"clear": 0, "cumulus": 1, "stratus": 2, "missing": 255})
        v = nc.createVariable("cloud", cloud, ("n",), fill_value=255)
        v[:] = np.array([0, 2, 1, 255], dtype="u1")
        vl = nc.createVLType(np.int32, "ragged_t")
        r = nc.createVariable("ragged", vl, ("m",))
        r[0], r[1], r[2] = np.array([1, 2], "i4"), np.array([], "i4"), np.array([3, 4, 5], "i4")
        cmp = nc.createCompoundType(np.dtype([("a", "<f8"), ("b", "<i2")]), "pair_t")
        c = nc.createVariable("pairs", cmp, ("m",))
        c[:] = np.array([(1.5, 1), (2.5, 2), (3.5, 3)], dtype=[("a", "<f8"), ("b", "<i2")])
        s = nc.createVariable("labels", str, ("m",))
        s[:] = np.array(["a", "ßb", ""], dtype=object)
        big = nc.createVariable("big_endian", ">f8", ("n", "m"), zlib=True, endian="big", chunksizes=(2, 3))
        big[:] = _values((4, 3), ">f8")
        nc.setncattr_string("strattr", ["x", "yz"])
        g = nc.createGroup("nested").createGroup("deeper")
        g.createDimension("k", 2)
        g.createVariable("k", "i8", ("k",))[:] = [10, 20]


@extra("h5py_misc")
def h5py_misc(path: Path) -> None:
    """h5py features not in the round-trip corpus: bool arrays, float16 compound members,
    vlen attributes, references in attributes, empty datasets of every kind, dims with labels."""
    with h5py.File(path, "w") as f:
        f.create_dataset("bools", data=np.array([True, False, True]))
        f.create_dataset("f16_compound", data=np.zeros(3, dtype=[("h", "<f2"), ("c", "<c8"), ("b", "?")]))
        f.attrs.create("vlen_ints", data=np.array([np.array([1, 2], "i4"), np.array([3], "i4")], dtype=object), dtype=h5py.vlen_dtype("i4"))
        f.attrs["ref"] = f.create_group("target").ref
        f.create_dataset("empty_null", data=h5py.Empty("<i4"))
        f.create_dataset("zero_rows", shape=(0, 4), maxshape=(None, 4), dtype="<f8", chunks=(10, 4))
        f.create_dataset("scalar_str", data="scalar")
        sv = f.create_dataset("scalar_vlen", shape=(), dtype=h5py.vlen_dtype("i2"))
        sv[()] = np.array([1, 2, 3], dtype="i2")
        x = f.create_dataset("x", data=np.arange(4.0))
        x.make_scale("x")
        d = f.create_dataset("field", data=_values((4, 5)))
        d.dims[0].attach_scale(x)
        d.dims[0].label = "xlabel"
        d.dims[1].label = "y"
        f.create_dataset("filled_never", shape=(6,), dtype="<i4", chunks=(3,), fillvalue=5)
        f["filled_never"][:3] = 1
        if hdf5plugin.FILTERS.get("blosc2"):
            f.create_dataset("blosc2", data=_values((50, 50)), chunks=(10, 50), **hdf5plugin.Blosc2(cname="zstd"))


@extra("virtual")
def virtual(path: Path) -> None:
    """Virtual datasets (loaded as ordinary datasets holding their values): two source files,
    a source in the same file, a fill value where no mapping reaches."""
    sources = []
    for i in range(2):
        source = path.with_name(f"{path.stem}_src{i}.h5")
        with h5py.File(source, "w") as f:
            f.create_dataset("data", data=np.arange(10, dtype="<i4") + 100 * i)
        sources.append(source)
    layout = h5py.VirtualLayout(shape=(3, 10), dtype="<i4")
    for i, source in enumerate(sources):
        layout[i] = h5py.VirtualSource(source.name, "data", shape=(10,))
    with h5py.File(path, "w") as f:
        f.create_dataset("local", data=np.arange(5, dtype="<i4"))
        f.create_virtual_dataset("stacked", layout, fillvalue=-1)
        own = h5py.VirtualLayout(shape=(5,), dtype="<i4")
        own[:] = h5py.VirtualSource(".", "local", shape=(5,))
        f.create_virtual_dataset("same_file", own)


def build_extra(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, builder in EXTRA.items():
        path = directory / f"x_{name}.h5"
        builder(path)
        out[name] = path
    return out
