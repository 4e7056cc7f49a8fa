"""A domain with one object of every kind the view shows, loaded from an h5py file with
``h5lake load`` (so the page and the h5grove routes are checked against h5py's own values)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pytest
import requests
from tests.conftest import auth
from tests.support.h5web_file import make_file as make_h5web_file
from tests.support.server import USERS

LONG_SPIKES = [3_333_337, 6_666_673]


def make_file(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "view test"
        f.attrs["version"] = np.array([1, 2, 3], dtype="i4")
        f.create_dataset("line", data=np.sin(np.linspace(0, 12, 1000)) * 5 + 1)
        g = f.create_group("images")
        image = (np.arange(40 * 60, dtype="f4").reshape(40, 60) % 97) - 20.5
        d = g.create_dataset("image", data=image, chunks=(16, 16), compression="gzip")
        d.attrs["units"] = "counts"
        base = np.arange(20 * 30, dtype="i2").reshape(20, 30)
        g.create_dataset("cube", data=np.stack([(base % (11 + 7 * k)) * (k + 1) for k in range(5)]))  # unlike slices
        rows = np.array(
            [(1, b"alpha", 0.5), (2, b"beta", 1.5), (3, b"gamma", -2.25), (4, b"delta", 8.0)],
            dtype=[("id", "<i4"), ("name", "S8"), ("value", "<f8")],
        )
        f.create_dataset("table", data=rows)
        f.create_dataset("names", data=["red", "green", "blue"], dtype=h5py.string_dtype())
        f.create_dataset("scalar", data=3.25)
        spiky = np.cos(np.linspace(0, 9, 500)) * 3
        spiky[[40, 41]] = np.inf
        spiky[300] = -np.inf
        spiky[100:120] = np.nan
        f.create_dataset("spiky", data=spiky)
        waves = f.create_dataset("waves", data=np.array([1 + 2j, 3 - 4.5j, -0.5 + 0j]))
        waves.attrs["notes"] = "Sample 7, beam at 12 keV; " * 200  # a long text
        waves.attrs["gain"] = 2 - 1.5j
        f.create_dataset("impedance", data=np.complex128(3 - 0.25j))  # a complex scalar
        rows, cols = np.meshgrid(np.arange(20) * 12, np.arange(30) * 8, indexing="ij")
        photo = f.create_dataset("photo", data=np.stack([rows, cols, np.full((20, 30), 200)], axis=-1).astype("u1"))
        photo.attrs["CLASS"] = np.bytes_("IMAGE")  # HDF5's image convention, as h5py users write it
        photo.attrs["IMAGE_SUBCLASS"] = np.bytes_("IMAGE_TRUECOLOR")
        f.create_dataset("matrix", data=np.arange(12 * 130, dtype="i4").reshape(12, 130))
        # 10^7 points (76 MiB, more than one read takes whole) with spikes no stride lands on
        long = np.tile(np.sin(np.linspace(0, 2 * np.pi, 1000, endpoint=False)), 10_000)
        long[LONG_SPIKES] = (1000.0, -800.0)
        long[1_234_567] = np.inf
        long[5_000_000:5_020_000] = np.nan
        f.create_dataset("long", data=long, chunks=(1 << 20,), compression="gzip", compression_opts=1, shuffle=True)
        for name, values in (("photo16", rows * 256 + cols), ("photo_i8", rows - 128), ("photo_f", rows / 255.0)):
            # true-colour images of other types: 16-bit, signed 8-bit, floats
            planes = np.stack([values, np.flip(values, axis=1), np.full((20, 30), values.max())], axis=-1)
            dtype = {"photo16": "u2", "photo_i8": "i1", "photo_f": "f4"}[name]
            image = f.create_dataset(name, data=planes.astype(dtype))
            image.attrs["CLASS"] = np.bytes_("IMAGE")
            image.attrs["IMAGE_SUBCLASS"] = np.bytes_("IMAGE_TRUECOLOR")
        # true colour with alpha (RGBA), and channels as planes (INTERLACE_PLANE: channels x rows x columns)
        alpha = np.tile(np.linspace(0, 255, 30).round(), (20, 1))
        rgba = f.create_dataset("photo_rgba", data=np.stack([rows, cols, np.full((20, 30), 90), alpha], axis=-1).astype("u1"))
        planes = f.create_dataset("photo_planes", data=np.stack([cols, np.full((20, 30), 40), rows]).astype("u1"))
        for image in (rgba, planes):
            image.attrs["CLASS"] = np.bytes_("IMAGE")
            image.attrs["IMAGE_SUBCLASS"] = np.bytes_("IMAGE_TRUECOLOR")
        rgba.attrs["INTERLACE_MODE"] = np.bytes_("INTERLACE_PIXEL")
        planes.attrs["INTERLACE_MODE"] = np.bytes_("INTERLACE_PLANE")
        # six decades, with values a log scale cannot place (0 and a negative one)
        decades = 10 ** np.linspace(-2, 4, 200)
        decades[90:100] = 0
        decades[150] = -5
        f.create_dataset("decades", data=decades)
        # an image with dimension scales: rows evenly spaced, columns not (their squares); and
        # one whose column scale is of the wrong length
        scaled = f.create_dataset("scaled", data=np.arange(12 * 16, dtype="f4").reshape(12, 16))
        depth = f.create_dataset("depth", data=10 + 0.5 * np.arange(12))
        depth.make_scale("depth (m)")
        times = f.create_dataset("times", data=np.arange(16.0) ** 2)
        times.make_scale("")
        scaled.dims[0].attach_scale(depth)
        scaled.dims[1].attach_scale(times)
        scaled.dims[1].label = "time"
        odd = f.create_dataset("odd_scale", data=np.arange(12 * 20, dtype="f4").reshape(12, 20))
        odd.dims[0].attach_scale(depth)
        odd.dims[1].attach_scale(times)  # 16 values for 20 columns
        f.create_dataset("big_scalar", shape=(), dtype=("f8", (1500, 1500)))  # one 18 MB value: too big to show
        many = f.create_group("many")  # more members than the tree shows open
        for i in range(150):
            many.create_group(f"m{i:03d}")
        f["mytype"] = np.dtype("<i8")
        # 64-bit integers a JavaScript number cannot hold exactly
        wide = f.create_dataset("wide_ints", data=np.array([[2**63 + 12345, 2**64 - 1, 7]], dtype="<u8"))
        wide.attrs["offset"] = np.int64(-(2**62) - 3)
        f.create_dataset("int64_min", data=np.int64(-(2**63)))
        f["alias"] = h5py.SoftLink("/line")
    return path


@dataclass(frozen=True)
class ViewDomain:
    endpoint: str
    domain: str
    file: Path


@pytest.fixture(scope="session")
def view_domain(endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> ViewDomain:
    r = requests.put(endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=auth("test_user1"))
    assert r.status_code in (201, 409), r.text
    source = make_file(tmp_path_factory.mktemp("view") / "view.h5")
    domain = f"/home/test_user1/view-{uuid.uuid4().hex[:8]}.h5"
    subprocess.run(
        [sys.executable, "-m", "h5lake.cli.command", "load", str(source), domain,
         "-e", endpoint, "-u", "test_user1", "-p", USERS["test_user1"]],
        check=True, capture_output=True, timeout=300,
    )
    return ViewDomain(endpoint, domain, source)


@pytest.fixture(scope="session")
def h5web_domain(endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> ViewDomain:
    """tests/support/h5web_file.py's file (one of everything H5Web shows), loaded as a domain."""
    r = requests.put(endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=auth("test_user1"))
    assert r.status_code in (201, 409), r.text
    source = make_h5web_file(tmp_path_factory.mktemp("h5web") / "h5web.h5")
    domain = f"/home/test_user1/h5web-{uuid.uuid4().hex[:8]}.h5"
    subprocess.run(
        [sys.executable, "-m", "h5lake.cli.command", "load", str(source), domain,
         "-e", endpoint, "-u", "test_user1", "-p", USERS["test_user1"]],
        check=True, capture_output=True, timeout=300,
    )
    return ViewDomain(endpoint, domain, source)
