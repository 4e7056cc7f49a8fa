"""``GET /domains?query=...``: list only the domains whose root group's attributes satisfy a
condition (HSDS's form, which ``hsls --query`` and h5pyd's ``Folder(query=...)`` send), e.g.
``attr1 > 7 AND units == 'm'``.

The condition is the value-query grammar (:mod:`h5lake.model.query`) over one row whose fields are
the root group's single-element attributes of number or string types. A domain that lacks a
named attribute, or whose attribute cannot be compared so, does not match; folders never match.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.fromjson import json_to_array
from h5lake.model.query import parse_query
from h5lake.model.shapes import SpaceClass
from h5lake.service.documents import Doc

RootMatcher = Callable[[dict[str, Doc]], bool]


def root_matcher(text: str) -> RootMatcher:
    """Parse ``text`` once (400 for a syntax error); the result tells whether a root group's
    ``attributes`` satisfy it."""
    mask = parse_query(text)

    def matches(attrs: dict[str, Doc]) -> bool:
        fields: list[tuple[str, Any]] = []
        values: list[Any] = []
        for name, attr in attrs.items():
            if not name:  # no query can name it, and numpy would call the field "f<i>"
                continue
            element = _single_element(attr)
            if element is not None:
                fields.append((name, element.dtype))
                values.append(element[()])
        if not fields:
            return False
        try:
            row = np.array([tuple(values)], dtype=fields)
            return bool(mask(row)[0])
        except InvalidInput:  # an attribute it names is missing here, or of another kind
            return False
        except (TypeError, ValueError):  # names numpy cannot take as fields
            return False

    return matches


def _single_element(attr: Doc) -> np.ndarray[Any, Any] | None:
    shape = attr.get("shape") or {}
    dims = tuple(shape.get("dims", ()))
    if attr.get("value") is None or shape.get("class") == SpaceClass.NULL.value or math.prod(dims) != 1:
        return None
    try:
        arr = json_to_array(attr["value"], attr["type"], dims).reshape(())
    except (InvalidInput, KeyError, TypeError, ValueError):
        return None
    if arr.dtype.names is not None or arr.dtype.subdtype is not None or arr.dtype.kind not in "biufSUO":
        return None
    return arr
