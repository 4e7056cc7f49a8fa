"""The shapes of what h5lake stores as JSON: object documents, domain documents, version
records and manifests, write intents (seed 001's key schema; docs/storage.md, docs/versions.md).

`Doc` is any JSON object, as read from a body or the store; the TypedDicts name the keys a stored
kind has, for code that builds or reads one, so mypy checks the key names. They are all
``total=False``: a document read from the store is checked where it is used, not here (pure: no
I/O, no validation). A document is read as its kind (`as_dataset`, `as_group`, `as_domain`) where
the code knows the kind; those are casts, not checks.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypedDict, cast

Doc = dict[str, Any]  # a JSON object: a request body, a stored document, an answer


class ObjectDoc(TypedDict, total=False):
    """What every group, dataset, committed datatype and map document has."""

    id: str
    root: str
    created: float
    lastModified: float
    attributes: dict[str, Any]
    acls: dict[str, dict[str, bool]]
    forkedChunks: str  # a dataset or map forked from a version: the version its chunks fall back to (ids.FORKED)


class GroupDoc(ObjectDoc, total=False):
    links: dict[str, dict[str, Any]]
    creationProperties: dict[str, Any] | str  # an object, or the HDF5 REST VOL's base64 property list


class DatasetDoc(ObjectDoc, total=False):
    type: Any  # type JSON (model/types.py): a class name or an object
    shape: dict[str, Any]  # dataspace JSON (model/shapes.py)
    creationProperties: dict[str, Any]
    layout: dict[str, Any]  # layout JSON (model/layout.py)
    compact: dict[str, Any]  # a compact dataset's chunks, {"chunks": {"i_j": base64}, "moving": bool}
    shrinking: dict[str, list[int]]  # a cleaning owed after a shrink, {"keep": dims, "upto": dims}
    appends: dict[str, Any]  # reserved appends, {"axis": a, "top": t, "pending": [[start, stop, since], ...]}
    linked_sources: dict[str, Any]  # a linked dataset's files, {file_uri: fingerprint JSON}
    chunk_table_of: list[str]  # on a chunk table: ids of the linked datasets using it


class DomainDoc(TypedDict, total=False):
    owner: str
    acls: dict[str, dict[str, Any]]  # by user: flags, and the domain a PUT set it through (acl.SET_BY_PUT)
    root: str  # absent for a folder
    created: float
    lastModified: float
    committing: dict[str, float]  # while a commit, restore or merge runs: {"until": lease end} (service/versions/applying.py)
    applying: dict[str, Any]  # while a version is written to the head: {"version", "tree", "parent"} (applying.py)


def as_dataset(doc: Doc) -> DatasetDoc:
    """``doc`` read as a dataset's document (a cast: the caller knows the kind)."""
    return cast(DatasetDoc, doc)


def as_group(doc: Doc) -> GroupDoc:
    """``doc`` read as a group's document (a cast: the caller knows the kind)."""
    return cast(GroupDoc, doc)


def as_domain(doc: Doc) -> DomainDoc:
    """``doc`` read as a domain's document (a cast: the caller knows the kind)."""
    return cast(DomainDoc, doc)


class VersionRecord(TypedDict, total=False):
    """``.versions/N.json`` of a domain; a forgotten version keeps only ``id``, ``number``,
    ``parent``, ``created`` and ``deleted``."""

    id: str
    number: int
    parent: str | None
    created: float
    author: str | None
    message: str
    metadata: Any
    tree: str  # the SHA-256 of the root manifest in the content store
    deleted: bool
    parents: list[str]  # a merge's: its own parent and FORK@vN (service/versions/merge.py)
    merged: str  # a merge: FORK@vN
    cherryPicked: str  # a cherry-pick: D@vN whose change it applied


class VersionTag(TypedDict, total=False):
    name: str
    version: str
    number: int
    created: float
    author: str | None


class RootManifest(TypedDict, total=False):
    """A version's root manifest: the root group's id and each object's manifest by SHA-256."""

    root: str
    objects: dict[str, str]


class Manifest(TypedDict, total=False):
    """One object of a version: its document and ETag, and for a chunked dataset its chunks
    (``"i_j" -> [sha256, etag]``) and the chunk catalog's ETag they were read against."""

    doc: Doc
    etag: str
    chunks: dict[str, list[str]]
    catalog: str | None


class IntentRecord(TypedDict, total=False):
    """A write intent, ``.h5lake/intents/<id>.json``: the chunks a write is about to touch
    (``lo``/``hi`` a box, or ``chunks`` a list) and its writer's heartbeat stamp."""

    domain: str
    dataset: str
    lo: list[int]
    hi: list[int]
    chunks: list[list[int]]
    owner: str
    renew: float


class BucketStats(NamedTuple):
    """One pair bucket of a map: its node, stored bytes and pairs."""

    node: int
    nbytes: int
    pairs: int
