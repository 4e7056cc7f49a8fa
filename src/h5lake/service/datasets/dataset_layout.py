"""What the chunk engine needs about one dataset (`DatasetLayout`), built from its document."""

from __future__ import annotations

from h5lake.chunks.dataset import DatasetLayout, codec_and_fill
from h5lake.chunks.inline import KEY, DocumentChunks, listed_chunks
from h5lake.chunks.locate import ChunkLocator, NativeChunks
from h5lake.model.fromjson import EXACT_FILL
from h5lake.model.ids import FORKED
from h5lake.model.shapes import SpaceClass, space_from_json
from h5lake.model.stored import DatasetDoc
from h5lake.service.views import Domain


def layout_with(domain: Domain, doc: DatasetDoc, locator: ChunkLocator) -> DatasetLayout | None:
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


def native_layout(domain: Domain, doc: DatasetDoc) -> DatasetLayout | None:
    """A dataset whose chunks are objects of their own, read through the domain's view (a fork's
    falling back to its source version's), or kept in its document (compact values,
    `service.datasets.compact`)."""
    if KEY in doc:
        return compact_layout(domain, doc)
    return layout_with(domain, doc, domain.view.chunks(doc["id"], doc.get(FORKED)))


def compact_layout(domain: Domain, doc: DatasetDoc) -> DatasetLayout | None:
    """The layout of a compact dataset: its chunks read from (and written to) the document's
    (a copy in memory; a write stores them back with a conditional update of the document)."""
    chunks = DocumentChunks(listed_chunks(doc[KEY].get("chunks", {})), doc["id"])
    return layout_with(domain, doc, NativeChunks(chunks, doc["id"]))  # type: ignore[arg-type]
