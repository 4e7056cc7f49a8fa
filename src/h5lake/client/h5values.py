"""Values between HDF5 objects (datasets, attributes, fill values) and the binary wire format.

Two paths, chosen by type:

- *Raw*: a type with no variable-length member and no reference is read and written with the
  object's own HDF5 type as memory type, so HDF5 converts nothing: the bytes are exactly the
  file's (string padding, bitfields, opaque tags, NaN payloads, big-endian values). They only
  differ from the wire layout when a compound has padding (see :func:`raw_to_wire`).
- *Objects*: anything else goes through h5py's conversions into numpy object arrays, then into
  the service's in-memory form (:mod:`h5lake.model.values`), with every reference mapped by a
  :class:`References` (to ids on load, back to HDF5 references on export).

A region reference travels as the blob this module defines (:func:`region_blob`): UTF-8 JSON
in the HDF5/JSON region reference form ``{"id", "select_type", "selection"}``, plus ``start``,
``stride``, ``count`` and ``block`` for a regular hyperslab, so that the selection is rebuilt
exactly as HDF5 stored it.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import struct
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import h5py
import numpy as np
import orjson
from h5py import h5r, h5s, h5t

from h5lake.client import h5memory
from h5lake.client.h5types import memory_type_id
from h5lake.model.types import (
    CharSet,
    TypeClass,
    TypeJson,
    array_dims,
    empty_array,
    is_bool,
    is_variable,
    to_dtype,
    type_class,
    wire_dtype,
)
from h5lake.model.values import array_to_bytes, bytes_to_array

Selection = tuple[slice, ...]


def has_reference(t: TypeJson) -> bool:
    match type_class(t):
        case TypeClass.REFERENCE:
            return True
        case TypeClass.VLEN | TypeClass.ARRAY:
            return has_reference(t["base"])
        case TypeClass.COMPOUND:
            return any(has_reference(f["type"]) for f in t["fields"])
        case _:
            return False


def is_raw(t: TypeJson) -> bool:
    """Whether values of ``t`` can be moved as the file's own bytes (the raw path)."""
    return not is_variable(t) and not has_reference(t)


def h5py_dtype(t: TypeJson) -> np.dtype[Any]:
    """The numpy dtype h5py converts elements of ``t`` to and from (objects path).

    Numbers are in native byte order: HDF5 then does any swapping itself, because h5py 3.16
    labels the elements of a vlen of big-endian numbers native without swapping them."""
    match type_class(t):
        case TypeClass.REFERENCE:
            return np.dtype(h5py.ref_dtype if t["base"] == "H5T_STD_REF_OBJ" else h5py.regionref_dtype)
        case TypeClass.STRING if t["length"] == "H5T_VARIABLE":
            return np.dtype(h5py.string_dtype("utf-8" if t["charSet"] == CharSet.UTF8.value else "ascii"))
        case TypeClass.VLEN:
            return np.dtype(h5py.vlen_dtype(h5py_dtype(t["base"])))
        case TypeClass.ARRAY:
            return np.dtype((h5py_dtype(t["base"]), tuple(t["dims"])))
        case TypeClass.COMPOUND:
            return np.dtype([(f["name"], h5py_dtype(f["type"])) for f in t["fields"]])
        case TypeClass.INTEGER | TypeClass.FLOAT:
            return to_dtype(t).newbyteorder("=")
        case TypeClass.ENUM if not is_bool(t):
            base = to_dtype(t["base"]).newbyteorder("=")
            return np.dtype(h5py.enum_dtype({m["name"]: m["value"] for m in t["members"]}, basetype=base))
        case _:
            return to_dtype(t)


# -- raw bytes <-> wire bytes ----------------------------------------------------------------------


def raw_to_wire(raw: bytes | memoryview, t: TypeJson) -> bytes:
    """HDF5 memory-layout bytes of fixed-size elements to the packed wire layout."""
    memory, wire = _leaf_dtypes(t)
    if memory == wire:
        return bytes(raw)
    return np.frombuffer(raw, dtype=memory).astype(wire).tobytes()


def wire_to_raw(data: bytes, t: TypeJson) -> bytes:
    memory, wire = _leaf_dtypes(t)
    if memory == wire:
        return data
    return np.frombuffer(data, dtype=wire).astype(memory).tobytes()


def _leaf_dtypes(t: TypeJson) -> tuple[np.dtype[Any], np.dtype[Any]]:
    _, leaf = array_dims(t)
    return to_dtype(leaf), wire_dtype(leaf)


def leaf_dtypes_match(t: TypeJson) -> bool:
    """Whether :func:`raw_to_wire` gives the memory bytes of ``t`` as they are."""
    memory, wire = _leaf_dtypes(t)
    return bool(memory == wire)


def raw_size(tid: Any, shape: tuple[int, ...]) -> int:
    return int(tid.get_size()) * math.prod(shape)


def split_box(box: Selection, itemsize: int, limit: int) -> Iterator[tuple[Selection, int]]:
    """Cut a box into C-order boxes of at most ``limit`` bytes (one element at least), each
    with its size in bytes."""
    counts = [s.stop - s.start for s in box]
    nbytes = math.prod(counts) * itemsize
    if nbytes <= limit:
        yield box, nbytes
        return
    axis = 0
    while axis < len(box) - 1 and math.prod(counts[axis + 1 :]) * itemsize > limit:
        axis += 1
    inner = math.prod(counts[axis + 1 :]) * itemsize
    step = max(1, limit // inner)
    outer = [range(s.start, s.stop) for s in box[:axis]]
    for prefix in _product(outer):
        lead = tuple(slice(i, i + 1) for i in prefix)
        for lo in range(box[axis].start, box[axis].stop, step):
            hi = min(lo + step, box[axis].stop)
            sub = lead + (slice(lo, hi),) + box[axis + 1 :]
            yield sub, (hi - lo) * inner


def _product(ranges: list[range]) -> Iterator[tuple[int, ...]]:
    if not ranges:
        yield ()
        return
    for i in ranges[0]:
        for rest in _product(ranges[1:]):
            yield (i, *rest)


def chunk_groups(shape: tuple[int, ...], chunk: tuple[int, ...], itemsize: int, limit: int) -> Iterator[Selection]:
    """Boxes of whole chunks (clipped to ``shape``) of about ``limit`` bytes at most, covering
    the extent in C order: one request per box instead of one per chunk, and every chunk the
    server stores is written whole. Boxes grow along the last axes first; a single chunk larger
    than ``limit`` is one box (the caller splits it)."""
    grid = [-(-n // c) for n, c in zip(shape, chunk, strict=True)]
    per = [1] * len(chunk)
    for axis in reversed(range(len(chunk))):
        one = math.prod(c * f for c, f in zip(chunk, per, strict=True)) * itemsize
        per[axis] = max(1, min(grid[axis], limit // max(one, 1)))
        if per[axis] < grid[axis]:
            break
    steps = [range(0, g, f) for g, f in zip(grid, per, strict=True)]
    for corner in _product(steps):
        yield tuple(
            slice(i * c, min((i + f) * c, n)) for i, c, f, n in zip(corner, chunk, per, shape, strict=True)
        )


def chunks_in(box: Selection, chunk: tuple[int, ...]) -> Iterator[Selection]:
    """The chunk-aligned boxes (clipped) inside a box made of whole chunks."""
    steps = [range(s.start, s.stop, c) for s, c in zip(box, chunk, strict=True)]
    for corner in _product(steps):
        yield tuple(slice(o, min(o + c, s.stop)) for o, c, s in zip(corner, chunk, box, strict=True))


def select_text(sel: Selection | None) -> dict[str, str]:
    """The ``select`` query parameter for a box (none for the whole dataset)."""
    if sel is None:
        return {}
    return {"select": "[" + ",".join(f"{s.start}:{s.stop}" for s in sel) + "]"}


# -- references ------------------------------------------------------------------------------------


class References(Protocol):
    """Maps references between a file and the service."""

    def to_wire(self, ref: Any, region: bool) -> bytes: ...

    def from_wire(self, value: bytes, region: bool) -> Any: ...


def to_model(arr: np.ndarray, t: TypeJson, refs: References) -> np.ndarray:
    """An array read by h5py (objects path) in the service's in-memory form for ``t``."""
    if not _needs_conversion(t):
        return arr
    dims, elem = array_dims(t)
    if dims:
        return to_model(arr, elem, refs)
    match type_class(t):
        case TypeClass.REFERENCE:
            region = t["base"] != "H5T_STD_REF_OBJ"
            out = empty_array(t, arr.shape)
            flat = out.reshape(-1)
            for i, ref in enumerate(arr.reshape(-1)):
                flat[i] = refs.to_wire(ref, region)
            return out
        case TypeClass.COMPOUND:
            out = empty_array(t, arr.shape)
            for f in t["fields"]:
                out[f["name"]] = to_model(arr[f["name"]], f["type"], refs)
            return out
        case TypeClass.VLEN:
            base = t["base"]
            out = empty_array(t, arr.shape)
            flat = out.reshape(-1)
            for i, item in enumerate(arr.reshape(-1)):
                item = np.asarray(item)
                if _misread_order(base) and item.dtype != to_dtype(base):
                    item = item.view(to_dtype(base))  # h5py gave file-order bytes labelled native
                flat[i] = to_model(item, base, refs)
            return out
    return arr


def _needs_conversion(t: TypeJson) -> bool:
    match type_class(t):
        case TypeClass.REFERENCE:
            return True
        case TypeClass.VLEN:
            return _misread_order(t["base"]) or _needs_conversion(t["base"])
        case TypeClass.ARRAY:
            return _needs_conversion(t["base"])
        case TypeClass.COMPOUND:
            return any(_needs_conversion(f["type"]) for f in t["fields"])
        case _:
            return False


def _misread_order(t: TypeJson) -> bool:
    """Whether h5py misreads a vlen of this base: non-native numbers (see :func:`_h5py_vlen_bug`)."""
    if type_class(t) not in (TypeClass.INTEGER, TypeClass.FLOAT, TypeClass.ENUM):
        return False
    dt = to_dtype(t)
    return dt.byteorder not in ("=", "|") and not dt.isnative and _h5py_vlen_bug()


@functools.cache
def _h5py_vlen_bug() -> bool:
    """h5py 3.16 reads the elements of a vlen of non-native numbers as their file bytes labelled
    native (writes are right). Checked once on an in-memory file, so a fixed h5py is used as is."""
    with h5py.File(io.BytesIO(), "w") as f:
        d = f.create_dataset("v", shape=(1,), dtype=h5py.vlen_dtype(np.dtype(">f8")))
        d[0] = np.array([1.5])
        return bool(d[0][0] != 1.5)


def from_model(arr: np.ndarray, t: TypeJson, refs: References) -> np.ndarray:
    """The service's in-memory form for ``t`` as an array h5py writes (objects path)."""
    dims, elem = array_dims(t)
    if dims:
        return from_model(arr, elem, refs)
    target = h5py_dtype(t)
    match type_class(t):
        case TypeClass.REFERENCE:
            region = t["base"] != "H5T_STD_REF_OBJ"
            out = np.empty(arr.shape, dtype=target)
            flat = out.reshape(-1)
            for i, value in enumerate(arr.reshape(-1)):
                flat[i] = refs.from_wire(bytes(value), region)
            return out
        case TypeClass.STRING if t["length"] == "H5T_VARIABLE":
            out = np.empty(arr.shape, dtype=target)
            flat = out.reshape(-1)
            for i, value in enumerate(arr.reshape(-1)):
                flat[i] = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value or b"")
            return out
        case TypeClass.COMPOUND:
            out = np.empty(arr.shape, dtype=target)
            for f in t["fields"]:
                out[f["name"]] = from_model(arr[f["name"]], f["type"], refs)
            return out
        case TypeClass.VLEN:
            out = np.empty(arr.shape, dtype=target)
            flat = out.reshape(-1)
            base = t["base"]
            for i, item in enumerate(arr.reshape(-1)):
                flat[i] = from_model(np.asarray(item), base, refs)
            return out
    return arr if arr.dtype == target else arr.astype(target)


# -- datasets --------------------------------------------------------------------------------------


def spaces(dsid: Any, sel: Selection | None) -> tuple[Any, Any, tuple[int, ...]]:
    fspace = dsid.get_space()
    if sel is None or fspace.get_simple_extent_type() != h5s.SIMPLE:
        shape = tuple(fspace.shape) if fspace.get_simple_extent_type() == h5s.SIMPLE else ()
        return h5s.ALL, h5s.ALL, shape
    start = tuple(s.start for s in sel)
    count = tuple(s.stop - s.start for s in sel)
    fspace.select_hyperslab(start, count)
    return h5s.create_simple(count), fspace, count


def read_dataset(dsid: Any, tid: Any, t: TypeJson, sel: Selection | None, refs: References) -> bytes:
    """The wire bytes of a box ``sel`` (None: everything) of a dataset."""
    mspace, fspace, shape = spaces(dsid, sel)
    if is_raw(t):
        tid = memory_type_id(tid, t)
        buf = np.empty(raw_size(tid, shape), dtype=np.uint8)
        dsid.read(mspace, fspace, buf, mtype=tid)
        return raw_to_wire(buf.data, t)
    if not has_reference(t):
        return h5memory.read(dsid, t, math.prod(shape), mspace, fspace)
    dt = h5py_dtype(t)
    arr = np.empty(shape, dtype=dt)
    dsid.read(mspace, fspace, arr, mtype=h5t.py_create(dt))
    return array_to_bytes(to_model(arr, t, refs), t)


def write_dataset(dsid: Any, tid: Any, t: TypeJson, sel: Selection | None, data: bytes, refs: References) -> None:
    mspace, fspace, shape = spaces(dsid, sel)
    if is_raw(t):
        buf = np.frombuffer(wire_to_raw(data, t), dtype=np.uint8).copy()
        dsid.write(mspace, fspace, buf, mtype=memory_type_id(tid, t))
        return
    if not has_reference(t):
        h5memory.write(dsid, t, data, math.prod(shape), mspace, fspace)
        return
    dt = h5py_dtype(t)
    arr = from_model(bytes_to_array(data, t, shape), t, refs)
    arr = np.ascontiguousarray(arr).reshape(np.empty(shape, dtype=dt).shape)
    dsid.write(mspace, fspace, arr, mtype=h5t.py_create(dt))


# -- attributes ------------------------------------------------------------------------------------


def read_attribute(aid: Any, t: TypeJson, shape: tuple[int, ...], refs: References, tid: Any = None) -> bytes:
    """The wire bytes of an attribute (``tid``: its HDF5 type, when the caller has it)."""
    tid = memory_type_id(aid.get_type() if tid is None else tid, t)
    if is_raw(t):
        buf = np.empty(raw_size(tid, shape), dtype=np.uint8)
        if buf.size:
            aid.read(buf, mtype=tid)
        return raw_to_wire(buf.data, t)
    if not has_reference(t):
        return h5memory.read(aid, t, math.prod(shape))
    dt = h5py_dtype(t)
    arr = np.empty(shape, dtype=dt)
    if arr.size:
        aid.read(arr, mtype=h5t.py_create(dt))
    return array_to_bytes(to_model(arr, t, refs), t)


def write_attribute(aid: Any, tid: Any, t: TypeJson, shape: tuple[int, ...], data: bytes, refs: References) -> None:
    if is_raw(t):
        buf = np.frombuffer(wire_to_raw(data, t), dtype=np.uint8).copy()
        if buf.size:
            aid.write(buf, mtype=memory_type_id(tid, t))
        return
    if not has_reference(t):
        h5memory.write(aid, t, data, math.prod(shape))
        return
    dt = h5py_dtype(t)
    arr = from_model(bytes_to_array(data, t, shape), t, refs)
    arr = np.ascontiguousarray(arr).reshape(np.empty(shape, dtype=dt).shape)
    if arr.size:
        aid.write(arr, mtype=h5t.py_create(dt))


# -- region references ---------------------------------------------------------------------------

SELECT_TYPES = {h5s.SEL_NONE: "H5S_SEL_NONE", h5s.SEL_POINTS: "H5S_SEL_POINTS", h5s.SEL_HYPERSLABS: "H5S_SEL_HYPERSLABS", h5s.SEL_ALL: "H5S_SEL_ALL"}


def region_blob(target_id: str, space: Any) -> bytes:
    """The wire blob of a region reference to ``target_id`` selecting what ``space`` selects."""
    kind = space.get_select_type()
    doc: dict[str, Any] = {"id": target_id, "select_type": SELECT_TYPES[kind]}
    if kind == h5s.SEL_POINTS:
        doc["selection"] = space.get_select_elem_pointlist().tolist()
    elif kind == h5s.SEL_HYPERSLABS:
        if space.is_regular_hyperslab():
            start, stride, count, block = space.get_regular_hyperslab()
            doc.update(start=list(start), stride=list(stride), count=list(count), block=list(block))
        blocks = space.get_select_hyper_blocklist()
        doc["selection"] = [[b[0].tolist(), b[1].tolist()] for b in blocks]
    return orjson.dumps(doc)


MAX_REGION_POINTS = 1 << 22
"""Points a region given as h5json's index lists may select (their outer product, made point by
point): any client can store such a region, and two lists of a few thousand indices made
millions of points, exhausting memory (docs/fidelity.md, "Region references")."""


def select_region(space: Any, blob: dict[str, Any]) -> None:
    """Make ``space`` (the target dataset's dataspace) select what a region blob describes: one
    h5lake load made, or h5json's object as h5pyd sends it (docs/fidelity.md), which may have no
    selection (the whole dataset) or a ``selection_dict``. ValueError for a blob that does not
    describe a selection (any client may store any blob)."""
    try:
        _select_region(space, blob)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"a region reference that is not a selection ({type(exc).__name__}: {str(exc)[:80]})") from None


def _select_region(space: Any, blob: dict[str, Any]) -> None:
    kind = blob.get("select_type")
    if "selection_dict" in blob:
        _select_h5json_dict(space, blob["selection_dict"])
    elif kind is None or kind == "H5S_SEL_ALL":
        space.select_all()
    elif kind == "H5S_SEL_NONE":
        space.select_none()
    elif kind == "H5S_SEL_POINTS":
        space.select_elements(np.asarray(blob["selection"], dtype=np.uint64).reshape(len(blob["selection"]), -1))
    elif kind == "H5S_SEL_HYPERSLABS" and "start" in blob:
        space.select_hyperslab(tuple(blob["start"]), tuple(blob["count"]), tuple(blob["stride"]), tuple(blob["block"]))
    elif kind == "H5S_SEL_HYPERSLABS":
        space.select_none()
        for lo, hi in blob["selection"]:
            size = tuple(h - l + 1 for l, h in zip(lo, hi, strict=True))
            if min(size) > 0:  # h5json writes an empty slice as a block ending before its start
                space.select_hyperslab(tuple(lo), (1,) * len(lo), None, size, op=h5s.SELECT_OR)
    else:
        raise ValueError(f"unknown region selection {kind!r}")


def _select_h5json_dict(space: Any, d: dict[str, Any]) -> None:
    """h5json's ``Selection.to_dict()``, which h5pyd sends for a selection its region form cannot
    hold (a stepped slice, a slice beside an index list): each dimension a slice, an int or a list;
    the selection is their outer product, slices clipped to the extent as numpy clips them."""
    kind = d.get("select_type")
    if kind == _H5JSON_ALL:
        space.select_all()
        return
    if kind == _H5JSON_NONE:
        space.select_none()
        return
    if kind == _H5JSON_POINTS:  # paired coordinates: the n-th of every list, an int for all
        lists = [s["values"] for s in d["slices"] if s["type"] == "list"]
        n = len(lists[0]) if lists else 1
        if any(s["type"] == "slice" for s in d["slices"]) or any(len(v) != n for v in lists):
            raise ValueError("a point selection of h5json's with slices or lists of different lengths")
        if not n:
            space.select_none()
            return
        points = [[s["values"][i] if s["type"] == "list" else s["value"] for s in d["slices"]] for i in range(n)]
        space.select_elements(np.array(points, dtype=np.uint64).reshape(n, len(d["slices"])))
        return
    dims = space.shape
    axes: list[range | list[int]] = []  # a range, not its list: a slice may span a huge extent
    for s, extent in zip(d["slices"], dims, strict=True):
        if s["type"] == "slice":
            axes.append(range(s["start"], min(s["stop"], extent), s["step"]))
        elif s["type"] == "int":
            axes.append([s["value"]])
        else:
            axes.append(list(s["values"]))
    if not all(axes):
        space.select_none()
    elif all(s["type"] != "list" for s in d["slices"]):
        start = tuple(a[0] for a in axes)
        stride = tuple(a[1] - a[0] if len(a) > 1 else 1 for a in axes)
        space.select_hyperslab(start, tuple(len(a) for a in axes), stride)
    else:
        if math.prod(len(a) for a in axes) > MAX_REGION_POINTS:
            raise ValueError(f"a region of index lists selecting more than {MAX_REGION_POINTS} points")
        product = np.array(list(itertools.product(*axes)), dtype=np.uint64)
        space.select_elements(product.reshape(len(product), len(axes)))


def decode_region_blob(value: bytes) -> dict[str, Any]:
    """A region blob as the dict :func:`select_region` takes: h5lake's (JSON), or the binary
    form h5pyd 1.0 writes to datasets (h5json's ``RegionReference.tobytes``), made the object
    h5pyd would send for it in JSON (``{"id", "selection_dict"}``). ValueError for anything else."""
    if value[:4] == _HRRF:
        return _decode_h5json_blob(value)
    doc = orjson.loads(value)
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
        raise ValueError("not an h5lake region reference")  # noqa: TRY004 - the callers' "not a region blob"
    return doc


# h5json's binary forms (h5json 2.0, as h5pyd 1.0 writes them): a region reference is b"HRRF",
# a version byte (1), the dataset id (u16 length, ASCII), its selection (u32 length, bytes) and
# b"\xff"; a selection is b"HSEL", version (1), class (0: simple), select_type, an integer width
# code (u16, u32, u64), the rank (u16), the shape, a fields flag (and names), then per dimension
# a slice (0: start, stop, step), a list (1: u32 count, values) or an int (2: value).
_HRRF, _HSEL = b"HRRF", b"HSEL"
_H5JSON_NONE, _H5JSON_POINTS, _H5JSON_ALL = 0, 1, 3
_WIDTHS = {0: "<u2", 1: "<u4", 2: "<u8"}


def _decode_h5json_blob(value: bytes) -> dict[str, Any]:
    try:
        if value[4] != 1:
            raise ValueError(f"h5json region reference version {value[4]}")
        (id_len,) = struct.unpack_from("<H", value, 5)
        target = value[7:7 + id_len].decode("ascii")
        (sel_len,) = struct.unpack_from("<I", value, 7 + id_len)
        sel = value[11 + id_len:11 + id_len + sel_len]
        doc: dict[str, Any] = {"id": target if target.startswith("datasets/") else f"datasets/{target}"}
        if sel:
            doc["selection_dict"] = _decode_h5json_selection(sel)
        return doc
    except (struct.error, IndexError, UnicodeDecodeError, KeyError) as exc:
        raise ValueError(f"a damaged h5json region reference ({exc})") from None


def _decode_h5json_selection(sel: bytes) -> dict[str, Any]:
    if sel[:4] != _HSEL:
        raise ValueError("not an h5json selection")
    version, cls, kind, width, rank = struct.unpack_from("<BBBBH", sel, 4)
    if version != 1 or cls != 0:
        raise ValueError(f"h5json selection version {version} class {cls}")
    dt = np.dtype(_WIDTHS[width])
    at = 10
    shape = np.frombuffer(sel, dt, rank, at).tolist()
    at += dt.itemsize * rank
    if sel[at]:  # field names (compound members): a region is of whole elements
        (count,) = struct.unpack_from("<H", sel, at + 1)
        at += 3
        for _ in range(count):
            at += 2 + struct.unpack_from("<H", sel, at)[0]
    else:
        at += 1
    out: dict[str, Any] = {"shape": shape, "select_type": kind}
    if kind == _H5JSON_ALL:
        return out
    slices = []
    for _ in range(rank):
        tag = sel[at]
        at += 1
        if tag == 0:
            start, stop, step = np.frombuffer(sel, dt, 3, at).tolist()
            at += 3 * dt.itemsize
            slices.append({"type": "slice", "start": start, "stop": stop, "step": step})
        elif tag == 1:
            (n,) = struct.unpack_from("<I", sel, at)
            slices.append({"type": "list", "values": np.frombuffer(sel, dt, n, at + 4).tolist()})
            at += 4 + n * dt.itemsize
        elif tag == 2:
            slices.append({"type": "int", "value": int(np.frombuffer(sel, dt, 1, at)[0])})
            at += dt.itemsize
        else:
            raise ValueError(f"h5json selection dimension kind {tag}")
    out["slices"] = slices
    return out


def null_reference(region: bool) -> Any:
    return h5r.RegionReference() if region else h5r.Reference()


Resolver = Callable[[str], Any]
