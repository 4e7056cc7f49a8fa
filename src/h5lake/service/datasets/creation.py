"""A new dataset's creation properties: the chunk layout actually used, and the filters (which
the chunk engine applies, which are only declared)."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

from h5lake.chunks.dataset import pipeline_item_size
from h5lake.chunks.filters import FilterId, FilterPipeline, codec_filters, declared_filter_id
from h5lake.errors import InvalidInput
from h5lake.model.fromjson import EXACT_FILL, json_to_array
from h5lake.model.layout import LayoutClass, adjust_chunk_shape, guess_chunk_shape
from h5lake.model.shapes import Space, SpaceClass
from h5lake.model.types import is_variable, to_dtype
from h5lake.model.values import array_to_bytes, array_to_json, bytes_to_array
from h5lake.service.context import Limits
from h5lake.service.documents import Doc

VLEN_ITEM_ESTIMATE = 64  # bytes per element assumed when sizing chunks of variable-length types


def item_size(type_json: Doc) -> int:
    if is_variable(type_json):
        return VLEN_ITEM_ESTIMATE
    return max(1, to_dtype(type_json).itemsize)


GUESSED_CHUNK_MAX_BYTES = 4 * 1024 * 1024
"""Chunks h5lake chooses stay this small; a client may choose larger ones up to the
``--max-chunk-bytes`` limit."""


def check_linked_chunk_size(layout: Doc, type_json: Doc, limit: int) -> None:
    """A chunk of an HDF5 file is decoded whole for any read of it, so its size is bounded like a
    native chunk's."""
    dims = layout.get("dims")
    if isinstance(dims, list) and dims and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        nbytes = math.prod(dims) * item_size(type_json)
        if nbytes > limit:
            raise InvalidInput(f"chunk of {nbytes} bytes exceeds the limit of {limit} (--max-chunk-bytes)")


def plan_layout(space: Space, type_json: Doc, props: Doc, limits: Limits) -> Doc:
    """The chunk layout actually used. Values are always chunked in storage, whatever the
    client asked for; what it asked for stays in ``creationProperties``."""
    if space.kind is not SpaceClass.SIMPLE:
        return {"class": LayoutClass.CHUNKED.value, "dims": []}
    requested = props.get("layout")
    size = item_size(type_json)
    if requested is not None:
        if not isinstance(requested, dict):
            raise InvalidInput("layout must be an object")
        try:
            cls = LayoutClass(requested.get("class"))
        except ValueError:
            raise InvalidInput(f"unknown layout class {requested.get('class')!r}") from None
        if cls is LayoutClass.CHUNKED and "dims" in requested:
            dims = requested["dims"]
            if not isinstance(dims, list):
                raise InvalidInput("layout dims must be a list")
            chunk = adjust_chunk_shape(tuple(dims), space.dims, size, max_bytes=limits.max_chunk_size, maxdims=space.maxdims)
            return {"class": LayoutClass.CHUNKED.value, "dims": list(chunk)}
        if cls not in (LayoutClass.CHUNKED, LayoutClass.CONTIGUOUS, LayoutClass.COMPACT):
            raise InvalidInput(f"layout {cls.value} is not supported for new datasets")
    elif space.maxdims is not None and None in space.maxdims:
        pass  # unlimited extents need chunks; guessed below
    chunk = guess_chunk_shape(
        space.dims,
        space.maxdims,
        size,
        min_bytes=min(limits.min_chunk_size, GUESSED_CHUNK_MAX_BYTES),
        max_bytes=min(limits.max_chunk_size, GUESSED_CHUNK_MAX_BYTES),
    )
    return {"class": LayoutClass.CHUNKED.value, "dims": list(chunk)}


def _declared_filter_json(spec: Doc, fid: int) -> Doc:
    params = spec.get("parameters", [])
    if not isinstance(params, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 32 for v in params
    ):
        raise InvalidInput(f"filter {fid}: parameters must be a list of unsigned 32-bit integers")
    flags = spec.get("flags", 0)
    if not isinstance(flags, int) or isinstance(flags, bool) or not 0 <= flags < 1 << 32:
        raise InvalidInput(f"filter {fid}: flags must be an unsigned integer")
    try:
        known: FilterId | None = FilterId(fid)
    except ValueError:
        known = None
    name = spec.get("name") if isinstance(spec.get("name"), str) else None
    out: Doc = dict(spec)
    out["class"] = known.reply_class if known is not None else "H5Z_FILTER_USER"
    out["id"] = fid
    out["name"] = name or (known.canonical_name if known is not None else f"filter {fid}")
    return out


def _user_form(spec: Any, normalized: Doc) -> Doc:
    """A filter given as ``H5Z_FILTER_USER`` with its HDF5 ``parameters`` (the HDF5 REST VOL
    connector's form for every filter but deflate, shuffle, fletcher32, szip, n-bit,
    scale-offset and LZF) is kept in that form beside h5lake's named parameters: the connector
    reopens such a dataset only from that class and those parameters, as HSDS echoes them."""
    if not isinstance(spec, dict) or spec.get("class") != "H5Z_FILTER_USER" or not isinstance(spec.get("parameters"), list):
        return normalized  # "parameters": null is taken as absent, as the pipeline takes it
    return {**normalized, "class": "H5Z_FILTER_USER", "parameters": list(spec["parameters"])}


def group_creation_properties(props: Any) -> Doc | str:
    """A group's creation properties as stored and answered: an object, or (the HDF5 REST VOL
    connector's form, kept as HSDS keeps it) an encoded property list, a base64 string the
    server does not read."""
    if props is None:
        return {}
    if isinstance(props, str):
        try:
            base64.b64decode(props, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("creationProperties must be an object or a base64 property list") from None
        return props
    if not isinstance(props, dict):
        raise InvalidInput("creationProperties must be an object or a base64 property list")
    return props


def answered_creation_properties(props: Any, type_json: Any) -> Any:
    """A dataset's stored creation properties as answered: a fill value given in base64
    (``fillValue_encoding``) in that form again, its exact bytes (``fillValue_base64``) or the
    packed bytes of its stored JSON value."""
    if not isinstance(props, dict) or props.get("fillValue_encoding") != "base64":
        return props
    fill = props.get("fillValue")
    if fill is None or not isinstance(type_json, dict):
        return props
    exact = props.get(EXACT_FILL)
    out = {k: v for k, v in props.items() if k != EXACT_FILL}
    out["fillValue"] = exact if exact is not None else base64.b64encode(array_to_bytes(json_to_array(fill, type_json, ()), type_json)).decode("ascii")
    return out


def _fill_bytes(out: Doc, type_json: Doc) -> bytes | None:
    """The fill value given as packed bytes: HSDS's ``fillValue`` with ``fillValue_encoding``
    ``base64``, or h5lake's ``fillValue_base64`` (then ``fillValue`` is only what a client shows);
    None for a fill value given as JSON."""
    encoding = out.pop("fillValue_encoding", None)
    if encoding not in (None, "None", "base64"):
        raise InvalidInput(f"fillValue_encoding must be base64, got {encoding!r}")
    exact = out.pop(EXACT_FILL, None)
    if exact is not None and encoding == "base64":
        raise InvalidInput(f"give the fill value's bytes either as {EXACT_FILL} or with fillValue_encoding, not both")
    text = exact if exact is not None else out.get("fillValue") if encoding == "base64" else None
    if text is None:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise InvalidInput(f"{EXACT_FILL if exact is not None else 'fillValue'} is not valid base64") from None
    if is_variable(type_json):
        raise InvalidInput("a base64 fill value needs a fixed-size type")
    if encoding == "base64":
        # kept as a mark: the fill value is answered in the form it was given (HSDS keeps the
        # base64 text; the HDF5 REST VOL connector decodes nothing else)
        out["fillValue_encoding"] = "base64"
    return raw


def validate_creation_properties(props: Any, type_json: Doc, chunk_shape: list[int] | None = None) -> Doc:
    """The creation properties as stored; ``chunk_shape`` (the planned chunk dims) completes
    filters that depend on it (szip's pixels per scan line)."""
    if props is None:
        return {}
    if not isinstance(props, dict):
        raise InvalidInput("creationProperties must be an object")
    out = dict(props)
    if "filters" in out:
        filters = out["filters"]
        applied = FilterPipeline.from_json(codec_filters(filters), pipeline_item_size(type_json), chunk_shape).to_json()
        if isinstance(filters, list):
            normalized = iter(applied)
            merged = []
            for spec in filters:
                fid = declared_filter_id(spec)
                merged.append(_user_form(spec, next(normalized)) if fid is None else _declared_filter_json(spec, fid))
            applied = merged
        out["filters"] = applied
    if "fillValue" in out and out["fillValue"] is None:
        # no fill value (H5Pset_fill_value(NULL)), the HDF5 REST VOL connector's null: kept as
        # h5lake's mark for it, so the answer holds no null it would take for a base64 text
        del out["fillValue"]
        out["fillValueUndefined"] = True
    raw = _fill_bytes(out, type_json)
    if raw is not None and out.get("fillValueUndefined"):
        raise InvalidInput("a fill value given as bytes and no fill value (fillValue null) at once")
    if raw is not None:
        # kept as its JSON form, and as its bytes too where that form does not give them back
        shown = array_to_json(bytes_to_array(raw, type_json, ()), type_json)
        out["fillValue"] = shown
        try:
            exact = array_to_bytes(json_to_array(shown, type_json, ()), type_json) == raw
        except InvalidInput:  # U+FFFD longer than the string's room
            exact = False
        if not exact:
            out[EXACT_FILL] = base64.b64encode(raw).decode("ascii")
            return out
    if out.get("fillValue") is not None:
        # kept in its canonical JSON form: a NaN from a Python client is stored as "NaN", which
        # strict JSON (our documents) can hold, instead of becoming null
        fill = json_to_array(out["fillValue"], type_json, ())
        out["fillValue"] = array_to_json(fill, type_json)
        if fill.dtype.kind == "f" and fill.dtype.itemsize < 8 and isinstance(out["fillValue"], float):
            # the shortest decimal naming the same float32 (float16): 3.12 stays 3.12 (HSDS echoes
            # the client's number) instead of becoming 3.119999885559082
            out["fillValue"] = float(str(fill[()]))
    return out
