"""Matching a domain's root attributes against a ``GET /domains?query=`` condition."""

from __future__ import annotations

from h5lake.service.domains.query import root_matcher

INT = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}


def scalar(value: int) -> dict[str, object]:
    return {"type": INT, "shape": {"class": "H5S_SCALAR"}, "value": value}


def test_an_attribute_with_an_empty_name_neither_breaks_nor_hides_the_others() -> None:
    """numpy names an empty field "f0": beside an attribute really named "f0" that was a
    duplicate field (a 500 of the listing)."""
    matches = root_matcher("a > 1")
    assert matches({"": scalar(3), "f0": scalar(3), "a": scalar(3)})
    assert not matches({"": scalar(3), "f0": scalar(3), "a": scalar(0)})
    assert root_matcher("f0 == 5")({"": scalar(3), "f0": scalar(5)})
