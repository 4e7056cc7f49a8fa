"""NaN and infinities in JSON answers, as HSDS writes them.

h5lake keeps a float that is not finite as the string ``"NaN"``, ``"Infinity"`` or
``"-Infinity"`` in its documents and values (strict JSON, see :mod:`h5lake.model.values`).
HSDS answers them as the bare tokens ``NaN``, ``Infinity``, ``-Infinity``, which Python's
``json`` (h5pyd, and clients written against HSDS that test values with ``math.isnan``) reads as
floats; with ``ignore_nan=1`` it answers ``null`` instead, for readers whose JSON has no NaN (a
dataset's NaN fill value is then the string ``"nan"``). These functions turn the strings of
float values (by their type: strings of string types are left alone) into what the answer
carries; the bare tokens are `orjson.Fragment`s, written as they are by `http.ok`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from h5lake.model.values import NON_FINITE, has_float, map_non_finite, nan_to_null

_BARE = {s: orjson.Fragment(s.encode()) for s in NON_FINITE}


def value(found: Any, t: Any, rank: int, ignore_nan: bool) -> Any:
    """A JSON value of type ``t`` (``rank`` dimensions deep) as the answer carries it."""
    if ignore_nan:
        return nan_to_null(found, t, rank)
    return map_non_finite(found, t, rank, _BARE.__getitem__)


def array_has_non_finite(arr: np.ndarray[Any, Any]) -> bool:
    """Does a numpy array hold a float that is not finite (in compound fields and subarrays
    too)? Cheaper than walking its JSON value when it holds none."""
    dt = arr.dtype
    if dt.names:
        return any(array_has_non_finite(arr[name]) for name in dt.names)
    if dt.kind in "fc":
        return not bool(np.isfinite(arr).all())
    return False


def attribute_items(items: Any, ignore_nan: bool) -> Any:
    """Attribute descriptions with their values (a list of them, or a dict by name) as the
    answer carries them: a new container where a value changes (the items may be shared with a
    document cache, so nothing is changed in place)."""
    named = items.items() if isinstance(items, dict) else enumerate(items)
    changed: dict[Any, Any] = {}
    for key, item in named:
        if not isinstance(item, dict) or item.get("value") is None or item.get("encoding") is not None:
            continue
        t, shape = item.get("type"), item.get("shape")
        if isinstance(t, (dict, str)) and isinstance(shape, dict) and has_float(t):
            shown = value(item["value"], t, len(shape.get("dims", [])), ignore_nan)
            if shown != item["value"]:
                changed[key] = {**item, "value": shown}
    if not changed:
        return items
    if isinstance(items, dict):
        return {k: changed.get(k, v) for k, v in items.items()}
    return [changed.get(i, v) for i, v in enumerate(items)]


def fill_value(props: Any, t: Any, ignore_nan: bool) -> Any:
    """A dataset's ``creationProperties`` with its fill value as HSDS answers it (a new dict
    where it changes)."""
    if not isinstance(props, dict) or not isinstance(props.get("fillValue"), (str, list)):
        return props
    if props.get("fillValue_encoding") == "base64":  # packed bytes in base64: no JSON floats
        return props
    if not isinstance(t, (dict, str)) or not has_float(t):
        return props
    fill = props["fillValue"]
    if ignore_nan and fill == "NaN":
        return {**props, "fillValue": "nan"}  # HSDS's ignore_nan form of a NaN fill value
    return {**props, "fillValue": value(fill, t, 0, ignore_nan)}


def description(out: dict[str, Any], ignore_nan: bool) -> dict[str, Any]:
    """An object or domain description (the handler's own dict, changed in place; what it
    holds is replaced, not changed): the values of its attributes (``include_attrs``), a
    dataset's fill value, and the same in each of ``domain_objs``."""
    if isinstance(out.get("attributes"), (dict, list)):
        out["attributes"] = attribute_items(out["attributes"], ignore_nan)
    if "creationProperties" in out and "type" in out:
        out["creationProperties"] = fill_value(out["creationProperties"], out["type"], ignore_nan)
    objs = out.get("domain_objs")
    if isinstance(objs, dict):
        out["domain_objs"] = {k: _object(v, ignore_nan) for k, v in objs.items()}
    return out


def _object(obj: Any, ignore_nan: bool) -> Any:
    if not isinstance(obj, dict):
        return obj
    attrs, props = obj.get("attributes"), obj.get("creationProperties")
    new_attrs = attribute_items(attrs, ignore_nan) if isinstance(attrs, (dict, list)) else attrs
    new_props = fill_value(props, obj.get("type"), ignore_nan) if props is not None else props
    if new_attrs is attrs and new_props is props:
        return obj
    out = dict(obj)
    if new_attrs is not attrs:
        out["attributes"] = new_attrs
    if new_props is not props:
        out["creationProperties"] = new_props
    return out
