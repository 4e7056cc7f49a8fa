"""The values half of ``h5lake export``'s `exportwriter.Writer`: dataset values, written as the
datasets are made (small ones the listing held) or, for the others, read from the server after
each page of objects is written, from a thread pool: chunks as stored (`ValueWriting.direct_chunks`)
or binary values, one target chunk or block per GET; values holding references once every
object is made."""

from __future__ import annotations

import base64
import itertools
import math
import sys
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import orjson
from h5py import h5d, h5s
from tqdm import tqdm

from h5lake.client import h5values
from h5lake.client.common import MIB, ToolError
from h5lake.client.exportfetch import bare_id
from h5lake.client.rest import RestClient, RestError
from h5lake.model.fromjson import EXACT_FILL, fill_value_array, json_to_array
from h5lake.model.layout import guess_chunk_shape
from h5lake.model.stored import Doc
from h5lake.model.typecheck import validate_type
from h5lake.model.types import TypeJson, is_variable, reduced_precision, wire_dtype
from h5lake.model.values import array_to_bytes

BLOCK_BYTES = 8 * MIB
DIRECT_FILTERS = frozenset({1, 2, 3, 32001, 32015})
"""Filters whose chunks the Zarr bridge serves as stored: deflate, shuffle, fletcher32, blosc, zstd."""
DIRECT_CHUNK_BYTES = 64 * 1024
"""Chunks at least this large (unfiltered) are copied as stored, one GET each."""


@dataclass(frozen=True, slots=True)
class Stored:
    """A chunk copied as stored: the Zarr array's URL path, the chunk's index and first element."""

    base: str
    index: tuple[int, ...]
    offset: tuple[int, ...]


TYPES_KEPT = 4096
_types: dict[bytes, TypeJson] = {}


def type_of(t: Any) -> TypeJson:
    """A type as a server returned it, normalized (a committed type keeps its ``id``); the
    forms of the last `TYPES_KEPT` distinct types are remembered (callers do not change them)."""
    key = orjson.dumps(t)
    found = _types.get(key)
    if found is not None:
        return found
    out = validate_type(t)
    if isinstance(t, dict) and isinstance(t.get("id"), str):
        out["id"] = bare_id(t["id"])
    if len(_types) >= TYPES_KEPT:
        _types.clear()
    _types[key] = out
    return out


def extendible(layout: Doc, shape: Doc, item_size: int, where: str, notes: list[str]) -> Doc:
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


def may_skip(t: TypeJson, props: Doc) -> bool:
    """Whether a block holding only the fill value may be left unwritten: not when the fill
    is never written (the storage would hold garbage), nor for a variable-length type with
    a fill value (HDF5 cannot read such an unallocated chunk from a read-only file), nor when
    the fill value is undefined: HDF5 refuses to read a dataset with no storage and no fill
    value ("dataset doesn't exist, no data can be read")."""
    if props.get("fillTime") == "H5D_FILL_TIME_NEVER" or props.get("fillValueUndefined"):
        return False
    return not (is_variable(t) and props.get("fillValue") is not None)


def fill_wire(t: TypeJson, props: Doc) -> bytes:
    try:
        if props.get(EXACT_FILL) is not None:
            return base64.b64decode(props[EXACT_FILL])
        return array_to_bytes(fill_value_array(t, props.get("fillValue")), t)
    except Exception:  # noqa: BLE001 - an odd fill value only disables the shortcut
        return b"\x00\x00\x00\x00" if is_variable(t) else b"\x00"


def all_fill(data: bytes, t: TypeJson, props: Doc) -> bool:
    fill = fill_wire(t, props)
    return len(data) % len(fill) == 0 and data == fill * (len(data) // len(fill))


def whole(doc: Doc) -> Any:
    shape = doc["shape"]
    if shape.get("class") == "H5S_SCALAR":
        return None
    return tuple(slice(0, int(d)) for d in shape["dims"])


def listed_value(doc: Doc) -> bytes | None:
    """The value the listing held (``value_base64``), None when it is all fill (left unwritten)."""
    data = base64.b64decode(doc["value_base64"])
    t = type_of(doc["type"])
    props = doc.get("creationProperties") or {}
    if may_skip(t, props) and all_fill(data, t, props):
        return None
    return data


def boxes(doc: Doc) -> Iterator[tuple[Any, int]]:
    """The boxes of a dataset's value read in one GET each, with their bytes (an estimate for
    variable-length types)."""
    shape = doc["shape"]
    cls = shape.get("class", "H5S_SIMPLE")
    t = type_of(doc["type"])
    itemsize = 64 if is_variable(t) else max(1, wire_dtype(t).itemsize)
    if cls == "H5S_NULL":
        return
    if cls == "H5S_SCALAR":
        yield None, itemsize
        return
    dims = tuple(shape["dims"])
    if math.prod(dims) == 0:
        return
    layout = (doc.get("creationProperties") or {}).get("layout") or {}
    chunk = layout.get("dims") if layout.get("class") == "H5D_CHUNKED" else None
    if not chunk:
        yield from h5values.split_box(tuple(slice(0, d) for d in dims), itemsize, BLOCK_BYTES)
        return
    for box in h5values.chunk_groups(dims, tuple(chunk), itemsize, BLOCK_BYTES):
        yield from h5values.split_box(box, itemsize, BLOCK_BYTES)


class ValueWriting:
    """Dataset values: `Writer` holds, for each dataset made whose value is still to be read
    (``values_due``), only its type, shape and creation properties; those are dropped once
    written."""

    client: RestClient
    workers: int
    quiet: bool
    paths: dict[str, str]
    stats: Any
    values_due: list[tuple[str, Doc]]
    undefined_fill: list[str]
    bar: tqdm | None
    value_seconds: float  # spent reading and writing values read alone

    def open(self, obj_id: str) -> Any:
        raise NotImplementedError

    def value_bar(self, nbytes: int) -> None:
        """Count ``nbytes`` more to read in the progress bar (made on the first value to read)."""
        if self.bar is None:
            self.bar = tqdm(total=0, desc="values", unit="B", unit_scale=True, unit_divisor=1024, leave=False,
                            disable=self.quiet or not sys.stderr.isatty(), file=sys.stderr)
        self.bar.total += nbytes
        self.bar.refresh()

    def write_values(self, pool: ThreadPoolExecutor, refs: Any) -> None:
        """Read and write the values of the datasets in ``values_due``, concurrently (at most two
        GETs a worker in flight), then forget them."""
        due, self.values_due = self.values_due, []
        if not due:
            return
        started = time.monotonic()
        try:
            self._write_values(pool, refs, due)
        finally:
            self.value_seconds += time.monotonic() - started

    def _write_values(self, pool: ThreadPoolExecutor, refs: Any, due: list[tuple[str, Doc]]) -> None:
        docs = dict(due)
        work = ((oid, sel) for oid, doc in due for sel in self._pieces(oid, doc))
        pending: dict[Future[bytes | None], tuple[str, Any]] = {}
        while True:
            while len(pending) < 2 * self.workers:
                item = next(work, None)
                if item is None:
                    break
                oid, sel = item
                fetch = self._fetch_chunk if isinstance(sel, Stored) else self._fetch
                pending[pool.submit(fetch, oid, docs[oid], sel)] = (oid, sel)
            if not pending:
                break
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                oid, sel = pending.pop(fut)
                data = fut.result()
                if data is not None and isinstance(sel, Stored):
                    self._write_chunk(oid, sel, data)
                elif data is not None:
                    self.write_value(oid, docs[oid], sel, data, refs)
                nbytes = len(data) if data else 0
                self.stats.value_bytes += nbytes
                if self.bar is not None:
                    self.bar.update(nbytes)

    def _pieces(self, oid: str, doc: Doc) -> Iterator[Any]:
        """What a dataset's value is read in: its chunks as stored (`direct_chunks`), else boxes."""
        chunks = self.direct_chunks(oid, doc)
        if chunks is not None:
            yield from chunks
            return
        for sel, _ in boxes(doc):
            yield sel

    def direct_chunks(self, oid: str, doc: Doc) -> Iterator[Stored] | None:
        """The chunks of a dataset whose stored chunks are the file's own (the same chunk shape,
        and filters the server serves as stored: `DIRECT_FILTERS`, or none), each read as
        stored from the Zarr bridge (docs/zarr.md, "Codecs: chunks as stored") and written with
        ``write_direct_chunk``: nothing decoded or encoded again. None when the dataset is not
        such (or the server has no Zarr bridge): its values are read decoded."""
        t = type_of(doc["type"])
        props = doc.get("creationProperties") or {}
        layout, stored = props.get("layout") or {}, doc.get("layout") or {}
        shape = doc["shape"]
        chunk = [int(c) for c in layout.get("dims") or ()]
        if (layout.get("class") != "H5D_CHUNKED" or not chunk or stored.get("origin") or shape.get("class", "H5S_SIMPLE") != "H5S_SIMPLE"
                or [int(c) for c in stored.get("dims") or ()] != chunk or not h5values.is_raw(t) or reduced_precision(t)
                or props.get("fillValueUndefined") or "externalStorage" in layout or self.client.settings.bucket):
            return None
        if math.prod(chunk) * wire_dtype(t).itemsize < DIRECT_CHUNK_BYTES:
            return None  # small chunks: fewer requests by blocks of many
        filters = props.get("filters") or []
        if any(not isinstance(f, dict) or f.get("id") not in DIRECT_FILTERS for f in filters):
            return None
        path = self.paths.get(oid)
        if path is None or path == "/":
            return None
        base = "/zarr" + "/".join(quote(p, safe="") for p in (self.client.domain + path).split("/"))
        try:
            meta = self.client.get_json(base + "/zarr.json")
        except RestError:
            return None
        grid = ((meta.get("chunk_grid") or {}).get("configuration") or {}).get("chunk_shape")
        codecs = meta.get("codecs") or []
        if grid != chunk or (filters and len(codecs) < 2):  # (bytes alone: decoded on the server)
            return None
        counts = [-(-int(d) // c) for d, c in zip(shape["dims"], chunk, strict=True)]
        return (Stored(base, index, tuple(i * c for i, c in zip(index, chunk, strict=True)))
                for index in itertools.product(*(range(n) for n in counts)))

    def _fetch_chunk(self, oid: str, doc: Doc, chunk: Stored) -> bytes | None:
        key = "/".join(["c", *map(str, chunk.index)]) if chunk.index else "c"
        try:
            reply = self.client.request("GET", f"{chunk.base}/{key}", binary_reply=True, ok=(200, 404))
        except RestError as exc:
            raise ToolError(f"reading chunk {list(chunk.index)} of {self.paths.get(oid, oid)} failed: {exc.message}") from None
        return None if reply.status_code == 404 else reply.content  # (404: never written, reads as fill)

    def _write_chunk(self, oid: str, chunk: Stored, data: bytes) -> None:
        try:
            self.open(oid).write_direct_chunk(chunk.offset, data, 0)
        except (ValueError, RuntimeError, OSError, TypeError) as exc:
            raise ToolError(f"chunk {list(chunk.index)} of {self.paths.get(oid, oid)} cannot be written: {exc}") from None

    def check_readable(self) -> None:
        """Stop, naming the dataset, rather than leave one HDF5 cannot read: elements, no
        storage, no external files and no fill value ("dataset doesn't exist, no data can be
        read"). Values are written for such datasets (`may_skip`), so this is a guard."""
        for oid in self.undefined_fill:
            dsid = self.open(oid)
            space = dsid.get_space()
            if space.get_simple_extent_type() == h5s.NULL or space.get_simple_extent_npoints() == 0:
                continue
            dcpl = dsid.get_create_plist()
            if dsid.get_storage_size() == 0 and dcpl.get_external_count() == 0 and dcpl.fill_value_defined() == h5d.FILL_VALUE_UNDEFINED:
                raise ToolError(f"dataset {self.paths.get(oid, oid)} would have no values and no fill value, which HDF5 cannot read; it was not written")

    def _fetch(self, oid: str, doc: Doc, sel: Any) -> bytes | None:
        t = type_of(doc["type"])
        try:
            data = self.client.get_bytes(f"/datasets/{oid}/value", **h5values.select_text(sel))
        except RestError as exc:
            if exc.status not in (200, None) or "binary" not in exc.message:
                raise ToolError(f"reading values of {self.paths.get(oid, oid)} failed: {exc.message}") from None
            reply = self.client.get_json(f"/datasets/{oid}/value", **h5values.select_text(sel))
            shape = tuple(s.stop - s.start for s in sel) if sel is not None else tuple(doc["shape"].get("dims", ()))
            data = array_to_bytes(json_to_array(reply["value"], t, shape), t)
        props = doc.get("creationProperties") or {}
        if may_skip(t, props) and all_fill(data, t, props):
            return None  # leave it unwritten, as the source most likely had it: it reads the same
        return data

    def write_value(self, oid: str, doc: Doc, sel: Any, data: bytes, refs: Any, dsid: Any = None) -> None:
        t = type_of(doc["type"])
        dsid = dsid or self.open(oid)
        try:
            tid = dsid.get_type()
            parts = list(self._unfilled_chunks(doc, t, sel, data))
            if len(parts) == 1 and parts[0][0] == whole(doc) and h5values.is_raw(t) and not reduced_precision(t):
                # the whole value in one write (as write_dataset would, without its selections)
                dsid.write(h5s.ALL, h5s.ALL, np.frombuffer(h5values.wire_to_raw(data, t), dtype=np.uint8), mtype=tid)
                return
            for part, part_data in parts:
                h5values.write_dataset(dsid, tid, t, part, part_data, refs)
        except (ValueError, RuntimeError, OSError, TypeError) as exc:
            raise ToolError(f"values of {self.paths.get(oid, oid)} cannot be written: {exc}") from None

    def _unfilled_chunks(self, doc: Doc, t: TypeJson, sel: Any, data: bytes) -> Iterator[tuple[Any, bytes]]:
        """The block as one write, or, for a block of several chunks of a fixed-size type where
        some hold only the fill value, each other chunk alone: those stay unwritten (sparse)."""
        props = doc.get("creationProperties") or {}
        layout = props.get("layout") or {}
        chunk = tuple(layout.get("dims") or ()) if layout.get("class") == "H5D_CHUNKED" else ()
        if sel is None or not chunk or is_variable(t) or not may_skip(t, props):
            yield sel, data
            return
        parts = list(h5values.chunks_in(sel, chunk))
        if len(parts) == 1:
            yield sel, data
            return
        itemsize = wire_dtype(t).itemsize
        box = np.frombuffer(data, dtype=f"V{itemsize}").reshape(tuple(s.stop - s.start for s in sel))
        fill = np.frombuffer(fill_wire(t, props), dtype=f"V{itemsize}")[0]
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



def check_external(files: list[Doc], where: str, target_dir: Path) -> None:
    """Refuse to re-create a dataset's external raw files (``--keep-external``) other than as
    plain relative names not there yet, next to the exported file."""
    for item in files:
        name = Path(item["name"])
        if name.is_absolute() or ".." in name.parts:
            raise ToolError(f"dataset {where}: external file {item['name']!r} is not a plain relative name; export without --keep-external")
        if (target_dir / name).exists():
            raise ToolError(f"dataset {where}: external file {target_dir / name} already exists")
