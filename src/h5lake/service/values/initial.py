"""``POST /datasets`` with values: HSDS takes a new dataset's first values in its POST (``value``
or ``value_base64``, as a PUT of the whole dataset takes them), and h5pyd and ``h5lake load``
send small datasets that way, up to 300 in one request.

A compact dataset (seed 004's "Small": its values kept in its document) gets them in the
document it is created with: one write makes the dataset and its values, so after a crash it
is there with its values or absent, and a batch of such datasets costs one write each. Other
datasets (chunk objects, variable-length or reference types, values past the compact limit)
are created first, then their values written, a batch's concurrently (bounded); the 201 comes
once all are written."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from h5lake.chunks import writes
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.inline import KEY as COMPACT_KEY
from h5lake.model.ids import index_name
from h5lake.model.selection import Selection
from h5lake.model.stored import DatasetDoc
from h5lake.model.types import is_variable
from h5lake.service.context import Caller, Service
from h5lake.service.datasets import core as datasets
from h5lake.service.datasets.dataset_layout import compact_layout
from h5lake.service.datasets.opened import OpenDataset
from h5lake.service.documents import Doc
from h5lake.service.values.core import check_broadcast, json_values, write_values
from h5lake.service.values.requests import JsonValues, ValueWrite
from h5lake.service.views import Domain

_GIVEN = ("value", "value_base64")


def _given(item: Any) -> dict[str, Any]:
    return {k: item[k] for k in _GIVEN if item.get(k) is not None} if isinstance(item, dict) else {}


async def create_datasets_with_values(
    svc: Service, caller: Caller, domain_path: str, body: Any, implicit: bool = False
) -> tuple[list[Doc], bool]:
    """`datasets.create_datasets`, then the values the items carry written."""
    listed = body if isinstance(body, list) else [body]
    inside: set[int] = set()  # items whose values went into their new documents

    async def before_store(domain: Domain, docs: list[DatasetDoc]) -> None:
        for i, (doc, item) in enumerate(zip(docs, listed, strict=False)):
            given = _given(item)
            if given and await _into_document(svc, domain, doc, given):
                inside.add(i)

    items, many = await datasets.create_datasets(svc, caller, domain_path, body, implicit, before_store)
    later = [(made["id"], _given(item)) for i, (item, made) in enumerate(zip(listed, items, strict=False))
             if i not in inside and _given(item)]

    async def write(one: tuple[str, dict[str, Any]]) -> None:
        await write_values(svc, caller, domain_path, one[0], ValueWrite(JsonValues.from_body(one[1])))

    await svc.workers.each(later, write)
    return items, many


async def _into_document(svc: Service, domain: Domain, doc: DatasetDoc, given: dict[str, Any]) -> bool:
    """Write ``given`` (the whole extent's values) into a new compact dataset's document; False
    when it is not one whose values can go there (they are then written after the create)."""
    if COMPACT_KEY not in doc or is_variable(doc["type"]) or b"H5T_REFERENCE" in orjson.dumps(doc["type"]):
        return False
    layout = compact_layout(domain, doc)
    if layout is None:
        return False
    ds = OpenDataset(domain, doc, layout)
    body = JsonValues.from_body(given)
    check_broadcast(svc, layout, layout.shape)
    values = json_values(ds, body, layout.shape, None)  # invalid values: refused before anything is stored
    if _one_chunk(layout, doc, values):
        # the values are the one chunk (what the engine would store, without its planning)
        data = layout.codec.encode(values)
        if len(data) > svc.limits.compact_max_size:
            return False
        doc[COMPACT_KEY] = {"chunks": {index_name((0,) * len(layout.shape)): base64.b64encode(data).decode()}}
        return True
    await writes.write_selection(layout, Selection.all(layout.shape), values, svc.workers)
    held = layout.locator.store  # type: ignore[attr-defined]
    if held.size() > svc.limits.compact_max_size:  # stored bigger than the limit: chunk objects, later
        return False
    doc[COMPACT_KEY] = {"chunks": held.contents(doc["id"])}
    return True


def _one_chunk(layout: DatasetLayout, doc: DatasetDoc, values: Any) -> bool:
    """Whether a new compact dataset's values are exactly its one chunk: a chunk the shape of
    the dataset (at least one dimension, no origin) and none stored yet."""
    return (
        bool(layout.shape) and layout.chunk_shape == layout.shape and not any(layout.origin)
        and not layout.dtype.shape and getattr(values, "shape", None) == layout.shape
        and not doc[COMPACT_KEY].get("chunks")
    )
