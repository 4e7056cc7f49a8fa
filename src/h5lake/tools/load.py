"""``h5lake load SOURCE.h5 DOMAIN``: copy an HDF5 file into a domain, keeping everything.

Two phases. :class:`Planner` walks the file with h5py (metadata only) into a :class:`Plan`,
refusing anything the service cannot represent with :class:`~h5lake.tools.h5types.Unrepresentable`
before a single request is made. :class:`Uploader` then creates the domain and sends, in order:
committed datatypes, groups and datasets (batched POSTs with ids chosen here), links and
attributes (batched PUTs), and values (binary PUTs of one source chunk, or block, each, from a
thread pool). If anything fails the domain is deleted, unless ``--keep-partial``.

What is kept and how is in docs/fidelity.md. Linking datasets in place instead of copying them
(``--link``) is one pluggable step, :class:`LinkStep`: given an h5py dataset it returns a
:class:`~h5lake.tools.link.LinkPlan` (a reference layout, and maybe a chunk table to create
first), or None to copy the values. ``--append --extend AXIS`` then grows those datasets by
further files (:func:`append_file`): a chunk table slab and a resize for each linked dataset, a
resize and the new values for each copied one.
"""

from __future__ import annotations

import base64
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import click
import h5py
import numpy as np
import orjson
from h5py import h5, h5a, h5d, h5l, h5o, h5r, h5s, h5t, h5z

from h5lake.model.ids import Collection, new_object_id
from h5lake.model.shapes import UNLIMITED
from h5lake.model.types import TypeJson, is_variable, item_size
from h5lake.model.values import array_to_json, bytes_to_array
from h5lake.tools import h5native, h5values, s3files
from h5lake.tools import link as linking
from h5lake.tools.common import (
    MIB,
    ToolError,
    connect,
    connection_options,
    explain,
    progress,
    rate,
    report_notes,
)
from h5lake.tools.h5props import (
    dataset_properties,
    datatype_properties,
    group_properties,
    register_codec_filters,
)
from h5lake.tools.h5types import Unrepresentable, memory_type_id, type_json
from h5lake.tools.rest import RestClient, RestError

log = logging.getLogger(__name__)

class LinkStep(Protocol):
    """Decides, per dataset, whether to link it in place instead of copying its values. It is
    asked while the file is planned, before any request: a chunk table it plans is sent by the
    :class:`Uploader`. :class:`~h5lake.tools.link.Linker` is the one ``--link`` uses."""

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


POST_BATCH = 300  # objects per POST, as h5pyd sends them
LINK_BATCH = 2000  # links per PUT
ATTR_BATCH_BYTES = 8 * MIB  # attribute values per PUT
BLOCK_BYTES = 8 * MIB  # values per PUT for contiguous data and oversized chunks
USER_BLOCK_KEPT = 64 * 1024  # bytes of a user block's content kept (trailing zeros not counted)
TIME_STEP = 1e-5  # seconds between consecutive `created` stamps: keeps creation order
_TYPE_CLASSES = {h5o.TYPE_GROUP: Collection.GROUPS, h5o.TYPE_DATASET: Collection.DATASETS, h5o.TYPE_NAMED_DATATYPE: Collection.DATATYPES}
_CSETS = {h5t.CSET_ASCII: "H5T_CSET_ASCII", h5t.CSET_UTF8: "H5T_CSET_UTF8"}


# -- the plan ----------------------------------------------------------------------------------


@dataclass
class AttrPlan:
    name: str
    type: TypeJson
    committed: int | None  # node index of the committed datatype it shares
    space: dict[str, Any]
    dims: tuple[int, ...]
    name_cset: str | None


@dataclass
class LinkPlan:
    name: str
    body: dict[str, Any]  # link JSON without `id` (hard links) and `created`
    target: int | None = None  # node index of a hard link's target


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
    committed: int | None = None  # node index of a committed datatype the dataset shares
    space: dict[str, Any] | None = None
    linked: linking.LinkPlan | None = None  # set when the dataset is linked, not copied

    @property
    def copy_values(self) -> bool:
        return self.linked is None

    def describe(self) -> str:
        kind = {Collection.GROUPS: "group", Collection.DATASETS: "dataset", Collection.DATATYPES: "datatype"}[self.kind]
        return f"{kind} {self.path}"


@dataclass
class Plan:
    nodes: list[Node]
    notes: list[str]

    def of_kind(self, kind: Collection) -> list[Node]:
        return [n for n in self.nodes if n.kind is kind and n.index != 0]


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _default_cset(name: str) -> str:
    """The character set h5lake export gives a name unless told otherwise (h5py's choice)."""
    return "H5T_CSET_ASCII" if name.isascii() else "H5T_CSET_UTF8"


def _linked_space(plan: linking.LinkPlan) -> dict[str, Any]:
    space: dict[str, Any] = {"class": "H5S_SIMPLE", "dims": plan.shape}
    if plan.maxdims is not None:
        space["maxdims"] = [UNLIMITED if m is None else m for m in plan.maxdims]
    return space


def _space_json(space: Any) -> tuple[dict[str, Any], tuple[int, ...]]:
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
    """Walks a file from its root group, breadth first, into a :class:`Plan`."""

    def __init__(self, f: h5py.File, link_step: LinkStep | None = None, external_folder: Path | None = None) -> None:
        self.file = f
        self.link_step: LinkStep = link_step or CopyAll()
        self.external_folder = external_folder or Path(f.filename).resolve().parent
        self.missing_external: list[tuple[str, list[str]]] = []  # dataset path, file names
        self.nodes: list[Node] = []
        self.by_addr: dict[int, int] = {}
        self.notes: list[str] = []
        self.dangling = False  # a reference to an object that no longer exists was met

    def external_path(self, name: str) -> Path:
        """Where HDF5 finds an external raw data file: an absolute name as it is, a relative one
        in the external-file folder (:func:`external_folder`)."""
        path = Path(name)
        return path if path.is_absolute() else self.external_folder / path

    def plan(self) -> Plan:
        user_block = read_user_block(self.file)
        root = h5o.open(self.file.id, b"/")
        self._node(root, "/")
        done = 0
        while done < len(self.nodes):  # nodes are appended as they are found
            node = self.nodes[done]
            try:
                self._fill(node)
            except Unrepresentable as exc:
                raise Unrepresentable(f"{node.describe()}: {exc.feature}") from None
            done += 1
        if self.missing_external:
            listed = "; ".join(f"dataset {path}: {', '.join(names)}" for path, names in self.missing_external)
            raise ExternalFilesMissing(
                f"external raw data files are missing ({listed}; looked in {self.external_folder}: "
                "give --external-prefix DIR where they are)"
            )
        if user_block is not None:  # a file property: kept with the root group's
            self.nodes[0].props["userBlock"] = user_block
        return Plan(self.nodes, self.notes)

    def _node(self, oid: Any, path: str) -> int:
        info = h5o.get_info(oid)
        found = self.by_addr.get(info.addr)
        if found is not None:
            node = self.nodes[found]
            if node.path.startswith("(") and path.startswith("/"):  # met by reference or type first
                node.path, node.handle = path, oid
            return found
        if info.type not in _TYPE_CLASSES:
            raise Unrepresentable(f"object type {info.type} at {path}")
        index = len(self.nodes)
        self.by_addr[info.addr] = index
        self.nodes.append(Node(index, _TYPE_CLASSES[info.type], path, oid))
        return index

    def _fill(self, node: Node) -> None:
        oid = node.handle
        if node.kind is Collection.GROUPS:
            node.props = group_properties(oid)
            self._links(node)
        elif node.kind is Collection.DATATYPES:
            node.type = type_json(oid)
            node.props = datatype_properties(oid)
        else:
            self._dataset(node)
        self._attributes(node)

    # -- links --

    def _links(self, node: Node) -> None:
        gid = node.handle
        tracked = bool(gid.get_create_plist().get_link_creation_order() & h5py.h5p.CRT_ORDER_TRACKED)
        names: list[bytes] = []
        gid.links.iterate(names.append, idx_type=h5.INDEX_NAME)
        infos = [(name, gid.links.get_info(name)) for name in names]
        if tracked:
            infos.sort(key=lambda item: item[1].corder)
        base = node.path.rstrip("/")
        for raw, info in infos:
            name = _name(raw)
            where = f"{base}/{name}"
            body: dict[str, Any]
            target = None
            if info.type == h5l.TYPE_HARD:
                target = self._node(h5o.open(gid, raw), where)
                body = {"class": "H5L_TYPE_HARD"}
            elif info.type == h5l.TYPE_SOFT:
                body = {"class": "H5L_TYPE_SOFT", "h5path": _name(gid.links.get_val(raw))}
            elif info.type == h5l.TYPE_EXTERNAL:
                filename, objpath = gid.links.get_val(raw)
                body = {"class": "H5L_TYPE_EXTERNAL", "h5domain": _name(filename), "h5path": _name(objpath)}
            else:
                body = self._user_defined(gid, raw, int(info.type), where)
            cset = _CSETS.get(info.cset)
            if cset is None:
                raise Unrepresentable(f"link {name!r} with character set {info.cset}")
            if cset != _default_cset(name):
                body["nameCharSet"] = cset
            node.links.append(LinkPlan(name, body, target))

    def _user_defined(self, gid: Any, raw: bytes, number: int, where: str) -> dict[str, Any]:
        if not h5native.available():
            raise Unrepresentable(f"user-defined link {where} (class {number}): HDF5 library not reachable to read it")
        h5native.ensure_link_class(number)
        value = h5native.ud_link_value(gid, raw)
        self.notes.append(f"user-defined link {where} (class {number}, {len(value)} bytes) kept as data; it is not followed")
        return {"class": "H5L_TYPE_USER_DEFINED", "linkClass": number, "value": base64.b64encode(value).decode()}

    # -- attributes --

    def _attributes(self, node: Node) -> None:
        oid = node.handle
        names: list[bytes] = []
        h5a.iterate(oid, names.append, index_type=h5.INDEX_NAME)
        infos = [(name, h5a.get_info(oid, name)) for name in names]
        if any(info.corder_valid for _, info in infos):
            infos.sort(key=lambda item: (not item[1].corder_valid, item[1].corder))
        for raw, info in infos:
            name = _name(raw)
            try:
                aid = h5a.open(oid, raw)
                tid = aid.get_type()
                t = type_json(tid)
                committed = self._committed(tid)
                space, dims = _space_json(aid.get_space())
            except Unrepresentable as exc:
                raise Unrepresentable(f"attribute {name!r}: {exc.feature}") from None
            cset = _CSETS.get(info.cset, "H5T_CSET_ASCII")
            node.attrs.append(AttrPlan(name, t, committed, space, dims, cset if cset != "H5T_CSET_ASCII" else None))
            if h5values.has_reference(t):
                h5values.read_attribute(aid, t, dims, _Scanner(self))  # finds what it references

    def _committed(self, tid: Any) -> int | None:
        if not tid.committed():
            return None
        return self._node(tid, "(anonymous)")

    # -- datasets --

    def _dataset(self, node: Node) -> None:
        dsid = node.handle
        tid = dsid.get_type()
        node.type = type_json(tid)
        node.committed = self._committed(tid)
        node.space, dims = _space_json(dsid.get_space())
        fill_json = self._fill_value(dsid, tid, node.type)
        node.props = dataset_properties(dsid, fill_json, self.notes)
        if "externalStorage" in node.props.get("layout", {}):
            files = node.props["layout"]["externalStorage"]
            gone = [item["name"] for item in files if not self.external_path(item["name"]).is_file()]
            if gone:
                self.missing_external.append((node.path, gone))
        dset = h5py.Dataset(dsid)
        node.linked = None if self.missing_external else self.link_step.plan(dset, node.props)
        if "externalStorage" in node.props.get("layout", {}):
            files = len(node.props["layout"]["externalStorage"])
            done = "linked in place" if node.linked is not None else "copied in"
            self.notes.append(f"dataset {node.path}: values from {files} external file(s) {done}")
        if node.linked is not None:
            node.space = _linked_space(node.linked)
            return
        _check_filters_readable(dsid)
        axis = self.link_step.axis(dset)
        if axis is not None:  # copied, and later files append values along axis
            maxdims = list(node.space.get("maxdims", dims))
            maxdims[axis] = UNLIMITED
            node.space = {**node.space, "maxdims": maxdims}
        stored = dsid.get_space_status() != h5d.SPACE_STATUS_NOT_ALLOCATED or dsid.get_create_plist().get_external_count() > 0
        if h5values.has_reference(node.type) and node.space["class"] != "H5S_NULL" and math.prod(dims) and stored:
            # read once to find what the values reference: an object reached only that way is
            # found (and created) too
            h5values.read_dataset(dsid, tid, node.type, None, _Scanner(self))

    def _fill_value(self, dsid: Any, tid: Any, t: TypeJson) -> Any:
        dcpl = dsid.get_create_plist()
        if dcpl.fill_value_defined() != h5d.FILL_VALUE_USER_DEFINED:
            return None
        try:
            if h5values.is_raw(t):
                wire = h5values.raw_to_wire(h5native.fill_value(dcpl, memory_type_id(tid, t)), t)
                return array_to_json(bytes_to_array(wire, t, ()), t)
            arr = np.empty((1,), dtype=h5values.h5py_dtype(t))  # h5py wants one element, not 0-d
            dcpl.get_fill_value(arr)
            return array_to_json(h5values.to_model(arr, t, _NullReferencesOnly()).reshape(()), t)
        except (Unrepresentable, ValueError, TypeError, RuntimeError) as exc:
            raise Unrepresentable(f"its fill value cannot be read ({exc})") from None


def _check_filters_readable(dsid: Any) -> None:
    """Values are copied through HDF5: each filter of a dataset with stored values must be one
    HDF5 can run here (built in, a plugin, or h5lake's codec registered by `open_source`)."""
    if dsid.get_storage_size() == 0:
        return
    dcpl = dsid.get_create_plist()
    for i in range(dcpl.get_nfilters()):
        fid, _, _, raw_name = dcpl.get_filter(i)
        if not h5z.filter_avail(fid):
            name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
            raise Unrepresentable(
                f"filter {fid} ({name or 'unnamed'}): neither h5lake nor an HDF5 plugin here can decode it, "
                "so its values cannot be read (install the plugin and set HDF5_PLUGIN_PATH)"
            )


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


class _NullReferencesOnly:
    """References in a fill value: only null ones can be kept (ids are chosen later)."""

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if ref:
            raise Unrepresentable("a fill value holding a non-null reference")
        return b""

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


class _Scanner:
    """References while planning: finds their targets; the bytes produced are thrown away."""

    def __init__(self, planner: Planner) -> None:
        self.planner = planner

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if not ref:
            return b""
        target = dereference(ref, self.planner.file)
        if target is None:
            if not self.planner.dangling:
                self.planner.notes.append(DANGLING_NOTE)
            self.planner.dangling = True
        else:
            self.planner._node(target, "(reached only by a reference)")
        return b"g-00000000-00000000-0000-000000-000000" if not region else b"{}"

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


# -- the upload --------------------------------------------------------------------------------


class _Ids:
    """References while uploading: HDF5 references to the ids chosen for their targets."""

    def __init__(self, f: h5py.File, by_addr: dict[int, int], ids: list[str]) -> None:
        self.file, self.by_addr, self.ids = f, by_addr, ids

    def id_of(self, oid: Any) -> str:
        return self.ids[self.by_addr[h5o.get_info(oid).addr]]

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if not ref:
            return b""
        target = dereference(ref, self.file)
        if target is None:  # its object no longer exists: an id no object in the domain has
            kind = Collection.DATASETS if region else Collection.GROUPS
            gone = new_object_id(kind, self.ids[0])
            if not region:
                return f"{kind.path}/{gone}".encode()
            return orjson.dumps({"id": f"{kind.path}/{gone}"})
        oid = self.id_of(target)
        if not region:
            return f"{parse_collection(oid)}/{oid}".encode()
        return h5values.region_blob(f"datasets/{oid}", h5r.get_region(ref, target))

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


DANGLING_NOTE = (
    "references to objects that no longer exist (dangling references) are kept as references to ids no "
    "object in the domain has; export writes them dangling again"
)


def dereference(ref: Any, f: h5py.File) -> Any:
    """The object a non-null reference points at, or None when it no longer exists (HDF5 then
    finds no valid object header at the reference's address)."""
    try:
        return h5r.dereference(ref, f.id)
    except (KeyError, ValueError, RuntimeError, OSError):
        return None


def parse_collection(obj_id: str) -> str:
    return {"g": "groups", "d": "datasets", "t": "datatypes"}[obj_id[0]]


@dataclass
class LoadStats:
    groups: int = 0
    datasets: int = 0
    datatypes: int = 0
    links: int = 0
    attributes: int = 0
    value_bytes: int = 0
    linked: int = 0  # datasets linked in place
    chunks_linked: int = 0
    seconds: float = 0.0
    metadata_seconds: float = 0.0  # creating the domain, objects, links and attributes

    @property
    def objects(self) -> int:
        return self.groups + self.datasets + self.datatypes + self.links + self.attributes

    def summary(self, source: str, domain: str) -> str:
        mib = self.value_bytes / MIB
        linked = f" ({self.linked} linked: {self.chunks_linked} chunks)" if self.linked else ""
        return (
            f"loaded {source} into {domain}: {self.groups} groups, {self.datasets} datasets{linked}, "
            f"{self.datatypes} datatypes, {self.links} links, {self.attributes} attributes, "
            f"{mib:.1f} MiB of values copied in {self.seconds:.1f} s "
            f"({rate(mib, self.seconds):.1f} MiB/s, {rate(self.objects, self.seconds):.0f} objects/s)"
        )


class Uploader:
    def __init__(self, client: RestClient, f: h5py.File, plan: Plan, by_addr: dict[int, int], *, workers: int = 8, quiet: bool = True) -> None:
        self.client = client
        self.file = f
        self.plan = plan
        self.by_addr = by_addr
        self.workers = workers
        self.quiet = quiet
        self.ids: list[str] = []
        self.table_ids: dict[int, str] = {}  # node index -> id of its linked chunk table
        self.stats = LoadStats()

    def run(self) -> LoadStats:
        started = time.monotonic()
        root = self.plan.nodes[0]
        reply = self.client.put_json("/", {"group": {"creationProperties": root.props}})
        root_id = reply["root"]
        self.ids = [root_id if n.index == 0 else new_object_id(n.kind, root_id) for n in self.plan.nodes]
        for node in self.plan.of_kind(Collection.DATASETS):
            if node.linked is not None and node.linked.table is not None:
                self.table_ids[node.index] = new_object_id(Collection.DATASETS, root_id)
        refs = _Ids(self.file, self.by_addr, self.ids)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="h5lake-load") as pool:
            for kind in (Collection.DATATYPES, Collection.GROUPS, Collection.DATASETS):
                self._all(pool, [partial(self._post, kind, b) for b in _batches(self.plan.of_kind(kind), POST_BATCH)])
            self._all(pool, [partial(self._put_links, b) for b in self._link_batches()])
            self._all(pool, [partial(self._put_attributes, b, refs) for b in self._attribute_batches()])
            self.stats.metadata_seconds = time.monotonic() - started
            self._values(pool, refs)
        self.stats.groups = len(self.plan.of_kind(Collection.GROUPS)) + 1
        self.stats.datasets = len(self.plan.of_kind(Collection.DATASETS))
        linked = [n.linked for n in self.plan.of_kind(Collection.DATASETS) if n.linked is not None]
        self.stats.linked = len(linked)
        self.stats.chunks_linked = sum(plan.chunks_linked for plan in linked)
        self.stats.datatypes = len(self.plan.of_kind(Collection.DATATYPES))
        self.stats.links = sum(len(n.links) for n in self.plan.nodes)
        self.stats.attributes = sum(len(n.attrs) for n in self.plan.nodes)
        self.stats.seconds = time.monotonic() - started
        return self.stats

    def _all(self, pool: ThreadPoolExecutor, tasks: list[Callable[[], Any]]) -> None:
        """Run tasks concurrently; the first failure cancels the rest and is raised."""
        futures = [pool.submit(task) for task in tasks]
        _, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for fut in pending:
            fut.cancel()
        for fut in futures:
            if fut.done() and not fut.cancelled() and fut.exception() is not None:
                raise fut.exception()  # type: ignore[misc]
        wait(futures)

    # -- objects --

    def _type_ref(self, t: TypeJson | None, committed: int | None) -> Any:
        return self.ids[committed] if committed is not None else t

    def _post(self, kind: Collection, nodes: list[Node]) -> None:
        body = []
        for node in nodes:
            item: dict[str, Any] = {"id": self.ids[node.index], "creationProperties": node.props}
            if kind is Collection.DATATYPES:
                item["type"] = node.type
            elif kind is Collection.DATASETS:
                item["type"] = self._type_ref(node.type, node.committed)
                item["shape"] = node.space
                if node.linked is not None:
                    table_id = self.table_ids.get(node.index)
                    if node.linked.table is not None:  # made in the same request, before the dataset
                        body.append(_table_item(table_id, node.linked.table))
                    item["creationProperties"] = node.linked.with_table(table_id)
            body.append(item)
        try:
            self.client.post_json(f"/{kind.path}", body)
        except RestError as exc:
            names = ", ".join(n.path for n in nodes[:3]) + (" ..." if len(nodes) > 3 else "")
            if any(n.linked for n in nodes) and exc.status == 403:
                raise ToolError(
                    f"linking {kind.path} ({names}) failed: {exc.message}: start the server with --allow-source "
                    "covering the file, or load without --link to copy the values"
                ) from None
            raise ToolError(f"creating {kind.path} ({names}) failed: {exc.message}") from None

    # -- links --

    def _link_batches(self) -> Iterator[dict[str, dict[str, Any]]]:
        batch: dict[str, dict[str, Any]] = {}
        count = 0
        for node in self.plan.nodes:
            if not node.links:
                continue
            for part in _batches(node.links, LINK_BATCH):
                if count + len(part) > LINK_BATCH and batch:
                    yield batch
                    batch, count = {}, 0
                gid = self.ids[node.index]
                if gid in batch:  # a big group goes in its own batches, one after another
                    yield batch
                    batch, count = {}, 0
                batch[gid] = {"node": node, "links": part}
                count += len(part)
        if batch:
            yield batch

    def _put_links(self, batch: dict[str, dict[str, Any]]) -> None:
        body: dict[str, Any] = {}
        for gid, entry in batch.items():
            node: Node = entry["node"]
            first = node.links.index(entry["links"][0])
            stamp = time.time()
            links = {}
            for i, link in enumerate(entry["links"]):
                item = dict(link.body, created=stamp + (first + i) * TIME_STEP)
                if link.target is not None:
                    item["id"] = self.ids[link.target]
                links[link.name] = item
            body[gid] = {"links": links}
        self.client.put_json(f"/groups/{self.ids[0]}/links", {"grp_ids": body})

    # -- attributes --

    def _attribute_batches(self) -> Iterator[list[Node]]:
        batch: list[Node] = []
        size = 0
        for node in self.plan.nodes:
            if not node.attrs:
                continue
            weight = sum(_attr_weight(a) for a in node.attrs)
            if batch and size + weight > ATTR_BATCH_BYTES:
                yield batch
                batch, size = [], 0
            batch.append(node)
            size += weight
        if batch:
            yield batch

    def _put_attributes(self, nodes: list[Node], refs: _Ids) -> None:
        body: dict[str, Any] = {}
        for node in nodes:
            stamp = time.time()
            attrs = {}
            for i, a in enumerate(node.attrs):
                item: dict[str, Any] = {"type": self._type_ref(a.type, a.committed), "shape": a.space, "created": stamp + i * TIME_STEP}
                if a.name_cset:
                    item["nameCharSet"] = a.name_cset
                if a.space["class"] != "H5S_NULL":
                    aid = h5a.open(node.handle, a.name.encode("utf-8", "surrogateescape"))
                    wire = h5values.read_attribute(aid, a.type, a.dims, refs)
                    item["value_base64"] = base64.b64encode(wire).decode()
                attrs[a.name] = item
            body[self.ids[node.index]] = {"attributes": attrs}
        try:
            self.client.put_json(f"/groups/{self.ids[0]}/attributes", {"obj_ids": body})
        except RestError as exc:
            raise ToolError(f"attributes of {', '.join(n.path for n in nodes[:3])}: {exc.message}") from None

    # -- values --

    def _values(self, pool: ThreadPoolExecutor, refs: _Ids) -> None:
        """The chunk tables of linked datasets, then the values of copied ones."""
        tasks: list[tuple[Callable[[], int], int]] = []
        for node in self.plan.of_kind(Collection.DATASETS):
            if node.linked is not None and node.linked.table is not None:
                tasks.append((partial(_put_table, self.client, self.table_ids[node.index], node.linked.table), 0))
            elif node.copy_values:
                tasks.extend((partial(self._put_values, node, sel, refs), n) for sel, n in _value_boxes(node))
        self.stats.value_bytes += send_all(pool, tasks, 2 * self.workers, self.quiet)

    def _put_values(self, node: Node, sel: h5values.Selection | None, refs: _Ids) -> int:
        return put_box(self.client, node, self.ids[node.index], sel, refs)


def send_all(pool: ThreadPoolExecutor, tasks: list[tuple[Callable[[], int], int]], window: int, quiet: bool) -> int:
    """Run ``(task, bytes it sends)`` pairs, at most ``window`` at once, with a progress bar;
    each task returns the bytes it sent. The first failure is raised."""
    sent = 0
    with progress(sum(n for _, n in tasks), "values", quiet) as bar:
        in_flight: set[Future[int]] = set()

        def finish(done: set[Future[int]]) -> None:
            nonlocal sent
            for fut in done:
                nbytes = fut.result()  # raises the task's error
                sent += nbytes
                bar.update(nbytes)

        for task, _ in tasks:
            if len(in_flight) >= window:
                done, in_flight = wait(in_flight, return_when=FIRST_EXCEPTION)
                finish(done)
            in_flight.add(pool.submit(task))
        done, _ = wait(in_flight)
        finish(done)
    return sent


def put_box(
    client: RestClient,
    node: Node,
    dataset_id: str,
    sel: h5values.Selection | None,
    refs: h5values.References,
    at: h5values.Selection | None = None,
) -> int:
    """Copy the box ``sel`` of ``node``'s values to the box ``at`` (default: the same box) of
    ``dataset_id``; returns the bytes sent."""
    assert node.type is not None
    tid = node.handle.get_type()
    try:
        data = h5values.read_dataset(node.handle, tid, node.type, sel, refs)
    except (OSError, ValueError, TypeError) as exc:
        raise ToolError(f"dataset {node.path}: cannot read its values: {exc}") from None
    try:
        client.put_bytes(f"/datasets/{dataset_id}/value", data, **h5values.select_text(sel if at is None else at))
    except RestError as exc:
        raise ToolError(f"dataset {node.path}: writing values failed: {exc.message}") from None
    return len(data)


def _table_item(table_id: str | None, table: linking.ChunkTable) -> dict[str, Any]:
    """The ``POST /datasets`` item of a linked dataset's chunk table."""
    item: dict[str, Any] = {
        "id": table_id,
        "type": table.type_json,
        "shape": list(table.shape),
        "creationProperties": table.creation_properties(),
    }
    if table.maxdims is not None:
        item["maxdims"] = [0 if m is None else m for m in table.maxdims]  # 0: unlimited
    return item


def _put_table(client: RestClient, table_id: str, table: linking.ChunkTable, select: str | None = None) -> int:
    """Write a chunk table's entries (all of them, or the slab ``select``); sends no values."""
    params = {"select": select} if select else {}
    body = table.body()
    try:
        if isinstance(body, bytes):
            client.put_bytes(f"/datasets/{table_id}/value", body, **params)
        else:
            client.put_json(f"/datasets/{table_id}/value", body, **params)
    except RestError as exc:
        raise ToolError(f"writing a chunk table failed: {exc.message}") from None
    return 0


def _attr_weight(a: AttrPlan) -> int:
    size = 64 if is_variable(a.type) else item_size(a.type) or 64
    return 256 + size * math.prod(a.dims)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _value_boxes(node: Node) -> Iterator[tuple[h5values.Selection | None, int]]:
    """The boxes of a dataset to copy, one PUT each: groups of whole chunks when every chunk is
    allocated, else each allocated chunk (split when bigger than a block), or blocks of the
    whole extent for other layouts. Nothing for null and empty dataspaces or contiguous storage
    never allocated (its values are all the fill value)."""
    assert node.space is not None and node.type is not None
    if node.space["class"] == "H5S_NULL":
        return
    dsid = node.handle
    itemsize = 64 if is_variable(node.type) else max(1, dsid.get_type().get_size())
    if node.space["class"] == "H5S_SCALAR":
        yield None, itemsize
        return
    shape = tuple(node.space["dims"])
    if math.prod(shape) == 0:
        return
    layout = node.props.get("layout", {})
    if layout.get("class") == "H5D_CHUNKED":
        chunk = tuple(layout["dims"])
        allocated = _allocated_chunks(dsid)
        if len(allocated) == math.prod(-(-n // c) for n, c in zip(shape, chunk, strict=True)):
            boxes: Iterator[h5values.Selection] = h5values.chunk_groups(shape, chunk, itemsize, BLOCK_BYTES)
        else:  # a sparse dataset: just its allocated chunks, so it stays sparse
            boxes = (tuple(slice(o, min(o + c, n)) for o, c, n in zip(offset, chunk, shape, strict=True)) for offset in allocated)
        for box in boxes:
            yield from h5values.split_box(box, itemsize, BLOCK_BYTES)
        return
    external = "externalStorage" in layout
    if not external and dsid.get_space_status() == h5d.SPACE_STATUS_NOT_ALLOCATED:
        return
    yield from h5values.split_box(tuple(slice(0, n) for n in shape), itemsize, BLOCK_BYTES)


def _allocated_chunks(dsid: Any) -> list[tuple[int, ...]]:
    offsets: list[tuple[int, ...]] = []
    if hasattr(dsid, "chunk_iter"):
        dsid.chunk_iter(lambda info: offsets.append(tuple(info.chunk_offset)))
    else:
        for i in range(dsid.get_num_chunks()):
            offsets.append(tuple(dsid.get_chunk_info(i).chunk_offset))
    return offsets


# -- the command -------------------------------------------------------------------------------


class ExternalFilesMissing(Exception):
    """External raw data files a dataset needs are not where HDF5 would look for them."""


ORIGIN = "${ORIGIN}"


Source = Path | str  # a local file, or an ``s3://BUCKET/KEY`` URI


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Where ``s3://`` sources are read: the server's settings (credentials: AWS environment)."""

    endpoint: str | None = None
    region: str | None = None


def external_folder(source: Source, prefix: str | None) -> Path:
    """The folder HDF5 resolves relative external file names in: the ``HDF5_EXTFILE_PREFIX``
    environment variable (which HDF5 itself applies), else ``prefix`` (``--external-prefix``),
    else the source file's folder (for an S3 source, the working directory); ``${ORIGIN}``
    stands for the source file's folder."""
    chosen = os.environ.get("HDF5_EXTFILE_PREFIX") or prefix
    origin = os.getcwd() if s3files.is_s3(source) else str(Path(source).resolve().parent)
    if not chosen:
        return Path(origin)
    return Path(chosen.replace(ORIGIN, origin)).resolve()


@contextmanager
def working_directory(folder: str | None) -> Iterator[None]:
    """Run in ``folder`` (if given): HDF5 resolves relative external file names against the
    working directory, and a per-dataset prefix conflicts with HDF5's own reopening of the
    dataset (attribute iteration, dereferencing), so this is the one reliable way."""
    if folder is None:
        yield
        return
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def open_source(source: Source, s3: S3Settings | None = None) -> h5py.File:
    import hdf5plugin  # noqa: F401  (registers the plugin filters h5py can then decode)

    register_codec_filters()
    if s3files.is_s3(source):
        return _open_s3(str(source), s3 or S3Settings())
    source = Path(source)
    if not source.exists():
        raise ToolError(f"{source}: no such file")
    try:
        if not h5py.is_hdf5(str(source)):
            raise ToolError(f"{source} is not an HDF5 file")
        return h5py.File(source, "r")
    except OSError as exc:
        raise ToolError(f"{source} cannot be opened as an HDF5 file: {exc}") from None


def _open_s3(uri: str, s3: S3Settings) -> h5py.File:
    """An HDF5 file on S3, read with ranged GETs (:mod:`h5lake.tools.s3files`)."""
    try:
        raw = s3files.S3File(uri, endpoint=s3.endpoint, region=s3.region)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    except FileNotFoundError:
        raise ToolError(f"{uri}: no such object") from None
    except Exception as exc:  # noqa: BLE001 - obstore's errors (credentials, network) name the cause
        raise ToolError(f"{uri} cannot be read: {str(exc).splitlines()[0]}") from None
    if raw.size < 8 or not _has_signature(raw):
        raise ToolError(f"{uri} is not an HDF5 file")
    try:
        f = h5py.File(raw, "r")
    except OSError as exc:
        raise ToolError(f"{uri} cannot be opened as an HDF5 file: {exc}") from None
    S3_FILES[f.id.id] = raw
    return f


S3_FILES: dict[int, s3files.S3File] = {}  # open S3 sources by file id, for their user blocks
_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _has_signature(raw: s3files.S3File) -> bool:
    """HDF5's signature at offset 0, 512, 1024, 2048... (after a user block)."""
    at = 0
    while at + 8 <= raw.size:
        raw.seek(at)
        if raw.read(8) == _SIGNATURE:
            raw.seek(0)
            return True
        at = 512 if at == 0 else 2 * at
    return False


def load_file(
    source: Source,
    client: RestClient,
    *,
    link_step: LinkStep | None = None,
    keep_partial: bool = False,
    overwrite: bool = False,
    workers: int = 8,
    quiet: bool = True,
    external_prefix: str | None = None,
    s3: S3Settings | None = None,
) -> tuple[LoadStats, list[str]]:
    """Copy ``source`` into ``client.domain`` (linking what ``link_step`` links); returns the
    counts and the notes to report. External raw data files are looked for as
    :func:`external_folder` says; missing ones are named before anything is sent."""
    folder = external_folder(source, external_prefix)
    with open_source(source, s3) as f:
        planner = Planner(f, link_step, folder)
        try:
            plan = planner.plan()
        except ExternalFilesMissing as exc:
            raise ToolError(f"{source}: {exc}; nothing was loaded") from None
        except Unrepresentable as exc:
            raise ToolError(f"{source}: cannot be represented in h5lake: {exc.feature}; nothing was loaded") from None
        except linking.LinkError as exc:
            raise ToolError(f"{source}: {exc}; nothing was loaded") from None
        try:
            if client.domain_exists():
                if not overwrite:
                    raise ToolError(f"domain {client.domain} already exists (use --overwrite to replace it)")
                client.delete("/")
        except RestError as exc:
            raise ToolError(explain(exc, client)) from None
        uploader = Uploader(client, f, plan, planner.by_addr, workers=workers, quiet=quiet)
        external = any("externalStorage" in n.props.get("layout", {}) for n in plan.of_kind(Collection.DATASETS))
        try:
            with working_directory(str(folder) if external else None):
                stats = uploader.run()
        except BaseException as exc:
            if uploader.ids and not keep_partial:
                _delete_quietly(client)
            if isinstance(exc, ToolError | KeyboardInterrupt):
                raise
            if isinstance(exc, RestError):
                raise ToolError(explain(exc, client)) from None
            raise
    return stats, plan.notes + planner.link_step.notes


# -- appending a file along an axis --------------------------------------------------------------


@dataclass
class AppendStats:
    datasets: int = 0  # datasets grown
    chunks_linked: int = 0
    value_bytes: int = 0
    seconds: float = 0.0

    def summary(self, source: str, domain: str, extend: str) -> str:
        return (
            f"appended {source} to {domain} along {extend}: {self.datasets} datasets grown, "
            f"{self.chunks_linked} chunks linked, {self.value_bytes / MIB:.1f} MiB of values copied "
            f"in {self.seconds:.1f} s"
        )


@dataclass
class _Growth:
    """One dataset of the domain grown by the dataset at the same path in the appended file:
    through its chunk table (``linked``) or by copying values into ``box``."""

    node: Node  # the appended file's dataset
    dataset_id: str
    new_shape: list[int]
    linked: linking.AppendPlan | None = None
    table_id: str | None = None
    box: h5values.Selection | None = None  # where a copied dataset's values go
    convert: dict[str, Any] | None = None  # a --link dataset to turn into the per-chunk-file form first

    def grow(self, client: RestClient) -> int:
        """Extend the chunk table and the dataset (or only the dataset, for copied values)."""
        if self.convert is not None and self.linked is not None:
            try:
                self.table_id = _to_per_chunk_files(client, self.dataset_id, self.node.path, self.convert, self.linked.axis)
            except linking.LinkError as exc:
                raise ToolError(str(exc)) from None
        try:
            if self.linked is not None and self.table_id is not None:
                entries = linking.ChunkTable(self.linked.entries, with_uri=True)
                client.put_json(f"/datasets/{self.table_id}/shape", {"shape": self.linked.table_shape})
                _put_table(client, self.table_id, entries, self.linked.table_select)
            client.put_json(f"/datasets/{self.dataset_id}/shape", {"shape": self.new_shape})
        except RestError as exc:
            raise ToolError(f"dataset {self.node.path}: growing it failed: {exc.message}") from None
        return 0


def append_file(
    source: Source, client: RestClient, extend: str, *, workers: int = 8, quiet: bool = True, s3: S3Settings | None = None
) -> tuple[AppendStats, list[str]]:
    """Grow the datasets of ``client.domain`` (made by ``load --append``) by those of ``source``
    along the axis ``extend`` (a number, or a dimension scale's name). Every dataset is checked
    before anything changes; datasets without that axis keep the first file's values."""
    started = time.monotonic()
    with open_source(source, s3) as f:
        growths, notes = _plan_growths(f, client, source_uri(source), extend)
        stats = AppendStats(datasets=len(growths))
        stats.chunks_linked = sum(int(np.count_nonzero(g.linked.entries["size"])) for g in growths if g.linked)
        with ThreadPoolExecutor(workers, thread_name_prefix="h5lake-append") as pool:
            send_all(pool, [(partial(g.grow, client), 0) for g in growths], 2 * workers, True)
            values: list[tuple[Callable[[], int], int]] = []
            for g in growths:
                if g.box is not None:
                    offset = [s.start for s in g.box]
                    for sel, n in _value_boxes(g.node):
                        assert sel is not None
                        at = tuple(slice(s.start + o, s.stop + o) for s, o in zip(sel, offset, strict=True))
                        values.append((partial(put_box, client, g.node, g.dataset_id, sel, _NullReferencesOnly(), at), n))
            stats.value_bytes = send_all(pool, values, 2 * workers, quiet)
    stats.seconds = time.monotonic() - started
    return stats, notes


def _plan_growths(f: h5py.File, client: RestClient, uri: str, extend: str) -> tuple[list[_Growth], list[str]]:
    datasets: dict[str, h5py.Dataset] = {}

    def found_one(name: str, obj: Any) -> None:  # returning a value would stop the visit
        if isinstance(obj, h5py.Dataset):
            datasets["/" + name] = obj

    f.visititems(found_one)
    try:  # each object once (visititems visits objects, not links)
        found = client.post_json("/", {"h5paths": list(datasets)})["h5paths"]
    except RestError as exc:
        raise ToolError(f"cannot read {client.domain}: {exc.message}") from None
    missing = [path for path in datasets if path not in found]
    if missing:
        more = " ..." if len(missing) > 3 else ""
        raise ToolError(f"{', '.join(missing[:3])}{more} not in {client.domain}: an appended file needs the first file's datasets")
    growths: list[_Growth] = []
    notes: list[str] = []
    for path, dset in datasets.items():
        axis = linking.resolve_axis(dset, extend)
        if axis is None:
            notes.append(f"dataset {path} has no axis {extend}: it keeps the first file's values")
            continue
        try:
            growths.append(_plan_growth(client, found[path]["id"], path, dset, uri, axis))
        except linking.LinkError as exc:
            raise ToolError(f"{exc}; nothing was appended") from None
        except RestError as exc:
            raise ToolError(f"dataset {path}: {exc.message}") from None
    return growths, notes


def _plan_growth(client: RestClient, dataset_id: str, path: str, dset: h5py.Dataset, uri: str, axis: int) -> _Growth:
    target = client.get_json(f"/datasets/{dataset_id}")
    layout = target.get("creationProperties", {}).get("layout", {})
    node = Node(0, Collection.DATASETS, path, dset.id, props={"layout": {"class": "H5D_CHUNKED", "dims": list(dset.chunks)}} if dset.chunks else {})
    node.type = type_json(dset.id.get_type())
    node.space, _ = _space_json(dset.id.get_space())
    if h5values.has_reference(node.type):
        raise linking.LinkError(f"{path}: references name objects of the first file's load; they cannot be appended")
    if layout.get("class") == "H5D_CHUNKED_REF" or (layout.get("class") == "H5D_CHUNKED_REF_INDIRECT" and layout.get("file_uri")):
        # the first append to a dataset loaded with --link alone: checked as if it were in the
        # per-chunk-file form already; `_Growth.grow` turns it into that form first
        grid = [-(-n // c) for n, c in zip(target["shape"]["dims"], layout["dims"], strict=True)]
        as_aggregate = {**target, "creationProperties": {**target["creationProperties"], "layout": {**layout, "class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": None}}}
        table_doc = {"type": linking.table_type_json(True, True), "shape": {"dims": grid}}
        plan = linking.plan_append(dset, uri, as_aggregate, table_doc, axis)
        return _Growth(node, dataset_id, plan.new_shape, linked=plan, convert=target)
    if str(layout.get("class", "")).endswith(("_REF", "_REF_INDIRECT")):
        table = client.get_json(f"/datasets/{layout.get('chunk_table')}") if layout.get("chunk_table") else {}
        plan = linking.plan_append(dset, uri, target, table, axis)  # LinkError when they do not fit
        return _Growth(node, dataset_id, plan.new_shape, linked=plan, table_id=layout["chunk_table"])
    old = list(target["shape"].get("dims", []))
    maxdims = target["shape"].get("maxdims") or old
    if len(old) != len(dset.shape) or any(a != b for d, (a, b) in enumerate(zip(old, dset.shape, strict=True)) if d != axis):
        raise linking.LinkError(f"{path}: shape {list(dset.shape)} does not continue the existing {old} along axis {axis}")
    if maxdims[axis] not in (0, UNLIMITED) and maxdims[axis] < old[axis] + dset.shape[axis]:
        raise linking.LinkError(f"{path}: the existing dataset cannot grow along axis {axis}; load the first file with --append too")
    new_shape, _ = linking.append_selection(old, dset.shape, axis)
    box = tuple(slice(old[axis], new_shape[axis]) if d == axis else slice(0, n) for d, n in enumerate(new_shape))
    return _Growth(node, dataset_id, new_shape, box=box)


def _existing_entries(client: RestClient, layout: dict[str, Any], shape: list[int]) -> np.ndarray:
    """The chunk locations of a dataset linked from one file, as per-chunk-file entries."""
    dims = layout["dims"]
    grid = tuple(-(-n // c) for n, c in zip(shape, dims, strict=True))
    entries = np.zeros(grid, dtype=linking.table_dtype(True, True))
    entries["file_uri"] = ""
    uri = layout["file_uri"]
    if layout["class"] == "H5D_CHUNKED_REF":
        for key, value in (layout.get("chunks") or {}).items():
            index = tuple(int(p) for p in key.split("_"))
            entries[index] = (value[0], value[1], uri, value[2] if len(value) > 2 else 0)
        return entries
    table_doc = client.get_json(f"/datasets/{layout['chunk_table']}")
    rows = np.asarray(client.get_json(f"/datasets/{layout['chunk_table']}/value")["value"], dtype=object)
    names = [f["name"] for f in table_doc["type"]["fields"]]
    flat = rows.reshape(-1, len(names)) if rows.size else rows.reshape(0, len(names))
    out = entries.reshape(-1)
    for i, row in enumerate(flat):
        item = dict(zip(names, row, strict=True))
        out[i] = (int(item["offset"]), int(item["size"]), uri if int(item["size"]) else "", int(item.get("filter_mask", 0)))
    return entries


def _to_per_chunk_files(client: RestClient, dataset_id: str, path: str, target: dict[str, Any], axis: int) -> str:
    """Turn a dataset linked from one file into the per-chunk-file form, so files can be
    appended to it: a new chunk table naming the file in every entry, then one atomic change
    of the dataset's layout on the server (``PUT /datasets/{id}/layout``)."""
    layout = target["creationProperties"]["layout"]
    shape = list(target["shape"]["dims"])
    entries = _existing_entries(client, layout, shape)
    maxdims: list[int | None] = list(entries.shape)
    maxdims[axis] = None
    table = linking.ChunkTable(entries, True, maxdims)
    try:
        item = {k: v for k, v in _table_item(None, table).items() if k != "id"}  # the server picks the id
        table_id = client.post_json("/datasets", item)["id"]
        _put_table(client, table_id, table)
        client.put_json(f"/datasets/{dataset_id}/layout", {"chunk_table": table_id, "extend_dim": axis})
        return str(table_id)
    except RestError as exc:
        raise linking.LinkError(f"{path}: turning it into the per-chunk-file form failed: {exc.message}") from None


def source_uri(source: Source) -> str:
    """The ``file_uri`` the server reads ``source`` by: its absolute path, symlinks resolved,
    or the ``s3://`` URI itself."""
    return str(source) if s3files.is_s3(source) else str(Path(source).resolve())


def _delete_quietly(client: RestClient) -> None:
    try:
        client.delete("/")
    except RestError as exc:
        log.warning("could not delete the partial domain %s: %s", client.domain, exc)


def register(group: click.Group) -> None:
    @group.command("load", short_help="Copy HDF5 files into a domain, or link them where they are.")
    @click.argument("sources", nargs=-1, required=True)
    @click.argument("domain")
    @connection_options
    @click.option("--link", "link_files", is_flag=True, help="Link datasets where they are (the server reads the file) instead of copying values; copies what cannot be linked.")
    @click.option("--append", is_flag=True, help="Link so that more files can be appended; if DOMAIN exists, append SOURCES to it (needs --extend).")
    @click.option("--extend", metavar="AXIS", help="With --append: the axis to append along, a number or a dimension scale's name.")
    @click.option("--s3-endpoint", envvar="H5LAKE_S3_ENDPOINT", help="S3 endpoint for s3:// SOURCES (the server's setting; credentials from the AWS environment).")
    @click.option("--s3-region", envvar="H5LAKE_S3_REGION", help="S3 region for s3:// SOURCES.")
    @click.option("--external-prefix", metavar="DIR", help="Where relative external raw data files are (default: the source's folder; ${ORIGIN} is that folder). HDF5_EXTFILE_PREFIX, if set, wins.")
    @click.option("--keep-partial", is_flag=True, help="On failure, keep what was loaded instead of deleting the domain.")
    @click.option("--overwrite", is_flag=True, help="Replace the domain if it exists.")
    @click.option("--workers", type=click.IntRange(1, 64), default=8, show_default=True, help="Concurrent requests.")
    @click.option("-q", "--quiet", is_flag=True, help="No progress bar, notes or summary.")
    def load(
        sources: tuple[str, ...],
        domain: str,
        link_files: bool,
        append: bool,
        extend: str | None,
        s3_endpoint: str | None,
        s3_region: str | None,
        external_prefix: str | None,
        keep_partial: bool,
        overwrite: bool,
        workers: int,
        quiet: bool,
        **options: Any,
    ) -> None:
        """Copy the HDF5 file SOURCE into DOMAIN (e.g. /home/me/file.h5), keeping every object,
        type, property and value exactly; see docs/fidelity.md. With --link, datasets are
        linked instead (the server must be started with --allow-source covering the files).
        With --append --extend AXIS, several daily files become one domain whose datasets
        grow along AXIS, each chunk read from its own file."""
        if append != (extend is not None):
            raise click.UsageError("--append and --extend AXIS go together")
        if append and overwrite:
            raise click.UsageError("--append adds to a domain; it cannot be combined with --overwrite")
        if len(sources) > 1 and not append:
            raise click.UsageError("several SOURCES can only be appended (--append --extend AXIS)")
        s3 = S3Settings(s3_endpoint, s3_region)
        paths: list[Source] = [text if s3files.is_s3(text) else Path(text) for text in sources]
        for source in paths:
            if isinstance(source, Path) and not source.is_file():
                raise ToolError(f"{source}: no such file")
        client = connect(options, domain, workers)
        for i, source in enumerate(paths):
            counter = f" [{i + 1}/{len(sources)}]" if len(sources) > 1 else ""
            if append and extend is not None and (i > 0 or _exists(client)):
                grown, notes = append_file(source, client, extend, workers=workers, quiet=quiet, s3=s3)
                report_notes(notes, quiet)
                if not quiet:
                    click.echo(grown.summary(str(source), domain, extend) + counter)
                continue
            step = linking.Linker(source_uri(source), extend, external_folder(source, external_prefix)) if link_files or append else None
            stats, notes = load_file(
                source, client, link_step=step, keep_partial=keep_partial, overwrite=overwrite, workers=workers, quiet=quiet,
                external_prefix=external_prefix, s3=s3,
            )
            report_notes(notes, quiet)
            if not quiet:
                click.echo(stats.summary(str(source), domain) + counter)


def _exists(client: RestClient) -> bool:
    try:
        return client.domain_exists()
    except RestError as exc:
        raise ToolError(explain(exc, client)) from None
