"""A dataset opened for one request: its document (read once), its layout, and the one place
that decides whether it may be changed."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from h5lake.chunks.dataset import DatasetLayout
from h5lake.errors import InvalidInput, ReadOnly
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection
from h5lake.model.layout import LayoutClass, is_linked
from h5lake.model.stored import DatasetDoc, as_dataset
from h5lake.service.access import open_object
from h5lake.service.context import Caller, Service
from h5lake.service.datasets.dataset_layout import layout_with, native_layout
from h5lake.service.datasets.linked import locator_of_linked
from h5lake.service.documents import Doc
from h5lake.service.views import Domain, refuse_change


@dataclass(frozen=True, slots=True)
class OpenDataset:
    domain: Domain
    doc: DatasetDoc
    layout: DatasetLayout | None  # None for a null dataspace
    etag: str | None = None  # of ``doc`` as read, when known (a compact write's first if-match)

    @property
    def id(self) -> str:
        return str(self.doc["id"])

    @property
    def type_json(self) -> Doc:
        type_json: Doc = self.doc["type"]
        return type_json

    def require_layout(self) -> DatasetLayout:
        if self.layout is None:
            raise InvalidInput("a dataset with a null dataspace has no values")
        return self.layout


async def dataset_layout(svc: Service, domain: Domain, doc: DatasetDoc) -> DatasetLayout | None:
    """The layout of a dataset of ``domain``; its chunks located through the domain's view."""
    if is_linked(doc):
        return layout_with(domain, doc, await locator_of_linked(svc, domain, doc))
    return native_layout(domain, doc)


async def open_dataset(
    svc: Service, caller: Caller, domain_path: str, dset_id: str, permission: Permission
) -> OpenDataset:
    """Authorize, read the dataset's document once and build its layout."""
    domain, found = await open_object(svc, caller, domain_path, dset_id, permission, Collection.DATASETS)
    doc = as_dataset(found.doc)
    return OpenDataset(domain, doc, await dataset_layout(svc, domain, doc), found.etag)


class Change(enum.Enum):
    VALUES = "values"  # a dataset's values, a map's pairs
    SHAPE = "shape"  # grown at the end
    SHRINK = "shrink"
    PREPEND = "prepend"  # grown at the front
    LAYOUT = "layout"  # a linked dataset turned into the per-chunk-file form (files appended)


def check_writable(domain: Domain, doc: Mapping[str, Any], change: Change) -> None:
    """The one decision whether a dataset (or a map: ``doc``) may be changed: raises `ReadOnly` when not.

    A dataset linked to an HDF5 file keeps its values there; only an INDIRECT one may grow
    (files appended along an axis: its chunk table says where new chunks are, and chunks it
    does not list read as fill). A read-only view (a version) changes nothing.
    """
    refuse_change(domain, Permission.UPDATE)
    if not is_linked(doc):
        return
    if change is Change.LAYOUT:
        return  # the values stay where they are; only where the layout lists them changes
    if change is Change.SHRINK:
        raise ReadOnly("a dataset linked to HDF5 files cannot shrink: its chunks are the files' own")
    if change is Change.PREPEND:
        raise ReadOnly("a dataset linked to HDF5 files cannot grow at the front (prepend): its chunks are the files' own")
    if change is Change.SHAPE:
        if doc["layout"].get("class") == LayoutClass.CHUNKED_REF_INDIRECT.value:
            return
        raise ReadOnly("datasets linked to HDF5 files are read-only")
    raise ReadOnly("this dataset is read-only: its values live in an HDF5 file")
