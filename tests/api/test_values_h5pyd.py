"""Dataset values through h5pyd: numpy-style indexing, resize, compound fields, vlen, filters."""

from __future__ import annotations

import subprocess
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import pytest
from click.testing import CliRunner
from tests.api.test_h5pyd_metadata import open_file
from tests.support.server import USERS

from h5lake.cli.command import main


def test_full_and_hyperslab(endpoint: str, domain: str) -> None:
    data = np.arange(120 * 70, dtype="f4").reshape(120, 70)
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("d", data=data, chunks=(32, 16))
    with open_file(endpoint, domain, "r") as f:
        d = f["d"]
        np.testing.assert_array_equal(d[...], data)
        np.testing.assert_array_equal(d[10:20, ::4], data[10:20, ::4])
        np.testing.assert_array_equal(d[-5:, 3], data[-5:, 3])
        assert d[3, 4] == data[3, 4]
        np.testing.assert_array_equal(d[0:3, [0, 2, 50]], data[0:3, [0, 2, 50]])


def test_partial_writes_and_fill(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("d", (50, 40), dtype="i4", chunks=(8, 8), fillvalue=-7)
        d[5:9, 3:30] = 1
        d[6, :] = np.arange(40)
    expect = np.full((50, 40), -7, "i4")
    expect[5:9, 3:30] = 1
    expect[6, :] = np.arange(40)
    with open_file(endpoint, domain, "r") as f:
        np.testing.assert_array_equal(f["d"][...], expect)


def test_points(endpoint: str, domain: str) -> None:
    data = np.arange(1000, dtype="i8").reshape(10, 100)
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("d", data=data, chunks=(3, 30))
    with open_file(endpoint, domain, "r+") as f:
        d = f["d"]
        np.testing.assert_array_equal(d[5, [1, 2, 70]], data[5, [1, 2, 70]])
        d[[1, 3], 0] = [-1, -2]
    with open_file(endpoint, domain, "r") as f:
        got = f["d"][:, 0]
        assert got[1] == -1 and got[3] == -2 and got[2] == 200


def test_resize_and_unlimited(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("d", (0, 3), maxshape=(None, 3), dtype="f8", chunks=(4, 3))
        for i in range(5):
            d.resize((i + 1) * 2, axis=0)
            d[i * 2 : (i + 1) * 2] = i
    with open_file(endpoint, domain, "r") as f:
        d = f["d"]
        assert d.shape == (10, 3)
        np.testing.assert_array_equal(d[:, 0], np.repeat(np.arange(5.0), 2))


def test_compound_and_fields(endpoint: str, domain: str) -> None:
    dt = np.dtype([("a", "<i4"), ("b", ">f8"), ("s", "S5")])
    data = np.zeros(20, dt)
    data["a"] = np.arange(20)
    data["b"] = np.linspace(0, 1, 20)
    data["s"] = [b"x%d" % i for i in range(20)]
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("t", data=data, chunks=(7,))
    with open_file(endpoint, domain, "r+") as f:
        t = f["t"]
        np.testing.assert_array_equal(t[...], data)
        np.testing.assert_array_equal(t["b"], data["b"])
        t[0:3, "a"] = np.array([100, 101, 102], "<i4")  # type: ignore[index]
    with open_file(endpoint, domain, "r") as f:
        got = f["t"][...]
        assert got["a"][:4].tolist() == [100, 101, 102, 3]
        assert got["s"][1] == b"x1"


def test_vlen_strings_and_sequences(endpoint: str, domain: str) -> None:
    strings = np.array(["alpha", "", "ünïcode", "x" * 300], dtype=h5pyd.string_dtype())
    with open_file(endpoint, domain, "w") as f:
        s = f.create_dataset("s", (4,), dtype=h5pyd.string_dtype())
        s[...] = strings
        v = f.create_dataset("v", (3,), dtype=h5pyd.vlen_dtype(np.dtype("i2")))
        v[0] = np.array([1, 2, 3], "i2")
        v[2] = np.array([9], "i2")
    with open_file(endpoint, domain, "r") as f:
        got = [x.decode() if isinstance(x, bytes) else x for x in f["s"][...]]
        assert got == list(strings)
        v = f["v"][...]
        assert list(v[0]) == [1, 2, 3] and list(v[2]) == [9]


@pytest.mark.parametrize(
    "opts",
    [
        dict(compression="gzip", compression_opts=6, shuffle=True),
        dict(compression="lzf"),
        dict(fletcher32=True, compression="gzip"),
    ],
)
def test_filters(endpoint: str, domain: str, opts: dict) -> None:  # type: ignore[type-arg]
    data = np.random.default_rng(0).normal(size=(64, 64)).astype("f4")
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("d", data=data, chunks=(16, 16), **opts)
    with open_file(endpoint, domain, "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)
        np.testing.assert_array_equal(f["d"][3:40:3, 60:], data[3:40:3, 60:])


@pytest.mark.parametrize("level", [1, 4, 9])
def test_gzip_shuffle_of_noisy_floats_is_read_by_hdf5_after_export(
    endpoint: str, domain: str, tmp_path: Path, level: int
) -> None:
    # chunks of 256 KiB whose shuffled low bytes are noise: the deflate encoder stores those
    # as they are (chunks/codecs/deflate.py); HDF5 (h5py and h5dump) must read the chunks as
    # exported, byte for byte, and h5pyd through the server
    rng = np.random.default_rng(level)
    y, x = np.mgrid[0:600, 0:700] / 64.0
    data = (np.sin(x) * np.cos(y) + rng.normal(0, 0.01, (600, 700))).astype("<f4")
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("d", (600, 700), dtype="<f4", chunks=(256, 256),
                             compression="gzip", compression_opts=level, shuffle=True)
        d[...] = data
    with open_file(endpoint, domain, "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)
    target = tmp_path / "out.h5"
    creds = ["-e", endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    done = CliRunner().invoke(main, ["export", domain, str(target), *creds])
    assert done.exit_code == 0, done.output
    with h5py.File(target, "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)
        assert f["d"].compression == "gzip" and f["d"].compression_opts == level and f["d"].shuffle
        _, chunk = f["d"].id.read_direct_chunk((0, 0))
        assert len(chunk) < 0.9 * 256 * 256 * 4  # compressed, not stored whole
    dumped = tmp_path / "d.bin"
    subprocess.run(["h5dump", "-d", "/d", "-b", "LE", "-o", str(dumped), str(target)],
                   check=True, capture_output=True)
    np.testing.assert_array_equal(np.fromfile(dumped, dtype="<f4").reshape(600, 700), data)


def test_scalar_dataset(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("x", data=np.float64(3.25))
        f.create_dataset("s", data="a scalar string")
    with open_file(endpoint, domain, "r") as f:
        assert f["x"][()] == 3.25
        s = f["s"][()]
        assert (s.decode() if isinstance(s, bytes) else s) == "a scalar string"
