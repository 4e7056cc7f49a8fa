"""``h5lake load``'s upload: :class:`Uploader` creates the domain and sends the objects the
planner's walk yields as it yields them, in batches, with bounded concurrency."""


from __future__ import annotations

import base64
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

import h5py
import numpy as np
import orjson
from h5py import h5a, h5d, h5r, h5s

from h5lake.client import h5bulk, h5fast, h5values
from h5lake.client import load_link as linking
from h5lake.client.common import (
    MIB,
    ToolError,
    progress,
    rate,
)
from h5lake.client.loadplan import (
    BLOCK_BYTES,
    INLINE_ATTR_BYTES,
    LINK_BATCH,
    POST_BATCH,
    TIME_STEP,
    LinkPlan,
    Node,
    Planner,
    attr_weight,
    dereference,
    parse_collection,
)
from h5lake.client.rest import RestClient, RestError
from h5lake.model.ids import Collection, new_object_id
from h5lake.model.types import TypeJson, is_variable, item_size
from h5lake.model.values import array_to_json

INLINE_VALUE_BYTES = 16 * 1024  # a dataset's whole value sent with its POST

# -- the upload --------------------------------------------------------------------------------

INLINE_LINKS = 2000  # a group's links sent with its POST; a wider group's go in PUTs after it
BATCH_BYTES = 8 * MIB  # about this much (attributes, values, links) in one POST at most


class _Ids:
    """References while uploading: HDF5 references to the ids of their targets."""

    def __init__(self, f: h5py.File, planner: Planner) -> None:
        self.file, self.planner = f, planner

    def id_of(self, oid: Any) -> str:
        return self.planner.id_of(oid)

    def to_wire(self, ref: Any, region: bool) -> bytes:
        if not ref:
            return b""
        target = dereference(ref, self.file)
        if target is None:  # its object no longer exists: an id no object in the domain has
            kind = Collection.DATASETS if region else Collection.GROUPS
            gone = new_object_id(kind, self.planner.root_id)
            if not region:
                return f"{kind.path}/{gone}".encode()
            return orjson.dumps({"id": f"{kind.path}/{gone}"})
        oid = self.id_of(target)
        if not region:
            return f"{parse_collection(oid)}/{oid}".encode()
        return h5values.region_blob(f"datasets/{oid}", h5r.get_region(ref, target))

    def from_wire(self, value: bytes, region: bool) -> Any:
        raise AssertionError("not used while loading")


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
    metadata_seconds: float = 0.0  # until every object, link and attribute was sent
    maps: int = 0  # marked compound datasets turned back into maps (client/mapfiles.py)

    @property
    def objects(self) -> int:
        return self.groups + self.datasets + self.datatypes + self.links + self.attributes

    def summary(self, source: str, domain: str) -> str:
        mib = self.value_bytes / MIB
        linked = f" ({self.linked} linked: {self.chunks_linked} chunks)" if self.linked else ""
        return (
            f"loaded {source} into {domain}: {self.groups} groups, {self.datasets} datasets{linked}, "
            f"{self.datatypes} datatypes, {self.links} links, {self.attributes} attributes, "
            + (f"{self.maps} maps (from compound datasets marked H5LAKE_MAP), " if self.maps else "")
            + f"{mib:.1f} MiB of values copied in {self.seconds:.1f} s "
            f"({rate(mib, self.seconds):.1f} MiB/s, {rate(self.objects, self.seconds):.0f} objects/s)"
        )


Task = Callable[[], "int | list[Task]"]  # returns the bytes of values it sent, or tasks to run after it


class Uploader:
    """Creates the domain, then streams the planner's walk: objects in POSTs of up to
    `POST_BATCH` (each with its links, attributes and a small value), at most two requests per
    worker in flight; what needs an object to exist (a wide group's links, large attributes,
    values, chunk tables) follows its POST; what holds references (their targets may come later
    in the walk) is sent once every object is made. Memory: the batches being filled and the
    requests in flight, and the objects whose references wait for the end."""

    def __init__(self, client: RestClient, f: h5py.File, planner: Planner, *, workers: int = 8, quiet: bool = True) -> None:
        self.client = client
        self.file = f
        self.planner = planner
        self.workers = workers
        self.quiet = quiet
        self.stats = LoadStats()
        self.refs = _Ids(f, planner)
        self.started = False  # the domain was made
        self.batches: dict[Collection, list[Node]] = {Collection.GROUPS: [], Collection.DATASETS: []}
        self.batch_bytes: dict[Collection, int] = {Collection.GROUPS: 0, Collection.DATASETS: 0}
        self.in_flight: set[Future[Any]] = set()
        self.window = 2 * workers
        self.followups: deque[Task] = deque()
        self.at_end: list[Task] = []  # need every object made: what holds references

    def run(self) -> LoadStats:
        started = time.monotonic()
        reply = self.client.put_json("/", {"group": {"creationProperties": self.planner.root_properties()}})
        self.planner.root_id = reply["root"]
        self.started = True
        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="h5lake-load")
        self.pool = pool
        try:
            with progress(0, "values", self.quiet) as self.bar:
                for node in self.planner.walk():
                    self._take(node)
                for kind in self.batches:
                    self._send(kind)
                self._drain()
                self.stats.metadata_seconds = time.monotonic() - started
                for task in self.at_end:
                    self._submit(task)
                self.at_end = []
                self._drain()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        self.stats.seconds = time.monotonic() - started
        return self.stats

    # -- the stream --

    def _take(self, node: Node) -> None:
        self._count(node)
        if node.id == self.planner.root_id:
            self._submit_all(self._after(node, inline_links=False, inline_attrs=False))
        elif node.kind is Collection.DATATYPES:  # made now: objects after it may use it
            self._submit_all(self._post(Collection.DATATYPES, [node]))
        else:
            weight = _weight(node)
            full = len(self.batches[node.kind]) >= POST_BATCH or self.batch_bytes[node.kind] + weight > BATCH_BYTES
            if self.batches[node.kind] and full:
                self._send(node.kind)
            self.batches[node.kind].append(node)
            self.batch_bytes[node.kind] += weight

    def _count(self, node: Node) -> None:
        if node.kind is Collection.GROUPS:
            self.stats.groups += 1
            self.stats.links += len(node.links)
        elif node.kind is Collection.DATATYPES:
            self.stats.datatypes += 1
        else:
            self.stats.datasets += 1
            if node.linked is not None:
                self.stats.linked += 1
                self.stats.chunks_linked += node.linked.chunks_linked
        self.stats.attributes += len(node.attrs)

    def _send(self, kind: Collection) -> None:
        nodes = self.batches[kind]
        if not nodes:
            return
        self.batches[kind], self.batch_bytes[kind] = [], 0
        body = self._post_body(kind, nodes)  # read here: h5py is used from this thread only, but for values
        self._submit(partial(self._post_sent, kind, nodes, body))

    def _submit_all(self, tasks: list[Task]) -> None:
        for task in tasks:
            self._submit(task)

    def _submit(self, task: Task) -> None:
        while len(self.in_flight) >= self.window:
            self._reap()
        self.in_flight.add(self.pool.submit(task))
        while self.followups:  # what finished requests let go now, before reading further
            follow = self.followups.popleft()
            while len(self.in_flight) >= self.window:
                self._reap()
            self.in_flight.add(self.pool.submit(follow))

    def _reap(self) -> None:
        done, self.in_flight = wait(self.in_flight, return_when=FIRST_COMPLETED)
        for fut in done:
            result = fut.result()  # raises the task's error
            if isinstance(result, int):
                self.stats.value_bytes += result
                self.bar.update(result)
            else:
                self.followups.extend(result)

    def _drain(self) -> None:
        while self.in_flight or self.followups:
            if self.followups:
                self._submit(self.followups.popleft())
            else:
                self._reap()

    # -- objects --

    def _type_ref(self, t: TypeJson | None, committed: str | None) -> Any:
        return committed if committed is not None else t

    def _post(self, kind: Collection, nodes: list[Node]) -> list[Task]:
        return self._post_sent(kind, nodes, self._post_body(kind, nodes))

    def _post_body(self, kind: Collection, nodes: list[Node]) -> list[dict[str, Any]]:
        """The POST items of ``nodes``: each with its links, attributes and (a small dataset)
        its value inline when they allow it; what does not go inline is noted on the node."""
        body = []
        for node in nodes:
            item: dict[str, Any] = {"id": node.id, "creationProperties": node.props}
            if node.fill_refs is not None and node.type is not None:  # references in the fill value, as ids now
                fill = h5values.to_model(node.fill_refs, node.type, self.refs).reshape(())
                item["creationProperties"] = {**node.props, "fillValue": array_to_json(fill, node.type)}
            if kind is Collection.DATATYPES:
                item["type"] = node.type
            elif kind is Collection.DATASETS:
                item["type"] = self._type_ref(node.type, node.committed)
                item["shape"] = node.space
                if node.linked is not None:
                    if node.linked.table is not None:  # made in the same request, before the dataset
                        node.table_id = new_object_id(Collection.DATASETS, self.planner.root_id)
                        body.append(table_item(node.table_id, node.linked.table))
                    item["creationProperties"] = node.linked.with_table(node.table_id)
                else:
                    node.value_sent = self._inline_value(node, item)
            elif kind is Collection.GROUPS and len(node.links) <= INLINE_LINKS:
                item["links"] = _link_items(node.links)
                node.links_sent = True
            if _inline_attributes(node):
                item["attributes"] = self._attribute_items(node)
                node.attrs_sent = True
            body.append(item)
        return body

    def _post_sent(self, kind: Collection, nodes: list[Node], body: list[dict[str, Any]]) -> list[Task]:
        """One POST of a batch; returns what must follow it."""
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
        tasks: list[Task] = []
        for node in nodes:
            tasks.extend(self._after(node, inline_links=node.links_sent, inline_attrs=node.attrs_sent))
        return tasks

    def _after(self, node: Node, *, inline_links: bool, inline_attrs: bool) -> list[Task]:
        """What follows an object's creation: its links and attributes that did not go with it,
        a linked dataset's chunk table, a copied dataset's values (those holding references at
        the end). Keeps the node only as long as those tasks do."""
        tasks: list[Task] = []
        if node.links and not inline_links:
            for first in range(0, len(node.links), LINK_BATCH):
                tasks.append(partial(self._put_links, node.id, node.links[first : first + LINK_BATCH], first))
        if node.attrs and not inline_attrs:
            task = partial(self._put_attributes, node)
            if any(h5values.has_reference(a.type) for a in node.attrs):
                self.at_end.append(task)
            else:
                tasks.append(task)
        if node.kind is Collection.DATASETS:
            if node.linked is not None and node.linked.table is not None:
                assert node.table_id is not None
                tasks.append(partial(put_table, self.client, node.table_id, node.linked.table))
            elif node.copy_values and not node.value_sent and not self.planner.missing_external:
                values = [partial(self._put_values, node, sel) for sel, _ in value_boxes(node)]
                if node.type is not None and h5values.has_reference(node.type):
                    self.at_end.extend(values)
                else:
                    tasks.extend(values)
        return tasks

    def _inline_value(self, node: Node, item: dict[str, Any]) -> bool:
        """Put a small dataset's whole value in its POST item (``value_base64``), when one box
        covers the whole extent and its type holds no references or variable-length parts."""
        assert node.type is not None
        if is_variable(node.type) or h5values.has_reference(node.type):
            return False
        if self.planner.missing_external and "externalStorage" in node.props.get("layout", {}):
            return False  # perhaps its files: named at the end of the walk
        size = item_size(node.type)
        if not size or node.space is None or size * math.prod(node.space.get("dims", [])) > INLINE_VALUE_BYTES:
            return False
        quick = _whole_raw_value(node)
        if quick is not None:  # read in one call
            if quick:
                item["value_base64"] = base64.b64encode(quick).decode()
                self.stats.value_bytes += len(quick)
            return True
        boxes = list(value_boxes(node))
        shape = node.space.get("dims", [])
        if len(boxes) != 1 or (boxes[0][0] is not None and [s.stop - s.start for s in boxes[0][0]] != list(shape)):
            return not boxes  # nothing stored: nothing to send
        try:
            data = h5values.read_dataset(node.handle, node.type_id(), node.type, boxes[0][0], self.refs)
        except (OSError, ValueError, TypeError) as exc:
            raise ToolError(f"dataset {node.path}: cannot read its values: {exc}") from None
        item["value_base64"] = base64.b64encode(data).decode()
        self.stats.value_bytes += len(data)
        return True

    # -- links --

    def _put_links(self, group_id: str, links: list[LinkPlan], first: int) -> list[Task]:
        body = {group_id: {"links": _link_items(links, first)}}
        self.client.put_json(f"/groups/{self.planner.root_id}/links", {"grp_ids": body})
        return []

    # -- attributes --

    def _put_attributes(self, node: Node) -> list[Task]:
        body = {node.id: {"attributes": self._attribute_items(node)}}
        try:
            self.client.put_json(f"/groups/{self.planner.root_id}/attributes", {"obj_ids": body})
        except RestError as exc:
            raise ToolError(f"attributes of {node.path}: {exc.message}") from None
        return []

    def _attribute_items(self, node: Node) -> dict[str, Any]:
        """A node's attributes as ``PUT .../attributes`` (and a POST's ``attributes``) take them."""
        stamp = time.time()
        attrs = {}
        for i, a in enumerate(node.attrs):
            item: dict[str, Any] = {"type": self._type_ref(a.type, a.committed), "shape": a.space, "created": stamp + i * TIME_STEP}
            if a.name_cset:
                item["nameCharSet"] = a.name_cset
            if a.wire is not None:  # read by the walk
                item["value_base64"] = base64.b64encode(a.wire).decode()
            elif a.space["class"] != "H5S_NULL":
                try:
                    aid = h5a.open(node.handle, a.name.encode("utf-8", "surrogateescape"))
                    wire = h5values.read_attribute(aid, a.type, a.dims, self.refs)
                except (OSError, RuntimeError) as exc:  # h5py's classes for HDF5's own errors (a damaged heap)
                    raise ToolError(f"attribute {a.name!r} of {node.describe()}: cannot read its value: {exc}") from None
                item["value_base64"] = base64.b64encode(wire).decode()
            attrs[a.name] = item
        return attrs

    # -- values --

    def _put_values(self, node: Node, sel: h5values.Selection | None) -> int:
        return put_box(self.client, node, node.id, sel, self.refs)


def _whole_raw_value(node: Node) -> bytes | None:
    """What `Uploader._inline_value` reads of a small contiguous or compact dataset whose values
    are the file's bytes as they are (`h5fast.raw_size`), read whole in one call: its bytes (b""
    when nothing is stored); None when the general way reads it."""
    assert node.space is not None
    layout = node.props.get("layout", {})
    if layout.get("class") not in ("H5D_CONTIGUOUS", "H5D_COMPACT") or "externalStorage" in layout:
        return None
    if node.space["class"] not in ("H5S_SIMPLE", "H5S_SCALAR"):
        return None
    tid = node.type_id()
    size = h5fast.raw_size(tid)
    if size is None:
        return None
    count = math.prod(node.space.get("dims", ()))
    dsid = node.handle
    if not count or dsid.get_space_status() == h5d.SPACE_STATUS_NOT_ALLOCATED:
        return b""  # nothing stored: nothing to send
    buf = np.empty(size * count, dtype=np.uint8)
    try:
        dsid.read(h5s.ALL, h5s.ALL, buf, mtype=tid)
    except (OSError, ValueError, TypeError) as exc:
        raise ToolError(f"dataset {node.path}: cannot read its values: {exc}") from None
    return buf.tobytes()


def _link_items(links: list[LinkPlan], first: int = 0) -> dict[str, Any]:
    stamp = time.time()
    out = {}
    for i, link in enumerate(links):
        item = dict(link.body, created=stamp + (first + i) * TIME_STEP)
        if link.target is not None:
            item["id"] = link.target
        out[link.name] = item
    return out


def _weight(node: Node) -> int:
    """About what a node adds to its POST, in bytes."""
    weight = 512 + 128 * min(len(node.links), INLINE_LINKS)
    if node.attrs and _inline_attributes(node):
        weight += _attrs_weight(node)
    if node.kind is Collection.DATASETS and node.type is not None and node.space is not None:
        size = item_size(node.type) or 0
        weight += min(INLINE_VALUE_BYTES, size * math.prod(node.space.get("dims", []))) * 4 // 3
    return weight


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
    tid = node.type_id()
    try:
        data = h5bulk.read_box(node.handle, tid, node.type, sel, refs)  # this thread's memory: sent before the next read
    except (OSError, ValueError, TypeError) as exc:
        raise ToolError(f"dataset {node.path}: cannot read its values: {exc}") from None
    try:
        client.put_bytes(f"/datasets/{dataset_id}/value", data, **h5values.select_text(sel if at is None else at))
    except RestError as exc:
        raise ToolError(f"dataset {node.path}: writing values failed: {exc.message}") from None
    return memoryview(data).nbytes


def table_item(table_id: str | None, table: linking.ChunkTable) -> dict[str, Any]:
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


def put_table(client: RestClient, table_id: str, table: linking.ChunkTable, select: str | None = None) -> int:
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


def _inline_attributes(node: Node) -> bool:
    """Whether a node's attributes go with its POST: small and holding no references (their
    targets may come later in the walk). A committed type they use was made before."""
    if node.inline_attrs is None:
        node.inline_attrs = bool(node.attrs) and _attrs_weight(node) <= INLINE_ATTR_BYTES and not any(
            h5values.has_reference(a.type) for a in node.attrs)
    return node.inline_attrs


def _attrs_weight(node: Node) -> int:
    if node.attrs_weight is None:
        node.attrs_weight = sum(attr_weight(a) for a in node.attrs)
    return node.attrs_weight




def value_boxes(node: Node) -> Iterator[tuple[h5values.Selection | None, int]]:
    """The boxes of a dataset to copy, one PUT each: groups of whole chunks when every chunk is
    allocated, else each allocated chunk (split when bigger than a block), or blocks of the
    whole extent for other layouts. Nothing for null and empty dataspaces or contiguous storage
    never allocated (its values are all the fill value)."""
    assert node.space is not None and node.type is not None
    if node.space["class"] == "H5S_NULL":
        return
    dsid = node.handle
    itemsize = 64 if is_variable(node.type) else max(1, node.type_id().get_size())
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
