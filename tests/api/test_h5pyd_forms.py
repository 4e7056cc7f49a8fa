"""Through h5pyd (issue 11): fancy indexing with unsorted, repeated and several index lists,
scalar reads, szip, dataset initializers, and queries on 1-D non-compound datasets."""

from __future__ import annotations

import numpy as np
from tests.api.test_h5pyd_metadata import open_file


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
