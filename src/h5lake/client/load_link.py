"""``h5lake load --link``: the per-dataset step that links a dataset instead of copying it.

The loader asks `plan_link` about each h5py dataset. The answer is either ``None`` with a
reason from `copy_reason` (scalars, null and empty datasets, compact or external or virtual
storage, variable-length and reference types, filters the server cannot decode: these are
copied), or a `LinkPlan`: the ``creationProperties`` for ``POST /datasets`` with one of the
three REF layouts, and, for ``H5D_CHUNKED_REF_INDIRECT``, the chunk table to create first.

Chunk locations come from one ``dsid.chunk_iter`` pass (HDF5 >= 1.12.3 / 1.14), never one call
per chunk. Up to `INLINE_CHUNKS` chunks go in the layout itself (``H5D_CHUNKED_REF``); more go in
a chunk table of ``(offset, size)`` elements (``file_uri`` is in the layout). With
``aggregate=True`` (``--append``) every dataset with chunks is planned as INDIRECT with a
``file_uri`` per entry and an unlimited extension axis, so later files can be appended
(`plan_append`): 365 daily files become one dataset, each chunk pointing into its own file.

Wiring in ``load.py`` (one dataset ``dset`` of the source, ``uri`` its ``file_uri``)::

    plan = link.plan_link(dset, uri, type_json=t, base_props=props, aggregate=append, axis=axis)
    if plan is None:
        copied.append((dset.name, link.copy_reason(dset, t)))  # copy as usual
    else:
        if plan.table is not None:
            tid = <POST /datasets> {"type": plan.table.type_json, "shape": list(plan.table.shape),
                                    "maxdims": plan.table.maxdims,
                                    "creationProperties": plan.table.creation_properties()}
            <PUT /datasets/tid/value> plan.table.body()  (content type: plan.table.content_type)
        <POST /datasets> {..., "maxdims": plan.maxdims, "creationProperties": plan.with_table(tid)}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from h5lake.chunks.filters import FilterPipeline, from_h5py_dcpl
from h5lake.errors import H5LakeError
from h5lake.model.ids import index_name
from h5lake.model.layout import chunk_grid
from h5lake.model.stored import Doc
from h5lake.model.types import CharSet

INLINE_CHUNKS = 1000  # more chunks than this go in a chunk table (the design's threshold)
TABLE_CHUNK_ENTRIES = 64 * 1024  # entries per chunk table chunk: 768 KiB of (offset, size)
URI_TABLE_CHUNK_ENTRIES = 4 * 1024  # with file URIs (variable-length): each chunk decodes in ~30 ms
# A chunk table holds an entry for every chunk of the grid, written or not: a huge, sparse
# dataset (an extent of 10**12 elements, a few chunks written) would take gigabytes of table,
# built in memory and sent. Past this many grid chunks the dataset is copied (its written chunks).
MAX_TABLE_ENTRIES = 1 << 24  # 256 MiB of (offset, size)


class LinkError(Exception):
    """A file cannot be appended to the linked datasets of a domain (mismatch, not aligned)."""


# --- what can be linked -------------------------------------------------------------------


def copy_reason(dset: Any, type_json: Doc | None = None, *, external_ok: bool = False) -> str | None:
    """Why ``dset`` must be copied rather than linked, or None when it can be linked. External
    storage is linked (each segment a byte range of its file) when ``external_ok``: the loader
    knows where the raw files are."""
    import h5py

    if dset.shape is None:
        return "null dataspace"
    if dset.shape == ():
        return "scalar"
    if math.prod(dset.shape) == 0:
        return "no elements"
    try:
        dt = dset.dtype
    except (TypeError, ValueError):  # h5py has no numpy dtype for it (binary128, H5T_TIME): copied as HDF5's bytes
        return "a type numpy cannot hold"
    if _has_vlen_or_ref(dt):
        return "variable-length or reference type"
    plist = dset.id.get_create_plist()
    layout = plist.get_layout()
    if layout == h5py.h5d.COMPACT:
        return "compact storage"
    if layout == h5py.h5d.VIRTUAL:
        return "virtual dataset"
    if plist.get_external_count() > 0:
        return None if external_ok else "external storage"
    if layout == h5py.h5d.CONTIGUOUS and dset.id.get_offset() is None:
        return "no data written"
    filters = from_h5py_dcpl(dset)
    try:
        FilterPipeline.from_json(filters, dt, dset.chunks)
    except H5LakeError as exc:
        return f"filter not readable by the server ({exc})"
    if dset.chunks is not None and (grid := math.prod(chunk_grid(dset.shape, dset.chunks))) > MAX_TABLE_ENTRIES:
        return f"{grid} chunks in its grid, more than a chunk table holds ({MAX_TABLE_ENTRIES}); its written chunks are copied"
    return None


def _has_vlen_or_ref(dt: np.dtype[Any]) -> bool:
    import h5py

    if dt.names:
        fields: Any = dt.fields or {}
        return any(_has_vlen_or_ref(fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        return _has_vlen_or_ref(dt.subdtype[0])
    return dt.kind == "O" or h5py.check_ref_dtype(dt) is not None


# --- chunk tables -------------------------------------------------------------------------


def table_dtype(with_uri: bool, with_mask: bool = False) -> np.dtype[Any]:
    fields: list[tuple[str, Any]] = [("offset", "<i8"), ("size", "<i4")]
    if with_uri:
        fields.append(("file_uri", object))
    if with_mask:
        fields.append(("filter_mask", "<u4"))
    return np.dtype(fields)


def table_type_json(with_uri: bool, with_mask: bool = False) -> Doc:
    """h5pyd's chunk-table type, plus a ``filter_mask`` field (an h5lake extension, for files
    where some chunks skipped an optional filter) only when a chunk needs it."""
    fields: list[Doc] = [
        {"name": "offset", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}},
        {"name": "size", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}},
    ]
    if with_uri:  # the type h5pyd's hsload uses: a variable-length ASCII string
        fields.append(
            {
                "name": "file_uri",
                "type": {"class": "H5T_STRING", "length": "H5T_VARIABLE", "charSet": CharSet.ASCII.value, "strPad": "H5T_STR_NULLTERM"},
            }
        )
    if with_mask:
        fields.append({"name": "filter_mask", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U32LE"}})
    return {"class": "H5T_COMPOUND", "fields": fields}


@dataclass
class ChunkTable:
    """A chunk-table dataset to create: its entries and how to store them."""

    entries: np.ndarray  # structured, table_dtype(with_uri)
    with_uri: bool
    maxdims: list[int | None] | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.entries.shape)

    @property
    def with_mask(self) -> bool:
        return "filter_mask" in (self.entries.dtype.names or ())

    @property
    def type_json(self) -> Doc:
        return table_type_json(self.with_uri, self.with_mask)

    def chunk_dims(self) -> list[int]:
        grow = self.maxdims.index(None) if self.maxdims and None in self.maxdims else None
        return table_chunk_dims(self.shape, grow, URI_TABLE_CHUNK_ENTRIES if self.with_uri else TABLE_CHUNK_ENTRIES)

    def creation_properties(self) -> Doc:
        return {"layout": {"class": "H5D_CHUNKED", "dims": self.chunk_dims()}}

    @property
    def content_type(self) -> str:
        return "application/json" if self.with_uri else "application/octet-stream"

    def body(self) -> bytes | Doc:
        """The ``PUT value`` body: packed bytes, or JSON ``{"value": ...}`` with file URIs."""
        if not self.with_uri:
            return np.ascontiguousarray(self.entries).tobytes()
        return {"value": entries_json(self.entries)}


def entries_json(entries: np.ndarray) -> Any:
    names = entries.dtype.names or ()

    def one(e: Any) -> list[Any]:
        uri = e["file_uri"]
        out = [int(e["offset"]), int(e["size"]), uri.decode() if isinstance(uri, bytes) else (uri or "")]
        if "filter_mask" in names:
            out.append(int(e["filter_mask"]))
        return out

    flat = [one(e) for e in entries.reshape(-1)]
    arr = np.empty(len(flat), dtype=object)
    arr[:] = flat
    return arr.reshape(entries.shape).tolist() if entries.ndim else flat[0]


def table_chunk_dims(shape: tuple[int, ...], grow_axis: int | None = None, budget: int = TABLE_CHUNK_ENTRIES) -> list[int]:
    """About ``budget`` entries per chunk, whole along the trailing dimensions; the axis files
    are appended along gets whatever the budget leaves, to leave room to grow."""
    out: list[int] = []
    for d in reversed(range(len(shape))):
        n = max(1, shape[d])
        if d == grow_axis:
            n = max(n, budget)
        take = max(1, min(n, budget))
        out.insert(0, take)
        budget = max(1, budget // take)
    return out


def chunk_locations(dset: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(chunk indexes ``(n, rank)``, offsets, sizes, filter masks) of every allocated chunk,
    in one ``chunk_iter`` pass."""
    offsets: list[tuple[int, ...]] = []
    addrs: list[int] = []
    sizes: list[int] = []
    masks: list[int] = []

    def visit(info: Any) -> None:
        offsets.append(info.chunk_offset)
        addrs.append(info.byte_offset)
        sizes.append(info.size)
        masks.append(info.filter_mask)

    dset.id.chunk_iter(visit)
    rank = len(dset.shape)
    coords = np.asarray(offsets, dtype=np.int64).reshape(-1, rank) // np.asarray(dset.chunks, dtype=np.int64)
    return coords, np.asarray(addrs, np.int64), np.asarray(sizes, np.int64), np.asarray(masks, np.int64)


def build_table(dset: Any, file_uri: str | None, with_mask: bool | None = None) -> np.ndarray:
    """The chunk table of ``dset``: one ``(offset, size[, file_uri][, filter_mask])`` per chunk
    of its grid, zeros (and ``""``) for chunks never written. The mask field is added when a
    chunk skipped a filter, or always/never with ``with_mask``."""
    coords, addrs, sizes, masks = chunk_locations(dset)
    mask_field = bool(masks.any()) if with_mask is None else with_mask
    if masks.any() and not mask_field:
        raise LinkError(f"{dset.name}: some chunks skip a filter but the existing chunk table has no filter_mask")
    table = np.zeros(chunk_grid(dset.shape, dset.chunks), dtype=table_dtype(file_uri is not None, mask_field))
    if file_uri is not None:
        table["file_uri"] = ""
    if coords.size:
        idx = tuple(coords.T)
        table["offset"][idx] = addrs
        table["size"][idx] = sizes
        if file_uri is not None:
            table["file_uri"][idx] = file_uri
        if mask_field:
            table["filter_mask"][idx] = masks
    return table


# --- plans ----------------------------------------------------------------------------------


@dataclass
class LinkPlan:
    """What to send for one linked dataset (see the module docstring)."""

    creation_properties: Doc
    shape: list[int]
    maxdims: list[int | None] | None = None
    table: ChunkTable | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def chunks_linked(self) -> int:
        """How many stored chunks (or contiguous blocks) of the file this plan points at."""
        if self.table is not None:
            return int(np.count_nonzero(self.table.entries["size"]))
        layout = self.creation_properties["layout"]
        return len(layout["chunks"]) if "chunks" in layout else 1

    def with_table(self, table_id: str | None) -> Doc:
        props = dict(self.creation_properties)
        if self.table is not None:
            if table_id is None:
                raise ValueError("this plan needs the id of its chunk table")
            props["layout"] = dict(props["layout"], chunk_table=table_id)
        return props


def _base_props(dset: Any, base_props: Doc | None) -> Doc:
    props = {k: v for k, v in (base_props or {}).items() if k not in ("layout",)}
    filters = from_h5py_dcpl(dset)
    plist = dset.id.get_create_plist()
    for i, spec in enumerate(filters):
        if "parameters" in spec:  # a filter kept as the file has it keeps its flags too
            spec["flags"] = int(plist.get_filter(i)[1])
    if filters:
        props["filters"] = filters
    else:
        props.pop("filters", None)
    return props


def plan_link(
    dset: Any,
    file_uri: str,
    *,
    base_props: Doc | None = None,
    type_json: Doc | None = None,
    aggregate: bool = False,
    axis: int | None = None,
    inline_chunks: int = INLINE_CHUNKS,
    external_folder: Path | None = None,
) -> LinkPlan | None:
    """How to link ``dset`` of the file at ``file_uri``, or None when it must be copied.

    ``base_props`` are the creationProperties the loader would send for a copy (fill value,
    track order...); the layout and filters are set here. With ``aggregate`` the dataset is
    planned for appends along ``axis`` (unlimited there); contiguous data then becomes a
    one-entry-per-virtual-chunk table as well.
    """
    import h5py

    external = external_folder is not None and not aggregate
    if copy_reason(dset, type_json, external_ok=external) is not None:
        return None
    props = _base_props(dset, base_props)
    shape = list(dset.shape)
    plist = dset.id.get_create_plist()
    layout = plist.get_layout()
    if plist.get_external_count() > 0:
        assert external_folder is not None
        props.pop("filters", None)
        props["layout"] = {"class": "H5D_CONTIGUOUS_REF", "segments": external_segments(dset, external_folder)}
        return LinkPlan(props, shape, None)
    if aggregate:
        if axis is None:
            raise ValueError("aggregate needs the axis files are appended along")
        if layout != h5py.h5d.CHUNKED:
            return None  # contiguous data cannot be cut along an arbitrary axis: copy it
        table = build_table(dset, file_uri, with_mask=True)  # later files may need it
        maxdims: list[int | None] = list(dset.maxshape)
        maxdims[axis] = None
        tmax: list[int | None] = list(table.shape)
        tmax[axis] = None
        props["layout"] = {"class": "H5D_CHUNKED_REF_INDIRECT", "dims": list(dset.chunks), "chunk_table": None}
        return LinkPlan(props, shape, maxdims, ChunkTable(table, True, tmax))
    if layout == h5py.h5d.CONTIGUOUS:
        props.pop("filters", None)
        props["layout"] = {
            "class": "H5D_CONTIGUOUS_REF",
            "file_uri": file_uri,
            "offset": int(dset.id.get_offset()),
            "size": int(dset.id.get_storage_size()),
        }
        return LinkPlan(props, shape, None)
    maxshape = list(dset.maxshape)
    resizable = maxshape != shape
    grid_count = math.prod(chunk_grid(dset.shape, dset.chunks))
    if grid_count <= inline_chunks and not resizable:
        coords, addrs, sizes, masks = chunk_locations(dset)
        chunks: Doc = {}
        for c, a, s, m in zip(coords.tolist(), addrs.tolist(), sizes.tolist(), masks.tolist()):
            chunks[index_name(c)] = [a, s, m] if m else [a, s]
        props["layout"] = {"class": "H5D_CHUNKED_REF", "file_uri": file_uri, "dims": list(dset.chunks), "chunks": chunks}
        return LinkPlan(props, shape, None)
    table = build_table(dset, None)
    props["layout"] = {"class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": file_uri, "dims": list(dset.chunks), "chunk_table": None}
    return LinkPlan(props, shape, [None if m is None else m for m in maxshape] if resizable else None, ChunkTable(table, False))


def external_segments(dset: Any, folder: Path) -> list[Doc]:
    """A dataset's External File List as ``segments``: each raw file by its absolute path (a
    relative name is in ``folder``, as HDF5 finds it), cut to the bytes the data needs (HDF5
    allows an unlimited last segment)."""
    plist = dset.id.get_create_plist()
    needed = dset.dtype.itemsize * math.prod(dset.shape)
    out: list[Doc] = []
    for i in range(plist.get_external_count()):
        if needed <= 0:
            break
        raw_name, offset, size = plist.get_external(i)
        name = Path(raw_name.decode("utf-8", "surrogateescape") if isinstance(raw_name, bytes) else str(raw_name))
        path = name if name.is_absolute() else folder / name
        take = min(int(size), needed)
        out.append({"file_uri": str(path.resolve()), "offset": int(offset), "size": take})
        needed -= take
    return out


class Linker:
    """The loader's link step for ``--link`` (and ``--append --extend AXIS``) on one file.

    Plans each dataset with `plan_link` and remembers why the others are copied. With
    ``extend`` the datasets that have that axis are planned for appends (`plan_append` adds
    later files); a copied one is made unlimited along it so its values can be appended too.
    """

    def __init__(self, file_uri: str, extend: str | None = None, external_folder: Path | None = None) -> None:
        self.file_uri = file_uri
        self.extend = extend
        self.external_folder = external_folder  # where relative external raw files are
        self.copied: list[tuple[str, str]] = []  # (dataset path, why it was copied)

    def axis(self, dset: Any) -> int | None:
        """The axis ``dset`` grows along when files are appended, or None."""
        return None if self.extend is None else resolve_axis(dset, self.extend)

    def plan(self, dset: Any, props: Doc) -> LinkPlan | None:
        """A plan linking ``dset`` (``props``: the creationProperties a copy gets), or None."""
        axis = self.axis(dset)
        plan = plan_link(dset, self.file_uri, base_props=props, aggregate=axis is not None, axis=axis, external_folder=self.external_folder)
        if plan is None:
            reason = copy_reason(dset) or "contiguous storage cannot be appended to by reference"
            self.copied.append((dset.name, reason))
        return plan

    @property
    def notes(self) -> list[str]:
        return [f"dataset {name} copied: {reason}" for name, reason in self.copied]


# --- appending along an axis --------------------------------------------------------------


def resolve_axis(dset: Any, spec: str | int) -> int | None:
    """The axis of ``dset`` (an h5py dataset) named by ``spec``, as `axis_named` says."""
    labels = [dim.label for dim in dset.dims]
    scales = [[scale.name for scale in dim.values()] for dim in dset.dims]
    return axis_named(spec, dset.name, len(dset.shape or ()), labels, scales)


def axis_named(spec: str | int, path: str, rank: int, labels: Sequence[str], scales: Sequence[Sequence[str]]) -> int | None:
    """The axis named by ``spec`` of the dataset at ``path`` of ``rank`` dimensions, whose
    dimension labels are ``labels`` and dimension ``i`` has the scales at the paths
    ``scales[i]``: ``spec`` is an axis number, or a dimension label, or the name (or path) of
    a dimension scale attached to it, or of the dataset itself when it is a 1-D scale. None
    when it has no such dimension."""
    if isinstance(spec, int) or (isinstance(spec, str) and spec.lstrip("-").isdigit()):
        axis = int(spec)
        return axis if 0 <= axis < rank else None
    name = str(spec).strip("/")

    def named(p: str) -> bool:
        return p.strip("/") == name or p.rsplit("/", 1)[-1] == name

    if named(path):
        return 0 if rank == 1 else None  # the scale itself
    for i in range(rank):
        if i < len(labels) and labels[i] == name:
            return i
        if i < len(scales) and any(named(p) for p in scales[i]):
            return i
    return None


@dataclass
class AppendPlan:
    """Growing one aggregated dataset by another file's dataset along ``axis``."""

    axis: int
    new_shape: list[int]
    table_shape: list[int]
    table_select: str  # the slab of the chunk table the new entries fill, as select syntax
    entries: np.ndarray


def plan_append(dset: Any, file_uri: str, target: Doc, table: Doc, axis: int) -> AppendPlan:
    """Add ``dset`` (in ``file_uri``) to the aggregated ``target`` (``GET /datasets`` JSON,
    ``table`` likewise for its chunk table) along ``axis``. `LinkError` when they do not fit."""
    layout = target.get("creationProperties", {}).get("layout", {})
    name = dset.name
    if layout.get("class") == "H5D_CONTIGUOUS_REF":
        raise LinkError(f"{name}: contiguous data linked in place cannot grow (its chunks are virtual); load the first file with --append too, or copy it")
    if layout.get("class") != "H5D_CHUNKED_REF_INDIRECT" or layout.get("file_uri"):
        raise LinkError(
            f"{name}: the existing dataset does not aggregate files; load the first file with --append too"
        )
    if copy_reason(dset) is not None or dset.chunks is None:
        raise LinkError(f"{name}: cannot be linked ({copy_reason(dset) or 'contiguous'}); it cannot be appended")
    if list(dset.chunks) != list(layout["dims"]):
        raise LinkError(f"{name}: chunks {list(dset.chunks)} differ from the existing {layout['dims']}")
    old = list(target["shape"]["dims"])
    if len(old) != len(dset.shape):
        raise LinkError(f"{name}: rank {len(dset.shape)} differs from the existing {len(old)}")
    for d, (a, b) in enumerate(zip(old, dset.shape)):
        if d != axis and a != b:
            raise LinkError(f"{name}: extent {b} of dimension {d} differs from the existing {a}")
    filters = from_h5py_dcpl(dset)
    have = target.get("creationProperties", {}).get("filters", [])
    if [f.get("id") for f in filters] != [f.get("id") for f in have]:
        raise LinkError(f"{name}: filters differ from the existing dataset's")
    c = dset.chunks[axis]
    if old[axis] % c:
        raise LinkError(
            f"{name}: the existing extent {old[axis]} along axis {axis} is not a multiple of the chunk"
            f" extent {c}, so the new file's chunks would not line up"
        )
    table_fields = [f["name"] for f in table["type"].get("fields", [])]
    entries = build_table(dset, file_uri, with_mask="filter_mask" in table_fields)
    start = old[axis] // c
    table_shape = list(table["shape"]["dims"])
    table_shape[axis] = max(table_shape[axis], start + entries.shape[axis])
    new_shape = list(old)
    new_shape[axis] = old[axis] + dset.shape[axis]
    parts = [f"{start}:{start + entries.shape[axis]}" if d == axis else f"0:{n}" for d, n in enumerate(entries.shape)]
    return AppendPlan(axis, new_shape, table_shape, "[" + ",".join(parts) + "]", entries)


def append_selection(old_shape: list[int], added: tuple[int, ...], axis: int) -> tuple[list[int], str]:
    """For a copied dataset appended along ``axis``: its new shape, and where the new values go."""
    new = list(old_shape)
    new[axis] += added[axis]
    parts = [f"{old_shape[axis]}:{new[axis]}" if d == axis else f"0:{n}" for d, n in enumerate(new)]
    return new, "[" + ",".join(parts) + "]"
