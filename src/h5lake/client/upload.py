"""The second phase of ``h5lake load``: :class:`Uploader` creates the domain and sends the plan
(types, groups, datasets, links, attributes, then values from a thread pool)."""


from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

import h5py
import orjson
from h5py import h5a, h5d, h5o, h5r

from h5lake.client import h5values
from h5lake.client import load_link as linking
from h5lake.client.common import (
    MIB,
    ToolError,
    progress,
    rate,
)
from h5lake.client.loadplan import (
    ATTR_BATCH_BYTES,
    BLOCK_BYTES,
    LINK_BATCH,
    POST_BATCH,
    TIME_STEP,
    AttrPlan,
    Node,
    Plan,
    dereference,
    parse_collection,
)
from h5lake.client.rest import RestClient, RestError
from h5lake.model.ids import Collection, new_object_id
from h5lake.model.types import TypeJson, is_variable, item_size
from h5lake.model.values import array_to_json

INLINE_ATTR_BYTES = 64 * 1024  # an object's attributes (weighed as _attr_weight) sent with its POST
INLINE_VALUE_BYTES = 16 * 1024  # a dataset's whole value sent with its POST

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
        self.inlined: set[int] = set()  # nodes whose attributes went with their POST
        self.valued: set[int] = set()  # datasets whose values went with their POST

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
                self._all(pool, [partial(self._post, kind, b, refs) for b in _batches(self.plan.of_kind(kind), POST_BATCH)])
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

    def _post(self, kind: Collection, nodes: list[Node], refs: _Ids) -> None:
        """One POST of up to POST_BATCH objects, each with its attributes and (a small dataset)
        its values inline when they are small: the server stores each object in one write."""
        body = []
        for node in nodes:
            item: dict[str, Any] = {"id": self.ids[node.index], "creationProperties": node.props}
            if node.fill_refs is not None and node.type is not None:  # references in the fill value, as ids now
                fill = h5values.to_model(node.fill_refs, node.type, _Ids(self.file, self.by_addr, self.ids)).reshape(())
                item["creationProperties"] = {**node.props, "fillValue": array_to_json(fill, node.type)}
            if kind is Collection.DATATYPES:
                item["type"] = node.type
            elif kind is Collection.DATASETS:
                item["type"] = self._type_ref(node.type, node.committed)
                item["shape"] = node.space
                if node.linked is not None:
                    table_id = self.table_ids.get(node.index)
                    if node.linked.table is not None:  # made in the same request, before the dataset
                        body.append(table_item(table_id, node.linked.table))
                    item["creationProperties"] = node.linked.with_table(table_id)
                else:
                    self._inline_value(node, item, refs)
            if _inline_attributes(node):
                item["attributes"] = self._attribute_items(node, refs)
                self.inlined.add(node.index)
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

    def _inline_value(self, node: Node, item: dict[str, Any], refs: _Ids) -> None:
        """Put a small dataset's whole value in its POST item (``value_base64``), when one box
        covers the whole extent and its type holds no references or variable-length parts."""
        assert node.type is not None
        if is_variable(node.type) or "H5T_REFERENCE" in orjson.dumps(node.type).decode():
            return
        size = item_size(node.type)
        if not size or node.space is None or size * math.prod(node.space.get("dims", [])) > INLINE_VALUE_BYTES:
            return
        boxes = list(value_boxes(node))
        shape = node.space.get("dims", [])
        if len(boxes) != 1 or (boxes[0][0] is not None and [s.stop - s.start for s in boxes[0][0]] != list(shape)):
            return
        try:
            data = h5values.read_dataset(node.handle, node.handle.get_type(), node.type, boxes[0][0], refs)
        except (OSError, ValueError, TypeError) as exc:
            raise ToolError(f"dataset {node.path}: cannot read its values: {exc}") from None
        item["value_base64"] = base64.b64encode(data).decode()
        self.valued.add(node.index)
        self.stats.value_bytes += len(data)

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
            if not node.attrs or node.index in self.inlined:
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
        body = {self.ids[node.index]: {"attributes": self._attribute_items(node, refs)} for node in nodes}
        try:
            self.client.put_json(f"/groups/{self.ids[0]}/attributes", {"obj_ids": body})
        except RestError as exc:
            raise ToolError(f"attributes of {', '.join(n.path for n in nodes[:3])}: {exc.message}") from None

    def _attribute_items(self, node: Node, refs: _Ids) -> dict[str, Any]:
        """A node's attributes as ``PUT .../attributes`` (and a POST's ``attributes``) take them."""
        stamp = time.time()
        attrs = {}
        for i, a in enumerate(node.attrs):
            item: dict[str, Any] = {"type": self._type_ref(a.type, a.committed), "shape": a.space, "created": stamp + i * TIME_STEP}
            if a.name_cset:
                item["nameCharSet"] = a.name_cset
            if a.space["class"] != "H5S_NULL":
                try:
                    aid = h5a.open(node.handle, a.name.encode("utf-8", "surrogateescape"))
                    wire = h5values.read_attribute(aid, a.type, a.dims, refs)
                except (OSError, RuntimeError) as exc:  # h5py's classes for HDF5's own errors (a damaged heap)
                    raise ToolError(f"attribute {a.name!r} of {node.describe()}: cannot read its value: {exc}") from None
                item["value_base64"] = base64.b64encode(wire).decode()
            attrs[a.name] = item
        return attrs

    # -- values --

    def _values(self, pool: ThreadPoolExecutor, refs: _Ids) -> None:
        """The chunk tables of linked datasets, then the values of copied ones."""
        tasks: list[tuple[Callable[[], int], int]] = []
        for node in self.plan.of_kind(Collection.DATASETS):
            if node.linked is not None and node.linked.table is not None:
                tasks.append((partial(put_table, self.client, self.table_ids[node.index], node.linked.table), 0))
            elif node.copy_values and node.index not in self.valued:
                tasks.extend((partial(self._put_values, node, sel, refs), n) for sel, n in value_boxes(node))
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
    """Whether a node's attributes go with its POST: small, of no committed type and holding no
    references (their targets may be made in the same batch), and not on a committed datatype."""
    if not node.attrs or node.kind is Collection.DATATYPES or sum(_attr_weight(a) for a in node.attrs) > INLINE_ATTR_BYTES:
        return False
    return all(a.committed is None and "H5T_REFERENCE" not in orjson.dumps(a.type).decode() for a in node.attrs)


def _attr_weight(a: AttrPlan) -> int:
    size = 64 if is_variable(a.type) else item_size(a.type) or 64
    return 256 + size * math.prod(a.dims)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def value_boxes(node: Node) -> Iterator[tuple[h5values.Selection | None, int]]:
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
