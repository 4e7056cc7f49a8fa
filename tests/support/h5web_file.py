"""An HDF5 file with one of everything H5Web shows, made with h5py: groups and attributes,
1-D/2-D/3-D numeric datasets of several types (half, long double, big-endian, 64-bit), compound,
strings, booleans, complex, enum, opaque, vlen, array types, scalars, an empty dataset, soft,
dangling and external links, an RGB image with ``CLASS=IMAGE`` and NeXus ``NXdata`` groups.

Used by the h5grove tests (tests/view/test_h5grove_h5web.py) and by dev/h5web_check.py, which
browses it with the stock H5Web app.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np


def make_file(path: Path) -> Path:
    """One of every kind of object H5Web shows."""
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "H5Web check"
        f.attrs["version"] = np.array([1, 2, 3], dtype="i4")
        f.attrs["flag"] = np.bool_(True)
        f.attrs["ratio"] = np.float32(0.5)
        f.attrs["z"] = np.complex128(1 + 2j)
        f.attrs["nothing"] = h5py.Empty("f4")
        f.attrs["default"] = "entry"
        d = f.create_group("data")
        d.attrs["description"] = "numeric and other datasets"
        x = np.linspace(0, 12, 500)
        line = d.create_dataset("line", data=np.sin(x) * 5 + 1)
        line.attrs["units"] = "mm"
        img = (np.add.outer(np.arange(50), np.arange(80)) % 37).astype("f4") - 10.5
        d.create_dataset("image", data=img, chunks=(16, 16), compression="gzip")
        base = np.arange(30 * 40, dtype="i2").reshape(30, 40)
        d.create_dataset("cube", data=np.stack([(base % (7 + 3 * k)) * (k + 1) for k in range(6)]))
        d.create_dataset("int64", data=np.arange(-50, 50, dtype="i8") ** 3)
        d.create_dataset("uint8", data=np.arange(200, dtype="u1"))
        d.create_dataset("half", data=np.linspace(-1, 1, 64, dtype="f2"))
        d.create_dataset("bigendian", data=np.arange(100, dtype=">i4") * 7)
        d.create_dataset("ldouble", data=np.linspace(0, 1, 16).astype(np.longdouble))
        rows = np.array([(1, b"alpha", 0.5), (2, b"beta", 1.5), (3, b"gamma", -2.25)],
                        dtype=[("id", "<i4"), ("name", "S8"), ("value", "<f8")])
        d.create_dataset("compound", data=rows)
        d.create_dataset("strings", data=["red", "grün", "blue"], dtype=h5py.string_dtype())
        d.create_dataset("fixed_strings", data=np.array([b"one", b"two", b"three"], dtype="S6"))
        d.create_dataset("bools", data=np.array([True, False, True, True]))
        d.create_dataset("bools2d", data=np.arange(12).reshape(3, 4) % 3 == 0)
        d.create_dataset("complex", data=np.exp(1j * x[:100]))
        d.create_dataset("complex2d", data=(np.add.outer(np.arange(20), 1j * np.arange(30))).astype("c8"))
        colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1")
        d.create_dataset("enum", data=np.array([0, 1, 2, 1, 0], dtype="u1"), dtype=colors)
        d.create_dataset("opaque", data=np.array([b"\x01\x02\x03\x04"] * 3, dtype="V4"))
        d.create_dataset("vlen_ints", data=np.array([np.arange(3), np.arange(5)], dtype=object),
                         dtype=h5py.vlen_dtype("i4"))
        d.create_dataset("array_type", data=np.zeros(4, dtype=np.dtype(("<f4", (3,)))))
        d.create_dataset("scalar", data=3.25)
        d.create_dataset("scalar_int", data=np.int32(-7))
        d.create_dataset("scalar_str", data="hello", dtype=h5py.string_dtype())
        d.create_dataset("scalar_bool", data=np.bool_(False))
        d.create_dataset("scalar_complex", data=np.complex64(3 - 4j))
        d.create_dataset("empty", data=h5py.Empty("f4"))
        links = f.create_group("links")
        links["soft"] = h5py.SoftLink("/data/line")
        links["dangling"] = h5py.SoftLink("/nowhere")
        links["external"] = h5py.ExternalLink("other.h5", "/some/path")
        images = f.create_group("images")
        yy, xx = np.mgrid[0:60, 0:80]
        rgb = np.stack([xx * 3, yy * 4, (xx + yy) * 2], axis=-1).astype("u1")
        im = images.create_dataset("rgb", data=rgb)
        im.attrs["CLASS"] = np.bytes_("IMAGE")
        im.attrs["IMAGE_VERSION"] = np.bytes_("1.2")
        im.attrs["IMAGE_SUBCLASS"] = np.bytes_("IMAGE_TRUECOLOR")
        im.attrs["INTERLACE_MODE"] = np.bytes_("INTERLACE_PIXEL")
        entry = f.create_group("entry")
        entry.attrs["NX_class"] = "NXentry"
        entry.attrs["default"] = "map"
        nxmap = entry.create_group("map")
        nxmap.attrs["NX_class"] = "NXdata"
        nxmap.attrs["signal"] = "counts"
        nxmap.attrs["axes"] = np.array(["y", "x"], dtype=h5py.string_dtype())
        counts = nxmap.create_dataset("counts", data=img * 2)
        counts.attrs["long_name"] = "Counts"
        nxmap.create_dataset("x", data=np.linspace(-1, 1, 80)).attrs["units"] = "mm"
        nxmap.create_dataset("y", data=np.linspace(0, 5, 50)).attrs["units"] = "mm"
        spectrum = entry.create_group("spectrum")
        spectrum.attrs["NX_class"] = "NXdata"
        spectrum.attrs["signal"] = "intensity"
        spectrum.attrs["axes"] = "energy"
        spectrum.create_dataset("intensity", data=np.exp(-((x - 6) ** 2)))
        spectrum.create_dataset("intensity_errors", data=np.full(500, 0.05))
        spectrum.create_dataset("energy", data=x * 100).attrs["units"] = "eV"
        stack = entry.create_group("stack")
        stack.attrs["NX_class"] = "NXdata"
        stack.attrs["signal"] = "frames"
        stack.attrs["interpretation"] = "image"
        stack.create_dataset("frames", data=np.stack([img * k for k in range(1, 5)]))
        f["named_type"] = np.dtype("<i8")
    return path
