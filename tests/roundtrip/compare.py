"""Compare two HDF5 files object by object; every difference is reported as one line.

Independent of the code under test: it reads both files with h5py and asks HDF5 itself
(``H5Tequal``, property-list getters, raw reads with each object's own type) rather than going
through h5lake's type JSON. Objects are matched by their first path in a breadth-first walk that
visits links in name order, so hard-link topology (two names, one object) is compared too.

What is compared: for every group, its links (kind, target, name character set, creation order
where tracked) and creation properties; for every dataset, its type (and which committed type
it shares), dataspace, creation properties (layout, chunk shape, external files, filters with
flags and client data, fill value and whether it is user-defined, fill and allocation time,
attribute creation order and storage thresholds, time tracking) and values; for every committed
datatype, its type; for every object, its comment and its attributes (name character set,
order where tracked, type, dataspace, value). Values are compared NaN-aware; references by the
path of what they point at, region references by their selection too.

``python -m tests.roundtrip.compare A.h5 B.h5`` prints the differences.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np
from h5py import h5, h5a, h5d, h5l, h5o, h5p, h5r, h5s, h5t

from h5lake.client import h5native

KINDS = {h5o.TYPE_GROUP: "group", h5o.TYPE_DATASET: "dataset", h5o.TYPE_NAMED_DATATYPE: "datatype"}


@dataclass
class Walk:
    """One file's objects: canonical path by address, and the open object by canonical path."""

    file: h5py.File
    path_of: dict[int, str] = field(default_factory=dict)
    objects: dict[str, Any] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def canonical(self, oid: Any, seen_from: str = "?") -> str:
        """The object's path; an object with no name (a committed type that datasets share, say)
        is named after where the walk first met it, the same place in both files."""
        addr = h5o.get_info(oid).addr
        if addr not in self.path_of:
            self.path_of[addr] = f"<unnamed, first seen from {seen_from}>"
        return self.path_of[addr]


def walk(f: h5py.File) -> Walk:
    w = Walk(f)
    root = h5o.open(f.id, b"/")
    w.path_of[h5o.get_info(root).addr] = "/"
    w.objects["/"] = root
    w.kinds["/"] = "group"
    queue = ["/"]
    while queue:
        path = queue.pop(0)
        gid = w.objects[path]
        for name in sorted(_link_names(gid)):
            if gid.links.get_info(name).type != h5l.TYPE_HARD:
                continue
            oid = h5o.open(gid, name)
            info = h5o.get_info(oid)
            if info.addr in w.path_of:
                continue
            child = f"{path.rstrip('/')}/{name.decode('utf-8', 'surrogateescape')}"
            w.path_of[info.addr] = child
            w.objects[child] = oid
            w.kinds[child] = KINDS.get(info.type, str(info.type))
            if info.type == h5o.TYPE_GROUP:
                queue.append(child)
    return w


def _link_names(gid: Any) -> list[bytes]:
    names: list[bytes] = []
    gid.links.iterate(names.append, idx_type=h5.INDEX_NAME)
    return names


def compare_files(path_a: str, path_b: str) -> list[str]:
    """Every difference between two files, as ``path: what (a vs b)`` lines."""
    import hdf5plugin  # noqa: F401

    with h5py.File(path_a, "r") as fa, h5py.File(path_b, "r") as fb:
        diffs = Comparer(walk(fa), walk(fb)).run()
        sizes = (fa.userblock_size, fb.userblock_size)
    blocks = [_user_block(p, n) for p, n in zip((path_a, path_b), sizes, strict=True)]
    if blocks[0] != blocks[1]:
        diffs.insert(0, f"/: user block differs ({_short(blocks[0])} vs {_short(blocks[1])})")
    return diffs


def _user_block(path: str, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


class Comparer:
    def __init__(self, a: Walk, b: Walk) -> None:
        self.a, self.b = a, b
        self.diffs: list[str] = []

    def diff(self, where: str, what: str, va: Any, vb: Any) -> None:
        self.diffs.append(f"{where}: {what} differs ({_short(va)} vs {_short(vb)})")

    def same(self, where: str, what: str, va: Any, vb: Any) -> None:
        if va != vb:
            self.diff(where, what, va, vb)

    def run(self) -> list[str]:
        pa, pb = set(self.a.objects), set(self.b.objects)
        for p in sorted(pa - pb):
            self.diffs.append(f"{p}: only in the first file")
        for p in sorted(pb - pa):
            self.diffs.append(f"{p}: only in the second file")
        for path in sorted(pa & pb):
            ka, kb = self.a.kinds[path], self.b.kinds[path]
            if ka != kb:
                self.diff(path, "object kind", ka, kb)
                continue
            oa, ob = self.a.objects[path], self.b.objects[path]
            if ka == "group":
                self.group(path, oa, ob)
            elif ka == "dataset":
                self.dataset(path, oa, ob)
            else:
                self.types(path, "type", oa, ob)
                self.ocpl(path, oa.get_create_plist(), ob.get_create_plist())
            self.same(path, "comment", h5native.comment(oa), h5native.comment(ob))
            self.attributes(path, oa, ob)
        return self.diffs

    # -- groups --

    def group(self, path: str, ga: Any, gb: Any) -> None:
        ca, cb = ga.get_create_plist(), gb.get_create_plist()
        self.same(path, "link creation order flags", ca.get_link_creation_order(), cb.get_link_creation_order())
        self.same(path, "link phase change", h5native.link_phase_change(ca), h5native.link_phase_change(cb))
        self.ocpl(path, ca, cb)
        la, lb = self.links(ga, self.a), self.links(gb, self.b)
        if list(la) != list(lb):
            what = "link order" if sorted(la) == sorted(lb) else "link names"
            self.diff(path, what, list(la), list(lb))
        for name in sorted(set(la) & set(lb)):
            self.same(f"{path.rstrip('/')}/{name}", "link", la[name], lb[name])

    def links(self, gid: Any, w: Walk) -> dict[str, tuple[Any, ...]]:
        """Links in creation order when tracked, else name order."""
        names = _link_names(gid)
        infos = [(n, gid.links.get_info(n)) for n in names]
        if gid.get_create_plist().get_link_creation_order() & h5p.CRT_ORDER_TRACKED:
            infos.sort(key=lambda item: item[1].corder)
        out: dict[str, tuple[Any, ...]] = {}
        for raw, info in infos:
            name = raw.decode("utf-8", "surrogateescape")
            if info.type == h5l.TYPE_HARD:
                out[name] = ("hard", info.cset, w.canonical(h5o.open(gid, raw)))
            elif info.type in (h5l.TYPE_SOFT, h5l.TYPE_EXTERNAL):
                out[name] = ("soft" if info.type == h5l.TYPE_SOFT else "external", info.cset, gid.links.get_val(raw))
            else:
                h5native.ensure_link_class(int(info.type))
                out[name] = ("user-defined", int(info.type), info.cset, h5native.ud_link_value(gid, raw))
        return out

    def ocpl(self, path: str, ca: Any, cb: Any) -> None:
        self.same(path, "attribute creation order flags", ca.get_attr_creation_order(), cb.get_attr_creation_order())
        self.same(path, "attribute phase change", ca.get_attr_phase_change(), cb.get_attr_phase_change())
        self.same(path, "time tracking", ca.get_obj_track_times(), cb.get_obj_track_times())

    # -- types and spaces --

    def types(self, where: str, what: str, ta: Any, tb: Any) -> None:
        if not ta.equal(tb):
            self.diff(where, what, _describe_type(ta), _describe_type(tb))
        ca, cb = ta.committed(), tb.committed()
        if ca != cb:
            self.diff(where, f"{what} committed", ca, cb)
        elif ca:
            self.same(where, f"{what} shared with", self.a.canonical(ta, where), self.b.canonical(tb, where))

    def spaces(self, where: str, sa: Any, sb: Any) -> None:
        self.same(where, "dataspace class", sa.get_simple_extent_type(), sb.get_simple_extent_type())
        if sa.get_simple_extent_type() == h5s.SIMPLE and sb.get_simple_extent_type() == h5s.SIMPLE:
            self.same(where, "dims", sa.shape, sb.shape)
            self.same(where, "maxdims", sa.get_simple_extent_dims(True), sb.get_simple_extent_dims(True))

    # -- datasets --

    def dataset(self, path: str, da: Any, db: Any) -> None:
        ta, tb = da.get_type(), db.get_type()
        self.types(path, "type", ta, tb)
        self.spaces(path, da.get_space(), db.get_space())
        self.dcpl(path, da, db)
        if ta.equal(tb) and da.get_space().shape == db.get_space().shape:
            va, vb = self.read(da, ta, self.a), self.read(db, tb, self.b)
            if not _equal(va, vb):
                self.diff(path, "values", va, vb)

    def dcpl(self, path: str, da: Any, db: Any) -> None:
        ca, cb = da.get_create_plist(), db.get_create_plist()
        self.same(path, "layout", ca.get_layout(), cb.get_layout())
        if ca.get_layout() == cb.get_layout() == h5d.CHUNKED:
            self.same(path, "chunk shape", ca.get_chunk(), cb.get_chunk())
        self.same(path, "external files", _external(ca), _external(cb))
        fa = [ca.get_filter(i)[:3] for i in range(ca.get_nfilters())]
        fb = [cb.get_filter(i)[:3] for i in range(cb.get_nfilters())]
        self.same(path, "filters", fa, fb)
        self.same(path, "fill value defined", ca.fill_value_defined(), cb.fill_value_defined())
        ta = da.get_type()
        if ca.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED and _fixed(ta):
            fill_a, fill_b = h5native.fill_value(ca, ta), h5native.fill_value(cb, db.get_type())
            if fill_a != fill_b and not _equal(_as_values(fill_a, ta), _as_values(fill_b, db.get_type())):
                self.diff(path, "fill value", fill_a, fill_b)
        self.same(path, "fill time", ca.get_fill_time(), cb.get_fill_time())
        self.same(path, "allocation time", ca.get_alloc_time(), cb.get_alloc_time())
        self.ocpl(path, ca, cb)

    def read(self, dsid: Any, tid: Any, w: Walk) -> Any:
        space = dsid.get_space()
        if space.get_simple_extent_type() == h5s.NULL:
            return None
        shape = tuple(space.shape) if space.get_simple_extent_type() == h5s.SIMPLE else ()
        folder = os.path.dirname(os.path.abspath(w.file.filename))
        with _working_directory(folder if dsid.get_create_plist().get_external_count() else None):
            if _fixed(tid):
                buf = np.empty(int(np.prod(shape)) * tid.get_size(), dtype=np.uint8)
                if buf.size:
                    dsid.read(h5s.ALL, h5s.ALL, buf, mtype=tid)
                return _as_values(buf.tobytes(), tid, shape)
            dt = _native(tid.dtype)
            arr = np.empty(shape, dtype=dt)
            if arr.size:
                dsid.read(h5s.ALL, h5s.ALL, arr, mtype=h5t.py_create(dt))
        return self.resolve(arr, w, dsid)

    def resolve(self, value: Any, w: Walk, context: Any) -> Any:
        """Objects read by h5py, with references replaced by what they point at."""
        if isinstance(value, h5r.RegionReference):
            if not value:
                return ("region", None)
            target = _dereference(value, w)
            if target is None:
                return ("region", DANGLING)
            space = h5r.get_region(value, target)
            return ("region", w.canonical(target), _selection(space))
        if isinstance(value, h5r.Reference):
            if not value:
                return ("ref", None)
            target = _dereference(value, w)
            return ("ref", DANGLING if target is None else w.canonical(target))
        if isinstance(value, np.ndarray):
            if value.dtype.names:
                return [tuple(self.resolve(v[n], w, context) for n in value.dtype.names) for v in value.reshape(-1)] + [value.shape]
            if value.dtype.kind == "O":
                return [self.resolve(v, w, context) for v in value.reshape(-1)] + [value.shape]
            return value
        if isinstance(value, np.void) and value.dtype.names:
            return tuple(self.resolve(value[n], w, context) for n in value.dtype.names)
        return value

    # -- attributes --

    def attributes(self, path: str, oa: Any, ob: Any) -> None:
        na, nb = _attr_names(oa), _attr_names(ob)
        if na != nb:
            what = "attribute order" if sorted(na) == sorted(nb) else "attribute names"
            self.diff(path, what, na, nb)
        for name in sorted(set(na) & set(nb)):
            where = f"{path}@{name.decode('utf-8', 'surrogateescape')}"
            self.same(where, "name character set", h5a.get_info(oa, name).cset, h5a.get_info(ob, name).cset)
            aa, ab = h5a.open(oa, name), h5a.open(ob, name)
            ta, tb = aa.get_type(), ab.get_type()
            self.types(where, "type", ta, tb)
            self.spaces(where, aa.get_space(), ab.get_space())
            if ta.equal(tb) and aa.get_space().shape == ab.get_space().shape:
                va, vb = self.read_attr(aa, ta, self.a), self.read_attr(ab, tb, self.b)
                if not _equal(va, vb):
                    self.diff(where, "value", va, vb)

    def read_attr(self, aid: Any, tid: Any, w: Walk) -> Any:
        space = aid.get_space()
        if space.get_simple_extent_type() == h5s.NULL:
            return None
        shape = tuple(space.shape) if space.get_simple_extent_type() == h5s.SIMPLE else ()
        if _fixed(tid):
            buf = np.empty(int(np.prod(shape)) * tid.get_size(), dtype=np.uint8)
            if buf.size:
                aid.read(buf, mtype=tid)
            return _as_values(buf.tobytes(), tid, shape)
        dt = _native(tid.dtype)
        arr = np.empty(shape, dtype=dt)
        if arr.size:
            aid.read(arr, mtype=h5t.py_create(dt))
        return self.resolve(arr, w, aid)


DANGLING = "<an object that no longer exists>"


def _dereference(ref: Any, w: Walk) -> Any:
    """What a reference points at; None for a dangling one (its object was deleted)."""
    try:
        return h5r.dereference(ref, w.file.id)
    except (KeyError, ValueError, RuntimeError, OSError):
        return None


def _attr_names(oid: Any) -> list[bytes]:
    names: list[bytes] = []
    h5a.iterate(oid, names.append, index_type=h5.INDEX_NAME)
    infos = [(n, h5a.get_info(oid, n)) for n in names]
    if oid.get_create_plist().get_attr_creation_order() & h5p.CRT_ORDER_TRACKED:
        infos.sort(key=lambda item: item[1].corder)
    return [n for n, _ in infos]


@contextmanager
def _working_directory(folder: str | None) -> Iterator[None]:
    """External raw files are found relative to the working directory: use the file's folder."""
    if folder is None:
        yield
        return
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def _native(dt: np.dtype) -> np.dtype:
    """``dt`` with numbers in native byte order, so HDF5 swaps them (h5py 3.16 mislabels the
    elements of a vlen of big-endian numbers instead)."""
    meta = dt.metadata or {}
    if dt.names:
        return np.dtype([(n, _native(dt.fields[n][0])) for n in dt.names])
    if dt.subdtype is not None:
        return np.dtype((_native(dt.subdtype[0]), dt.subdtype[1]))
    if "vlen" in meta and isinstance(meta["vlen"], np.dtype):
        return h5py.vlen_dtype(_native(meta["vlen"]))
    if "enum" in meta:
        return h5py.enum_dtype(meta["enum"], basetype=dt.newbyteorder("="))
    if dt.kind in "iuf":
        return dt.newbyteorder("=")
    return dt


def _external(plist: Any) -> list[tuple[Any, ...]]:
    return [tuple(plist.get_external(i)) for i in range(plist.get_external_count())]


def _fixed(tid: Any) -> bool:
    """No variable-length part and no reference anywhere in the type."""
    cls = tid.get_class()
    if cls in (h5t.VLEN, h5t.REFERENCE):
        return False
    if cls == h5t.STRING:
        return not tid.is_variable_str()
    if cls == h5t.ARRAY:
        return _fixed(tid.get_super())
    if cls == h5t.COMPOUND:
        return all(_fixed(tid.get_member_type(i)) for i in range(tid.get_nmembers()))
    return True


def _as_values(raw: bytes, tid: Any, shape: tuple[int, ...] = ()) -> Any:
    """Raw bytes as numbers where the type holds floats (so NaNs compare equal), else bytes."""
    if not _has_float(tid):
        return raw
    try:
        dt = tid.dtype
    except (TypeError, ValueError):  # no numpy type for it (e.g. IEEE binary128): compare bytes
        return raw
    if dt.itemsize != tid.get_size():
        return raw
    return np.frombuffer(raw, dtype=dt)


def _has_float(tid: Any) -> bool:
    cls = tid.get_class()
    if cls == h5t.FLOAT:
        return True
    if cls == h5t.ARRAY:
        return _has_float(tid.get_super())
    if cls == h5t.COMPOUND:
        return any(_has_float(tid.get_member_type(i)) for i in range(tid.get_nmembers()))
    return False


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.names:
            return all(_equal(a[n], b[n]) for n in a.dtype.names)
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        if a.dtype.kind == "O":
            return all(_equal(x, y) for x, y in zip(a.reshape(-1), b.reshape(-1), strict=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def _selection(space: Any) -> tuple[Any, ...]:
    kind = space.get_select_type()
    if kind == h5s.SEL_POINTS:
        return ("points", space.get_select_elem_pointlist().tolist())
    if kind == h5s.SEL_HYPERSLABS:
        regular = space.get_regular_hyperslab() if space.is_regular_hyperslab() else None
        return ("hyperslabs", space.get_select_hyper_blocklist().tolist(), regular)
    return ("all" if kind == h5s.SEL_ALL else "none",)


def _describe_type(tid: Any) -> str:
    try:
        from h5lake.client.h5types import type_json

        return str(type_json(tid))
    except Exception:  # noqa: BLE001 - a description only
        return f"class {tid.get_class()} size {tid.get_size()}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def main(argv: list[str]) -> int:
    diffs = compare_files(argv[0], argv[1])
    for line in diffs:
        print(line)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

