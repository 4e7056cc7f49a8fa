"""The parts of ``h5lake export``: `exportfetch.Fetcher` reads every object reachable from the
root; :class:`Writer` builds the file with h5py's low-level API; :class:`ExportRefs` turns references
back into HDF5 references."""

from __future__ import annotations

import base64
import math
import struct
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import orjson
from h5py import h5d, h5g, h5o, h5p, h5r, h5s, h5t

from h5lake.client import h5native, h5values
from h5lake.client.common import (
    MIB,
    ToolError,
    progress,
    rate,
)
from h5lake.client.exportfetch import COLLECTIONS, Fetcher, bare_id
from h5lake.client.h5props import make_dcpl, make_gcpl, make_tcpl
from h5lake.client.h5types import Unrepresentable, memory_type_id, type_id
from h5lake.client.rest import RestClient, RestError
from h5lake.model.fromjson import EXACT_FILL, fill_value_array, json_to_array
from h5lake.model.ids import is_valid_id
from h5lake.model.layout import guess_chunk_shape
from h5lake.model.links import LinkClass
from h5lake.model.stored import Doc
from h5lake.model.typecheck import validate_type
from h5lake.model.types import CharSet, TypeClass, TypeJson, is_variable, type_class, wire_dtype
from h5lake.model.values import array_to_bytes

BLOCK_BYTES = 8 * MIB
HELD_GROUPS = 4096  # groups kept open from their creation until their links are made
_CSETS = {CharSet.ASCII.value: h5t.CSET_ASCII, CharSet.UTF8.value: h5t.CSET_UTF8}


def _default_cset(name: str) -> str:
    return CharSet.ASCII.value if name.isascii() else CharSet.UTF8.value


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


def _type_of(t: Any) -> TypeJson:
    """A type as a server returned it, normalized (a committed type keeps its ``id``)."""
    if isinstance(t, str):
        return validate_type(t)
    out = validate_type(t)
    if isinstance(t, dict) and isinstance(t.get("id"), str):
        out["id"] = bare_id(t["id"])
    return out


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


def _extendible(layout: Doc, shape: Doc, item_size: int, where: str, notes: list[str]) -> Doc:
    """The layout of a dataset HDF5 would refuse: an extendible one (maxdims beyond dims) is
    only chunked or external in HDF5, so one that is neither (an external dataset written as an
    ordinary one, a virtual dataset loaded as one, a compact or contiguous one a client asked
    for) is written chunked."""
    dims = [int(d) for d in shape.get("dims") or ()]
    maxdims = [None if m == "H5S_UNLIMITED" else int(m) for m in shape.get("maxdims") or dims]
    if maxdims == dims or layout.get("class") == "H5D_CHUNKED":
        return layout
    chunks = list(guess_chunk_shape(dims, maxdims, item_size))
    notes.append(f"dataset {where}: extendible, so written chunked ({'x'.join(map(str, chunks))})")
    return {"class": "H5D_CHUNKED", "dims": chunks}


class Writer:
    def __init__(self, client: RestClient, fetcher: Fetcher, fid: Any, target_dir: Path, *, workers: int, quiet: bool, external_files: bool) -> None:
        self.client = client
        self.fetcher = fetcher
        self.fid = fid
        self.target_dir = target_dir
        self.workers = workers
        self.quiet = quiet
        self.external_files = external_files
        self.paths: dict[str, str] = {}  # object id -> a path to it in the new file
        self.types: dict[str, Any] = {}  # committed datatype id -> its open TypeID
        self.unlinked: dict[str, Any] = {}  # objects made before the walk reached their link (Writer.early)
        self.notes: list[str] = []
        self.has_external = False  # external raw files are being re-created
        self.stats = ExportStats()
        self.refs = ExportRefs(self)
        self.attributes_written: set[str] = set()  # objects whose attributes were written when made
        self.values_written: set[str] = set()  # datasets whose value the listing held, written when made
        self.held: dict[str, Any] = {}  # groups made and still open, whose links are to be made
        self.lcpls: dict[str, Any] = {}  # link creation property lists by character set
        self.attribute_types: dict[bytes, tuple[TypeJson, Any]] = {}  # type JSON -> its normalized form and TypeID

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
            doc = self.fetcher.get(obj_id)
            tid = type_id(_type_of(doc["type"]))
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

    def build_tree(self, root: str) -> None:
        for oid in list(self.fetcher.docs):
            if oid.startswith("t-"):
                self.committed(oid)
        self.paths[root] = "/"
        queue = deque([root])
        while queue:
            gid = queue.popleft()
            group = self.held.pop(gid, None) or h5o.open(self.fid, self.paths[gid].encode("utf-8", "surrogateescape"))
            links = sorted(self.fetcher.get(gid).get("links", {}).items(), key=lambda kv: (kv[1].get("created") or 0, kv[0]))
            for name, link in links:
                created = self._link(group, gid, name, link)
                if created is not None:
                    queue.append(created)

    def early(self, obj_id: str) -> Any:
        """The object ``obj_id``, made now, unlinked, if the walk has not reached it yet: a fill
        value refers to it (MATLAB's cell arrays name ``/#refs#/a``) and HDF5 takes the fill when
        the dataset is made. Its link, when the walk reaches it, links this object."""
        if obj_id in self.paths or obj_id in self.types or obj_id in self.unlinked:
            return self.open(obj_id)
        if obj_id not in self.fetcher.docs:
            raise ToolError(f"object {obj_id} is referenced but not linked anywhere in the domain")
        if obj_id.startswith("g-"):
            doc = self.fetcher.get(obj_id)
            obj = h5g.create(self.fid, None, gcpl=make_gcpl(doc.get("creationProperties") or {}))
            self._comment(obj, doc)
            self.stats.groups += 1
            self._made(obj_id, obj, doc)
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

    def _link(self, group: Any, gid: str, name: str, link: Doc) -> str | None:
        """Create one link; returns the id of a group made for it, to visit next."""
        raw = name.encode("utf-8", "surrogateescape")
        cls = link.get("class") or (LinkClass.HARD.value if "id" in link else LinkClass.SOFT.value)
        lcpl = self._lcpl(name, link)
        where = f"{self.paths[gid].rstrip('/')}/{name}"
        self.stats.links += 1
        if cls == LinkClass.SOFT.value:
            group.links.create_soft(raw, link["h5path"].encode("utf-8", "surrogateescape"), lcpl=lcpl)
            return None
        if cls == LinkClass.EXTERNAL.value:
            filename = str(link.get("h5domain") or link.get("file") or "")
            group.links.create_external(raw, filename.encode("utf-8", "surrogateescape"), link["h5path"].encode("utf-8", "surrogateescape"), lcpl=lcpl)
            return None
        if cls == LinkClass.USER_DEFINED.value:
            h5native.create_ud_link(group, raw, int(link["linkClass"]), base64.b64decode(link.get("value", "")), lcpl)
            return None
        if cls != LinkClass.HARD.value:
            raise Unrepresentable(f"link {where} of class {cls}")
        target = bare_id(link["id"])
        made = None
        if target in self.paths or target in self.types:
            obj = self.open(target)
        elif target in self.unlinked:  # made early for a fill value
            obj = self.unlinked.pop(target)
            made = target if target.startswith("g-") else None
        elif target.startswith("g-"):
            doc = self.fetcher.get(target)
            obj = h5g.create(self.fid, None, gcpl=make_gcpl(doc.get("creationProperties") or {}))
            self._comment(obj, doc)
            self.stats.groups += 1
            self._made(target, obj, doc)
            made = target
            if len(self.held) < HELD_GROUPS:
                self.held[target] = obj
        else:
            obj = self._dataset(target, where)
        h5o.link(obj, group, raw, lcpl=lcpl)
        self.paths.setdefault(target, where)
        return made

    def _comment(self, obj: Any, doc: Doc) -> None:
        comment = (doc.get("creationProperties") or {}).get("comment")
        if comment:
            h5o.set_comment(obj, comment.encode("utf-8", "surrogateescape"))

    def _dataset(self, obj_id: str, where: str) -> Any:
        doc = self.fetcher.get(obj_id)
        t = _type_of(doc["type"])
        tid = self.type_for(t)
        space, _ = _space(doc["shape"])
        props = dict(doc.get("creationProperties") or {})
        layout = dict(props.get("layout") or {})
        if "externalStorage" in layout:
            if self.external_files:
                self._check_external(layout["externalStorage"], where)
                self.has_external = True
            else:
                self.notes.append(f"dataset {where}: external storage written as an ordinary dataset (use --keep-external to re-create the raw files)")
                del layout["externalStorage"]
        if "externalStorage" not in layout:
            props["layout"] = layout = _extendible(layout, doc["shape"], tid.get_size(), where, self.notes)
        fill_raw = self._fill_raw(props, t, tid)
        try:
            dcpl = make_dcpl(props, t, fill_raw, memory_type_id(tid, t))  # HDF5 converts the fill
        except Unrepresentable as exc:
            raise Unrepresentable(f"dataset {where}: {exc.feature}") from None
        try:
            dsid = h5d.create(self.fid, None, tid, space, dcpl=dcpl)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ToolError(f"dataset {where} cannot be created in HDF5: {exc}") from None
        self._comment(dsid, doc)
        self.stats.datasets += 1
        self._made(obj_id, dsid, doc)
        if "value_base64" in doc and not h5values.has_reference(t) and "externalStorage" not in layout:  # (external: write_values)
            data = self._listed_value(obj_id)
            if data is not None:
                self._write(obj_id, self._whole(obj_id), data, self.refs, dsid)
                self.stats.value_bytes += len(data)
            self.values_written.add(obj_id)
        return dsid

    def _made(self, obj_id: str, obj: Any, doc: Doc) -> None:
        """Write an object's attributes as it is made (it is open): all of them, unless one
        holds references, whose targets may not be made yet (then `write_attributes` does)."""
        attrs = doc.get("attributes") or {}
        if any(h5values.has_reference(_type_of(a["type"])) for a in attrs.values()):
            return
        self._attributes_of(obj, obj_id, attrs, self.refs)
        self.attributes_written.add(obj_id)

    def _check_external(self, files: list[Doc], where: str) -> None:
        for item in files:
            name = Path(item["name"])
            if name.is_absolute() or ".." in name.parts:
                raise ToolError(f"dataset {where}: external file {item['name']!r} is not a plain relative name; export without --keep-external")
            if (self.target_dir / name).exists():
                raise ToolError(f"dataset {where}: external file {self.target_dir / name} already exists")

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

    def write_attributes(self, refs: ExportRefs) -> None:
        """The attributes not written when their objects were made (`_made`)."""
        for oid in list(self.paths) + [t for t in self.types if t not in self.paths]:
            if oid in self.attributes_written:
                continue
            attrs = self.fetcher.get(oid).get("attributes") or {}
            if attrs:
                self._attributes_of(self.open(oid), oid, attrs, refs)
            self.attributes_written.add(oid)

    def _attributes_of(self, obj: Any, oid: str, attributes: Doc, refs: ExportRefs) -> None:
        for name, attr in sorted(attributes.items(), key=lambda kv: (kv[1].get("created") or 0, kv[0])):
            try:
                self._attribute(obj, name, attr, refs)
            except (ValueError, RuntimeError, OSError, TypeError) as exc:
                raise ToolError(f"attribute {name!r} of {self.paths.get(oid, oid)} cannot be written: {exc}") from None
            self.stats.attributes += 1

    def _attribute(self, obj: Any, name: str, attr: Doc, refs: ExportRefs) -> None:
        key = orjson.dumps(attr["type"], option=orjson.OPT_SORT_KEYS)
        if key not in self.attribute_types:  # (a committed type's TypeID is the committed one)
            t = _type_of(attr["type"])
            self.attribute_types[key] = t, self.type_for(t)
        t, tid = self.attribute_types[key]
        space, dims = _space(attr.get("shape") or {"class": "H5S_SCALAR"})
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
        else:
            wire = array_to_bytes(json_to_array(attr["value"], t, dims), t)
        h5values.write_attribute(aid, tid, t, dims, wire, refs)

    # -- values --

    def write_values(self, pool: ThreadPoolExecutor, refs: ExportRefs) -> None:
        datasets = [oid for oid in self.paths if oid.startswith("d-") and oid not in self.values_written]
        listed = [oid for oid in datasets if "value_base64" in self.fetcher.get(oid)]
        work = [item for oid in datasets if "value_base64" not in self.fetcher.get(oid) for item in self._boxes(oid)]
        total = sum(n for *_, n in work)
        with progress(total, "values", self.quiet) as bar:
            for oid in listed:  # small values the listing held (exportfetch.Fetcher)
                data = self._listed_value(oid)
                if data is not None:
                    self._write(oid, self._whole(oid), data, refs)
                    self.stats.value_bytes += len(data)
            pending: dict[Future[bytes | None], tuple[str, Any]] = {}
            items = iter(work)
            while True:
                while len(pending) < 2 * self.workers:
                    item = next(items, None)
                    if item is None:
                        break
                    oid, sel, _ = item
                    pending[pool.submit(self._fetch, oid, sel)] = (oid, sel)
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    oid, sel = pending.pop(fut)
                    data = fut.result()
                    if data is not None:
                        self._write(oid, sel, data, refs)
                    nbytes = len(data) if data else 0
                    self.stats.value_bytes += nbytes
                    bar.update(nbytes)

    def check_readable(self) -> None:
        """Stop, naming the dataset, rather than leave one HDF5 cannot read: elements, no
        storage, no external files and no fill value ("dataset doesn't exist, no data can be
        read"). Values are written for such datasets (:meth:`_may_skip`), so this is a guard."""
        for oid, path in self.paths.items():
            if not oid.startswith("d-") or not (self.fetcher.get(oid).get("creationProperties") or {}).get("fillValueUndefined"):
                continue  # (a defined or default fill value reads as such)
            dsid = self.open(oid)
            space = dsid.get_space()
            if space.get_simple_extent_type() == h5s.NULL or space.get_simple_extent_npoints() == 0:
                continue
            dcpl = dsid.get_create_plist()
            if dsid.get_storage_size() == 0 and dcpl.get_external_count() == 0 and dcpl.fill_value_defined() == h5d.FILL_VALUE_UNDEFINED:
                raise ToolError(f"dataset {path} would have no values and no fill value, which HDF5 cannot read; it was not written")

    def _boxes(self, oid: str) -> Iterator[tuple[str, Any, int]]:
        doc = self.fetcher.get(oid)
        shape = doc["shape"]
        cls = shape.get("class", "H5S_SIMPLE")
        t = _type_of(doc["type"])
        itemsize = 64 if is_variable(t) else max(1, wire_dtype(t).itemsize)
        if cls == "H5S_NULL":
            return
        if cls == "H5S_SCALAR":
            yield oid, None, itemsize
            return
        dims = tuple(shape["dims"])
        if math.prod(dims) == 0:
            return
        layout = (doc.get("creationProperties") or {}).get("layout") or {}
        chunk = layout.get("dims") if layout.get("class") == "H5D_CHUNKED" else None
        if not chunk:
            yield from ((oid, b, n) for b, n in h5values.split_box(tuple(slice(0, d) for d in dims), itemsize, BLOCK_BYTES))
            return
        for box in h5values.chunk_groups(dims, tuple(chunk), itemsize, BLOCK_BYTES):
            yield from ((oid, b, n) for b, n in h5values.split_box(box, itemsize, BLOCK_BYTES))

    def _whole(self, oid: str) -> Any:
        shape = self.fetcher.get(oid)["shape"]
        if shape.get("class") == "H5S_SCALAR":
            return None
        return tuple(slice(0, int(d)) for d in shape["dims"])

    def _listed_value(self, oid: str) -> bytes | None:
        doc = self.fetcher.get(oid)
        data = base64.b64decode(doc["value_base64"])
        t = _type_of(doc["type"])
        props = doc.get("creationProperties") or {}
        if self._may_skip(t, props) and self._all_fill(data, t, props):
            return None
        return data

    def _fetch(self, oid: str, sel: Any) -> bytes | None:
        doc = self.fetcher.get(oid)
        t = _type_of(doc["type"])
        try:
            data = self.client.get_bytes(f"/datasets/{oid}/value", **h5values.select_text(sel))
        except RestError as exc:
            if exc.status not in (200, None) or "binary" not in exc.message:
                raise ToolError(f"reading values of {self.paths.get(oid, oid)} failed: {exc.message}") from None
            reply = self.client.get_json(f"/datasets/{oid}/value", **h5values.select_text(sel))
            shape = tuple(s.stop - s.start for s in sel) if sel is not None else tuple(doc["shape"].get("dims", ()))
            data = array_to_bytes(json_to_array(reply["value"], t, shape), t)
        props = doc.get("creationProperties") or {}
        if self._may_skip(t, props) and self._all_fill(data, t, props):
            return None  # leave it unwritten, as the source most likely had it: it reads the same
        return data

    @staticmethod
    def _may_skip(t: TypeJson, props: Doc) -> bool:
        """Whether a block holding only the fill value may be left unwritten: not when the fill
        is never written (the storage would hold garbage), nor for a variable-length type with
        a fill value (HDF5 cannot read such an unallocated chunk from a read-only file), nor when
        the fill value is undefined: HDF5 refuses to read a dataset with no storage and no fill
        value ("dataset doesn't exist, no data can be read")."""
        if props.get("fillTime") == "H5D_FILL_TIME_NEVER" or props.get("fillValueUndefined"):
            return False
        return not (is_variable(t) and props.get("fillValue") is not None)

    def _all_fill(self, data: bytes, t: TypeJson, props: Doc) -> bool:
        fill = self._fill_wire(t, props)
        return len(data) % len(fill) == 0 and data == fill * (len(data) // len(fill))

    def _fill_wire(self, t: TypeJson, props: Doc) -> bytes:
        try:
            if props.get(EXACT_FILL) is not None:
                return base64.b64decode(props[EXACT_FILL])
            return array_to_bytes(fill_value_array(t, props.get("fillValue")), t)
        except Exception:  # noqa: BLE001 - an odd fill value only disables the shortcut
            return b"\x00\x00\x00\x00" if is_variable(t) else b"\x00"

    def _write(self, oid: str, sel: Any, data: bytes, refs: ExportRefs, dsid: Any = None) -> None:
        doc = self.fetcher.get(oid)
        t = _type_of(doc["type"])
        dsid = dsid or self.open(oid)
        try:
            for part, part_data in self._unfilled_chunks(doc, t, sel, data):
                h5values.write_dataset(dsid, dsid.get_type(), t, part, part_data, refs)
        except (ValueError, RuntimeError, OSError, TypeError) as exc:
            raise ToolError(f"values of {self.paths.get(oid, oid)} cannot be written: {exc}") from None

    def _unfilled_chunks(self, doc: Doc, t: TypeJson, sel: Any, data: bytes) -> Iterator[tuple[Any, bytes]]:
        """The block as one write, or, for a block of several chunks of a fixed-size type where
        some hold only the fill value, each other chunk alone: those stay unwritten (sparse)."""
        props = doc.get("creationProperties") or {}
        layout = props.get("layout") or {}
        chunk = tuple(layout.get("dims") or ()) if layout.get("class") == "H5D_CHUNKED" else ()
        if sel is None or not chunk or is_variable(t) or not self._may_skip(t, props):
            yield sel, data
            return
        parts = list(h5values.chunks_in(sel, chunk))
        if len(parts) == 1:
            yield sel, data
            return
        itemsize = wire_dtype(t).itemsize
        box = np.frombuffer(data, dtype=f"V{itemsize}").reshape(tuple(s.stop - s.start for s in sel))
        fill = np.frombuffer(self._fill_wire(t, props), dtype=f"V{itemsize}")[0]
        kept = []
        for part in parts:
            local = tuple(slice(p.start - s.start, p.stop - s.start) for p, s in zip(part, sel, strict=True))
            if not (box[local] == fill).all():
                kept.append((part, local))
        if len(kept) == len(parts):
            yield sel, data
            return
        for part, local in kept:
            yield part, np.ascontiguousarray(box[local]).tobytes()


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
