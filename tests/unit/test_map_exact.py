"""`h5lake.client.exact`: what converts exactly to a map's key and value types (no server)."""

from __future__ import annotations

import h5pyd
import numpy as np
import pytest

from h5lake.client.exact import Inexact, convert


def _refused(items: list[object], dt: object, *, rounding: bool = False) -> str:
    with pytest.raises(Inexact) as e:
        convert(items, np.dtype(dt), rounding=rounding)  # type: ignore[call-overload]
    return e.value.reason


def test_floats() -> None:
    assert "not exactly a float32" in _refused([0.1], "f4")  # a key would become another key
    assert convert([0.1], np.dtype("f4"), rounding=True)[0] == np.float32(0.1)  # a value rounds
    assert convert([np.float32(0.1), 2], np.dtype("f4"), rounding=False).tolist() == [np.float32(0.1), 2.0]
    assert np.isnan(convert([float("nan")], np.dtype("f8"), rounding=False)[0])
    assert "out of range" in _refused([1e40], "f4", rounding=True)
    assert "not exactly" in _refused([2**60 + 1], "f8")
    assert "not a number" in _refused(["1"], "f8", rounding=True)


def test_integers_strings_records_enums() -> None:
    assert convert([1.0, True, np.uint8(3)], np.dtype("i2"), rounding=False).tolist() == [1, 1, 3]
    assert "out of range for int64" in _refused([2**63], "i8")
    assert "not an integer" in _refused([float("inf")], "i8")
    assert "not a boolean" in _refused([2], "?")
    assert "at most 3 bytes" in _refused([b"abcd"], "S3")
    assert "not a string" in _refused([3], h5pyd.string_dtype())
    assert "not UTF-8" in _refused([b"\xff"], h5pyd.string_dtype())
    rec = np.dtype([("a", "<i4"), ("b", "<f4", (2,))])
    assert convert([(1, [0.5, 1.5]), {"a": 2, "b": [0, 0]}], rec, rounding=True)["a"].tolist() == [1, 2]
    assert _refused([(1.5, [0, 0])], rec).startswith("field a: 1.5 is not an integer")
    assert "shape [2]" in _refused([(1, [0])], rec)
    enum = h5pyd.enum_dtype({"red": 1, "blue": 5}, basetype="i1")
    assert convert([5], enum, rounding=False).tolist() == [5]
    assert "not a value of the enumeration" in _refused([2], enum)
