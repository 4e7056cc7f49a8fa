"""``h5lake load --append --extend AXIS``: grow a domain's datasets by a further file, through
chunk table slabs for linked datasets and resizes plus values for copied ones."""


from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import h5py
import numpy as np

from h5lake.chunks.filters import from_h5py_dcpl
from h5lake.client import h5values
from h5lake.client import load_link as linking
from h5lake.client.common import (
    MIB,
    ToolError,
)
from h5lake.client.h5source import S3Settings, Source, open_source, source_uri
from h5lake.client.h5types import type_json
from h5lake.client.loadplan import Node, NullReferencesOnly, space_json
from h5lake.client.rest import RestClient, RestError
from h5lake.client.upload import put_box, put_table, send_all, table_item, value_boxes
from h5lake.errors import H5LakeError
from h5lake.model.ids import Collection, parse_index_name
from h5lake.model.shapes import UNLIMITED
from h5lake.model.types import to_dtype

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
                put_table(client, self.table_id, entries, self.linked.table_select)
            client.put_json(f"/datasets/{self.dataset_id}/shape", {"shape": self.new_shape})
        except RestError as exc:
            raise ToolError(f"dataset {self.node.path}: growing it failed: {exc.message}") from None
        return 0


Axes = dict[str, int | None]
"""Dataset path -> the axis it grows along when files are appended; None: it keeps its values."""


@dataclass(frozen=True)
class Form:
    """What must be the same in every file for a dataset to grow by another file's: its type
    (the bytes of a linked chunk are read as it), whether its chunks are linked in place, and
    then their shape and filters."""

    type: dict[str, Any]
    linked: bool
    chunks: tuple[int, ...] | None
    filters: tuple[Any, ...]

    def mismatch(self, other: Form) -> str | None:
        """How ``other`` (a later file's) differs from this (the first file's), or None."""
        if not same_type(self.type, other.type):
            return f"its type {type_name(other.type)} differs from the first file's {type_name(self.type)}"
        if not self.linked:
            return None  # values copied: chunks and filters of the file do not matter
        if not other.linked:
            return "it cannot be linked in place, as the first file's is"
        if other.chunks != self.chunks:
            return f"its chunks {list(other.chunks or ())} differ from the first file's {list(self.chunks or ())}"
        if other.filters != self.filters:
            return "its filters differ from the first file's"
        return None


def same_type(a: dict[str, Any], b: dict[str, Any]) -> bool:
    try:
        return bool(to_dtype(a) == to_dtype(b)) and a.get("charSet") == b.get("charSet")
    except (H5LakeError, TypeError, ValueError, KeyError):
        return a == b


def type_name(t: dict[str, Any]) -> str:
    try:
        return str(to_dtype(t))
    except (H5LakeError, TypeError, ValueError, KeyError):
        return str(t.get("class", "?"))


def file_form(dset: h5py.Dataset) -> Form:
    linked = linking.copy_reason(dset) is None and dset.chunks is not None
    filters = tuple(f.get("id") for f in from_h5py_dcpl(dset)) if linked else ()
    return Form(dict(type_json(dset.id.get_type())), linked, tuple(dset.chunks) if linked else None, filters)


def domain_form(doc: dict[str, Any]) -> Form:
    props = doc.get("creationProperties") or {}
    layout = props.get("layout") or {}
    # chunks linked in place (contiguous data linked in place cannot grow: `plan_append` says so)
    linked = layout.get("class") in ("H5D_CHUNKED_REF", "H5D_CHUNKED_REF_INDIRECT")
    chunks = tuple(int(n) for n in layout.get("dims") or ()) if linked else None
    filters = tuple(f.get("id") for f in props.get("filters") or []) if linked else ()
    return Form(doc.get("type") or {}, linked, chunks, filters)


@dataclass(frozen=True)
class Datasets:
    """The datasets of a file (or of the domain made from the first file): where each grows
    along the axis, its shape and its `Form`."""

    axes: Axes
    shapes: dict[str, tuple[int, ...]]
    forms: dict[str, Form] = field(default_factory=dict)

DIMENSION_ATTRIBUTES = ["DIMENSION_LIST", "DIMENSION_LABELS"]


def file_axes(f: h5py.File, extend: str) -> Datasets:
    """The axis ``extend`` names in each dataset of ``f``, each object once."""
    out = Datasets({}, {})

    def found_one(name: str, obj: Any) -> None:  # returning a value would stop the visit
        if isinstance(obj, h5py.Dataset):
            out.axes["/" + name] = linking.resolve_axis(obj, extend)
            out.shapes["/" + name] = tuple(obj.shape or ())
            out.forms["/" + name] = file_form(obj)

    f.visititems(found_one)
    return out


def domain_axes(client: RestClient, extend: str) -> Datasets:
    """`file_axes` for the datasets of ``client.domain``, which keeps the first file's
    dimension scales and labels: from its links, shapes and dimension attributes, in four
    requests whatever the number of datasets."""
    try:
        root = client.get_json("/")["root"]
        tree = client.get_json(f"/groups/{root}/links", follow_links=1)["links"]
        ids = _dataset_paths(root, tree)
        if not ids:
            return Datasets({}, {})
        docs = client.post_json("/", {"h5paths": list(ids)})["h5paths"]
        found = client.post_json(f"/groups/{root}/attributes", {"obj_ids": list(ids.values()), "attr_names": DIMENSION_ATTRIBUTES})
    except RestError as exc:
        raise ToolError(f"cannot read {client.domain}: {exc.message}") from None
    path_of = {oid: path for path, oid in ids.items()}
    out = Datasets({}, {})
    for path, oid in ids.items():
        out.shapes[path] = tuple(int(n) for n in docs[path]["shape"].get("dims") or [])
        out.forms[path] = domain_form(docs[path])
        rank = len(out.shapes[path])
        attrs = {a["name"]: a.get("value") for a in found["attributes"].get(oid, [])}
        labels = attrs.get("DIMENSION_LABELS") or []
        refs = attrs.get("DIMENSION_LIST") or []
        scales = [[path_of.get(str(ref).rsplit("/", 1)[-1], "") for ref in dim or []] for dim in refs]
        out.axes[path] = linking.axis_named(extend, path, rank, [str(x) for x in labels] if isinstance(labels, list) else [], scales)
    return out


def _dataset_paths(root: str, tree: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Path -> id of every dataset below ``root`` in a ``follow_links`` listing, each object
    once, in the order h5py's ``visititems`` takes (depth first, by name)."""
    out: dict[str, str] = {}
    seen = {root}

    def visit(gid: str, prefix: str) -> None:
        for link in sorted(tree.get(gid, []), key=lambda item: str(item["title"])):
            oid = link.get("id")
            if link.get("class") != "H5L_TYPE_HARD" or not oid or oid in seen:
                continue
            seen.add(oid)
            path = f"{prefix}/{link['title']}"
            if link.get("collection") == "datasets":
                out[path] = oid
            elif link.get("collection") == "groups":
                visit(oid, path)

    visit(root, "")
    return out


def check_axes(first: Datasets, extend: str, first_name: str) -> None:
    """An axis name that no dataset of the first file has is a mistake, not a no-op."""
    if not any(axis is not None for axis in first.axes.values()):
        raise ToolError(
            f"no dataset of {first_name} has an axis {extend} (a dimension number, dimension label or "
            "dimension scale name): nothing was appended"
        )


def check_file(f: h5py.File, name: str, first: Datasets, extend: str) -> None:
    """Refuse a file that does not continue the first along ``extend``: every dataset that has
    that axis in the first file must be in it with the axis at the same dimension and the same
    extents along the others, and its datasets must all be the first file's. Metadata only;
    nothing is sent."""
    found = file_axes(f, extend)
    mine = found.axes
    extra = [path for path in mine if path not in first.axes]
    if extra:
        more = " ..." if len(extra) > 3 else ""
        raise ToolError(f"{name}: {', '.join(extra[:3])}{more} not in the first file: an appended file needs the first file's datasets; nothing was appended")
    for path, axis in first.axes.items():
        if axis is None:
            continue
        if path not in mine:
            raise ToolError(f"{name}: dataset {path} is missing, but it grows along {extend} in the first file; nothing was appended")
        if mine[path] is None:
            raise ToolError(f"{name}: dataset {path} has no axis {extend}, but it has in the first file; nothing was appended")
        if mine[path] != axis:
            raise ToolError(
                f"{name}: dataset {path} has axis {extend} as dimension {mine[path]}, the first file as dimension {axis}; nothing was appended"
            )
        theirs, ours = first.shapes[path], found.shapes[path]
        if len(theirs) != len(ours) or any(a != b for d, (a, b) in enumerate(zip(theirs, ours, strict=True)) if d != axis):
            raise ToolError(
                f"{name}: dataset {path} has shape {list(ours)}, which does not continue the first file's "
                f"{list(theirs)} along {extend}; nothing was appended"
            )
        if path in first.forms and path in found.forms and (why := first.forms[path].mismatch(found.forms[path])):
            raise ToolError(f"{name}: dataset {path}: {why}; nothing was appended")


def kept_note(first: Datasets, extend: str) -> str | None:
    """The one note for the datasets that keep the first file's values, if any."""
    kept = [path for path, axis in first.axes.items() if axis is None]
    if not kept:
        return None
    more = f" and {len(kept) - 5} more" if len(kept) > 5 else ""
    which = f"dataset {kept[0]} has" if len(kept) == 1 else f"datasets {', '.join(kept[:5])}{more} have"
    return f"{which} no axis {extend} in the first file: the first file's values are kept"


def append_file(
    source: Source, client: RestClient, extend: str, first: Datasets, *, workers: int = 8, quiet: bool = True, s3: S3Settings | None = None
) -> AppendStats:
    """Grow the datasets of ``client.domain`` (made by ``load --append``) by those of ``source``
    along the axis ``extend`` (a number, or a dimension scale's name), whose dimension in each
    dataset ``first`` gives (`domain_axes`, or `file_axes` of the first file). Every dataset is
    checked before anything changes; datasets without that axis keep the first file's values."""
    started = time.monotonic()
    name = str(source)
    with open_source(source, s3) as f:
        check_file(f, name, first, extend)
        growths = _plan_growths(f, client, source_uri(source), first.axes)
        stats = AppendStats(datasets=len(growths))
        stats.chunks_linked = sum(int(np.count_nonzero(g.linked.entries["size"])) for g in growths if g.linked)
        with ThreadPoolExecutor(workers, thread_name_prefix="h5lake-append") as pool:
            send_all(pool, [(partial(g.grow, client), 0) for g in growths], 2 * workers, True)
            values: list[tuple[Callable[[], int], int]] = []
            for g in growths:
                if g.box is not None:
                    offset = [s.start for s in g.box]
                    for sel, n in value_boxes(g.node):
                        assert sel is not None
                        at = tuple(slice(s.start + o, s.stop + o) for s, o in zip(sel, offset, strict=True))
                        values.append((partial(put_box, client, g.node, g.dataset_id, sel, NullReferencesOnly(), at), n))
            stats.value_bytes = send_all(pool, values, 2 * workers, quiet)
    stats.seconds = time.monotonic() - started
    return stats


def _plan_growths(f: h5py.File, client: RestClient, uri: str, first: Axes) -> list[_Growth]:
    grown = {path: axis for path, axis in first.items() if axis is not None}
    try:  # each object once
        found = client.post_json("/", {"h5paths": list(grown)})["h5paths"]
    except RestError as exc:
        raise ToolError(f"cannot read {client.domain}: {exc.message}") from None
    missing = [path for path in grown if path not in found]
    if missing:
        more = " ..." if len(missing) > 3 else ""
        raise ToolError(f"{', '.join(missing[:3])}{more} not in {client.domain}: an appended file needs the first file's datasets")
    growths: list[_Growth] = []
    for path, axis in grown.items():
        try:
            growths.append(_plan_growth(client, found[path]["id"], path, f[path], uri, axis))
        except linking.LinkError as exc:
            raise ToolError(f"{exc}; nothing was appended") from None
        except RestError as exc:
            raise ToolError(f"dataset {path}: {exc.message}") from None
    return growths


def _plan_growth(client: RestClient, dataset_id: str, path: str, dset: h5py.Dataset, uri: str, axis: int) -> _Growth:
    target = client.get_json(f"/datasets/{dataset_id}")
    layout = target.get("creationProperties", {}).get("layout", {})
    node = Node(0, Collection.DATASETS, path, dset.id, props={"layout": {"class": "H5D_CHUNKED", "dims": list(dset.chunks)}} if dset.chunks else {})
    node.type = type_json(dset.id.get_type())
    node.space, _ = space_json(dset.id.get_space())
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
            index = parse_index_name(key)
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
        item = {k: v for k, v in table_item(None, table).items() if k != "id"}  # the server picks the id
        table_id = client.post_json("/datasets", item)["id"]
        put_table(client, table_id, table)
        client.put_json(f"/datasets/{dataset_id}/layout", {"chunk_table": table_id, "extend_dim": axis})
        return str(table_id)
    except RestError as exc:
        raise linking.LinkError(f"{path}: turning it into the per-chunk-file form failed: {exc.message}") from None
