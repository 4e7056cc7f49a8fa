"""Reducing regions for plots (``model.reduce``): exact envelopes, block means, index parsing."""

from __future__ import annotations

import numpy as np
import pytest

from h5lake.errors import InvalidInput
from h5lake.model.reduce import (
    array_stats,
    block_mean,
    image_targets,
    min_max,
    parse_index,
    steps_for,
    strided,
)


def test_min_max_keeps_the_envelope_in_index_order() -> None:
    rng = np.random.default_rng(3)
    data = rng.normal(size=1003)
    data[500] = 50.0
    data[10] = np.nan
    x, y = min_max(data, 10, start=100, stride=2)
    assert len(x) == 2 * 101
    assert np.all(np.diff(x) >= 0)
    for b in range(101):
        chunk = data[b * 10 : (b + 1) * 10]
        assert set(y[2 * b : 2 * b + 2]) == {np.nanmin(chunk), np.nanmax(chunk)}
    np.testing.assert_array_equal(y, data[((x - 100) / 2).astype(int)])
    assert np.nanmax(y) == 50.0


def test_min_max_of_integers_nan_bins_and_a_short_last_bin() -> None:
    ints = np.array([5, -3, 7, 7, 2, 9, -1], dtype="i2")
    x, y = min_max(ints, 3)
    assert x.tolist() == [1, 2, 4, 5, 6, 6] and y.tolist() == [-3, 7, 2, 9, -1, -1]
    floats = np.array([np.nan, np.nan, 1.0, np.inf, -np.inf, np.nan])
    x, y = min_max(floats, 2)
    assert np.isnan(y[:2]).all() and y[2:].tolist() == [1.0, np.inf, -np.inf, -np.inf]


def test_block_mean_matches_numpy_and_skips_nan() -> None:
    data = np.arange(7 * 9, dtype="f4").reshape(7, 9)
    got = block_mean(data, (3, 4))
    assert got.shape == (3, 3)
    assert got[0, 0] == data[0:3, 0:4].mean() and got[2, 2] == data[6:, 8:].mean()
    data[0, 0] = np.nan
    assert block_mean(data, (3, 4))[0, 0] == pytest.approx(np.nanmean(data[0:3, 0:4]))


def test_parse_index_drops_integer_dimensions() -> None:
    region = parse_index("2,:,10:20:5", (4, 5, 30))
    assert region.kept == (1, 2) and region.shape == (5, 2)
    assert parse_index(None, (3, 4)).shape == (3, 4)
    assert parse_index("1", (3, 4)).shape == (4,)
    assert parse_index("-1,:", (3, 4)).selection.parts[0].start == 2
    assert strided(parse_index(":,:", (100, 60)), (10, 7)).shape == (10, 9)
    for bad in ("1,2,3", "a", "1:2:3:4", "0:5:0", "9"):
        with pytest.raises(InvalidInput):
            parse_index(bad, (3, 4))


def test_targets_bound_the_pixels() -> None:
    rows, cols = image_targets(1000, 750, 480_000)
    assert rows * cols <= 480_000 and cols > rows
    assert steps_for((16384, 16384), (rows, cols)) == (-(-16384 // rows), -(-16384 // cols))


def test_stats_as_h5grove_gives_them() -> None:
    data = np.array([-2.0, 0.0, 3.0, np.inf, 5.0])
    got = array_stats(data)
    assert got == {"strict_positive_min": 3.0, "positive_min": 0.0, "min": -2.0, "max": 5.0,
                   "mean": 1.5, "std": pytest.approx(np.std([-2.0, 0.0, 3.0, 5.0]))}
    assert array_stats(np.array([], dtype="i4"))["min"] is None
