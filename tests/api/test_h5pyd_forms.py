"""Through h5pyd (issue 11): fancy indexing with unsorted, repeated and several index lists,
scalar reads, szip, dataset initializers, and queries on 1-D non-compound datasets."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from tests.api.test_h5pyd_metadata import open_file

pytestmark = pytest.mark.one_backend  # h5pyd's request forms, the same on every store


def test_fancy_indexing_unsorted_repeated_and_paired(endpoint: str, domain: str) -> None:
    data = np.arange(60, dtype="i4").reshape(3, 4, 5)
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("d", data=data)
        f.create_dataset("v", data=np.arange(10.0))
    with open_file(endpoint, domain, "r+") as f:
        d, v = f["d"], f["v"]
        np.testing.assert_array_equal(d[[2, 0, 1], :, 1], data[[2, 0, 1], :, 1])
        np.testing.assert_array_equal(d[1, [3, 3, 0], 1:4], data[1, [3, 3, 0], 1:4])
        np.testing.assert_array_equal(d[:, 1:3, [4, 0, 4, 2]], data[:, 1:3, [4, 0, 4, 2]])
        np.testing.assert_array_equal(v[[5, 1, 5, 9]], np.arange(10.0)[[5, 1, 5, 9]])
        np.testing.assert_array_equal(d[[0, 2], 1, [1, 3]], data[[0, 2], 1, [1, 3]])
        d[[2, 0], :, 0] = -np.ones((2, 4), dtype="i4")
        data[[2, 0], :, 0] = -1
    with open_file(endpoint, domain, "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)


def test_scalar_reads_with_empty_tuple_and_tuples(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("s", data=42)
        f.create_dataset("d", data=np.arange(20).reshape(4, 5))
    with open_file(endpoint, domain, "r") as f:
        assert f["s"][()] == 42 and f["s"][...] == 42
        assert f["d"][(1, 2)] == 7 and f["d"][1, 2] == 7
        assert f["d"][()].shape == (4, 5)
        np.testing.assert_array_equal(f["d"][(slice(1, 3), 2)], [7, 12])


def test_szip_and_initializer_datasets(endpoint: str, domain: str) -> None:
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("z", data=np.arange(100, dtype="i4"), compression="szip", chunks=(20,))
        f.create_dataset("a", (20,), dtype="i8", initializer="arange", initializer_opts=["--start=5", "--step=3"])
    with open_file(endpoint, domain, "r") as f:
        np.testing.assert_array_equal(f["z"][...], np.arange(100))
        assert f["z"].compression == "szip"
        np.testing.assert_array_equal(f["a"][...], np.arange(5, 65, 3))


def test_queries_on_one_dimensional_plain_datasets(endpoint: str, domain: str) -> None:
    values = np.arange(10.0)
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("v", data=values)
    with open_file(endpoint, domain, "r+") as f:
        v = f["v"]
        # evaluated by the server (GET value?query=)
        np.testing.assert_array_equal(v.__getitem__(slice(2, 9), query="(_ > 2) & (_ < 8)"), [3, 4, 5, 6, 7])
        np.testing.assert_array_equal(v.__getitem__(slice(None), query="_ > 6"), [7, 8, 9])
        # Dataset.query: indices of the matches
        assert v.query("_ > 7").reshape(-1).tolist() == [8, 9]
        assert v.query("(_ > 2) & (_ < 8)", selection=slice(3, 9), limit=2).reshape(-1).tolist() == [3, 4]


def test_a_chunk_of_one_large_element(endpoint: str, domain: str) -> None:
    """h5pyd's ``chunks=True`` for 100 MB elements asks for chunks of one element (100 MB, over
    ``--max-chunk-bytes``): the smallest chunk there is, so it is taken (as HSDS takes it)."""
    with open_file(endpoint, domain, "w") as f:
        d = f.create_dataset("big", shape=(3,), dtype="S100000000", chunks=True)
        assert d.chunks == (1,)
        d[1] = b"one large element"
    with open_file(endpoint, domain, "r") as f:
        assert f["big"].chunks == (1,)
        assert f["big"][1] == b"one large element"
        assert f["big"][0] == b""


CHUNKS = (25, 100)


def test_scaleoffset_is_applied_as_hdf5_applies_it(endpoint: str, domain: str, tmp_path: Path) -> None:
    """The scale-offset filter is lossy in HDF5, and h5lake applies it: values read back are
    exactly what h5py reads back from a file written with the same filter (HSDS ignores the
    filter and gives the written values back; h5pyd's own suite expects that: docs/api.md)."""
    rng = np.random.default_rng(35)
    floats = (rng.random((100, 300)) - 0.5) * 20 * 10**4
    ints = rng.integers(1, 2**13 - 1, size=(100, 300)).astype(np.int32)  # 13 bits, stored in 12: lossy
    with h5py.File(tmp_path / "ref.h5", "w") as ref:
        ref.create_dataset("f", data=floats, scaleoffset=4, chunks=CHUNKS)  # the offset is each chunk's minimum
        ref.create_dataset("i", data=ints, scaleoffset=12, chunks=CHUNKS)
    with h5py.File(tmp_path / "ref.h5", "r") as ref:
        want_f, want_i = ref["f"][...], ref["i"][...]
    assert not (want_f == floats).all() and not (want_i == ints).all()  # HDF5's filter is lossy here
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("f", floats.shape, dtype=float, scaleoffset=4, chunks=CHUNKS)[...] = floats
        f.create_dataset("i", ints.shape, dtype=np.int32, scaleoffset=12, chunks=CHUNKS)[...] = ints
    with open_file(endpoint, domain, "r") as f:
        assert f["f"].scaleoffset == 4 and f["i"].scaleoffset == 12
        np.testing.assert_array_equal(f["f"][...], want_f)
        got_i = f["i"][...]
    # HDF5 counts its default fill value (0) as defined and decodes the all-ones code as that fill;
    # h5lake's parameters for a dataset without an explicit fill value do not (docs/api.md), so
    # the elements HDF5 turned into 0 are left out (0 is no value written here)
    coded = want_i != 0
    assert coded.mean() > 0.99
    np.testing.assert_array_equal(got_i[coded], want_i[coded])
