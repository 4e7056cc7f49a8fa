"""Region references in JSON: h5json's object form to h5lake's stored blob and back.

A region reference element is stored as an opaque blob (:mod:`h5lake.model.vlen`). The blob
h5lake makes (``h5lake load``, and a JSON value sent in the object form) is UTF-8 JSON in the
HDF5/JSON region form, ``{"id": "datasets/d-...", "select_type": ..., "selection": ...}``
(docs/fidelity.md). h5pyd 1.0 sends a region reference in an attribute (any JSON value) as
h5json's object: ``{"id": <uuid>, "select_type": "H5S_SEL_POINTS" | "H5S_SEL_HYPERSLABS",
"selection": [...]}``, ``{"id": <uuid>, "selection_dict": {...}}`` for a selection that form
cannot hold (a stepped slice), or ``{"id": <uuid>}`` for a whole dataset; it reads the same
forms back (``RegionReference.from_json``). HSDS stores the object as given.

:func:`blob_of_json` takes that object (the id bare as h5json writes it, ``d-...`` or
``datasets/d-...``) and makes the blob, the id always as ``datasets/d-...``;
:func:`json_of_blob` answers a blob of that kind as the object again, so a blob goes to JSON
and back unchanged. A blob of another kind (h5pyd's own binary form, written to datasets in
binary) has no object form here and is answered in base64, as before.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from h5lake.errors import InvalidInput, NotFound
from h5lake.model.ids import Collection, parse_id, strip_collection_prefix

SELECT_TYPES = ("H5S_SEL_POINTS", "H5S_SEL_HYPERSLABS", "H5S_SEL_ALL", "H5S_SEL_NONE")
_REGULAR = ("start", "stride", "count", "block")  # a regular hyperslab, as h5lake load writes it
_UUID_LEN = 36  # h5json's bare id: h5lake's id without its "d-"


def _dataset_id(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput("a region reference's id must be a string")
    bare = strip_collection_prefix(value)
    if len(bare) == _UUID_LEN and not bare.startswith("d-"):
        bare = "d-" + bare  # h5json's form: the uuid without its collection letter
    try:
        parse_id(bare, Collection.DATASETS)
    except (InvalidInput, NotFound):
        raise InvalidInput(f"a region reference's id {value[:80]!r} is not a dataset id") from None
    return f"{Collection.DATASETS.path}/{bare}"


def _ints(value: Any, what: str, least: int = 0) -> list[int]:
    if not isinstance(value, list) or not all(type(v) is int and v >= least for v in value):
        kind = "non-negative integers" if least == 0 else f"integers of at least {least}"
        raise InvalidInput(f"a region reference's {what} must be a list of {kind}")
    return value


def _check_selection(kind: Any, selection: Any) -> None:
    if kind not in SELECT_TYPES:
        raise InvalidInput(f"a region reference's select_type must be one of {', '.join(SELECT_TYPES)}")
    if kind in ("H5S_SEL_ALL", "H5S_SEL_NONE"):
        if selection not in (None, []):
            raise InvalidInput(f"a region reference of {kind} has no selection")
        return
    if not isinstance(selection, list):
        raise InvalidInput("a region reference's selection must be a list")
    if kind == "H5S_SEL_POINTS":
        points = [_ints(p, "points") for p in selection]
        ranks = {len(p) for p in points}
    else:
        if not all(isinstance(b, list) and len(b) == 2 for b in selection):
            raise InvalidInput("a region reference's hyperslab selection must list [start, end] blocks")
        # h5json writes an empty slice as a block ending before its start ([[0], [-1]] for 0:0)
        ranks = {len(_ints(b[0], "block starts")) for b in selection} | {len(_ints(b[1], "block ends", -1)) for b in selection}
    if len(ranks) > 1 or 0 in ranks:
        raise InvalidInput("a region reference's selection mixes ranks")


def _check_selection_dict(d: Any) -> None:
    """h5json's ``Selection.to_dict()`` (kept as given): a shape and one entry per dimension."""
    if not isinstance(d, dict):
        raise InvalidInput("a region reference's selection_dict must be an object")
    shape = _ints(d.get("shape"), "selection_dict shape")
    if d.get("select_type") == 1:  # h5json's H5S_SEL_ALL: no slices
        return
    slices = d.get("slices")
    if not isinstance(slices, list) or len(slices) != len(shape) or not all(isinstance(s, dict) for s in slices):
        raise InvalidInput("a region reference's selection_dict must have one slice per dimension")
    for s in slices:
        kind = s.get("type")
        if kind == "slice":
            if not all(type(s.get(k)) is int for k in ("start", "stop", "step")) or s["step"] < 1 or s["start"] < 0:
                raise InvalidInput("a selection_dict slice needs integer start, stop and a positive step")
        elif kind == "list":
            _ints(s.get("values"), "selection_dict list")
        elif kind == "int":
            if type(s.get("value")) is not int or s["value"] < 0:
                raise InvalidInput("a selection_dict int needs a non-negative integer value")
        else:
            raise InvalidInput(f"unknown selection_dict slice type {str(kind)[:40]!r}")


def blob_of_json(value: dict[str, Any]) -> bytes:
    """The stored blob of a region reference given in the object form; `InvalidInput` if it
    is not one."""
    unknown = set(value) - {"id", "select_type", "selection", "selection_dict", *_REGULAR}
    if unknown:
        raise InvalidInput(f"unknown key {min(unknown)[:40]!r} in a region reference")
    doc: dict[str, Any] = {"id": _dataset_id(value.get("id"))}
    if "selection_dict" in value:
        if "select_type" in value or "selection" in value:
            raise InvalidInput("a region reference has either selection_dict or select_type and selection")
        _check_selection_dict(value["selection_dict"])
    elif "select_type" in value:
        _check_selection(value["select_type"], value.get("selection"))
        if any(k in value for k in _REGULAR):
            if value["select_type"] != "H5S_SEL_HYPERSLABS" or not all(k in value for k in _REGULAR):
                raise InvalidInput("a regular hyperslab needs start, stride, count and block, all four")
            if len({len(_ints(value[k], k)) for k in _REGULAR}) != 1:
                raise InvalidInput("a regular hyperslab's start, stride, count and block differ in rank")
    elif "selection" in value or any(k in value for k in _REGULAR):
        raise InvalidInput("a region reference's selection needs its select_type")
    doc.update((k, v) for k, v in value.items() if k != "id")
    return orjson.dumps(doc)


def json_of_blob(blob: bytes) -> dict[str, Any] | str:
    """A stored blob as a JSON value: the object form for h5lake's blobs, else base64."""
    if blob[:1] == b"{":
        try:
            doc = orjson.loads(blob)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            try:
                if blob_of_json(doc) == blob:  # answered so only where it reads back as the same blob
                    return doc
            except InvalidInput:
                pass
    return base64.b64encode(blob).decode("ascii")
