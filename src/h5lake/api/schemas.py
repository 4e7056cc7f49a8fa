"""Typed request and response models of the HDF REST API as h5lake serves it.

They are the source of ``/openapi.json`` (``api/routes/openapi.py``). Responses are built as plain dicts
for speed; the test suite validates every response it sees against these models through the
generated document, so the two cannot drift apart unnoticed. Models name the fields a client may
rely on and allow others (forms the API adds over time), except where a closed shape matters.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Open(BaseModel):
    """A JSON object with the named fields, and possibly others."""

    model_config = ConfigDict(extra="allow")


class Href(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rel: str = Field(description="the relation: self, home, root, owner, attributes, links, data, ...")
    href: str = Field(description="an absolute URL, with the domain as a query parameter")


Hrefs = list[Href]


class ErrorDetail(BaseModel):
    status: int = Field(ge=400, le=599)
    message: str
    request_id: str | None = Field(None, description="the reply's X-Request-Id")


class ErrorBody(BaseModel):
    """Every error: the status again, and a reason a person can read."""

    error: ErrorDetail


class Empty(Open):
    """An acknowledgement with nothing to say (``{}``)."""


# --- server ----------------------------------------------------------------------------------


class About(Open):
    name: str
    state: str
    username: str
    isadmin: bool
    hsds_version: str
    h5lake_version: str
    node_count: int
    start_time: int


class Info(Open):
    node: dict[str, Any]
    h5lake_version: str
    start_time: int
    up_time: int


# --- domains ---------------------------------------------------------------------------------


class Limits(Open):
    min_chunk_size: int
    max_chunk_size: int
    max_request_size: int


class DomainInfo(Open):
    """A domain or folder (``class``); a domain has a ``root`` group."""

    owner: str | None = None
    class_: Literal["domain", "folder"] = Field(alias="class")
    created: float | None = None
    lastModified: float | None = None
    domain: str
    root: str | None = None
    version: str | None = None
    limits: Limits | None = None
    compressors: list[str] | None = None
    hrefs: Hrefs


class DomainCreate(Open):
    """``PUT /``: ``{}`` makes a domain, ``{"folder": true}`` a folder, ``{"from": "D@REF"}`` a fork."""

    folder: bool | None = None
    owner: str | None = None
    group: dict[str, Any] | None = None
    from_: str | None = Field(None, alias="from", description="fork this domain or version (D or D@REF)")


class DomainItem(Open):
    name: str
    owner: str | None = None
    class_: str | None = Field(None, alias="class")
    hrefs: Hrefs | None = None


class DomainList(Open):
    domains: list[DomainItem]
    hrefs: Hrefs


class DeletedDomain(Open):
    domain: str


class Flushed(Open):
    """``PUT /`` with ``flush`` and ``getdnids``: HSDS lists its data nodes; h5lake has none."""

    dn_ids: list[str]


class H5PathsQuery(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"h5paths": ["/g", "/d"]}]})

    h5paths: list[str]


class H5PathsFound(Open):
    h5paths: dict[str, Open]
    hrefs: Hrefs


class AclFlags(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"read": True, "update": False}]})

    create: bool | None = None
    read: bool | None = None
    update: bool | None = None
    delete: bool | None = None
    readACL: bool | None = None
    updateACL: bool | None = None


class Acl(AclFlags):
    userName: str
    domain: str | None = None  # an entry set by PUT /acls/{user} (HSDS's form)


class AclList(Open):
    acls: list[Acl]
    hrefs: Hrefs


class AclOne(Open):
    acl: Acl
    hrefs: Hrefs


# --- objects ---------------------------------------------------------------------------------

TypeJson = dict[str, Any] | str


class Shape(Open):
    class_: Literal["H5S_NULL", "H5S_SCALAR", "H5S_SIMPLE"] = Field(alias="class")
    dims: list[int] | None = None
    maxdims: list[int | Literal["H5S_UNLIMITED"]] | None = None


class ObjectBase(Open):
    id: str
    root: str | None = None
    created: float | None = None
    lastModified: float | None = None
    attributeCount: int | None = None
    attributes: dict[str, Any] | None = None
    domain: str | None = None
    hrefs: Hrefs


class Group(ObjectBase):
    linkCount: int | None = None
    links: dict[str, Any] | None = None
    creationProperties: dict[str, Any] | str | None = None  # str: an encoded property list (HDF5 REST VOL)


class Dataset(ObjectBase):
    type: TypeJson
    shape: Shape
    creationProperties: dict[str, Any] | None = None


class Datatype(ObjectBase):
    type: TypeJson


class LinkRequest(Open):
    id: str | None = None
    name: str | None = None


class GroupCreate(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{}]})

    id: str | None = None
    link: LinkRequest | None = None
    creationProperties: dict[str, Any] | str | None = None


class DatasetCreate(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"type": "H5T_STD_I32LE", "shape": [4, 3], "maxdims": [0, 3]}]})

    id: str | None = None
    type: TypeJson
    shape: list[int] | int | str | None = None
    maxdims: list[int | str] | int | None = None
    creationProperties: dict[str, Any] | None = None
    link: LinkRequest | None = None


class DatatypeCreate(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"type": "H5T_IEEE_F32LE"}]})

    id: str | None = None
    type: TypeJson
    link: LinkRequest | None = None


class ObjectsCreated(Open):
    """Several objects created by one POST of a list."""

    objects: list[Open]


class IdList(Open):
    """``GET /groups`` and friends: the ids under ``groups``, ``datasets`` or ``datatypes``."""

    hrefs: Hrefs


class DatasetType(Open):
    type: TypeJson
    hrefs: Hrefs


class DatasetShape(Open):
    shape: Shape
    created: float | None = None
    lastModified: float | None = None
    hrefs: Hrefs


class ShapeChange(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"shape": [5]}]})

    shape: list[int] | int | None = None
    extend: int | None = None
    extend_dim: int | None = None
    prepend: int | None = Field(None, description="h5lake extension: elements added before the first (growth at the front)")
    prepend_dim: int | None = Field(None, description="the dimension prepend grows (0 by default)")


class Resized(Open):
    selection: str
    hrefs: Hrefs


# --- links -----------------------------------------------------------------------------------


class Link(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"h5path": "/g"}]})

    class_: str | None = Field(None, alias="class")
    title: str | None = None
    id: str | None = None
    h5path: str | None = None
    h5domain: str | None = None
    collection: str | None = None
    created: float | None = None
    href: str | None = None
    target: str | None = None


class LinkList(Open):
    links: list[Link] | dict[str, list[Link]]
    hrefs: Hrefs


class LinkOne(Open):
    link: Link
    created: float | None = None
    lastModified: float | None = None
    hrefs: Hrefs


class LinkQuery(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"titles": ["g", "d"]}]})

    titles: list[str] | None = None
    grp_ids: list[str] | None = None


class LinksPut(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"links": {"alias": {"h5path": "/g"}}}]})

    links: dict[str, Any] | None = None


# --- attributes ------------------------------------------------------------------------------


class Attribute(Open):
    name: str | None = None
    type: TypeJson
    shape: dict[str, Any] | list[int] | int | None = None
    created: float | None = None
    lastModified: float | None = None
    value: Any = None
    href: str | None = None


class AttributeOne(Open):
    """One attribute, or (``GET .../attributes/{name}/value``, as HSDS) its value alone."""

    name: str | None = None
    type: TypeJson | None = None
    shape: dict[str, Any] | list[int] | int | None = None
    created: float | None = None
    lastModified: float | None = None
    value: Any = None
    hrefs: Hrefs


class AttributeList(Open):
    attributes: list[Attribute] | dict[str, Any]
    hrefs: Hrefs


class AttributePut(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"type": "H5T_STD_I8LE", "shape": [2], "value": [1, 2]}]})

    type: TypeJson | None = None
    shape: dict[str, Any] | list[int] | int | None = None
    value: Any = None


class AttributesPut(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"attributes": {"a1": {"type": "H5T_IEEE_F64LE", "value": 1.5}}}]})

    attributes: dict[str, Any] | None = None
    obj_ids: dict[str, Any] | None = None


class AttributeQuery(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"attr_names": ["units"]}]})

    attr_names: list[str] | None = None
    obj_ids: list[str] | dict[str, Any] | None = None


# --- values ----------------------------------------------------------------------------------


class ValueRead(Open):
    value: Any
    index: list[int] | None = None
    hrefs: Hrefs


class ValueSelect(Open):
    """``POST /datasets/{id}/value``: point coordinates, or a long ``select``."""
    model_config = ConfigDict(json_schema_extra={"examples": [{"points": [[0, 0], [1, 2]]}]})


    points: list[Any] | None = None
    select: str | None = None


class ValueWrite(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"value": [[1, 2, 3], [4, 5, 6]]}]})

    value: Any = None
    value_base64: str | None = None
    points: list[Any] | None = None


class QueryUpdated(Open):
    index: list[int]
    hrefs: Hrefs


class LayoutChange(Open):
    """``PUT /datasets/{id}/layout`` (h5lake extension): the chunk table and the axis to grow."""

    chunk_table: str
    extend_dim: int = 0


class LayoutChanged(Open):
    layout: dict[str, Any]
    shape: Any = None
    hrefs: Hrefs


# --- maps ------------------------------------------------------------------------------------


class Map(ObjectBase):
    """An HDF5 Map object: its key and value types (``stats`` with ``verbose=1``)."""

    key_type: TypeJson
    value_type: TypeJson
    creationProperties: dict[str, Any] | None = None
    stats: MapStats | None = None


class MapStats(Open):
    pairCount: int
    allocatedSize: int
    bucketCount: int


class MapCreate(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE"}]})

    id: str | None = None
    key_type: TypeJson
    value_type: TypeJson
    creationProperties: dict[str, Any] | None = None
    link: LinkRequest | None = None


class MapList(Open):
    """``GET /maps``: the ids of the maps of a domain."""

    maps: list[str]
    hrefs: Hrefs


class MapValuePut(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"value": 2.5}]})

    value: Any


class MapValue(Open):
    """One key's value (JSON, or packed with Accept: application/octet-stream)."""

    value: Any
    hrefs: Hrefs


class MapKeyPut(Open):
    """A key was put: 201 when it is new, 200 when its value was replaced."""

    hrefs: Hrefs


class MapPairsPut(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"keys": [1, 2], "values": [0.5, 1.5]}]})

    keys: list[Any]
    values: list[Any]


class MapPairsAdded(Open):
    """A batch was put: how many of its keys are new."""

    added: int
    hrefs: Hrefs


class MapKeys(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"keys": [1, 2]}]})

    keys: list[Any]


class MapValues(Open):
    """Values of a batch of keys, ``null`` and ``found: false`` where a key is absent (packed:
    one byte per key, 1 when found, then the packed values)."""

    values: list[Any]
    found: list[bool]
    hrefs: Hrefs


class MapKeysDeleted(Open):
    """A batch of keys was deleted: how many were there."""

    deleted: int
    hrefs: Hrefs


class MapPage(Open):
    """A page of keys (and values) in the map's stable order; ``cursor`` (null at the end)
    continues it."""

    keys: list[Any]
    values: list[Any] | None = None
    cursor: str | None
    hrefs: Hrefs


# --- versions (docs/versions.md) ---------------------------------------------------------------


class VersionCommit(Open):
    """``POST /versions``: ``parent``, when given, must be the latest version (else 409)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"message": "calibrated", "parent": "v2"}]})
    message: str | None = None
    metadata: dict[str, Any] | None = None
    parent: str | None = Field(None, pattern=r"^v[1-9][0-9]*$")
    created: float | None = Field(None, description="the version's time (a history loaded from elsewhere); default now")


class Version(Open):
    id: str = Field(pattern=r"^v[1-9][0-9]*$")
    parent: str | None
    parents: list[str] | None = Field(None, description="a merge's two parents: its own and FORK@vN")
    merged: str | None = Field(None, description="a merge: the fork version merged (FORK@vN)")
    cherryPicked: str | None = Field(None, description="a cherry-pick: the version whose change was applied")
    created: float
    author: str | None
    message: str
    metadata: dict[str, Any]
    tags: list[str] | None = None
    hrefs: Hrefs | None = None


class VersionList(Open):
    versions: list[Version]
    hrefs: Hrefs


class VersionDeleted(Open):
    id: str
    deleted: bool


class TagPut(Open):
    model_config = ConfigDict(json_schema_extra={"examples": [{"version": "v3"}]})
    version: str = Field(pattern=r"^v[1-9][0-9]*$")


class Tag(Open):
    name: str
    version: str
    created: float
    author: str | None


class TagList(Open):
    tags: list[Tag]
    hrefs: Hrefs


class TagDeleted(Open):
    name: str
    deleted: bool


class DiffObject(Open):
    id: str
    path: str | None


class ChunkDiff(Open):
    count: int
    indices: list[str]


class DiffChanged(DiffObject):
    attributes: dict[str, list[str]] | None = None
    links: dict[str, list[str]] | None = None
    shape: dict[str, Any] | None = None
    chunks: ChunkDiff | None = None


class VersionDiff(Open):
    from_: str = Field(alias="from")
    to: str
    added: list[DiffObject]
    removed: list[DiffObject]
    changed: list[DiffChanged]


class RestoreBody(Open):
    force: bool | None = None


class Restored(Open):
    restored: str
    objects: int
    chunks: int

