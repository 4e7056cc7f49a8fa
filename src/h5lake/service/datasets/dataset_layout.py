"""What the chunk engine needs about one dataset (`DatasetLayout`), built from its document."""

from __future__ import annotations

import base64
from collections import OrderedDict
from typing import Any

import numpy as np
import orjson

from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.inline import KEY, DocumentChunks, listed_chunks
from h5lake.chunks.locate import ChunkLocator, NativeChunks
from h5lake.model.fromjson import EXACT_FILL, fill_value_array
from h5lake.model.ids import FORKED
from h5lake.model.shapes import SpaceClass, space_from_json
from h5lake.model.values import bytes_to_array
from h5lake.service.datasets.creation import codec_filters
from h5lake.service.documents import Doc
from h5lake.service.views import Domain

_CODEC_CACHE_SIZE = 256
_codecs: OrderedDict[bytes, tuple[ChunkCodec, np.ndarray]] = OrderedDict()


def codec_and_fill(
    type_json: Doc, chunk_shape: tuple[int, ...], filters: Any, fill_json: Any, fill_bytes: str | None = None
) -> tuple[ChunkCodec, np.ndarray]:
    """A dataset's codec and (read-only) fill element, shared by every request that asks with
    the same type, chunk shape, filters and fill value (``fill_bytes``, its packed bytes in
    base64 where they are kept beside the JSON form, ``EXACT_FILL``, is the fill value then).

    Both are pure functions of those values, so a cache keyed by them is never stale, even
    when another process changes the dataset: a changed document asks with a different key.
    Building them parses the type and the filters, a good part of a small read's cost.
    """
    key = orjson.dumps([type_json, chunk_shape, filters, fill_json, fill_bytes], option=orjson.OPT_SORT_KEYS)
    found = _codecs.get(key)
    if found is not None:
        _codecs.move_to_end(key)
        return found
    codec = ChunkCodec.for_dataset(type_json, chunk_shape, codec_filters(filters))
    if fill_bytes is not None:
        fill = bytes_to_array(base64.b64decode(fill_bytes), type_json, ())
    else:
        fill = fill_value_array(type_json, fill_json)
    if codec.dtype.subdtype is None:  # an H5T_ARRAY fill keeps its dims as its shape (numpy folds them)
        fill = np.asarray(fill, dtype=codec.dtype)
    fill.flags.writeable = False
    _codecs[key] = codec, fill
    if len(_codecs) > _CODEC_CACHE_SIZE:
        _codecs.popitem(last=False)
    return codec, fill


def layout_with(domain: Domain, doc: Doc, locator: ChunkLocator) -> DatasetLayout | None:
    """The dataset's layout with its chunks found by ``locator``; None for a null dataspace."""
    space = space_from_json(doc["shape"])
    if space.kind is SpaceClass.NULL:
        return None
    props = doc.get("creationProperties", {})
    chunk_shape = tuple(doc.get("layout", {}).get("dims", []))
    if space.kind is SpaceClass.SCALAR:
        chunk_shape = ()
    codec, fill = codec_and_fill(doc["type"], chunk_shape, props.get("filters"), props.get("fillValue"), props.get(EXACT_FILL))
    origin = tuple(doc.get("layout", {}).get("origin") or ()) if chunk_shape else ()
    return DatasetLayout(doc["id"], domain.path, space.dims, codec, fill, locator, origin)


def native_layout(domain: Domain, doc: Doc) -> DatasetLayout | None:
    """A dataset whose chunks are objects of their own, read through the domain's view (a fork's
    falling back to its source version's), or kept in its document (compact values,
    `service.datasets.compact`)."""
    if KEY in doc:
        return compact_layout(domain, doc)
    return layout_with(domain, doc, domain.view.chunks(doc["id"], doc.get(FORKED)))


def compact_layout(domain: Domain, doc: Doc) -> DatasetLayout | None:
    """The layout of a compact dataset: its chunks read from (and written to) the document's
    (a copy in memory; a write stores them back with a conditional update of the document)."""
    chunks = DocumentChunks(listed_chunks(doc[KEY].get("chunks", {})), doc["id"])
    return layout_with(domain, doc, NativeChunks(chunks, doc["id"]))  # type: ignore[arg-type]
