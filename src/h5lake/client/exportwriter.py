"""The parts of ``h5lake export``: `exportfetch.Fetcher` reads the objects reachable from the
root a page at a time; :class:`Writer` builds the file with h5py's low-level API as the pages come
(values: `exportvalues`); :class:`ExportRefs` turns references back into HDF5 references.

What the writer holds between pages: the objects read and not yet made (a page, and the groups
listed but not yet entered by the listing, whose links are still to be made), each made
object's id and path (for further hard links to it and for references), and, until the end,
the attributes and values that hold references (their targets may not be made yet)."""

from __future__ import annotations

import base64
import struct
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import orjson
from h5py import h5d, h5g, h5o, h5p, h5r, h5s, h5t

from h5lake.client import exportvalues, h5native, h5values
from h5lake.client.common import MIB, ToolError, rate
from h5lake.client.exportfetch import COLLECTIONS, Fetcher, bare_id
from h5lake.client.exportsmall import ListedPlan, scalar_kind, write_scalar
from h5lake.client.exportvalues import ValueWriting, boxes, extendible, listed_value, type_of, whole
from h5lake.client.h5props import make_dcpl, make_gcpl, make_tcpl
from h5lake.client.h5types import Unrepresentable, memory_type_id, type_id
from h5lake.client.rest import RestClient, RestError
from h5lake.model.fromjson import EXACT_FILL, json_to_array
from h5lake.model.ids import is_valid_id
from h5lake.model.links import LinkClass
from h5lake.model.stored import Doc
from h5lake.model.types import CharSet, TypeClass, TypeJson, type_class
from h5lake.model.values import array_to_bytes

HELD_GROUPS = 4096  # groups kept open from their creation until their links are made
KINDS_KEPT = 1024  # dataset creation property lists remembered for datasets alike
_CSETS = {CharSet.ASCII.value: h5t.CSET_ASCII, CharSet.UTF8.value: h5t.CSET_UTF8}


def _default_cset(name: str) -> str:
    return CharSet.ASCII.value if name.isascii() else CharSet.UTF8.value


def _in_creation_order(doc: Doc) -> deque[tuple[str, Doc]]:
    return deque(sorted((doc.get("links") or {}).items(), key=lambda kv: (kv[1].get("created") or 0, kv[0])))


# -- writing -----------------------------------------------------------------------------------


@dataclass
class ExportStats:
    groups: int = 0
    datasets: int = 0
    datatypes: int = 0
    links: int = 0
    attributes: int = 0
    value_bytes: int = 0
    seconds: float = 0.0
    metadata_seconds: float = 0.0  # reading every object and writing all but the values
    maps: int = 0  # written as compound datasets marked H5LAKE_MAP (client/mapfiles.py)

    @property
    def objects(self) -> int:
        return self.groups + self.datasets + self.datatypes + self.links + self.attributes

    def summary(self, domain: str, target: str) -> str:
        mib = self.value_bytes / MIB
        return (
            f"exported {domain} to {target}: {self.groups} groups, {self.datasets} datasets, "
            f"{self.datatypes} datatypes, {self.links} links, {self.attributes} attributes, "
            + (f"{self.maps} maps (as compound datasets of (key, value) marked H5LAKE_MAP), " if self.maps else "")
            + f"{mib:.1f} MiB of values in {self.seconds:.1f} s "
            f"({rate(mib, self.seconds):.1f} MiB/s, {rate(self.objects, self.seconds):.0f} objects/s)"
        )


def _space(shape: Doc) -> tuple[Any, tuple[int, ...]]:
    cls = shape.get("class", "H5S_SIMPLE")
    if cls == "H5S_NULL":
        return h5s.create(h5s.NULL), ()
    if cls == "H5S_SCALAR":
        return h5s.create(h5s.SCALAR), ()
    dims = tuple(int(d) for d in shape["dims"])
    maxdims = shape.get("maxdims")
    if maxdims is None:
        return h5s.create_simple(dims), dims
    return h5s.create_simple(dims, tuple(h5s.UNLIMITED if m == "H5S_UNLIMITED" else int(m) for m in maxdims)), dims


class Writer(ValueWriting):
    def __init__(self, client: RestClient, fetcher: Fetcher, fid: Any, target_dir: Path, *, workers: int, quiet: bool, external_files: bool,
                 prepare: Callable[[Doc], None] = lambda doc: None) -> None:
        self.client = client
        self.fetcher = fetcher
        self.fid = fid
        self.target_dir = target_dir
        self.workers = workers
        self.quiet = quiet
        self.external_files = external_files
        self.prepare = prepare  # called on each object read, before it is made
        self.paths: dict[str, str] = {}  # object id -> a path to it in the new file
        self.types: dict[str, Any] = {}  # committed datatype id -> its open TypeID
        self.unlinked: dict[str, Any] = {}  # objects made before the walk reached their link (Writer.early)
        self.notes: list[str] = []
        self.has_external = False  # external raw files are being re-created
        self.skipped: dict[int, str] = {}  # plugin filters kept but not run (export.not_rerun_filters)
        self.stats = ExportStats()
        self.refs = ExportRefs(self)
        self.held: dict[str, Any] = {}  # groups made and still open, whose links are to be made
        self.lcpls: dict[str, Any] = {}  # link creation property lists by character set
        self.attribute_types: dict[bytes, tuple[TypeJson, Any]] = {}  # type JSON -> its normalized form and TypeID
        # groups made whose links are still to be made: their links, in creation order; those
        # waiting for a target not read yet (by id), and which groups wait for an id; those
        # that can go on
        self.links_of: dict[str, deque[tuple[str, Doc]]] = {}
        self.waiting: dict[str, str] = {}
        self.needed_by: dict[str, list[str]] = {}
        self.ready: deque[str] = deque()
        self.later_attributes: list[tuple[str, Doc]] = []  # (id, attributes) holding references
        self.later_values: list[tuple[str, Doc]] = []  # datasets whose values hold references
        self.values_due: list[tuple[str, Doc]] = []  # datasets made whose values are to be read
        self.undefined_fill: list[str] = []  # datasets made with an undefined fill value
        self.bar: Any = None
        self.value_seconds = 0.0
        self.group_kinds: dict[bytes, Any] = {}  # (`_gcpl`)
        self.dataset_kinds: dict[bytes, tuple[Any, Any, Any, Doc, Any]] = {}  # (`_dataset`)
        self.attribute_kinds: dict[bytes, tuple[TypeJson, Any, Any, tuple[int, ...], Any, Any]] = {}  # (`_attribute`)
        self.listed_plans: dict[bytes, ListedPlan] = {}  # (`_write_listed`)

    # -- the stream --

    def write_all(self, root: str, pages: Iterator[dict[str, Doc]], pool: ThreadPoolExecutor) -> None:
        """Write every object as the pages of ``pages`` come, then what waited for all of them."""
        for page in pages:
            self.take_page(page)
            if root not in self.paths:
                self.start(root)
            self.advance()
            self.write_values(pool, self.refs)
        if root not in self.paths:
            self.start(root)
        self.complete(pool)
        self.write_later(pool)

    def start(self, root: str) -> None:
        doc = self.take(root)
        self.paths[root] = "/"
        group = h5o.open(self.fid, b"/")
        self._made(root, group, doc)
        self.held[root] = group
        self._pend(root, doc)

    def take_page(self, page: dict[str, Doc]) -> None:
        docs = self.fetcher.docs
        for oid, doc in page.items():
            if oid in docs or self.is_made(oid):  # (listed again: the same object)
                continue
            docs[oid] = doc
            self.prepare(doc)
            self._arrived(oid)

    def is_made(self, oid: str) -> bool:
        return oid in self.paths or oid in self.types or oid in self.unlinked

    def doc(self, oid: str) -> Doc:
        """An object read and not made yet: from the pages, else read alone now."""
        found = self.fetcher.docs.get(oid)
        if found is None:
            found = self.fetcher.docs[oid] = self.fetcher.fetch(oid)
            self.prepare(found)
        return found

    def take(self, oid: str) -> Doc:
        """`doc`, forgotten: the object is being made."""
        doc = self.doc(oid)
        del self.fetcher.docs[oid]
        return doc

    def _arrived(self, oid: str) -> None:
        for gid in self.needed_by.pop(oid, ()):
            if self.waiting.pop(gid, None) is not None:
                self.ready.append(gid)

    def _pend(self, gid: str, doc: Doc) -> None:
        """A group just made (and linked): its links are made in creation order as their
        targets are read."""
        self.links_of[gid] = _in_creation_order(doc)
        self.ready.append(gid)

    def _next_missing(self, gid: str) -> str | None:
        """The target of ``gid``'s next link to make, when it is not read yet."""
        _, link = self.links_of[gid][0]
        if "id" in link and link.get("class", LinkClass.HARD.value) == LinkClass.HARD.value:
            target = bare_id(link["id"])
            if target not in self.fetcher.docs and not self.is_made(target):
                return target
        return None

    def advance(self) -> None:
        """Make the links of the groups that can go on, in each group's creation order, up to
        the first whose target is not read yet (that group then waits for it)."""
        while self.ready:
            gid = self.ready.popleft()
            links = self.links_of[gid]
            group = None
            while links:
                missing = self._next_missing(gid)
                if missing is not None:
                    self.waiting[gid] = missing
                    self.needed_by.setdefault(missing, []).append(gid)
                    break
                if group is None:
                    group = self.held.pop(gid, None) or h5o.open(self.fid, self.paths[gid].encode("utf-8", "surrogateescape"))
                name, link = links.popleft()
                self._link(group, gid, name, link)
            if not links:
                del self.links_of[gid]
                self.held.pop(gid, None)  # (a group of no links was never taken out)
            elif group is not None and len(self.held) < HELD_GROUPS:
                self.held[gid] = group

    def complete(self, pool: ThreadPoolExecutor) -> None:
        """Make the links the listing left waiting (it ended without their targets: a server's
        listing may stop short), reading those targets one GET each, concurrently."""
        while self.waiting or self.ready:
            self.advance()
            missing = sorted(set(self.waiting.values()))
            for oid, doc in zip(missing, pool.map(self.fetcher.fetch, missing), strict=True):
                if oid not in self.fetcher.docs and not self.is_made(oid):
                    self.fetcher.docs[oid] = doc
                    self.prepare(doc)
                self._arrived(oid)
            self.write_values(pool, self.refs)

    def write_later(self, pool: ThreadPoolExecutor) -> None:
        """What holds references, now that every object is made: attributes, then values."""
        for oid, attrs in self.later_attributes:
            self._attributes_of(self.open(oid), oid, attrs, self.refs)
        self.later_attributes = []
        for oid, doc in self.later_values:
            if "value_base64" in doc:
                data = listed_value(doc)
                if data is not None:
                    self.write_value(oid, doc, whole(doc), data, self.refs)
                    self.stats.value_bytes += len(data)
            else:
                self.values_due.append((oid, doc))
                self.value_bar(sum(n for _, n in boxes(doc)))
        self.later_values = []
        self.write_values(pool, self.refs)
        if self.bar is not None:
            self.bar.close()

    # -- objects and links --

    def open(self, obj_id: str) -> Any:
        if obj_id in self.types:
            return self.types[obj_id]
        path = self.paths.get(obj_id)
        if path is None and obj_id in self.unlinked:
            return self.unlinked[obj_id]
        if path is None:
            raise ToolError(f"object {obj_id} is referenced but not linked anywhere in the domain")
        return h5o.open(self.fid, path.encode("utf-8", "surrogateescape"))

    def committed(self, obj_id: str) -> Any:
        if obj_id not in self.types:
            doc = self.take(obj_id)
            tid = type_id(type_of(doc["type"]))
            h5native.commit_anonymous(self.fid, tid, make_tcpl(doc.get("creationProperties") or {}))
            self._comment(tid, doc)
            self.types[obj_id] = tid
            self.stats.datatypes += 1
            self._made(obj_id, tid, doc)
        return self.types[obj_id]

    def type_for(self, t: TypeJson) -> Any:
        if "id" in t:
            return self.committed(t["id"])
        return type_id(t)

    def early(self, obj_id: str) -> Any:
        """The object ``obj_id``, made now, unlinked, if the walk has not reached it yet: a fill
        value refers to it (MATLAB's cell arrays name ``/#refs#/a``) and HDF5 takes the fill when
        the dataset is made. Its link, when the walk reaches it, links this object."""
        if self.is_made(obj_id):
            return self.open(obj_id)
        if obj_id.startswith("t-"):
            return self.committed(obj_id)
        if obj_id.startswith("g-"):
            doc = self.take(obj_id)
            obj = h5g.create(self.fid, None, gcpl=make_gcpl(doc.get("creationProperties") or {}))
            self._comment(obj, doc)
            self.stats.groups += 1
            self._made(obj_id, obj, doc)
            self.links_of[obj_id] = _in_creation_order(doc)
        else:
            obj = self._dataset(obj_id, f"(referenced by a fill value: {obj_id})")
        self.unlinked[obj_id] = obj
        return obj

    def _lcpl(self, name: str, link: Doc) -> Any:
        cset = link.get("nameCharSet") or _default_cset(name)
        if cset not in self.lcpls:
            self.lcpls[cset] = lcpl = h5p.create(h5p.LINK_CREATE)
            lcpl.set_char_encoding(_CSETS[cset])
        return self.lcpls[cset]

    def _link(self, group: Any, gid: str, name: str, link: Doc) -> None:
        """Create one link (and its target, when not made yet)."""
        raw = name.encode("utf-8", "surrogateescape")
        cls = link.get("class") or (LinkClass.HARD.value if "id" in link else LinkClass.SOFT.value)
        lcpl = self._lcpl(name, link)
        where = f"{self.paths[gid].rstrip('/')}/{name}"
        self.stats.links += 1
        if cls == LinkClass.SOFT.value:
            group.links.create_soft(raw, link["h5path"].encode("utf-8", "surrogateescape"), lcpl=lcpl)
            return
        if cls == LinkClass.EXTERNAL.value:
            filename = str(link.get("h5domain") or link.get("file") or "")
            group.links.create_external(raw, filename.encode("utf-8", "surrogateescape"), link["h5path"].encode("utf-8", "surrogateescape"), lcpl=lcpl)
            return
        if cls == LinkClass.USER_DEFINED.value:
            h5native.create_ud_link(group, raw, int(link["linkClass"]), base64.b64decode(link.get("value", "")), lcpl)
            return
        if cls != LinkClass.HARD.value:
            raise Unrepresentable(f"link {where} of class {cls}")
        target = bare_id(link["id"])
        made = False
        if target in self.paths or target in self.types:
            obj = self.open(target)
        elif target in self.unlinked:  # made early for a fill value
            obj = self.unlinked.pop(target)
            made = target.startswith("g-")
        elif target.startswith("t-"):
            obj = self.committed(target)
        elif target.startswith("g-"):
            doc = self.take(target)
            obj = h5g.create(self.fid, None, gcpl=self._gcpl(doc))
            self._comment(obj, doc)
            self.stats.groups += 1
            self._made(target, obj, doc)
            self.links_of[target] = _in_creation_order(doc)
            made = True
        else:
            obj = self._dataset(target, where)
        h5o.link(obj, group, raw, lcpl=lcpl)
        self.paths.setdefault(target, where)
        if made:
            if len(self.held) < HELD_GROUPS:
                self.held[target] = obj
            self.ready.append(target)

    def _gcpl(self, doc: Doc) -> Any:
        """A group's creation property list, shared by groups alike (`KINDS_KEPT` remembered)."""
        props = doc.get("creationProperties") or {}
        key = orjson.dumps(props)
        gcpl = self.group_kinds.get(key)
        if gcpl is None:
            if len(self.group_kinds) >= KINDS_KEPT:
                self.group_kinds.clear()
            gcpl = self.group_kinds[key] = make_gcpl(props)
        return gcpl

    def _comment(self, obj: Any, doc: Doc) -> None:
        comment = (doc.get("creationProperties") or {}).get("comment")
        if comment:
            h5o.set_comment(obj, comment.encode("utf-8", "surrogateescape"))

    def _dataset(self, obj_id: str, where: str) -> Any:
        doc = self.take(obj_id)
        t = type_of(doc["type"])
        key = orjson.dumps([doc["type"], doc["shape"], doc.get("creationProperties")])
        made = self.dataset_kinds.get(key)
        if made is None:
            notes = len(self.notes)
            made = self._dataset_kind(doc, t, where)
            props = made[3]
            if len(self.notes) == notes and props.get("fillValue") is None and "externalStorage" not in props["layout"]:
                if len(self.dataset_kinds) >= KINDS_KEPT:
                    self.dataset_kinds.clear()
                self.dataset_kinds[key] = made
        tid, space, dcpl, props, _fill = made  # (the fill's memory lives until the dataset is made)
        try:
            dsid = h5d.create(self.fid, None, tid, space, dcpl=dcpl)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ToolError(f"dataset {where} cannot be created in HDF5: {exc}") from None
        self._comment(dsid, doc)
        self.stats.datasets += 1
        self._made(obj_id, dsid, doc)
        self._note_skipped(where, props)
        if props.get("fillValueUndefined"):
            self.undefined_fill.append(obj_id)
        value = {"type": doc["type"], "shape": doc["shape"], "creationProperties": doc.get("creationProperties") or {}, "layout": doc.get("layout") or {}}
        if h5values.has_reference(t):
            if "value_base64" in doc:
                value["value_base64"] = doc["value_base64"]
            self.later_values.append((obj_id, value))
        elif "value_base64" in doc and "externalStorage" not in props["layout"]:  # (external: read as the others)
            self._write_listed(obj_id, doc, dsid, key, t, tid)
        else:
            self.values_due.append((obj_id, value))
            self.value_bar(sum(n for _, n in boxes(value)))
        return dsid

    def _write_listed(self, obj_id: str, doc: Doc, dsid: Any, key: bytes, t: TypeJson, tid: Any) -> None:
        """Write the value the listing held: as `ListedPlan` says, else as `write_value` does."""
        data = base64.b64decode(doc["value_base64"])
        try:
            written = ListedPlan.kept(self.listed_plans, key, doc, t).write(dsid, tid, t, data)
        except (ValueError, RuntimeError, OSError, TypeError) as exc:
            raise ToolError(f"values of {self.paths.get(obj_id, obj_id)} cannot be written: {exc}") from None
        if written is None:
            self.write_value(obj_id, doc, whole(doc), data, self.refs, dsid)
        self.stats.value_bytes += len(data) if written is not False else 0

    def _dataset_kind(self, doc: Doc, t: TypeJson, where: str) -> tuple[Any, Any, Any, Doc, Any]:
        """What a dataset is made with: its type, space, creation property list, and its creation
        properties as written (datasets alike in all three share them, `KINDS_KEPT` remembered),
        and the fill value given to the property list: HDF5 keeps a variable-length fill's
        pointers, not a copy of what they point to, until the dataset is made."""
        tid = self.type_for(t)
        space, _ = _space(doc["shape"])
        props = dict(doc.get("creationProperties") or {})
        layout = dict(props.get("layout") or {})
        if "externalStorage" in layout:
            if self.external_files:
                exportvalues.check_external(layout["externalStorage"], where, self.target_dir)
                self.has_external = True
            else:
                self.notes.append(f"dataset {where}: external storage written as an ordinary dataset (use --keep-external to re-create the raw files)")
                del layout["externalStorage"]
        if "externalStorage" not in layout:
            props["layout"] = layout = extendible(layout, doc["shape"], tid.get_size(), where, self.notes)
        fill_raw = self._fill_raw(props, t, tid)
        try:
            dcpl = make_dcpl(props, t, fill_raw, memory_type_id(tid, t))  # HDF5 converts the fill
        except Unrepresentable as exc:
            raise Unrepresentable(f"dataset {where}: {exc.feature}") from None
        props["layout"] = layout
        return tid, space, dcpl, props, fill_raw

    def _note_skipped(self, where: str, props: Doc) -> None:
        named = [f"{f['id']} ({self.skipped[f['id']]})" for f in props.get("filters") or () if isinstance(f, dict) and f.get("id") in self.skipped]
        if named:
            self.notes.append(f"dataset {where}: filter {', '.join(named)} kept with its parameters, chunks written with it skipped (h5lake holds the decoded values)")

    def _made(self, obj_id: str, obj: Any, doc: Doc) -> None:
        """Write an object's attributes as it is made (it is open): all of them, unless one
        holds references, whose targets may not be made yet (then `write_later` does)."""
        self._arrived(obj_id)
        attrs = doc.get("attributes") or {}
        if any(h5values.has_reference(type_of(a["type"])) for a in attrs.values()):
            self.later_attributes.append((obj_id, attrs))
            return
        self._attributes_of(obj, obj_id, attrs, self.refs)

    def _fill_raw(self, props: Doc, t: TypeJson, tid: Any) -> bytes | np.ndarray | None:
        """The fill value as raw bytes of the dataset's type, or (for a type with variable-length
        parts or references) as a one-element array h5py converts."""
        if props.get("fillValue") is None:
            return None
        if props.get(EXACT_FILL) is not None and h5values.is_raw(t):  # bytes its JSON form does not keep
            return h5values.wire_to_raw(base64.b64decode(props[EXACT_FILL]), t)
        arr = json_to_array(props["fillValue"], t, ())
        if type_class(t) is TypeClass.REFERENCE and t["base"] == "H5T_STD_REF_OBJ":
            # an hobj_ref_t is the address of the object's header (h5py's Reference objects
            # cannot be handed to H5Pset_fill_value): MATLAB's cell arrays fill with one
            value = bytes(arr.reshape(-1)[0] or b"")
            if not value:
                return bytes(8)
            target = self.early(bare_id(value.decode()))
            return struct.pack("=Q", h5o.get_info(target).addr)
        if h5values.is_raw(t):
            return h5values.wire_to_raw(array_to_bytes(arr, t), t)
        return h5values.from_model(arr.reshape((1,) + arr.shape), t, ExportRefs(self))

    # -- attributes --

    def _attributes_of(self, obj: Any, oid: str, attributes: Doc, refs: ExportRefs) -> None:
        for name, attr in sorted(attributes.items(), key=lambda kv: (kv[1].get("created") or 0, kv[0])):
            try:
                self._attribute(obj, name, attr, refs)
            except (ValueError, RuntimeError, OSError, TypeError) as exc:
                raise ToolError(f"attribute {name!r} of {self.paths.get(oid, oid)} cannot be written: {exc}") from None
            self.stats.attributes += 1

    def _attribute(self, obj: Any, name: str, attr: Doc, refs: ExportRefs) -> None:
        shape = attr.get("shape") or {"class": "H5S_SCALAR"}
        key = orjson.dumps([attr["type"], shape])
        kind = self.attribute_kinds.get(key)
        if kind is None:  # (a committed type's TypeID is the committed one)
            t = type_of(attr["type"])
            tid = self.type_for(t)
            space, dims = _space(shape)
            raw_type = memory_type_id(tid, t) if h5values.is_raw(t) else None
            kind = t, tid, space, dims, raw_type, scalar_kind(t, dims, space)
            if len(self.attribute_kinds) >= KINDS_KEPT:
                self.attribute_kinds.clear()
            self.attribute_kinds[key] = kind
        t, tid, space, dims, raw_type, scalar = kind
        raw = name.encode("utf-8", "surrogateescape")
        cset = attr.get("nameCharSet") or CharSet.ASCII.value
        if cset == CharSet.ASCII.value:
            aid = h5py.h5a.create(obj, raw, tid, space)
        else:
            aid = h5native.create_attribute(obj, raw, tid, space, _CSETS[cset])
        if space.get_simple_extent_type() == h5s.NULL or attr.get("value") is None and "value_base64" not in attr:
            return
        if "value_base64" in attr:  # the exact bytes, where the JSON value could not keep them
            wire = base64.b64decode(attr["value_base64"])
        elif scalar is not None and write_scalar(aid, scalar, t, raw_type, attr["value"]):
            return
        else:
            wire = array_to_bytes(json_to_array(attr["value"], t, dims), t)
        if raw_type is not None:  # (as write_attribute does)
            buf = np.frombuffer(h5values.wire_to_raw(wire, t), dtype=np.uint8)
            if buf.size:
                aid.write(buf, mtype=raw_type)
            return
        h5values.write_attribute(aid, tid, t, dims, wire, refs)


class ExportRefs:
    """References while exporting: ids (and region blobs) to HDF5 references in the new file."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.gone: dict[str, Any] = {}  # id of no object in the domain -> its placeholder
        self.present: dict[str, bool] = {}

    def target(self, obj_id: str, region: bool) -> Any:
        """The object a reference to ``obj_id`` is made on: the one written for it, or, when no
        object in the domain has that id (a reference whose object no longer existed in the
        loaded file), an unlinked placeholder that is deleted when the file is complete, so
        the reference is dangling again."""
        w = self.writer
        if obj_id in w.paths or obj_id in w.types:
            return w.open(obj_id)
        if obj_id not in self.present:
            try:
                w.client.get_json(f"/{COLLECTIONS[obj_id[0]]}/{obj_id}")
                self.present[obj_id] = True
            except RestError as exc:
                if exc.status != 404:
                    raise
                self.present[obj_id] = False
        if self.present[obj_id]:
            return w.open(obj_id)  # names the object that is referenced but not linked
        if obj_id not in self.gone:
            if region or obj_id.startswith("d-"):
                space = h5s.create_simple((1,))
                self.gone[obj_id] = h5d.create(w.fid, None, h5t.STD_U8LE, space)
            elif obj_id.startswith("t-"):
                tid = h5t.STD_U8LE.copy()
                h5native.commit_anonymous(w.fid, tid)
                self.gone[obj_id] = tid
            else:
                self.gone[obj_id] = h5g.create(w.fid, None)
        return self.gone[obj_id]

    def release(self) -> None:
        """Close the placeholders (dropping the last handle closes one): unlinked, HDF5 deletes
        them when the file is closed."""
        self.gone.clear()

    def to_wire(self, ref: Any, region: bool) -> bytes:
        raise AssertionError("not used while exporting")

    def from_wire(self, value: bytes, region: bool) -> Any:
        value = bytes(value).rstrip(b"\0")
        if not value:
            return h5values.null_reference(region)
        if not region:
            text = value.decode("ascii", "replace")
            if not is_valid_id(bare_id(text)):
                raise ToolError(f"a reference holds {text!r}, which is not an object id")
            return h5r.create(self.target(bare_id(text), False), b".", h5r.OBJECT)
        try:
            blob = h5values.decode_region_blob(value)
        except ValueError:
            raise ToolError("a region reference is in neither h5lake's form nor h5pyd's (written by another client?)") from None
        target_id = bare_id(blob["id"])
        if not is_valid_id(target_id):
            raise ToolError(f"a region reference names {blob['id']!r}, which is not a dataset id")
        dsid = self.target(target_id, True)
        space = dsid.get_space()
        if target_id in self.gone:
            space.select_none()  # the selection on a dataset that no longer exists is unknown
        else:
            h5values.select_region(space, blob)
        return h5r.create(dsid, b".", h5r.DATASET_REGION, space)
