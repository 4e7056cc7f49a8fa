"""The walk of ``h5lake load``: :class:`Planner` reads the file with h5py, breadth first, and
yields each object as it is read (metadata; values are read by the upload), refusing what the
service cannot represent when it meets it."""

from __future__ import annotations

import base64
import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import h5py
import numpy as np
from h5py import h5, h5a, h5d, h5l, h5o, h5r, h5s, h5t, h5z

from h5lake.client import h5fast, h5native, h5values
from h5lake.client import load_link as linking
from h5lake.client.common import (
    MIB,
)
from h5lake.client.h5props import (
    add_comment,
    dataset_properties,
    datatype_properties,
    group_properties,
)
from h5lake.client.h5source import S3_FILES, ExternalFilesMissing, Unreadable
from h5lake.client.h5types import Unrepresentable, memory_type_id, type_json
from h5lake.client.loadchecks import (
    check_filters_kept,
    check_filters_readable,
    fill_json_is_exact,
    nullterm_cut,
)
from h5lake.client.loadrefs import (  # noqa: F401  (DANGLING_NOTE: imported from here by others)
    DANGLING_NOTE,
    FillReferences,
    NullReferencesOnly,
    Scanner,
    dereference,
)
from h5lake.client.mapfiles import MARK as MAP_MARK
from h5lake.model.fromjson import EXACT_FILL
from h5lake.model.ids import Collection, IdsWith
from h5lake.model.links import MAX_NAME_BYTES, LinkClass
from h5lake.model.shapes import UNLIMITED
from h5lake.model.types import CharSet, TypeJson, is_variable, item_size
from h5lake.model.values import array_to_json, bytes_to_array


class LinkStep(Protocol):
    """Decides, per dataset, whether to link it in place instead of copying its values. It is
    asked while the file is planned, before any request: a chunk table it plans is sent by the
    :class:`Uploader`. :class:`~h5lake.client.load_link.Linker` is the one ``--link`` uses."""

    def plan(self, dset: h5py.Dataset, props: dict[str, Any]) -> linking.LinkPlan | None:
        """How to link ``dset`` (``props``: the creationProperties a copy gets), or None."""
        ...

    def axis(self, dset: h5py.Dataset) -> int | None:
        """The axis a copied ``dset`` must be able to grow along (later files), or None."""
        ...

    @property
    def notes(self) -> list[str]:
        """What to tell the user: which datasets were copied, and why."""
        ...


class CopyAll:
    """The default :class:`LinkStep`: never link, always copy."""

    @property
    def notes(self) -> list[str]:
        return []

    def plan(self, dset: h5py.Dataset, props: dict[str, Any]) -> None:
        return None

    def axis(self, dset: h5py.Dataset) -> None:
        return None


OPEN_QUEUED = 4096  # objects waiting in the walk's queue with their HDF5 object open; more wait closed
POST_BATCH = 300  # objects per POST, as h5pyd sends them
LINK_BATCH = 2000  # links per PUT
BLOCK_BYTES = 8 * MIB  # values per PUT for contiguous data and oversized chunks
USER_BLOCK_KEPT = 64 * 1024  # bytes of a user block's content kept (trailing zeros not counted)
TIME_STEP = 1e-5  # seconds between consecutive `created` stamps: keeps creation order
_TYPE_CLASSES = {h5o.TYPE_GROUP: Collection.GROUPS, h5o.TYPE_DATASET: Collection.DATASETS, h5o.TYPE_NAMED_DATATYPE: Collection.DATATYPES}
_CSETS = {h5t.CSET_ASCII: CharSet.ASCII.value, h5t.CSET_UTF8: CharSet.UTF8.value}


# -- the plan ----------------------------------------------------------------------------------


@dataclass
class AttrPlan:
    name: str
    type: TypeJson
    committed: str | None  # id of the committed datatype it shares
    space: dict[str, Any]
    dims: tuple[int, ...]
    name_cset: str | None
    wire: bytes | None = None  # its value, read by the walk when it may go with its object's POST


INLINE_ATTR_BYTES = 64 * 1024  # an object's attributes (weighed as attr_weight) sent with its POST


def attr_weight(a: AttrPlan) -> int:
    """About what an attribute adds to a POST, in bytes."""
    size = 64 if is_variable(a.type) else item_size(a.type) or 64
    return 256 + size * math.prod(a.dims)


@dataclass
class LinkPlan:
    name: str
    body: dict[str, Any]  # link JSON without `id` (hard links) and `created`
    target: str | None = None  # id of a hard link's target


@dataclass
class Node:
    index: int
    kind: Collection
    path: str  # a path to the object, for messages; "(anonymous)" when it has none
    handle: Any  # an open h5py ObjectID
    props: dict[str, Any] = field(default_factory=dict)
    attrs: list[AttrPlan] = field(default_factory=list)
    links: list[LinkPlan] = field(default_factory=list)
    type: TypeJson | None = None
    committed: str | None = None  # id of a committed datatype the dataset shares
    space: dict[str, Any] | None = None
    linked: linking.LinkPlan | None = None  # set when the dataset is linked, not copied
    fill_refs: np.ndarray | None = None  # a fill value holding object references (as MATLAB writes), made JSON by the upload
    addr: int = 0  # its address in the file
    id: str = ""  # its id in the domain (`Planner.id_at`)
    read: bool = False  # taken by the walk
    ref: Any = None  # an object reference instead of ``handle`` while queued (`OPEN_QUEUED`)
    tid: Any = None  # a dataset's HDF5 type (h5py TypeID), read once by the walk
    attrs_weight: int | None = None  # of its attributes (`attr_weight`), once worked out
    inline_attrs: bool | None = None  # whether they go with its POST, once worked out
    # set by the upload: what went with the object's POST, the id of a linked dataset's chunk table
    links_sent: bool = False
    attrs_sent: bool = False
    value_sent: bool = False
    table_id: str | None = None

    def type_id(self) -> Any:
        """A dataset's HDF5 type."""
        if self.tid is None:
            self.tid = self.handle.get_type()
        return self.tid

    @property
    def copy_values(self) -> bool:
        return self.linked is None

    def describe(self) -> str:
        kind = {Collection.GROUPS: "group", Collection.DATASETS: "dataset", Collection.DATATYPES: "datatype"}[self.kind]
        return f"{kind} {self.path}"


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _default_cset(name: str) -> str:
    """The character set h5lake export gives a name unless told otherwise (h5py's choice)."""
    return CharSet.ASCII.value if name.isascii() else CharSet.UTF8.value


def _linked_space(plan: linking.LinkPlan) -> dict[str, Any]:
    space: dict[str, Any] = {"class": "H5S_SIMPLE", "dims": plan.shape}
    if plan.maxdims is not None:
        space["maxdims"] = [UNLIMITED if m is None else m for m in plan.maxdims]
    return space


def space_json(space: Any) -> tuple[dict[str, Any], tuple[int, ...]]:
    kind = space.get_simple_extent_type()
    if kind == h5s.NULL:
        return {"class": "H5S_NULL"}, ()
    if kind == h5s.SCALAR:
        return {"class": "H5S_SCALAR"}, ()
    dims = tuple(int(d) for d in space.shape)
    out: dict[str, Any] = {"class": "H5S_SIMPLE", "dims": list(dims)}
    maxdims = space.get_simple_extent_dims(True)
    if tuple(maxdims) != dims:
        out["maxdims"] = [UNLIMITED if m == h5s.UNLIMITED else int(m) for m in maxdims]
    return out, dims


class Planner:
    """Walks a file from its root group, breadth first, yielding each object once it is read
    (:meth:`walk`), and refusing what the service cannot represent as it meets it.

    Memory: a node is dropped once the upload has sent it; what the walk keeps is the queue of
    objects found and not yet read (at most the widest level of the tree; past `OPEN_QUEUED`
    of them each waits as an object reference, ~0.3 KiB, not an open object, ~20 KiB) and the addresses of
    objects that may be met again (more than one hard link, reached by a reference, committed
    datatypes), not one entry per object. Ids are made from file addresses (:meth:`id_at`), so
    a reference or a link needs no table of the ids given so far."""

    def __init__(self, f: h5py.File, link_step: LinkStep | None = None, external_folder: Path | None = None) -> None:
        self.file = f
        self.link_step: LinkStep = link_step or CopyAll()
        self.external_folder = external_folder or Path(f.filename).resolve().parent
        self.missing_external: list[tuple[str, list[str]]] = []  # dataset path, file names
        self.queue: deque[Node] = deque()  # found, not yet read
        self.ready: list[Node] = []  # committed datatypes read ahead of their turn (`_committed`)
        self.by_addr: dict[int, Node | None] = {}  # objects that may be met again: pending node, or None once read
        self.root_id = ""
        self._ids: IdsWith | None = None  # ids of this root (`id_at`)
        self.root_addr = h5o.get_info(h5o.open(f.id, b"/")).addr
        self.notes: list[str] = []
        self.dangling = False  # a reference to an object that no longer exists was met
        self.marked: list[str] = []  # datasets marked as maps (client/mapfiles.py)
        self.found = 0  # objects found so far, the root included
        self.gcpls = h5fast.PlistMemo()  # group creation properties by property list
        self.dcpls = h5fast.PlistMemo()  # dataset creation properties by type and property list

    def external_path(self, name: str) -> Path:
        """Where HDF5 finds an external raw data file: an absolute name as it is, a relative one
        in the external-file folder (:func:`external_folder`)."""
        path = Path(name)
        return path if path.is_absolute() else self.external_folder / path

    def root_properties(self) -> dict[str, Any]:
        """The root group's creationProperties (with the file's user block)."""
        props = group_properties(h5o.open(self.file.id, b"/"))
        user_block = read_user_block(self.file)
        if user_block is not None:  # a file property: kept with the root group's
            props["userBlock"] = user_block
        return props

    def id_at(self, kind: Collection, addr: int) -> str:
        """The id of the object at file address ``addr``: the root's, or one made of the root's
        first half and the address (unique in the file, so in the new domain)."""
        if addr == self.root_addr:
            return self.root_id
        if self._ids is None or self._ids.root_id != self.root_id:
            self._ids = IdsWith(self.root_id)
        return self._ids(kind, addr)

    def id_of(self, oid: Any) -> str:
        info = h5o.get_info(oid)
        return self.id_at(_TYPE_CLASSES[info.type], info.addr)

    def walk(self) -> Iterator[Node]:
        """Every object, read, in breadth-first order from the root (which comes first); a
        committed datatype before any object that uses it. Set ``root_id`` first. Files of
        external raw data that are missing are all named at the end (`ExternalFilesMissing`)."""
        self._node(h5o.open(self.file.id, b"/"), "/")
        while self.queue:
            node = self.queue.popleft()
            if node.read:
                continue
            node.read = True
            self._read(node)
            yield from self._ready()
            yield node
        if self.missing_external:
            listed = "; ".join(f"dataset {path}: {', '.join(names)}" for path, names in self.missing_external)
            raise ExternalFilesMissing(
                f"external raw data files are missing ({listed}; looked in {self.external_folder}: "
                "give --external-prefix DIR where they are)"
            )

    def _ready(self) -> Iterator[Node]:
        while self.ready:
            yield self.ready.pop(0)

    def _read(self, node: Node) -> None:
        if node.addr in self.by_addr:
            self.by_addr[node.addr] = None  # read: met again, it is not queued again
        self._read_node(node)

    def _read_node(self, node: Node) -> None:
        if node.handle is None:
            node.handle, node.ref = h5r.dereference(node.ref, self.file.id), None
        try:
            self._fill(node)
        except Unrepresentable as exc:
            raise Unrepresentable(f"{node.describe()}: {exc.feature}") from None
        except h5native.NativeUnavailable:
            raise
        except (RuntimeError, OSError) as exc:  # h5py's classes for HDF5's own errors
            raise Unreadable(f"{node.describe()}: HDF5 cannot read it ({exc})") from None

    def _node(self, oid: Any, path: str, *, linked: bool = True) -> str:
        """The id of the object ``oid`` met at ``path``, queued to be read when first met.
        ``linked``: met through a hard link (else by a reference or as a committed type). An
        object with one hard link met through it is met only there: it is not remembered. One
        with hard links met by a reference is not queued (its link is met in the walk)."""
        info = h5o.get_info(oid)
        if info.type not in _TYPE_CLASSES:
            raise Unrepresentable(f"object type {info.type} at {path}")
        kind = _TYPE_CLASSES[info.type]
        obj_id = self.id_at(kind, info.addr)
        if info.addr in self.by_addr:
            node = self.by_addr[info.addr]
            if node is not None and node.path.startswith("(") and path.startswith("/"):  # met by reference or type first
                node.path, node.handle = path, oid
            return obj_id
        if not linked and info.rc > 0 and info.addr != self.root_addr:
            return obj_id  # reached by its hard link in the walk
        node = Node(self.found, kind, path, oid, addr=info.addr, id=obj_id)
        self.found += 1
        if not linked or info.rc != 1:
            self.by_addr[info.addr] = node
        if len(self.queue) >= OPEN_QUEUED:  # an open object costs ~20 KiB (HDF5's header): keep a reference
            node.ref, node.handle = h5r.create(oid, b".", h5r.OBJECT), None
        self.queue.append(node)
        return obj_id

    def _fill(self, node: Node) -> None:
        oid = node.handle
        if node.kind is Collection.GROUPS:
            gcpl = oid.get_create_plist()
            key, known = self.gcpls.find(gcpl)
            if known is None:
                props = group_properties(oid, gcpl)
                tracked = bool(gcpl.get_link_creation_order() & h5py.h5p.CRT_ORDER_TRACKED)
                if key is not None:  # an equal list gives the same (but the comment: the object's own)
                    self.gcpls.keep(key, gcpl, ({k: v for k, v in props.items() if k != "comment"}, tracked))
            else:
                base, tracked = known
                props = dict(base)
                add_comment(oid, props)
            node.props = props
            self._links(node, tracked)
        elif node.kind is Collection.DATATYPES:
            node.type = type_json(oid)
            node.props = datatype_properties(oid)
        else:
            self._dataset(node)
        self._attributes(node)

    # -- links --
    def _links(self, node: Node, tracked: bool) -> None:
        """A group's links (``tracked``: in creation order, else by name)."""
        gid = node.handle
        infos: list[tuple[bytes, int, int, int]] = []  # name, class, creation order, character set
        # (h5py hands every call the same struct, valid during the call only: its fields are copied)
        gid.links.iterate(lambda n, i: infos.append((n, i.type, i.corder, i.cset)), idx_type=h5.INDEX_NAME, info=True)
        if tracked:
            infos.sort(key=lambda item: item[2])
        base = node.path.rstrip("/")
        for raw, link_type, _, link_cset in infos:
            name = _name(raw)
            _check_name_length("link", name)
            where = f"{base}/{name}"
            body: dict[str, Any]
            target = None
            if link_type == h5l.TYPE_HARD:
                target = self._node(h5o.open(gid, raw), where)
                body = {"class": LinkClass.HARD.value}
            elif link_type == h5l.TYPE_SOFT:
                body = {"class": LinkClass.SOFT.value, "h5path": _name(gid.links.get_val(raw))}
            elif link_type == h5l.TYPE_EXTERNAL:
                filename, objpath = gid.links.get_val(raw)
                body = {"class": LinkClass.EXTERNAL.value, "h5domain": _name(filename), "h5path": _name(objpath)}
            else:
                body = self._user_defined(gid, raw, int(link_type), where)
            cset = _CSETS.get(link_cset)
            if cset is None:
                raise Unrepresentable(f"link {name!r} with character set {link_cset}")
            if cset != _default_cset(name):
                body["nameCharSet"] = cset
            node.links.append(LinkPlan(name, body, target))

    def _user_defined(self, gid: Any, raw: bytes, number: int, where: str) -> dict[str, Any]:
        if not h5native.available():
            raise Unrepresentable(f"user-defined link {where} (class {number}): HDF5 library not reachable to read it")
        h5native.ensure_link_class(number)
        value = h5native.ud_link_value(gid, raw)
        self.notes.append(f"user-defined link {where} (class {number}, {len(value)} bytes) kept as data; it is not followed")
        return {"class": LinkClass.USER_DEFINED.value, "linkClass": number, "value": base64.b64encode(value).decode()}

    # -- attributes --
    def _attributes(self, node: Node) -> None:
        oid = node.handle
        infos: list[tuple[bytes, bool, int, int]] = []  # name, creation order valid, creation order, character set
        # (h5py hands every call the same struct, valid during the call only: its fields are copied)
        h5a.iterate(oid, lambda n, i: infos.append((n, bool(i.corder_valid), i.corder, i.cset)),
                    index_type=h5.INDEX_NAME, info=True)
        if any(valid for _, valid, _, _ in infos):
            infos.sort(key=lambda item: (not item[1], item[2]))
        inline = 0  # weight of the attributes read so far
        total, references = 0, False  # of all of them (`upload._inline_attributes`)
        for raw, _, _, attr_cset in infos:
            name = _name(raw)
            _check_name_length("attribute", name)
            cset = _CSETS.get(attr_cset, CharSet.ASCII.value)
            fast = h5fast.attribute(oid, raw, INLINE_ATTR_BYTES - inline)
            if fast is not None:  # the common kinds, read without an h5py object per call
                t, space, dims, weight, wire = fast
                node.attrs.append(AttrPlan(name, t, None, space, dims, cset if cset != CharSet.ASCII.value else None, wire))
                if name == MAP_MARK and node.kind is Collection.DATASETS:
                    self.marked.append(node.path)
                inline += weight
                total += weight
                continue
            try:
                aid = h5a.open(oid, raw)
                tid = aid.get_type()
                t = type_json(tid)
                committed = self._committed(tid)
                space, dims = space_json(aid.get_space())
            except Unrepresentable as exc:
                raise Unrepresentable(f"attribute {name!r}: {exc.feature}") from None
            plan = AttrPlan(name, t, committed, space, dims, cset if cset != CharSet.ASCII.value else None)
            node.attrs.append(plan)
            total += attr_weight(plan)
            references = references or h5values.has_reference(t)
            if name == MAP_MARK and node.kind is Collection.DATASETS:
                self.marked.append(node.path)
            if h5values.has_reference(t):
                h5values.read_attribute(aid, t, dims, Scanner(self))  # finds what it references
            elif space["class"] != "H5S_NULL":
                inline += attr_weight(plan)
                if inline <= INLINE_ATTR_BYTES:  # read now, while open: the POST takes it
                    plan.wire = _read_quietly(aid, tid, plan)
        node.attrs_weight = total
        node.inline_attrs = bool(node.attrs) and total <= INLINE_ATTR_BYTES and not references

    def _committed(self, tid: Any) -> str | None:
        """The id of a committed datatype ``tid`` is, read now if it was not (it is sent
        before the object that uses it: the server resolves the id)."""
        if not tid.committed():
            return None
        info = h5o.get_info(tid)
        node = self.by_addr.get(info.addr, False)
        if node is None:  # read already
            return self.id_at(Collection.DATATYPES, info.addr)
        if node is False:
            node = Node(self.found, Collection.DATATYPES, "(anonymous)", tid, addr=info.addr,
                        id=self.id_at(Collection.DATATYPES, info.addr))
            self.found += 1
        assert isinstance(node, Node)
        self.by_addr[info.addr] = None
        node.read = True  # if it is queued too, the walk passes it
        self._read_node(node)
        self.ready.append(node)
        return node.id

    # -- datasets --
    def _dataset(self, node: Node) -> None:
        dsid = node.handle
        tid = node.tid = dsid.get_type()
        dcpl = dsid.get_create_plist()  # read once: each copy HDF5 makes costs ~20 us
        node.type = type_json(tid)
        node.committed = self._committed(tid)
        node.space, dims = space_json(dsid.get_space())
        memo = None  # a dataset copied whose values hold no references: its properties may be known
        if isinstance(self.link_step, CopyAll) and not h5values.has_reference(node.type):
            memo, known = self.dcpls.find(dcpl, tid.encode())
            if known is not None:
                self._known_dataset(node, dcpl, *known)
                return
        notes = len(self.notes)
        fill_json, fill_bytes = self._fill_value(dcpl, tid, node)
        node.props = dataset_properties(dsid, fill_json, self.notes, dcpl)
        if fill_bytes is not None:
            node.props[EXACT_FILL] = fill_bytes
        if "externalStorage" in node.props.get("layout", {}):
            files = node.props["layout"]["externalStorage"]
            gone = [item["name"] for item in files if not self.external_path(item["name"]).is_file()]
            if gone:
                self.missing_external.append((node.path, gone))
        copy_all = isinstance(self.link_step, CopyAll)
        dset = None if copy_all else h5py.Dataset(dsid)
        node.linked = None if self.missing_external or dset is None else self.link_step.plan(dset, node.props)
        if "externalStorage" in node.props.get("layout", {}):
            files = len(node.props["layout"]["externalStorage"])
            done = "linked in place" if node.linked is not None else "copied in"
            self.notes.append(f"dataset {node.path}: values from {files} external file(s) {done}")
        if node.linked is not None:
            node.space = _linked_space(node.linked)
            return
        check_filters_kept(dsid, dcpl)
        check_filters_readable(dsid, dcpl)
        if memo is not None and "externalStorage" not in node.props["layout"] and dcpl.get_layout() != h5d.VIRTUAL:
            # what an equal property list gives again: all but the comment (the object's own)
            readable = all(h5z.filter_avail(dcpl.get_filter(i)[0]) for i in range(dcpl.get_nfilters()))
            base = {k: v for k, v in node.props.items() if k not in ("comment", EXACT_FILL)}
            self.dcpls.keep(memo, dcpl, (base, fill_bytes, self.notes[notes:], readable))
        axis = None if dset is None else self.link_step.axis(dset)
        if axis is not None:  # copied, and later files append values along axis
            maxdims = list(node.space.get("maxdims", dims))
            maxdims[axis] = UNLIMITED
            node.space = {**node.space, "maxdims": maxdims}
        if (
            h5values.has_reference(node.type) and node.space["class"] != "H5S_NULL" and math.prod(dims)
            and (dsid.get_space_status() != h5d.SPACE_STATUS_NOT_ALLOCATED or dcpl.get_external_count() > 0)
        ):
            # read once to find what the values reference: an object reached only that way is
            # found (and created) too
            h5values.read_dataset(dsid, tid, node.type, None, Scanner(self))

    def _known_dataset(self, node: Node, dcpl: Any, base: dict[str, Any], fill_bytes: str | None, notes: list[str],
                       readable: bool) -> None:
        """A dataset whose creation property list (and type) equals one read before: its
        properties are that one's, with its own comment, and the notes that one gave."""
        props = dict(base)
        add_comment(node.handle, props)
        if fill_bytes is not None:
            props[EXACT_FILL] = fill_bytes
        node.props = props
        self.notes.extend(notes)
        if not readable:
            check_filters_readable(node.handle, dcpl)

    def _fill_value(self, dcpl: Any, tid: Any, node: Node) -> tuple[Any, str | None]:
        """The fill value's JSON form, and its packed bytes in base64 where that form does not
        give them back (string bytes that are not UTF-8), which the server then keeps."""
        t = node.type
        assert t is not None
        if dcpl.fill_value_defined() != h5d.FILL_VALUE_USER_DEFINED:
            return None, None
        if h5values.is_raw(t):
            try:
                wire = nullterm_cut(h5values.raw_to_wire(h5native.fill_value(dcpl, memory_type_id(tid, t)), t), t)
                value = array_to_json(bytes_to_array(wire, t, ()), t)
            except (Unrepresentable, ValueError, TypeError, RuntimeError) as exc:
                raise Unrepresentable(f"its fill value cannot be read ({exc})") from None
            if not fill_json_is_exact(value, t, wire):  # sent as JSON, it would be altered or refused
                return value, base64.b64encode(wire).decode("ascii")
            return value, None
        try:
            arr = np.empty((1,), dtype=h5values.h5py_dtype(t))  # h5py wants one element, not 0-d
            dcpl.get_fill_value(arr)
            if h5values.has_reference(t):
                fill = FillReferences(self)
                value = array_to_json(h5values.to_model(arr, t, fill).reshape(()), t)
                if fill.found:  # the ids are chosen by the upload: it makes the JSON again with them
                    node.fill_refs = arr
                return value, None
            return array_to_json(h5values.to_model(arr, t, NullReferencesOnly()).reshape(()), t), None
        except (Unrepresentable, ValueError, TypeError, RuntimeError) as exc:
            raise Unrepresentable(f"its fill value cannot be read ({exc})") from None


def _read_quietly(aid: Any, tid: Any, plan: AttrPlan) -> bytes | None:
    """An attribute's value, or None when HDF5 cannot read it: the upload reads it again and
    says so, naming the attribute."""
    try:
        return h5values.read_attribute(aid, plan.type, plan.dims, NullReferencesOnly(), tid)
    except (OSError, RuntimeError, ValueError, TypeError):
        return None


def _check_name_length(what: str, name: str) -> None:
    size = len(name.encode("utf-8", "surrogateescape"))
    if size > MAX_NAME_BYTES:
        raise Unrepresentable(f"{what} {name[:40]!r}... has a name of {size} bytes (h5lake keeps names of at most {MAX_NAME_BYTES})")


def read_user_block(f: h5py.File) -> dict[str, Any] | None:
    """The file's user block as the root group's ``userBlock`` property (docs/fidelity.md):
    its ``size`` and its bytes without trailing zeros in ``value_base64``; None without one.
    Content beyond `USER_BLOCK_KEPT` bytes is refused: the root group document stays small."""
    size = int(f.id.get_create_plist().get_userblock())
    if not size:
        return None
    if f.id.id in S3_FILES:
        content = S3_FILES[f.id.id].head(size).rstrip(b"\0")
    else:
        with open(f.filename, "rb") as raw:
            content = raw.read(size).rstrip(b"\0")
    if len(content) > USER_BLOCK_KEPT:
        raise Unrepresentable(
            f"a user block holding {len(content)} bytes (h5lake keeps up to {USER_BLOCK_KEPT} bytes of a user block)"
        )
    return {"size": size, "value_base64": base64.b64encode(content).decode()}


def parse_collection(obj_id: str) -> str:
    return {"g": "groups", "d": "datasets", "t": "datatypes"}[obj_id[0]]
