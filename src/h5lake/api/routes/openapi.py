"""``GET /openapi.json``: an OpenAPI 3.1 document of the whole API, made from ``api/schemas.py``,
and ``GET /docs``: a plain page listing the operations (no scripts, nothing fetched elsewhere).

The operation table below names, for every route and method, its parameters, its request body
and its responses; ``tests/api/test_openapi.py`` checks that it covers exactly the routes the
application serves, and the test suite validates every response against the document.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from h5lake import __version__
from h5lake.api import patterns as p
from h5lake.api import schemas as s
from h5lake.api import schemas_merge as sm
from h5lake.api.http import JSON, OCTET
from h5lake.api.zarr_schemas import ZarrNode
from h5lake.model.globs import MAX_PATTERN

_STRING = {"type": "string"}


def _text(pattern: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, **extra}


_FLAG = _text(p.FLAG)
_INT = {"type": "integer", "minimum": 1}
_DOMAIN = _text(p.DOMAIN, maxLength=p.DOMAIN_CHARS)
_ANY_ID = _text(p.ANY_ID)
_TAG_NAME = _text(p.TAG)
_SIMPLE_QUERY = _text(p.DOMAIN_QUERY)
_USER = _text(p.USER)


_COLLECTIONS = {"groups": "g", "datasets": "d", "datatypes": "t", "maps": "m"}


def _id(collection: str) -> dict[str, Any]:
    return _text(p.whole(_COLLECTIONS[collection] + p.HEX_ID))


@dataclass(frozen=True)
class Param:
    name: str
    schema: dict[str, Any]
    description: str
    where: str = "query"
    required: bool = False
    example: str | None = None


_DOMAIN_TEXT = ("the domain, an absolute path such as /home/user/file.h5 (the X-Hdf-domain header may name it "
                "instead; D@REF in either reads a version, docs/versions.md)")
DOMAIN = Param("domain", _DOMAIN, _DOMAIN_TEXT, required=True)
FOLDER = Param("domain", _text(p.whole(f"/?|{p.inner(p.DOMAIN)}"), maxLength=p.DOMAIN_CHARS), "a folder or domain (no domain: the top-level folders; or the X-Hdf-domain header)")
SELECT = Param("select", _STRING, "a hyperslab or coordinate selection, e.g. [0:10,3] or [0:4,[1,3]]")
LIMIT = Param("Limit", {"type": "integer", "minimum": 0}, "at most this many items (0: all, as HSDS reads it)")
PAGE_LIMIT = Param("Limit", _INT, "at most this many items")  # h5lake's own listings
MARKER = Param("Marker", _STRING, "start after this item")
_DOMAIN_MARKER = Param("Marker", _text(p.whole(f"|/?{p.PART}(?:/{p.PART})*/*"), maxLength=p.DOMAIN_CHARS), "start after this domain (its full name)")
_CONFLICT_MARKER = Param("Marker", {"type": "integer", "minimum": 0}, "list conflicts from this position (a 409's nextMarker)")
ID = Param("id", _ANY_ID, "an object id", where="path", required=True)


class Health(BaseModel):
    """``/healthz`` and ``/readyz`` (answered by ``api/observe.py``): whether this process serves,
    and whether it should get traffic."""

    status: Literal["ok", "unavailable"]
    reason: str | None = Field(None, description="/readyz: ready, shutting down, or store not answering")


@dataclass(frozen=True)
class Op:
    method: str
    path: str
    op_id: str
    summary: str
    responses: dict[int, type[BaseModel] | tuple[type[BaseModel], ...] | str]
    params: tuple[Param, ...] = ()
    body: type[BaseModel] | None = None
    binary_body: bool = False
    body_required: bool = False
    many: bool = False  # the body may be a list of such objects; the reply is then ObjectsCreated
    tags: tuple[str, ...] = field(default_factory=tuple)
    text: bool = False  # replies described by a string are text/plain with a body


def _obj_params(*extra: Param) -> tuple[Param, ...]:
    return (ID, DOMAIN, *extra)


_INCLUDE = (
    Param("include_links", _FLAG, "include the links (groups)"),
    Param("include_attrs", _FLAG, "include the attributes"),
)
_WATCH = (
    Param("wait", {"type": "number", "minimum": 0, "maximum": 60},
          "seconds to wait for the reply to differ from If-None-Match (docs/api.md, \"The watch\")"),
    Param("If-None-Match", _STRING, "the ETag of the reply the client has", where="header"),
)
_UNCHANGED = "not changed within wait seconds: no body, the ETag header as sent in If-None-Match"
_ATTR_OWNER = (Param("collection", {"type": "string", "enum": ["groups", "datasets", "datatypes", "maps"]},
                     "the owner's collection", where="path", required=True), ID, DOMAIN)
_ATTR_NAME = Param("name", _STRING, "the attribute name", where="path", required=True)
_TITLE = Param("title", _STRING, "the link name", where="path", required=True)
_KEY = Param("key", _STRING, "a string key (URL-encoded) or an integer key (decimal)", where="path", required=True)
_ENCODING = Param("encoding", {"type": "string", "enum": ["base64"]}, "values as base64 of their packed bytes")
# a names list and its separator, in the forms the pattern can pair: one of four separators,
# names without any of them (the server splits by the one given and takes any that gives names)
_SEP = Param("separator", {"type": "string", "enum": ["/", ",", ";", "|"]}, "separator of a names list (default /)")
_NAME_LIST = _text(p.NAME_LIST)
_NAMES = Param("attr_names", _NAME_LIST, "names separated by the separator")
_NAMES_REQUIRED = replace(_NAMES, required=True)
_TITLES = Param("titles", _NAME_LIST, "names separated by the separator")
_ZARR_PATH = Param("path", _text(p.ZARR_KEY), "the domain, the HDF5 path, then zarr.json or c/i/j...: "
                   "home/u/f.h5/grp/temp/c/0/3", where="path", required=True, example="home/u/f.h5/temp/zarr.json")
_ZARR_CODECS = Param("X-H5lake-Zarr-Codecs", {"type": "string", "enum": ["core", "all"]},
                     "core: only Zarr v3 core codecs (other filters decoded on the server)", where="header")
_QUERY = Param("query", _STRING, "a condition on the fields, e.g. temp > 20 & id == 3")
_FIELDS = Param("fields", _STRING, "compound fields, separated by :")
_VID = Param("vid", _text(p.whole(p.VERSION)), "a version id (v1, v2, ...)", where="path", required=True)
_TAG = Param("name", _TAG_NAME, "a tag name", where="path", required=True)

_H5PATH = _text(p.whole("/.*"))
_BY_PATH = (Param("h5path", _H5PATH, "an absolute path (h5lake also takes one relative to grpid or parent_id)",
                  required=True),
            Param("grpid", _id("groups"), "start of a relative path"),
            Param("parent_id", _id("groups"), "start of a relative path"))
_SHAPE_TEXT = _text(p.SHAPE_TEXT)
_REF = _text(p.REF)

_OPS: tuple[Op, ...] = (
    Op("GET", "/about", "getAbout", "The server: name, state, versions, who is asking", {200: s.About}),
    Op("GET", "/info", "getInfo", "The serving node and its up-time", {200: s.Info}),
    Op("GET", "/", "getDomain", "A domain or folder, or the object at h5path (no domain: the top-level folders)",
       {200: (s.DomainInfo, s.Group, s.Dataset, s.Datatype, s.Map, s.DomainList)}, (FOLDER, Param("h5path", _H5PATH, "a path inside the domain"),
                             Param("verbose", _FLAG, "add the size summary"),
                             Param("getobjs", _FLAG, "every object (maps too) in domain_objs, by id"), *_INCLUDE,
                             Param("Limit", {"type": "integer", "minimum": 0}, "with getobjs: one page of at most this many objects (2,000 at most), nextMarker when more follow; 0: no pages (as HSDS reads it)"),
                             Param("Marker", _STRING, "with getobjs: the page after this nextMarker"),
                             Param("include_values", _FLAG, "with getobjs and Limit: small datasets' values as value_base64"))),
    Op("PUT", "/", "putDomain", "Create a domain or folder (or flush=1: check write access)",
       {201: s.DomainInfo, 200: s.Flushed, 204: "flushed"},
       (DOMAIN, Param("flush", _FLAG, "only check write access (also in the body)"),
        Param("getdnids", _FLAG, "with flush: answer 200 with an empty dn_ids list")),
       body=s.DomainCreate),
    Op("DELETE", "/", "deleteDomain", "Delete a domain or empty folder", {200: s.DeletedDomain},
       (DOMAIN, Param("keep_root", _FLAG, "keep the objects"))),
    Op("POST", "/", "postDomain", "Resolve several paths at once", {200: s.H5PathsFound}, (DOMAIN,),
       body=s.H5PathsQuery, body_required=True),
    Op("GET", "/domains", "getDomains", "The domains and folders in a folder", {200: s.DomainList},
       (FOLDER, LIMIT, _DOMAIN_MARKER, Param("pattern", {"type": "string", "maxLength": MAX_PATTERN}, "a glob on names"),
        Param("verbose", _FLAG, "sizes"),
        Param("query", _SIMPLE_QUERY, "only domains whose root attributes satisfy this condition (the pattern "
              "is one comparison; the grammar of docs/api.md is taken)"))),
    Op("GET", "/acls", "getAcls", "The access lists of a domain", {200: s.AclList}, (DOMAIN,)),
    Op("GET", "/acls/{user}", "getAcl", "One user's access list", {200: s.AclOne},
       (Param("user", _USER, "a user name", where="path", required=True), DOMAIN)),
    Op("PUT", "/acls/{user}", "putAcl", "Set one user's access list", {201: s.AclOne},
       (Param("user", _USER, "a user name", where="path", required=True), DOMAIN), body=s.AclFlags,
       body_required=True),
    # objects by path, and the access lists of single objects (the seed's per-object acls)
    Op("GET", "/groups/", "getGroupByPath", "The group an h5path names", {200: s.Group},
       (DOMAIN, *_BY_PATH,
        *_INCLUDE)),
    Op("GET", "/datasets/", "getDatasetByPath", "The dataset an h5path names", {200: s.Dataset},
       (DOMAIN, *_BY_PATH)),
    Op("GET", "/datatypes/", "getDatatypeByPath", "The datatype an h5path names", {200: s.Datatype},
       (DOMAIN, *_BY_PATH)),
    Op("GET", "/{collection}/{id}/acls", "getObjectAcls", "The access lists of one object", {200: s.AclList},
       _ATTR_OWNER),
    Op("GET", "/{collection}/{id}/acls/{user}", "getObjectAcl", "One user's access list of one object",
       {200: s.AclOne}, (*_ATTR_OWNER[:2], Param("user", _USER, "a user name", where="path", required=True), DOMAIN)),
    Op("PUT", "/{collection}/{id}/acls/{user}", "putObjectAcl", "Set one user's access list of one object",
       {201: s.AclOne}, (*_ATTR_OWNER[:2], Param("user", _USER, "a user name", where="path", required=True), DOMAIN),
       body=s.AclFlags, body_required=True),
    # groups, datatypes, datasets
    Op("POST", "/groups", "postGroup", "Create a group (or a list of them)", {201: s.Group},
       (DOMAIN,), body=s.GroupCreate, many=True),
    Op("GET", "/groups", "getGroups", "The ids of the groups of a domain", {200: s.IdList}, (DOMAIN, LIMIT, MARKER)),
    Op("GET", "/groups/{id}", "getGroup", "A group", {200: s.Group}, _obj_params(*_INCLUDE)),
    Op("DELETE", "/groups/{id}", "deleteGroup", "Delete a group", {200: s.Empty}, _obj_params()),
    Op("POST", "/datatypes", "postDatatype", "Commit a datatype (or a list of them)", {201: s.Datatype},
       (DOMAIN,), body=s.DatatypeCreate, body_required=True, many=True),
    Op("GET", "/datatypes", "getDatatypes", "The ids of the committed datatypes", {200: s.IdList},
       (DOMAIN, LIMIT, MARKER)),
    Op("GET", "/datatypes/{id}", "getDatatype", "A committed datatype", {200: s.Datatype}, _obj_params(*_INCLUDE)),
    Op("DELETE", "/datatypes/{id}", "deleteDatatype", "Delete a committed datatype", {200: s.Empty}, _obj_params()),
    Op("POST", "/datasets", "postDataset", "Create a dataset (or a list of them)", {201: s.Dataset},
       (DOMAIN,), body=s.DatasetCreate, body_required=True, many=True),
    Op("GET", "/datasets", "getDatasets", "The ids of the datasets of a domain", {200: s.IdList},
       (DOMAIN, LIMIT, MARKER)),
    Op("GET", "/datasets/{id}", "getDataset", "A dataset (with wait: once it differs from If-None-Match)",
       {200: s.Dataset, 304: _UNCHANGED}, _obj_params(*_INCLUDE, *_WATCH)),
    Op("DELETE", "/datasets/{id}", "deleteDataset", "Delete a dataset", {200: s.Empty}, _obj_params()),
    Op("GET", "/datasets/{id}/type", "getDatasetType", "A dataset's type", {200: s.DatasetType}, _obj_params()),
    Op("GET", "/datasets/{id}/shape", "getDatasetShape", "A dataset's shape (with wait: once it differs from If-None-Match)",
       {200: s.DatasetShape, 304: _UNCHANGED}, _obj_params(*_WATCH)),
    Op("PUT", "/datasets/{id}/shape", "putDatasetShape", "Resize a dataset", {201: s.Resized}, _obj_params(),
       body=s.ShapeChange, body_required=True),
    Op("PUT", "/datasets/{id}/layout", "putDatasetLayout",
       "h5lake extension: turn a dataset linked from one file into the per-chunk-file form", {200: s.LayoutChanged},
       _obj_params(), body=s.LayoutChange, body_required=True),
    # values
    Op("GET", "/datasets/{id}/value", "getValue", "Read values (JSON, or packed with Accept: octet-stream)",
       {200: s.ValueRead}, _obj_params(SELECT, _QUERY, _FIELDS, LIMIT)),
    Op("POST", "/datasets/{id}/value", "postValue", "Read points, or a long selection",
       {200: s.ValueRead}, _obj_params(_FIELDS), body=s.ValueSelect, binary_body=True, body_required=True),
    Op("PUT", "/datasets/{id}/value", "putValue", "Write values (JSON or packed), or update where query (JSON)",
       {200: s.Empty}, _obj_params(SELECT, _QUERY, _FIELDS, LIMIT, Param("append", _INT, "append this many elements"),
                                   Param("append_dim", {"type": "integer", "minimum": 0}, "along this axis")),
       body=s.ValueWrite, binary_body=True, body_required=True),
    # links
    Op("GET", "/groups/{id}/links", "getLinks", "A group's links", {200: s.LinkList},
       _obj_params(LIMIT, MARKER, Param("pattern", _STRING, "a glob on names"),
                   Param("CreateOrder", _FLAG, "in creation order"), Param("follow_links", _FLAG, "recurse"),
                   _TITLES, _SEP)),
    Op("POST", "/groups/{id}/links", "postLinks", "Links of this or several groups, by name",
       {200: s.LinkList}, _obj_params(), body=s.LinkQuery),
    Op("PUT", "/groups/{id}/links", "putLinks", "Create several links", {200: s.Empty, 201: s.Empty},
       _obj_params(), body=s.LinksPut, body_required=True),
    Op("DELETE", "/groups/{id}/links", "deleteLinks", "Delete links by name", {200: s.Empty},
       _obj_params(replace(_TITLES, required=True), _SEP)),
    Op("GET", "/groups/{id}/links/{title}", "getLink", "One link", {200: s.LinkOne}, (ID, _TITLE, DOMAIN)),
    Op("PUT", "/groups/{id}/links/{title}", "putLink", "Create a link", {200: s.Empty, 201: s.Empty},
       (ID, _TITLE, DOMAIN), body=s.Link, body_required=True),
    Op("DELETE", "/groups/{id}/links/{title}", "deleteLink", "Delete a link", {200: s.Empty}, (ID, _TITLE, DOMAIN)),
    # maps (docs/maps.md)
    Op("POST", "/maps", "postMap", "Create a map (or a list of them)", {201: s.Map},
       (DOMAIN,), body=s.MapCreate, body_required=True, many=True),
    Op("GET", "/maps", "getMaps", "The ids of the maps of a domain", {200: s.MapList}, (DOMAIN, PAGE_LIMIT, MARKER)),
    Op("GET", "/maps/{id}", "getMap", "A map (verbose=1: pair count and storage size)", {200: s.Map},
       _obj_params(Param("verbose", _FLAG, "add stats"), Param("include_attrs", _FLAG, "include the attributes"))),
    Op("DELETE", "/maps/{id}", "deleteMap", "Delete a map", {200: s.Empty}, _obj_params()),
    Op("GET", "/maps/{id}/key/{key}", "getMapValue",
       "One key's value, 404 when absent (HEAD: 200 or 404, no body)", {200: s.MapValue}, (ID, _KEY, DOMAIN)),
    Op("PUT", "/maps/{id}/key/{key}", "putMapValue", "Put one key's value (JSON, or packed)",
       {200: s.MapKeyPut, 201: s.MapKeyPut}, (ID, _KEY, DOMAIN), body=s.MapValuePut, binary_body=True,
       body_required=True),
    Op("DELETE", "/maps/{id}/key/{key}", "deleteMapKey", "Delete one key, 404 when absent", {200: s.Empty},
       (ID, _KEY, DOMAIN)),
    Op("GET", "/maps/{id}/keys", "getMapKeys",
       "A page of keys (and values) in the map's stable order (packed: the cursor in X-H5Lake-Cursor)",
       {200: s.MapPage}, _obj_params(PAGE_LIMIT, Param("Marker", _STRING, "start after this key (as in a URL path)"),
                                     Param("Cursor", _STRING, "continue from a page's cursor"),
                                     Param("IncludeValues", _FLAG, "with values"))),
    Op("PUT", "/maps/{id}/keys", "putMapPairs", "Put a batch of pairs (JSON, or packed (key, value) records)",
       {200: s.MapPairsAdded}, _obj_params(), body=s.MapPairsPut, binary_body=True, body_required=True),
    Op("POST", "/maps/{id}/keys", "postMapKeys", "The values of a batch of keys (JSON, or packed)",
       {200: s.MapValues}, _obj_params(), body=s.MapKeys, binary_body=True, body_required=True),
    Op("DELETE", "/maps/{id}/keys", "deleteMapKeys", "Delete a batch of keys (absent ones are ignored)",
       {200: s.MapKeysDeleted}, _obj_params(), body=s.MapKeys, binary_body=True, body_required=True),
    # attributes
    Op("GET", "/{collection}/{id}/attributes", "getAttributes", "An object's attributes", {200: s.AttributeList},
       (*_ATTR_OWNER, LIMIT, MARKER, _NAMES, _SEP, _ENCODING, Param("IncludeData", _FLAG, "with values"),
        Param("CreateOrder", _FLAG, "in creation order"))),
    Op("POST", "/{collection}/{id}/attributes", "postAttributes", "Attributes by name, of one or several objects",
       {200: s.AttributeList}, (*_ATTR_OWNER, _ENCODING, Param("IncludeData", _FLAG, "with values")),
       body=s.AttributeQuery, body_required=True),
    Op("PUT", "/{collection}/{id}/attributes", "putAttributes", "Create several attributes",
       {200: s.Empty, 201: s.Empty}, (*_ATTR_OWNER, _ENCODING), body=s.AttributesPut, body_required=True),
    Op("DELETE", "/{collection}/{id}/attributes", "deleteAttributes", "Delete attributes by name",
       {200: s.Empty}, (*_ATTR_OWNER, _NAMES_REQUIRED, _SEP)),
    Op("GET", "/{collection}/{id}/attributes/{name}", "getAttribute", "One attribute (JSON or packed)",
       {200: s.AttributeOne}, (*_ATTR_OWNER[:2], _ATTR_NAME, DOMAIN, _ENCODING,
                               Param("IncludeData", _FLAG, "with its value"))),
    Op("PUT", "/{collection}/{id}/attributes/{name}", "putAttribute", "Create or replace an attribute",
       {200: s.Empty, 201: s.Empty}, (*_ATTR_OWNER[:2], _ATTR_NAME, DOMAIN, _ENCODING,
                                      Param("type", _STRING, "type JSON or a predefined type name, for a packed body"),
                                      Param("shape", _SHAPE_TEXT, "shape JSON, for a packed body")),
       body=s.AttributePut, binary_body=True, body_required=True),
    Op("DELETE", "/{collection}/{id}/attributes/{name}", "deleteAttribute", "Delete an attribute",
       {200: s.Empty}, (*_ATTR_OWNER[:2], _ATTR_NAME, DOMAIN)),
    # versions (h5lake extension, docs/versions.md); D@REF in domain= reads a version anywhere
    Op("POST", "/versions", "postVersion", "Commit the head as a new version", {201: s.Version}, (DOMAIN,),
       body=s.VersionCommit),
    Op("GET", "/versions", "getVersions", "The versions of a domain, newest first", {200: s.VersionList},
       (DOMAIN, PAGE_LIMIT, Param("Marker", _STRING, "start after this version id"))),
    Op("GET", "/versions/diff", "getVersionDiff", "What changed between two versions (or a version and the head)",
       {200: sm.VersionDiff}, (DOMAIN, Param("from", _REF, "a version reference", required=True),
                              Param("to", _REF, "a version reference (default: the head)"),
                              Param("Limit", {"type": "integer", "minimum": 0}, "chunk indices listed per dataset"))),
    Op("GET", "/versions/tags", "getVersionTags", "The tags of a domain", {200: s.TagList}, (DOMAIN,)),
    Op("GET", "/versions/tags/{name}", "getVersionTag", "One tag", {200: s.Tag}, (_TAG, DOMAIN)),
    Op("PUT", "/versions/tags/{name}", "putVersionTag", "Name a version (tags are immutable)", {201: s.Tag},
       (_TAG, DOMAIN), body=s.TagPut, body_required=True),
    Op("DELETE", "/versions/tags/{name}", "deleteVersionTag", "Delete a tag", {200: s.TagDeleted}, (_TAG, DOMAIN)),
    Op("GET", "/versions/{vid}", "getVersion", "One version", {200: s.Version}, (_VID, DOMAIN)),
    Op("DELETE", "/versions/{vid}", "deleteVersion", "Forget an untagged version", {200: s.VersionDeleted},
       (_VID, DOMAIN)),
    Op("POST", "/versions/merge", "mergeVersion", "Merge a fork (FORK or FORK@REF) into the head: a new version with two parents",
       {201: sm.Merged, 409: sm.MergeConflicts}, (DOMAIN, PAGE_LIMIT, _CONFLICT_MARKER), body=sm.MergeBody, body_required=True),
    Op("POST", "/versions/cherry-pick", "cherryPickVersion", "Apply one version's change (D@REF against its parent) to the head",
       {201: sm.Merged, 409: sm.MergeConflicts}, (DOMAIN, PAGE_LIMIT, _CONFLICT_MARKER), body=sm.MergeBody, body_required=True),
    Op("POST", "/versions/{vid}/restore", "restoreVersion", "Make the head equal to a version", {200: s.Restored},
       (_VID, DOMAIN), body=s.RestoreBody),
    # the Zarr v3 bridge (h5lake extension, docs/zarr.md): {path} is the domain, then an HDF5
    # path, then zarr.json or a chunk key c/i/j...; D@REF serves a version read-only
    Op("GET", "/zarr/{path}", "getZarrKey", "A Zarr v3 store key: a group's or array's zarr.json, or a chunk",
       {200: ZarrNode, 304: "unchanged (by its ETag)"}, (_ZARR_PATH, _ZARR_CODECS), tags=("zarr",)),
    Op("PUT", "/zarr/{path}", "putZarrKey", "Write a chunk, or a zarr.json (a new group or array; attributes, shape)",
       {200: "stored", 201: "created"}, (_ZARR_PATH, _ZARR_CODECS),
       body=ZarrNode, binary_body=True, body_required=True, tags=("zarr",)),
    Op("DELETE", "/zarr/{path}", "deleteZarrKey", "Delete a chunk (it reads as the fill value again)",
       {204: "deleted"}, (_ZARR_PATH,), tags=("zarr",)),
    # operations (docs/operations.md): no credentials for health and readiness
    Op("GET", "/healthz", "getHealth", "Whether the process serves (200 while it does)", {200: Health},
       tags=("operations",)),
    Op("GET", "/readyz", "getReadiness",
       "Whether to send it traffic: 200 when the store answers a probe within 2 s; 503 when it does not, "
       "and from the start of a graceful shutdown", {200: Health, 503: Health}, tags=("operations",)),
    Op("GET", "/metrics", "getMetrics",
       "Prometheus metrics of every worker process (text format), for admins or the --metrics-token bearer token",
       {200: "the Prometheus text exposition format"}, tags=("operations",), text=True),
)


def _per_collection(op: Op) -> tuple[Op, ...]:
    """A route of every collection (``/{collection}/{id}/attributes``) is documented once per
    collection, so that each names the ids of its own collection (an id of another is a 400)."""
    if "{collection}" not in op.path:
        return (op,)
    return tuple(
        replace(op, path=op.path.replace("{collection}", name), op_id=op.op_id + _SUFFIX[name],
                params=tuple(q for q in op.params if q.name != "collection"))
        for name in _COLLECTIONS
    )


_SUFFIX = {"groups": "OfGroup", "datasets": "OfDataset", "datatypes": "OfDatatype", "maps": "OfMap"}
OPS: tuple[Op, ...] = tuple(one for op in _OPS for one in _per_collection(op))

#: Operations that answer packed bytes when asked with ``Accept: application/octet-stream``.
BINARY_REPLIES = frozenset({"getZarrKey", "getValue", "postValue", "getMapValue", "postMapKeys", "getMapKeys",
                            *("getAttribute" + suffix for suffix in _SUFFIX.values())})

_ERRORS = (400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 503)


def _models() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for op in OPS:
        for reply in (*op.responses.values(), op.body):
            for model in reply if isinstance(reply, tuple) else (reply,):
                if isinstance(model, type):
                    seen[model.__name__] = model
    seen["ErrorBody"] = s.ErrorBody
    seen["ObjectsCreated"] = s.ObjectsCreated
    return list(seen.values())


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _operation(op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op.op_id, "summary": op.summary, "responses": {}}
    if op.params:
        collection = op.path.split("/")[1]
        out["parameters"] = [
            {"name": q.name, "in": q.where, "required": q.required or q.where == "path",
             "description": q.description,
             "schema": _id(collection) if q is ID and collection in _COLLECTIONS else q.schema,
             **({"example": q.example} if q.example is not None else {})}
            for q in op.params
        ]
    if op.body is not None:
        schema: dict[str, Any] = _ref(op.body)
        if op.many:
            schema = {"anyOf": [schema, {"type": "array", "items": schema, "minItems": 1}]}
        content: dict[str, Any] = {"application/json": {"schema": schema}}
        extra = op.body.model_config.get("json_schema_extra")
        examples = extra.get("examples") if isinstance(extra, dict) else None
        if isinstance(examples, list) and examples:
            content["application/json"]["example"] = examples[0]
        if op.binary_body:
            content[OCTET] = {"schema": {"type": "string", "format": "binary"}}
        out["requestBody"] = {"required": op.body_required, "content": content}
    for status, model in op.responses.items():
        if isinstance(model, str):
            out["responses"][str(status)] = {"description": model}
            if op.text:
                out["responses"][str(status)]["content"] = {"text/plain": {"schema": {"type": "string"}}}
            continue
        if isinstance(model, tuple):
            reply: dict[str, Any] = {"anyOf": [_ref(m) for m in model]}
            model = model[0]
        else:
            reply = _ref(model)
        if op.many:
            reply = {"anyOf": [reply, _ref(s.ObjectsCreated)]}
        content = {"application/json": {"schema": reply}}
        if op.op_id in BINARY_REPLIES:
            content[OCTET] = {"schema": {"type": "string", "format": "binary"}}
        out["responses"][str(status)] = {"description": model.__doc__.strip().split("\n")[0] if model.__doc__
                                         else model.__name__, "content": content}
    error = {"application/json": {"schema": _ref(s.ErrorBody)}}
    out["responses"].setdefault("503", {
        "description": "storage unavailable (JSON, with Retry-After), or the connection cap reached (plain text)",
        "content": {**error, "text/plain": {"schema": {"type": "string"}}},
    })
    out["responses"]["default"] = {"description": "an error: " + ", ".join(map(str, _ERRORS)), "content": error}
    out["security"] = [{"basic": []}, {"bearer": []}, {}]
    return out


def _request_only() -> set[str]:
    """Models only ever sent: an optional field of theirs is left out, never null (the server
    refuses ``null`` where it wants a string, a list or a flag)."""
    bodies = {op.body.__name__ for op in OPS if op.body is not None}
    replies = {m.__name__ for op in OPS for r in op.responses.values()
               for m in (r if isinstance(r, tuple) else (r,)) if isinstance(m, type)}
    return bodies - replies - {"Link", "ZarrNode"}


def _no_nulls(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        branches = prop.get("anyOf")
        if isinstance(branches, list) and {"type": "null"} in branches:
            branches.remove({"type": "null"})
            if len(branches) == 1:
                prop.pop("anyOf")
                prop.update(branches[0])
            prop.pop("default", None)


@cache
def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (made once per process)."""
    _, defs = models_json_schema([(m, "serialization") for m in _models()],
                                 ref_template="#/components/schemas/{model}")
    for name in _request_only():
        _no_nulls(defs["$defs"][name])
    paths: dict[str, dict[str, Any]] = {}
    for op in OPS:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "h5lake: the HDF REST API",
            "version": __version__,
            "description": "The HDF5 data model over HTTP (HSDS 1.0 compatible). Every response of "
            "a resource carries hrefs; errors are JSON. Packed (binary) values travel as "
            "application/octet-stream. Floats that are not finite are answered as HSDS answers "
            "them, as the bare tokens NaN, Infinity and -Infinity (which Python's json reads), or "
            "as null with ignore_nan=1.",
        },
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
    }


@cache
def _document_bytes() -> bytes:
    return orjson.dumps(document())


async def openapi_json(request: Request) -> Response:
    return Response(_document_bytes(), media_type=JSON)


@cache
def _page() -> str:
    rows = "".join(
        f"<tr><td><code>{op.method}</code></td><td><code>{html.escape(op.path)}</code></td>"
        f"<td>{html.escape(op.summary)}</td></tr>"
        for op in OPS
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>h5lake API</title></head><body>"
        f"<h1>h5lake {html.escape(__version__)}: the HDF REST API</h1>"
        "<p>The machine-readable description is <a href='openapi.json'>openapi.json</a> (OpenAPI 3.1). "
        "Every call but <code>/about</code> and <code>/info</code> names its domain with "
        "<code>?domain=/path</code>.</p>"
        f"<table border='1' cellpadding='4'><tr><th>method</th><th>path</th><th>what</th></tr>{rows}</table>"
        "</body></html>"
    )


async def docs_page(request: Request) -> Response:
    return HTMLResponse(_page())


ROUTES = [
    Route("/openapi.json", openapi_json, methods=["GET"]),
    Route("/docs", docs_page, methods=["GET"]),
]
