"""JSON values read straight from wire bytes for the commonest attribute values, without numpy:
a scalar variable-length ASCII string and a scalar finite number of a predefined type. What
they give is exactly what the general path (``bytes_to_array`` then ``array_to_json``) gives
(tests/unit/test_load_shortcuts.py); everything else is left to it."""

from __future__ import annotations

import math
import struct
from typing import Any

from h5lake.model.types import VARIABLE, TypeClass, type_class

_NUMBERS = {
    f"H5T_{kind}{bits}{order}": struct.Struct(("<" if order == "LE" else ">") + code)
    for kind, sizes in (
        ("STD_I", {8: "b", 16: "h", 32: "i", 64: "q"}),
        ("STD_U", {8: "B", 16: "H", 32: "I", 64: "Q"}),
        ("IEEE_F", {32: "f", 64: "d"}),
    )
    for bits, code in sizes.items()
    for order in ("LE", "BE")
}


def direct_json(raw: bytes, type_json: dict[str, Any], dims: tuple[int, ...]) -> Any:
    """The JSON value of the wire bytes ``raw`` of a scalar of ``type_json`` when it is a
    variable-length string of ASCII text without NUL (its text) or a finite number of a
    predefined integer or float type; else None (the general path decides)."""
    if dims:
        return None
    cls = type_class(type_json)
    if cls is TypeClass.STRING:
        if type_json.get("length") != VARIABLE or len(raw) < 4 or int.from_bytes(raw[:4], "little") != len(raw) - 4:
            return None
        text = raw[4:]
        return text.decode("ascii") if text.isascii() and b"\0" not in text else None
    if cls is not TypeClass.INTEGER and cls is not TypeClass.FLOAT or len(type_json) != 2:
        return None  # (a number type of more than class and base: the general path)
    form = _NUMBERS.get(type_json.get("base", ""))
    if form is None or len(raw) != form.size:
        return None
    (value,) = form.unpack(raw)
    return value if cls is TypeClass.INTEGER or math.isfinite(value) else None
