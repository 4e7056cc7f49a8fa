"""Differential testing: the same random sequence of operations on an h5py file and on an h5pyd
file served by h5lake, every result and every exception compared.

A run (:func:`run`) draws, from one seed, a sequence of operations (:class:`Op`): each is a
function of a :class:`Side` (the file, and the library module to build special types and
``Empty`` with) whose parameters were drawn before either side runs it, so both sides do the
same thing. The result of each side is made comparable (:func:`canon`: arrays by dtype, shape
and values, NaNs equal, references by the name of the object they point to, links by kind and
target); an exception by its class. After the sequence the h5pyd file is closed and opened
again and both files are walked whole and compared (:func:`tree`), so what the server kept is
checked, not what the client holds.

h5pyd holds writes until a flush: the driver flushes after each changing operation (inside the
compared call) so a refusal by the server is charged to the operation that caused it.

``dev/diffdrive.py`` runs seeds against a server it starts; ``KNOWN`` names the differences
that are h5pyd's own (HSDS would show them too), so a run reports only what is left.
"""

from __future__ import annotations

import math
import random
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h5py
import h5pyd
import numpy as np

# --- making results comparable ------------------------------------------------------------


@dataclass
class Side:
    f: Any  # h5py.File or h5pyd.File
    lib: Any  # the h5py or h5pyd module

    @property
    def remote(self) -> bool:
        return self.lib is h5pyd


def dtype_key(dt: np.dtype) -> Any:
    """A dtype as both libraries should show it: numpy form plus HDF5 meaning (vlen, enum,
    reference, string encoding)."""
    md: dict[str, Any] = dict(dt.metadata or {})
    if dt.names is not None:
        return ("compound", tuple((n, dtype_key(dt[n])) for n in dt.names))
    if dt.subdtype is not None:
        return ("array", dt.subdtype[1], dtype_key(dt.subdtype[0]))
    if "vlen" in md:
        base = md["vlen"]
        if base in (str, bytes):
            return ("vstr", base.__name__)
        return ("vlen", dtype_key(np.dtype(base)))
    if "enum" in md:
        return ("enum", dt.str, tuple(sorted(md["enum"].items())))
    if "ref" in md:
        return ("ref", getattr(md["ref"], "__name__", str(md["ref"])))
    if md.get("h5py_encoding") == "utf-8":
        # h5py marks its fixed ASCII strings "ascii" too, h5pyd only UTF-8 ones
        return ("str", dt.str, md["h5py_encoding"])
    return dt.str


REF_TEXT = re.compile(rb"^((groups|datasets|datatypes)/)?[gdt]-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{6}-[0-9a-f]{6}$")


def canon(x: Any, f: Any) -> Any:
    """``x`` as plain, comparable Python values (``f`` resolves references: h5pyd 1.0 gives an
    object reference as the bytes of its id, which it dereferences as h5py does a Reference)."""
    if isinstance(x, bytes) and REF_TEXT.match(x):
        return ("ref", _deref(x, f))
    if isinstance(x, np.ndarray) and "ref" in (x.dtype.metadata or {}):
        return ("nd", dtype_key(x.dtype), x.shape, [("ref", None) if v in (b"", None) else canon(v, f)
                                                    for v in x.ravel().tolist()])
    if isinstance(x, np.ndarray):
        return ("nd", dtype_key(x.dtype), x.shape, [canon(v, f) for v in x.ravel().tolist()] if x.dtype.names is None
                and x.dtype != object else [canon(v, f) for v in _items(x)])
    if isinstance(x, np.void):
        return ("void", dtype_key(x.dtype), tuple(canon(x[n], f) for n in x.dtype.names) if x.dtype.names
                else x.tobytes())
    if isinstance(x, np.generic):
        return ("np", dtype_key(x.dtype), canon(x.item(), f))
    if isinstance(x, float):
        return "nan" if math.isnan(x) else x
    if isinstance(x, (list, tuple)):
        return [canon(v, f) for v in x]
    if isinstance(x, (h5py.RegionReference, h5pyd.RegionReference)):
        return ("ref", _deref_region(x, f))
    if isinstance(x, type):
        return ("class", x.__name__)
    if isinstance(x, (h5py.Reference, h5pyd.Reference)):
        return ("ref", _deref(x, f))
    if isinstance(x, (h5py.Empty, h5pyd.Empty)):
        return ("empty", dtype_key(np.dtype(x.dtype)))
    if isinstance(x, (h5py.Dataset, h5pyd.Dataset)):
        return ("dataset", x.name, x.shape, dtype_key(x.dtype))
    if isinstance(x, (h5py.Group, h5pyd.Group)):
        return ("group", x.name)
    if isinstance(x, (h5py.Datatype, h5pyd.Datatype)):
        return ("datatype", x.name, dtype_key(x.dtype))
    if isinstance(x, (h5py.SoftLink, h5pyd.SoftLink)):
        return ("soft", x.path)
    if isinstance(x, (h5py.ExternalLink, h5pyd.ExternalLink)):
        return ("external", x.path)
    if isinstance(x, (h5py.HardLink, h5pyd.HardLink)):
        return ("hard",)
    if isinstance(x, dict):
        return {k: canon(v, f) for k, v in x.items()}
    return x


def _items(x: np.ndarray) -> list[Any]:
    return [x[i] for i in np.ndindex(x.shape)]


def _deref(r: Any, f: Any) -> Any:
    if not r:
        return None
    try:
        name = f[r].name
        return ("unlinked",) if name is None else name
    except Exception as e:  # noqa: BLE001 - a dangling reference is a value too
        return ("dangling", type(e).__name__)


def _deref_region(r: Any, f: Any) -> Any:
    """A region reference as the name of its dataset and the values it selects (h5pyd 1.0 opens
    no region reference as an object: it is opened by the id it holds)."""
    if isinstance(r, h5py.RegionReference) and not r:
        return None
    if isinstance(r, h5pyd.RegionReference) and not r.id:
        return None
    try:
        d = f[r] if isinstance(r, h5py.RegionReference) else f[r.id]
        return (d.name, canon(d[r], f))
    except Exception as e:  # noqa: BLE001 - a dangling reference is a value too
        return ("dangling", type(e).__name__)


@dataclass
class Outcome:
    value: Any = None
    error: str | None = None
    detail: str = ""
    server: bool = False  # the exception came through h5pyd's requests (hsds_plugin, httpconn)


def attempt(fn: Callable[[Side], Any], side: Side) -> Outcome:
    try:
        v = fn(side)
        if side.remote and side.f.mode != "r":
            side.f.flush()
        return Outcome(canon(v, side.f))
    except Exception as e:  # noqa: BLE001 - every exception is a result to compare
        frames = traceback.extract_tb(e.__traceback__)
        server = any(fr.filename.endswith(("hsds_plugin.py", "httpconn.py")) for fr in frames)
        return Outcome(error=type(e).__name__, server=server,
                       detail=f"{e}"[:300] + "\n" + traceback.format_exc(limit=-3)[-900:])


# --- random parameters --------------------------------------------------------------------

INTS = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
FLOATS = ["f2", "f4", "f8"]


def rand_dtype(rng: random.Random, depth: int = 0) -> Any:
    """A type spec: built per library by :func:`build_dtype`."""
    kinds = ["int", "float", "bool", "fstr", "vstr", "enum"]
    if depth == 0:
        kinds += ["compound", "vlen", "ref", "int", "float"]
    elif depth == 1:
        kinds += ["compound", "array"]
    k = rng.choice(kinds)
    if k == "int":
        return ("plain", rng.choice("<>") + rng.choice(INTS))
    if k == "float":
        return ("plain", rng.choice("<>") + rng.choice(FLOATS))
    if k == "bool":
        return ("plain", "?")
    if k == "fstr":
        return ("fstr", rng.choice(["ascii", "utf-8"]), rng.randint(1, 8))
    if k == "vstr":
        return ("vstr", rng.choice(["ascii", "utf-8"]))
    if k == "enum":
        return ("enum", rng.choice(["i1", "u1", "i2", "<i4", ">i4", "u8"]), {"RED": 0, "GREEN": 1, "BLUE": 7})
    if k == "vlen":
        # (little-endian only: h5py 3.16 gives a big-endian vlen's elements as native numbers
        # holding the swapped bytes, docs/fidelity.md)
        return ("vlen", rng.choice(["<i4", "<i2", "<f8", "u1"]))
    if k == "ref":
        return ("ref",)
    if k == "array":
        base = rand_dtype(rng, depth + 2)
        while not _array_base_ok(base):
            base = rand_dtype(rng, depth + 2)
        return ("array", rng.choice([(2,), (3,), (2, 2)]), base)
    n = rng.randint(1, 3)
    return ("compound", [(f"f{i}_{rng.randint(0, 99)}", rand_dtype(rng, depth + 1)) for i in range(n)])


def _array_base_ok(spec: Any) -> bool:
    """h5json 2.0 builds no array of enums (so of bools), of vlen strings or vlens."""
    if spec[0] == "compound":
        return all(_array_base_ok(s) for _, s in spec[1])
    return spec[0] == "fstr" or (spec[0] == "plain" and spec[1] != "?")


def build_dtype(spec: Any, lib: Any) -> np.dtype:
    k = spec[0]
    if k == "plain":
        return np.dtype(spec[1])
    if k == "fstr":
        return lib.string_dtype(spec[1], spec[2]) if spec[1] == "utf-8" else np.dtype(f"S{spec[2]}")
    if k == "vstr":
        return lib.string_dtype(spec[1])
    if k == "enum":
        return lib.enum_dtype(spec[2], basetype=np.dtype(spec[1]))
    if k == "vlen":
        return lib.vlen_dtype(np.dtype(spec[1]))
    if k == "ref":
        return lib.special_dtype(ref=lib.Reference)
    if k == "array":
        return np.dtype((build_dtype(spec[2], lib), spec[1]))
    return np.dtype([(n, build_dtype(s, lib)) for n, s in spec[1]])


WORDS = ["", "a", "xyz", "hello", "日本", "ü", "abcdefgh"]


def rand_value(spec: Any, rng: random.Random, refs: list[Any]) -> Any:
    """One element as a Python value (``refs``: the side's references to choose from)."""
    k = spec[0]
    if k == "plain":
        dt = np.dtype(spec[1])
        if dt.kind == "b":
            return rng.random() < 0.5
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return rng.choice([info.min, info.max, 0, 1, rng.randint(int(info.min), int(info.max))])
        return rng.choice([0.0, -1.5, 1e3, rng.uniform(-100, 100), float("nan"), float("inf")])
    if k == "fstr":
        words = [w for w in WORDS if spec[1] == "utf-8" or w.isascii()]
        w = rng.choice(words).encode()
        while len(w) > spec[2]:
            w = rng.choice(words).encode()
        return w
    if k == "vstr":
        return rng.choice([w for w in WORDS if spec[1] == "utf-8" or w.isascii()])
    if k == "enum":
        return rng.choice([0, 1, 7])
    if k == "vlen":
        return np.array([rng.randint(0, 100) for _ in range(rng.randint(1, 4))], dtype=spec[1])
    if k == "ref":
        return refs[rng.randrange(len(refs))] if refs else None
    if k == "array":
        n = int(np.prod(spec[1]))
        return np.array([rand_value(spec[2], rng, refs) for _ in range(n)], dtype=object).reshape(spec[1]).tolist()
    return tuple(rand_value(s, rng, refs) for _, s in spec[1])


def rand_array(spec: Any, shape: tuple[int, ...], seed: int, side: Side) -> np.ndarray:
    """The same random values for both sides (``seed`` fixes them; references name the same
    objects in each file)."""
    rng = random.Random(seed)
    dt = build_dtype(spec, side.lib)
    refs = [side.f[n].ref for n in ref_targets(side.f)] if _has_ref(spec) else []
    n = int(np.prod(shape)) if shape else 1
    out = np.empty(n, dtype=dt)
    for i in range(n):
        out[i] = rand_value(spec, rng, refs) if refs or not _has_ref(spec) else None
    return out.reshape(shape)


def ref_targets(f: Any) -> list[str]:
    """What references point to: the root, and the first few groups, datasets and committed
    types at the root (by name, so the same objects in both files)."""
    names = [n for n in sorted(f) if n[:1] in "gnt" and isinstance(f.get(n, getlink=True), (h5py.HardLink, h5pyd.HardLink))]
    return ["/"] + ["/" + n for n in names[:5]]


def _has_ref(spec: Any) -> bool:
    return spec[0] == "ref" or (spec[0] == "compound" and any(_has_ref(s) for _, s in spec[1])) or (
        spec[0] == "array" and _has_ref(spec[2]))


def _fill_ok(spec: Any) -> bool:
    return spec[0] in ("plain", "enum") or (spec[0] == "fstr" and spec[1] == "ascii")


def rand_shape(rng: random.Random) -> tuple[int, ...]:
    rank = rng.choice([0, 1, 1, 2, 2, 3])
    return tuple(rng.choice([0, 1, 2, 3, 5, 7, 10, 13]) if rng.random() < 0.9 else 0 for _ in range(rank))


def rand_index(rng: random.Random, shape: tuple[int, ...], *, write: bool = False) -> Any:
    """An index expression h5py may or may not accept."""
    if not shape:
        return rng.choice([(), Ellipsis, 0, slice(None)])
    parts: list[Any] = []
    fancy = False
    for n in shape:
        r = rng.random()
        if r < 0.25:
            parts.append(slice(None))
        elif r < 0.45 and n:
            a = rng.randint(-n, n - 1)
            parts.append(a)
        elif r < 0.7:
            start = rng.choice([None, rng.randint(-n - 1, n + 1)])
            stop = rng.choice([None, rng.randint(-n - 1, n + 1)])
            # (a negative step, rarely: h5py refuses it)
            step = rng.choice([None, 1, 2, 3]) if rng.random() < 0.95 else rng.choice([-1, -2])
            parts.append(slice(start, stop, step))
        elif r < 0.85 and not fancy and n:
            fancy = True
            k = rng.randint(1, n)
            idx = sorted(rng.sample(range(n), k))
            if rng.random() < 0.15:
                idx = idx[::-1]
            parts.append(idx if rng.random() < 0.5 else np.array(idx))
        elif r < 0.9 and not fancy and n:
            fancy = True
            parts.append(np.array([rng.random() < 0.5 for _ in range(n)]))
        else:
            parts.append(rng.randint(n, n + 3) if rng.random() < 0.5 else slice(None))
    if rng.random() < 0.15:
        parts[rng.randrange(len(parts))] = Ellipsis
    if not write and rng.random() < 0.05:
        parts.insert(rng.randrange(len(parts) + 1), np.newaxis)
    if len(parts) == 1 and rng.random() < 0.5:
        return parts[0]
    return tuple(parts)


def index_repr(ix: Any) -> str:
    def one(p: Any) -> str:
        if p is Ellipsis:
            return "..."
        if p is None:
            return "np.newaxis"
        if isinstance(p, slice):
            return f"{'' if p.start is None else p.start}:{'' if p.stop is None else p.stop}" + (
                "" if p.step is None else f":{p.step}")
        if isinstance(p, np.ndarray):
            return f"np.array({p.tolist()})"
        return repr(p)
    return "(" + ", ".join(one(p) for p in ix) + ")" if isinstance(ix, tuple) else one(ix)


# --- operations --------------------------------------------------------------------------


@dataclass
class Op:
    text: str
    fn: Callable[[Side], Any]
    changes: bool = True
    dataset: str | None = None  # a write of this dataset's values
    noop_if_refused: bool = False  # where one side refuses, the other changes nothing either


@dataclass
class Model:
    """What the driver knows of the file, to draw parameters that mostly make sense."""

    datasets: dict[str, tuple[Any, bool]] = field(default_factory=dict)  # name -> (spec, resizable)
    chunked: set[str] = field(default_factory=set)  # made with chunks given
    groups: list[str] = field(default_factory=lambda: ["/"])
    types: dict[str, Any] = field(default_factory=dict)  # committed type name -> spec
    other: list[str] = field(default_factory=list)  # datasets of no spec: null space, region references
    serial: int = 0

    def name(self, rng: random.Random, prefix: str = "n") -> str:
        self.serial += 1
        parent = rng.choice(self.groups)
        return (parent.rstrip("/") + f"/{prefix}{self.serial}").lstrip("/")


COMPRESS = [None, None, "gzip", "lzf", ("gzip", 9), "shuffle"]


def op_create_dataset(rng: random.Random, m: Model) -> Op:
    spec = rand_dtype(rng)
    shape = rand_shape(rng)
    name = m.name(rng)
    kw: dict[str, Any] = {}
    text = [f"create_dataset({name!r}, shape={shape}, dtype={spec}"]
    resizable = False
    if shape and rng.random() < 0.4:
        # (no fixed maximum of 0: maxdims 0 means unlimited on the wire, to HSDS as to h5lake)
        kw["maxshape"] = tuple(None if rng.random() < 0.5 else (n + rng.choice([0, 3]) or 3) for n in shape)
        resizable = True
    if shape and rng.random() < 0.5:
        kw["chunks"] = tuple(rng.randint(1, max(1, n)) for n in shape)
    comp = rng.choice(COMPRESS)
    if 0 in shape:
        # h5json 2.0 refuses any chunk layout for an extent of 0, before a request: such a
        # dataset is made plain (h5py's default for it), so the seed goes on
        kw.pop("chunks", None)
        kw.pop("maxshape", None)
        comp = None
    if shape and comp:
        if comp == "shuffle":
            kw["shuffle"] = True
        elif isinstance(comp, tuple):
            kw["compression"], kw["compression_opts"] = comp
        else:
            kw["compression"] = comp
    if _fill_ok(spec) and rng.random() < 0.4:
        kw["fillvalue"] = rand_value(spec, rng, [])
    with_data = rng.random() < 0.6
    seed = rng.randrange(1 << 30)
    text.append(", " + ", ".join(f"{k}={v!r}" for k, v in kw.items()))
    text.append(f", data={'seed ' + str(seed) if with_data else None})")

    m.datasets[name] = (spec, resizable)
    if "chunks" in kw:
        m.chunked.add(name)

    def fn(s: Side) -> Any:
        dt = build_dtype(spec, s.lib)
        data = rand_array(spec, shape, seed, s) if with_data else None
        d = s.f.create_dataset(name, shape=shape, dtype=dt, data=data, **kw, **_fill_time(s))
        return (d.shape, dtype_key(d.dtype), _maxshape(d), d.chunks is not None, d.compression)
    return Op("".join(text), fn)


def _fill_time(s: Side) -> dict[str, Any]:
    """h5py: write the fill value when storage is allocated. HDF5's default writes none unless
    one was given, so a contiguous dataset placed where a deleted one was shows the old bytes
    where nothing was written (h5lake, as HSDS, reads the fill value there)."""
    return {} if s.remote else {"fill_time": "alloc"}


def pick_dataset(rng: random.Random, m: Model) -> tuple[str, Any, bool] | None:
    if not m.datasets:
        return None
    name = rng.choice(sorted(m.datasets))
    spec, resizable = m.datasets[name]
    return name, spec, resizable


def op_read(rng: random.Random, m: Model, f: Any) -> Op | None:
    p = pick_dataset(rng, m)
    if p is None or p[0] not in f:
        return None
    name, spec, _ = p
    shape = f[name].shape
    ix = rand_index(rng, shape)
    how = rng.random()
    if spec[0] == "compound" and how < 0.3:
        fields = [n for n, _ in spec[1]]
        pick = rng.sample(fields, rng.randint(1, len(fields)))
        if rng.random() < 0.5:
            return Op(f"{name}.fields({pick})[{index_repr(ix)}]", lambda s: s.f[name].fields(pick)[ix], False)
        one = pick[0]
        if isinstance(ix, tuple):
            return Op(f"{name}[{index_repr(ix)} + ({one!r},)]", lambda s: s.f[name][(*ix, one)], False)
        return Op(f"{name}[{index_repr(ix)}, {one!r}]", lambda s: s.f[name][ix, one], False)
    if how < 0.4 and spec[0] == "plain":
        to = rng.choice(["f8", "i8", "f4", "u1"])
        return Op(f"{name}.astype({to!r})[{index_repr(ix)}]", lambda s: s.f[name].astype(to)[ix], False)
    if how < 0.5:
        return Op(f"len({name})", lambda s: len(s.f[name]), False)
    if how < 0.55 and shape:
        return Op(f"{name}.len()", lambda s: s.f[name].len(), False)
    if how < 0.6 and (name in m.chunked or not shape):
        # (only with the chunk shape given: the one a library picks itself is its own)
        return Op(f"{name}.iter_chunks()", lambda s: [tuple((c.start, c.stop, c.step) for c in t)
                                                    for t in s.f[name].iter_chunks()], False)
    if how < 0.65 and shape:
        sel = tuple(slice(0, rng.randint(0, n)) for n in shape)
        def rd(s: Side) -> Any:
            d = s.f[name]
            dest = np.zeros(tuple(x.stop for x in sel), dtype=d.dtype)
            d.read_direct(dest, source_sel=sel, dest_sel=tuple(slice(0, x.stop) for x in sel))
            return dest
        return Op(f"{name}.read_direct(dest, source_sel={index_repr(sel)})", rd, False)
    if how < 0.7:
        return Op(f"{name}.(shape,dtype,maxshape,chunks,fillvalue,compression)",
                  lambda s: _props(s.f[name]), False)
    return Op(f"{name}[{index_repr(ix)}]", lambda s: s.f[name][ix], False)


def _props(d: Any) -> Any:
    # the chunk shape a library picks itself is its own (h5py's guess is not HSDS's)
    return (d.shape, d.ndim, d.size, dtype_key(d.dtype), _maxshape(d), d.compression, d.shuffle,
            _fill(d))


def _maxshape(d: Any) -> Any:
    return tuple("0 or None" if n == 0 or (n is None and d.shape[i] == 0) else n
                 for i, n in enumerate(d.maxshape or ()))


def _fill(d: Any) -> Any:
    """The fill value where it means one: a vlen, reference or vlen-string dataset has none in
    h5py, where h5pyd 1.0 makes up a zero of the type."""
    if _variable(d.dtype):
        return None
    return d.fillvalue


def _variable(dt: np.dtype) -> bool:
    md: dict[str, Any] = dict(dt.metadata or {})
    if "vlen" in md or "ref" in md:
        return True
    if dt.names:
        return any(_variable(dt[n]) for n in dt.names)
    return dt.subdtype is not None and _variable(dt.subdtype[0])


def op_write(rng: random.Random, m: Model, f: Any) -> Op | None:
    p = pick_dataset(rng, m)
    if p is None or p[0] not in f:
        return None
    name, spec, _ = p
    shape = f[name].shape
    ix = rand_index(rng, shape, write=True)
    seed = rng.randrange(1 << 30)
    how = rng.random()
    if how < 0.25:
        # a scalar, broadcast
        def ws(s: Side) -> Any:
            v = rand_array(spec, (), seed, s)[()]
            s.f[name][ix] = v
        return Op(f"{name}[{index_repr(ix)}] = scalar(seed {seed})", ws, dataset=name)
    if how < 0.35 and spec[0] == "compound":
        one = rng.choice(spec[1])
        def wf(s: Side) -> Any:
            shp = np.empty(shape, dtype=np.int8)[ix].shape
            v = rand_array(one[1], shp, seed, s)
            s.f[name][(*ix, one[0]) if isinstance(ix, tuple) else (ix, one[0])] = v
        return Op(f"{name}[{index_repr(ix)}, {one[0]!r}] = (seed {seed})", wf, dataset=name)
    if how < 0.45 and shape:
        sel = tuple(slice(0, rng.randint(0, n)) for n in shape)
        def wd(s: Side) -> Any:
            src = rand_array(spec, tuple(x.stop for x in sel), seed, s)
            s.f[name].write_direct(src, dest_sel=sel)
        return Op(f"{name}.write_direct(src(seed {seed}), dest_sel={index_repr(sel)})", wd)
    broadcast = rng.random() < 0.2

    def wa(s: Side) -> Any:
        shp = np.empty(shape, dtype=np.int8)[ix].shape
        if broadcast and shp:
            shp = shp[1:]
        s.f[name][ix] = rand_array(spec, shp, seed, s)
    return Op(f"{name}[{index_repr(ix)}] = array(seed {seed}{', broadcast' if broadcast else ''})", wa,
              dataset=name)


def op_resize(rng: random.Random, m: Model, f: Any) -> Op | None:
    p = pick_dataset(rng, m)
    if p is None or p[0] not in f or not p[2]:
        # only datasets made with a maxshape: h5pyd sends no maxdims without one, and h5json
        # then refuses any resize (HSDS answers no maxdims either)
        return None
    name = p[0]
    shape = f[name].shape
    if not shape:
        return Op(f"{name}.resize((3,))", lambda s: s.f[name].resize((3,)))
    new = tuple(max(0, n + rng.randint(-3, 4)) for n in shape)
    if rng.random() < 0.3:
        axis = rng.randrange(len(shape))
        return Op(f"{name}.resize({new[axis]}, axis={axis})", lambda s: (s.f[name].resize(new[axis], axis=axis),
                                                                      s.f[name].shape)[1])
    return Op(f"{name}.resize({new})", lambda s: (s.f[name].resize(new), s.f[name].shape)[1])


ATTR_SHAPES: list[Any] = [(), (), (1,), (3,), (2, 2), (0,), None]


def op_attr(rng: random.Random, m: Model, f: Any) -> Op:
    owner = rng.choice(m.groups + sorted(m.datasets))
    aname = rng.choice(["a", "b", "units", "x y", "ü"])
    how = rng.random()
    if how < 0.25:
        return Op(f"{owner}.attrs[{aname!r}]", lambda s: s.f[owner].attrs[aname], False)
    if how < 0.35:
        return Op(f"{owner}.attrs items", lambda s: list(s.f[owner].attrs.items()), False)
    if how < 0.42:
        return Op(f"del {owner}.attrs[{aname!r}]", lambda s: s.f[owner].attrs.__delitem__(aname))
    if how < 0.47:
        return Op(f"{aname!r} in {owner}.attrs", lambda s: aname in s.f[owner].attrs, False)
    spec = rand_dtype(rng)
    while spec[0] == "ref" or _has_ref(spec):
        spec = rand_dtype(rng)
    shape = rng.choice(ATTR_SHAPES)
    seed = rng.randrange(1 << 30)
    if shape is None:
        def we(s: Side) -> Any:
            s.f[owner].attrs[aname] = s.lib.Empty(build_dtype(spec, s.lib))
            return s.f[owner].attrs[aname]
        return Op(f"{owner}.attrs[{aname!r}] = Empty({spec})", we)
    if how < 0.7:
        def wc(s: Side) -> Any:
            s.f[owner].attrs.create(aname, rand_array(spec, shape, seed, s), shape=shape,
                                    dtype=build_dtype(spec, s.lib))
            return s.f[owner].attrs[aname]
        return Op(f"{owner}.attrs.create({aname!r}, seed {seed}, shape={shape}, dtype={spec})", wc)
    plain = rng.random() < 0.3 and shape == () and spec[0] in ("plain", "vstr")

    def ws(s: Side) -> Any:
        v = rand_array(spec, shape, seed, s)
        s.f[owner].attrs[aname] = v[()].item() if plain and isinstance(v[()], np.generic) else (
            v[()] if plain else v)
        return s.f[owner].attrs[aname]
    return Op(f"{owner}.attrs[{aname!r}] = seed {seed} {shape} {spec}{' (python value)' if plain else ''}", ws)


def op_group(rng: random.Random, m: Model, f: Any) -> Op:
    how = rng.random()
    if how < 0.2:
        name = m.name(rng)
        track = rng.choice([None, True, False])
        m.groups.append("/" + name)
        return Op(f"create_group({name!r}, track_order={track})",
                  lambda s: s.f.create_group(name, track_order=track).name)
    if how < 0.3:
        name = rng.choice(m.groups[1:] or ["/n0"]).lstrip("/") if rng.random() < 0.6 else m.name(rng)
        if "/" + name not in m.groups and name not in m.datasets:
            m.groups.append("/" + name)
        return Op(f"require_group({name!r})", lambda s: s.f.require_group(name))
    if how < 0.38 and m.datasets:
        name = rng.choice(sorted(m.datasets))
        spec = m.datasets[name][0]
        shape = f[name].shape if name in f else (3,)
        if rng.random() < 0.3:
            shape = shape + (1,)
        exact = rng.random() < 0.5
        return Op(f"require_dataset({name!r}, {shape}, {spec}, exact={exact})",
                  lambda s: s.f.require_dataset(name, shape, build_dtype(spec, s.lib), exact=exact,
                                                **_fill_time(s)))
    if how < 0.5:
        g = rng.choice(m.groups)
        return Op(f"list({g})", lambda s: list(s.f[g]), False)
    if how < 0.56:
        return Op("visit", lambda s: _visit(s.f), False)
    if how < 0.62:
        return Op("visititems", lambda s: _visititems(s.f), False)
    if how < 0.7:
        name = rng.choice(m.groups + sorted(m.datasets) + ["nope", "/n1/nope", "soft0", "ext0"])
        return Op(f"{name!r} in f", lambda s: name in s.f, False)
    if how < 0.78:
        name = rng.choice(m.groups[1:] + sorted(m.datasets) + ["nope", "soft0", "ext0", "hard0"])
        return Op(f"f.get({name!r}, getlink=True)", lambda s: s.f.get(name, getlink=True), False)
    if how < 0.84:
        target = rng.choice(m.groups + sorted(m.datasets) + ["/nope"])
        kind = rng.choice(["soft", "hard", "external"])
        lname = f"{kind}{rng.randint(0, 3)}"
        if kind == "soft":
            return Op(f"f[{lname!r}] = SoftLink({target!r})", lambda s: s.f.__setitem__(lname, s.lib.SoftLink(target)))
        if kind == "external":
            return Op(f"f[{lname!r}] = ExternalLink('other.h5', {target!r})",
                      lambda s: s.f.__setitem__(lname, s.lib.ExternalLink("other.h5", target)))
        return Op(f"f[{lname!r}] = f[{target!r}]", lambda s: s.f.__setitem__(lname, s.f[target]))
    if how < 0.9:
        name = rng.choice(m.groups[1:] + sorted(m.datasets) + ["soft0", "hard0", "nope"]).lstrip("/")
        parent, _, leaf = name.rpartition("/")
        if parent and rng.random() < 0.7:
            # (mostly through the parent: h5pyd 1.0's del group["a/b"] fails in the client)
            return Op(f"del f[{parent!r}][{leaf!r}]", lambda s: s.f[parent].__delitem__(leaf))
        return Op(f"del f[{name!r}]", lambda s: s.f.__delitem__(name))
    if how < 0.95:
        # (not Group.move and Group.copy: both are no-ops in h5pyd 1.0, whatever the server)
        g = rng.choice(m.groups + ["/nope"])
        return Op(f"len(f[{g!r}])", lambda s: len(s.f[g]), False)
    name = rng.choice(m.groups[1:] + sorted(m.datasets) + ["nope", "soft0"])
    return Op(f"f[{name!r}]", lambda s: s.f[name], False)


def _visit(f: Any) -> Any:
    seen: list[str] = []
    f.visit(lambda n: seen.append(n))  # h5pyd 1.0 reads func.__code__: a builtin has none
    return sorted(seen)  # h5pyd 1.0 visits depth first from the last link (its order is not h5py's)


def _visititems(f: Any) -> Any:
    seen: list[Any] = []
    f.visititems(lambda n, o: seen.append((n, _kind(o))))
    return sorted(seen)


def _kind(o: Any) -> str:
    for k in ("Dataset", "Group", "Datatype"):
        if isinstance(o, (getattr(h5py, k), getattr(h5pyd, k))):
            return k
    return type(o).__name__


# --- dimension scales, references, committed types, special spaces, lookups, names ------------


def op_more(rng: random.Random, m: Model, f: Any) -> Op | None:
    r = rng.random()
    if r < 0.2:
        return op_scale(rng, m, f)
    if r < 0.36:
        return op_refs(rng, m, f)
    if r < 0.5:
        return op_named_type(rng, m, f)
    if r < 0.6:
        return op_special_space(rng, m, f)
    if r < 0.78:
        return op_lookup(rng, m, f)
    if r < 0.9:
        return op_attr_more(rng, m, f)
    return op_names(rng, m)


def _datasets(m: Model, f: Any, rank: int | None = None) -> list[str]:
    """The model's datasets that exist in the local file with a dataspace (of ``rank``)."""
    out = []
    for n in sorted(m.datasets):
        d = f.get(n)
        if isinstance(d, h5py.Dataset) and d.shape is not None and (d.ndim >= 1 if rank is None else d.ndim == rank):
            out.append(n)
    return out


def _dims(d: Any) -> Any:
    return [(dim.label, len(dim), list(dim.keys()), [v.name for v in dim.values()]) for dim in d.dims]


def op_scale(rng: random.Random, m: Model, f: Any) -> Op | None:
    dsets = _datasets(m, f)
    if not dsets:
        return None
    how = rng.random()
    ones = _datasets(m, f, 1) or dsets
    if how < 0.2:
        n = rng.choice(ones)
        label = rng.choice(["", "x", "time", "ü", "a" * 40])
        return Op(f"{n}.make_scale({label!r})", lambda s: (s.f[n].make_scale(label), s.f[n].is_scale)[1])
    d = rng.choice(dsets)
    rank = f[d].ndim
    i = rng.randrange(rank) if rng.random() < 0.95 else rank
    scales = [n for n in dsets if f[n].is_scale]
    if how < 0.5:
        sc = rng.choice(scales) if scales and rng.random() < 0.85 else rng.choice(dsets)
        return Op(f"{d}.dims[{i}].attach_scale({sc})",
                  lambda s: (s.f[d].dims[i].attach_scale(s.f[sc]), _dims(s.f[d]))[1])
    if how < 0.6:
        sc = rng.choice(scales or dsets)
        # (h5pyd detaches a scale not attached as nothing, where h5py refuses)
        return Op(f"{d}.dims[{i}].detach_scale({sc})",
                  lambda s: (s.f[d].dims[i].detach_scale(s.f[sc]), _dims(s.f[d]))[1], noop_if_refused=True)
    if how < 0.72:
        label = rng.choice(["", "x", "depth", "ü 日本", "L" * 100])
        def lb(s: Side) -> Any:
            s.f[d].dims[i].label = label
            return _dims(s.f[d])
        return Op(f"{d}.dims[{i}].label = {label!r}", lb)
    if how < 0.8 and scales:
        sc = rng.choice(scales)
        return Op(f"{sc}.is_scale, {d}.is_scale", lambda s: (s.f[sc].is_scale, s.f[d].is_scale), False)
    if how < 0.88:
        k = rng.choice([0, 1, "x", "time", ""])
        return Op(f"{d}.dims[{i}][{k!r}].name", lambda s: s.f[d].dims[i][k].name, False)
    return Op(f"{d}.dims (label, len, keys, values)", lambda s: _dims(s.f[d]), False)


ANAMES = ["a", "b", "units", "x y", "ü", "日本語の名前", "L" * 300]


def op_refs(rng: random.Random, m: Model, f: Any) -> Op | None:
    how = rng.random()
    targets = ref_targets(f) + sorted(m.datasets)[:3]
    targets = [t for t in targets if t in f]
    if how < 0.35:
        owner = rng.choice(m.groups + sorted(m.datasets))
        aname = rng.choice(ANAMES[:5])
        picks = [rng.choice(targets) for _ in range(rng.randint(1, 3))]
        form = rng.choice(["scalar", "array", "create", "null"])

        def wr(s: Side) -> Any:
            dt = s.lib.special_dtype(ref=s.lib.Reference)
            a = s.f[owner].attrs
            if form == "scalar":
                a[aname] = s.f[picks[0]].ref
            elif form == "array":
                a[aname] = np.array([s.f[t].ref for t in picks], dtype=dt)
            elif form == "create":
                a.create(aname, [s.f[t].ref for t in picks], shape=(len(picks),), dtype=dt)
            else:
                v = np.empty(2, dtype=dt)
                v[0] = s.f[picks[0]].ref
                v[1] = None if s.remote else h5py.Reference()
                a[aname] = v
            return a[aname]
        return Op(f"{owner}.attrs[{aname!r}] = object references {form} to {picks}", wr)
    regions = [n for n in m.other if n.rsplit("/", 1)[-1][:1] == "r"]
    if how < 0.6 or not regions:
        cands = _datasets(m, f)
        if not cands:
            return None
        t = rng.choice(cands)
        # (slices with steps, integers, index lists, masks; no newaxis)
        ixs = [rand_index(rng, f[t].shape, write=True) for _ in range(rng.randint(1, 3))]
        name = m.name(rng, "r")
        m.other.append(name)
        # two of them in an attribute (h5pyd 1.0 sends h5json's object form there), unless an
        # integer stands beside an index list: h5pyd fails to send that (h5json's to_region_json)
        to_attr = len(ixs) == 2 and not any(_int_beside_list(ix) for ix in ixs)

        def mk(s: Side) -> Any:
            d = s.f[t]
            refs = [d.regionref[ix] for ix in ixs]
            dt = s.lib.special_dtype(ref=s.lib.RegionReference)
            v = np.empty(len(refs), dtype=dt)
            for j, r in enumerate(refs):
                v[j] = r
            if to_attr:
                s.f[t].attrs["region"] = v
                return s.f[t].attrs["region"]
            out = s.f.create_dataset(name, data=v)
            return out[()]
        return Op(f"{name} = region references of {t} {[index_repr(ix) for ix in ixs]}"
                  + (" (as attribute 'region')" if to_attr else ""), mk)
    r = rng.choice(regions)
    if r not in f:
        return None
    j = rng.randrange(max(1, f[r].shape[0]))

    def rd(s: Side) -> Any:
        ref = s.f[r][j]
        d = s.f[ref] if isinstance(ref, h5py.RegionReference) else s.f[ref.id]
        return (d.name, d[ref], d.regionref.shape(ref) if not s.remote else d.shape)
    return Op(f"dereference {r}[{j}] and read its region", rd, False)


def _int_beside_list(ix: Any) -> bool:
    parts = ix if isinstance(ix, tuple) else (ix,)
    return any(isinstance(p, int) for p in parts) and any(isinstance(p, list | np.ndarray) for p in parts)


def op_named_type(rng: random.Random, m: Model, f: Any) -> Op | None:
    how = rng.random()
    if how < 0.3 or not m.types:
        spec = rand_dtype(rng)
        while _has_ref(spec):
            spec = rand_dtype(rng)
        name = m.name(rng, "t")
        m.types[name] = spec
        return Op(f"f[{name!r}] = dtype {spec}",
                  lambda s: (s.f.__setitem__(name, build_dtype(spec, s.lib)), s.f[name])[1])
    tname = rng.choice(sorted(m.types))
    spec = m.types[tname]
    seed = rng.randrange(1 << 30)
    if how < 0.64:
        shape = rand_shape(rng)
        name = m.name(rng)
        with_data = rng.random() < 0.7
        m.datasets[name] = (spec, False)

        def cd(s: Side) -> Any:
            data = rand_array(spec, shape, seed, s) if with_data else None
            d = s.f.create_dataset(name, shape, dtype=s.f[tname], data=data, **_fill_time(s))
            return (d.shape, dtype_key(d.dtype), d[()])
        return Op(f"create_dataset({name!r}, {shape}, dtype=f[{tname!r}], data={seed if with_data else None})", cd)
    if how < 0.66:
        # (rarely: h5pyd 1.0's attrs.create takes no committed type but a complex one)
        owner = rng.choice(m.groups + sorted(m.datasets))
        aname = rng.choice(ANAMES[:5])
        shape = rng.choice(ATTR_SHAPES[:-1])

        def ca(s: Side) -> Any:
            s.f[owner].attrs.create(aname, rand_array(spec, shape, seed, s), dtype=s.f[tname])
            return s.f[owner].attrs[aname]
        return Op(f"{owner}.attrs.create({aname!r}, seed {seed} {shape}, dtype=f[{tname!r}])", ca)
    if how < 0.93:
        return Op(f"f[{tname!r}] (a committed type)", lambda s: s.f[tname], False)
    return Op(f"f.get({tname!r}, getclass=True)", lambda s: s.f.get(tname, getclass=True), False)


SCALARS: list[Any] = [1, -7, 1.5, True, "text", "日本", b"bytes", np.int16(3), np.float32(2.5), np.uint64(2**63)]


def op_special_space(rng: random.Random, m: Model, f: Any) -> Op | None:
    how = rng.random()
    empties = [n for n in m.other if n in f and isinstance(f[n], h5py.Dataset) and f[n].shape is None]
    if how < 0.35 or (how < 0.7 and not empties):
        spec = rand_dtype(rng)
        while _has_ref(spec):
            spec = rand_dtype(rng)
        name = m.name(rng)
        m.other.append(name)
        form = rng.choice(["Empty", "shape=None"])

        def ce(s: Side) -> Any:
            dt = build_dtype(spec, s.lib)
            if form == "Empty":
                d = s.f.create_dataset(name, data=s.lib.Empty(dt))
            else:
                d = s.f.create_dataset(name, shape=None, dtype=dt)
            return (d.shape, d.size, dtype_key(d.dtype), d.maxshape, d.chunks)
        return Op(f"create_dataset({name!r}, {form}, dtype {spec}) (null space)", ce)
    if how < 0.7:
        n = rng.choice(empties)
        ix = rng.choice([(), Ellipsis, 0, slice(None), (0, 0)])
        return Op(f"{n}[{index_repr(ix)}] (null space)", lambda s: s.f[n][ix], False)
    if how < 0.85:
        v = rng.choice(SCALARS)
        name = m.name(rng)
        m.other.append(name)
        def cs(s: Side) -> Any:
            d = s.f.create_dataset(name, data=v)
            return (d.shape, dtype_key(d.dtype), d[()], d[...])
        return Op(f"create_dataset({name!r}, data={v!r}) (scalar)", cs)
    scal = [n for n in m.other if n in f and isinstance(f[n], h5py.Dataset) and f[n].shape == ()]
    if not scal:
        return None
    n = rng.choice(scal)
    v = rng.choice(SCALARS[:4])
    ix = rng.choice([(), Ellipsis])
    return Op(f"{n}[{index_repr(ix)}] = {v!r} (scalar)", lambda s: (s.f[n].__setitem__(ix, v), s.f[n][()])[1])


def op_lookup(rng: random.Random, m: Model, f: Any) -> Op | None:
    names = m.groups[1:] + sorted(m.datasets) + sorted(m.types) + m.other + [
        "nope", "soft0", "soft1", "ext0", "hard0", "g0/", "g0/nope", "nope/x"]
    name = rng.choice(names)
    how = rng.random()
    if how < 0.2:
        return Op(f"f.get({name!r}, getclass=True)", lambda s: s.f.get(name, getclass=True), False)
    if how < 0.32:
        return Op(f"f.get({name!r}, getclass=True, getlink=True)",
                  lambda s: s.f.get(name, getclass=True, getlink=True), False)
    if how < 0.42:
        return Op(f"f.get({name!r}, default=-1)", lambda s: s.f.get(name, -1), False)
    g = rng.choice(m.groups)
    if how < 0.5:
        return Op(f"list(reversed(f[{g!r}]))", lambda s: list(reversed(s.f[g])), False)
    if how < 0.6:
        return Op(f"f[{g!r}].items()", lambda s: [(k, _kind(v)) for k, v in s.f[g].items()], False)
    if how < 0.68:
        return Op(f"f[{g!r}].values() names", lambda s: [getattr(v, "name", None) for v in s.f[g].values()], False)
    if how < 0.78:
        sub = rng.choice(names)
        return Op(f"{sub!r} in f[{g!r}]", lambda s: sub in s.f[g], False)
    if how < 0.9:
        link = rng.choice(["soft0", "soft1", "soft2", "soft3"])
        return Op(f"f[{link!r}] (through a soft link): name, kind",
                  lambda s: (s.f[link].name, _kind(s.f[link])), False)
    target = rng.choice(m.groups + sorted(m.datasets) + ["/nope", "/g0/../g0"])
    lname = rng.choice(["soft0", "soft1"])
    where = rng.choice(m.groups)
    full = (where.rstrip("/") + "/" + lname).lstrip("/")  # (h5pyd's get(getlink) takes no absolute path)
    return Op(f"f[{full!r}] = SoftLink({target!r}); f.get(..., getlink=True)",
              lambda s: (s.f.__setitem__(full, s.lib.SoftLink(target)), s.f.get(full, getlink=True))[1])


MODIFY_VALUES: list[Any] = [3, -1, 2.5, "txt", b"b", [1, 2, 3], [[1, 2], [3, 4]], 300, True]


def op_attr_more(rng: random.Random, m: Model, f: Any) -> Op:
    owner = rng.choice(m.groups + sorted(m.datasets))
    aname = rng.choice(ANAMES)
    how = rng.random()
    if how < 0.4:
        v = rng.choice(MODIFY_VALUES)
        return Op(f"{owner}.attrs.modify({aname!r}, {v!r})",
                  lambda s: (s.f[owner].attrs.modify(aname, v), s.f[owner].attrs[aname])[1])
    if how < 0.65:
        shape = rng.choice([(), (1,), (3,), (2, 3), None])
        dt = rng.choice(["i4", "<f8", ">u2", "S4", "?"])
        data = rng.choice([None, 7, [1, 2, 3], [[1, 2, 3], [4, 5, 6]]])
        return Op(f"{owner}.attrs.create({aname!r}, data={data!r}, shape={shape}, dtype={dt!r})",
                  lambda s: (s.f[owner].attrs.create(aname, data, shape=shape, dtype=dt), s.f[owner].attrs[aname])[1])
    if how < 0.75:
        return Op(f"{owner}.attrs.get({aname!r}, 'dflt')", lambda s: s.f[owner].attrs.get(aname, "dflt"), False)
    if how < 0.82:
        return Op(f"len({owner}.attrs), keys", lambda s: (len(s.f[owner].attrs), list(s.f[owner].attrs.keys())), False)
    # a dataset or group that keeps the order attributes were made in
    name = m.name(rng)
    kind = rng.choice(["group", "dataset"])
    order = rng.sample(ANAMES, rng.randint(2, len(ANAMES)))
    if kind == "group":
        m.groups.append("/" + name)
    else:
        m.datasets[name] = (("plain", "<i4"), False)

    def mk(s: Side) -> Any:
        if kind == "group":
            o = s.f.create_group(name, track_order=True)
        else:
            o = s.f.create_dataset(name, data=np.arange(3, dtype="<i4"), track_order=True)
        for j, a in enumerate(order):
            o.attrs[a] = j
        return list(o.attrs)
    return Op(f"{kind} {name!r} track_order=True, attributes {order}", mk)


NAME_TAILS = ["_日本語", " with space", "_ü_é", "_" + "x" * 250, "_" + "長" * 200, "_a.b", "_%2F", "_?#&"]


def op_names(rng: random.Random, m: Model) -> Op:
    m.serial += 1
    parent = rng.choice(m.groups)
    name = (parent.rstrip("/") + f"/n{m.serial}{rng.choice(NAME_TAILS)}").lstrip("/")
    if rng.random() < 0.5:
        m.groups.append("/" + name)
        return Op(f"create_group({name!r})", lambda s: s.f.create_group(name).name)
    m.datasets[name] = (("plain", "<f4"), False)
    return Op(f"create_dataset({name!r}, data=arange(4))",
              lambda s: s.f.create_dataset(name, data=np.arange(4, dtype="<f4")).name)


def rand_op(rng: random.Random, m: Model, f: Any, more: float = 0.15) -> Op | None:
    """One operation; ``more``: the share drawn from :func:`op_more`."""
    if m.datasets and rng.random() < more:
        return op_more(rng, m, f)
    r = rng.random()
    if r < 0.22 or not m.datasets:
        return op_create_dataset(rng, m)
    if r < 0.45:
        return op_read(rng, m, f)
    if r < 0.62:
        return op_write(rng, m, f)
    if r < 0.68:
        return op_resize(rng, m, f)
    if r < 0.84:
        return op_attr(rng, m, f)
    return op_group(rng, m, f)


# --- the whole file ----------------------------------------------------------------------


def tree(f: Any) -> dict[tuple[str, str], Any]:
    """Every object reached from the root, with its attributes, values and the order of its
    links and attributes."""
    out: dict[tuple[str, str], Any] = {}

    def walk(g: Any, path: str, depth: int) -> None:
        out[(path, "attrs")] = canon(dict(g.attrs.items()), f)
        out[(path, "attr order")] = list(g.attrs)
        out[(path, "order")] = list(g)
        for name in g:
            link = g.get(name, getlink=True)
            sub = f"{path.rstrip('/')}/{name}"
            out[(sub, "link")] = canon(link, f)
            if not isinstance(link, (h5py.HardLink, h5pyd.HardLink)):
                continue
            obj = g[name]
            if isinstance(obj, (h5py.Group, h5pyd.Group)):
                if depth < 8:
                    walk(obj, sub, depth + 1)
            elif isinstance(obj, (h5py.Datatype, h5pyd.Datatype)):
                out[(sub, "type")] = dtype_key(obj.dtype)
                out[(sub, "attrs")] = canon(dict(obj.attrs.items()), f)
            elif isinstance(obj, (h5py.Dataset, h5pyd.Dataset)):
                out[(sub, "props")] = canon(_props(obj), f)
                out[(sub, "attrs")] = _stale_marked(canon(dict(obj.attrs.items()), f), obj, f)
                out[(sub, "attr order")] = list(obj.attrs)
                try:
                    out[(sub, "value")] = canon(obj[()], f)
                except Exception as e:  # noqa: BLE001 - an unreadable value is a result too
                    out[(sub, "value")] = ("error", type(e).__name__, str(e)[:80])
    walk(f["/"], "/", 0)
    return out


def _stale_marked(attrs: Any, dset: Any, f: Any) -> Any:
    """A scale's attributes (canon) in an h5py file with the REFERENCE_LIST rows that name a
    dimension the scale is no longer attached to marked ``("ref", ("stale", path))``. HDF5's
    H5DSattach_scale adds a row at every call, also for a scale already on that dimension, and
    H5DSdetach_scale removes one, so attaching twice and detaching once leaves such a row; h5pyd
    1.0 lists a (dataset, dimension) once (``_hl/dims.py``, ``DimensionProxy._update_reflist``:
    "reference already exists, just return") and a detach removes it."""
    if not isinstance(dset, h5py.Dataset) or not isinstance(attrs, dict) or "REFERENCE_LIST" not in dset.attrs:
        return attrs
    listed = attrs.get("REFERENCE_LIST")
    if not (isinstance(listed, tuple) and len(listed) == 4 and listed[0] == "nd"):
        return attrs
    rows = list(listed[3])
    for k, (ref, dim) in enumerate(dset.attrs["REFERENCE_LIST"].tolist()):
        try:
            attached = any(s == dset for s in f[ref].dims[int(dim)].values())
        except Exception:  # noqa: BLE001 - a row naming nothing readable is left as it is
            attached = True
        row = rows[k]
        if not attached and isinstance(row, tuple) and row[:1] == ("void",) and row[2][0][:1] == ("ref",):
            rows[k] = (row[0], row[1], (("ref", ("stale", row[2][0][1])), *row[2][1:]))
    return {**attrs, "REFERENCE_LIST": (*listed[:3], rows)}


# --- running -----------------------------------------------------------------------------


@dataclass
class Difference:
    seed: int
    step: int
    text: str
    local: Outcome
    remote: Outcome
    known: str | None = None

    def show(self) -> str:
        head = f"seed {self.seed} step {self.step}: {self.text}" + (f"   [known: {self.known}]" if self.known else "")
        lv = self.local.error or repr(self.local.value)[:400]
        rv = self.remote.error or repr(self.remote.value)[:400]
        tail = f"\n    h5pyd detail: {self.remote.detail[-600:]}" if self.remote.error and not self.local.error else ""
        return f"{head}\n    h5py : {lv}\n    h5pyd: {rv}{tail}"


# Exception classes that differ by library, not by what the server answers.
SAME_ERRORS = [
    {"KeyError", "ValueError"}, {"TypeError", "ValueError"}, {"IndexError", "ValueError"},
    {"RuntimeError", "ValueError"}, {"IndexError", "TypeError"}, {"RuntimeError", "OSError"},
]


def same_error(a: str, b: str) -> bool:
    return a == b or any({a, b} <= s for s in SAME_ERRORS)


def _reopened(open_remote: Callable[[str], Any], mode: str) -> Side:
    """The h5pyd file opened again, flushed once: h5pyd 1.0 drops the deletes made before a
    reopened file's first flush (API-NOTES 7.1), which HSDS would lose as well."""
    f = open_remote(mode)
    if mode != "r":
        f.flush()
    return Side(f, h5pyd)


def run(seed: int, steps: int, local_path: str, open_remote: Callable[[str], Any],
        known: Callable[[str, Outcome, Outcome], str | None] = lambda t, a, b: None,
        reopen_every: int = 25, reached: list[int] | None = None, more: float = 0.15) -> list[Difference]:
    """Run ``steps`` operations of ``seed``; the differences. ``reached`` gets the number of
    steps made (fewer when the files came apart: one side changed and the other refused);
    ``more``: the share of operations drawn from :func:`op_more`."""
    rng = random.Random(seed)
    m = Model()
    diffs: list[Difference] = []
    a = Side(h5py.File(local_path, "w"), h5py)
    b = Side(open_remote("w"), h5pyd)
    try:
        for s in (a, b):
            s.f.create_group("g0")
        b.f.flush()
        step = 0
        while step < steps:
            op = rand_op(rng, m, a.f, more)
            if op is None:
                continue
            step += 1
            if reached is not None:
                reached[:] = [step]
            ra, rb = attempt(op.fn, a), attempt(op.fn, b)
            if _differ(ra, rb):
                diffs.append(Difference(seed, step, op.text, ra, rb, known(op.text, ra, rb)))
            if op.dataset and ra.error and not rb.error and _resync(a.f, b.f, op.dataset):
                pass  # a write h5py refuses and h5pyd makes: h5py's file took the result
            elif op.changes and bool(ra.error) != bool(rb.error) and not op.noop_if_refused:
                # one side changed the file and the other did not: the files differ from here
                # on, and the rest of the seed would show only that
                return diffs
            if rb.error and op.changes:
                # h5pyd keeps a change the server refused and sends it again at every flush
                abandon(b.f)
                b = _reopened(open_remote, "r+")
            elif step % reopen_every == 0:
                b.f.close()
                b = _reopened(open_remote, "r+")
        b.f.close()
        b = Side(open_remote("r"), h5pyd)
        ta, tb = tree(a.f), tree(b.f)
        for key in sorted(set(ta) | set(tb)):
            oa = Outcome(ta[key]) if key in ta else Outcome(error="(absent)")
            ob = Outcome(tb[key]) if key in tb else Outcome(error="(absent)")
            if _differ(oa, ob):
                diffs.append(Difference(seed, -1, f"final tree: {key[1]} of {key[0]}", oa, ob,
                                        known(f"tree {key[1]}", oa, ob)))
    finally:
        a.f.close()
        if b.f:
            abandon(b.f)
    return diffs


def _resync(a: Any, b: Any, name: str) -> bool:
    if a[name].size == 0:
        return True  # (h5py refuses writing no element of a variable-length type; nothing changed)
    if _variable(a[name].dtype):
        # h5pyd's reading of a vlen (0 for an empty element) or reference (bytes) crashes
        # h5py when written back: the seed ends there
        return False
    try:
        value = b[name][()]
        a[name][()] = value
        return True
    except Exception:  # noqa: BLE001 - a value h5py cannot take as it is: the seed ends there
        return False


def _vstr_compounds_dropped(v: Any, by: Any = None) -> Any:
    """Attributes (a dict by name) without those whose value (in ``by``, else ``v``) is a
    compound holding a vlen string, which h5json 2.0 misreads."""
    by = v if by is None else by
    if not isinstance(v, dict) or not isinstance(by, dict):
        return v
    return {k: x for k, x in v.items() if not ("'compound'" in repr(by.get(k)) and "'vstr'" in repr(by.get(k)))}


def _emptied(v: Any) -> Any:
    """Empty vlen elements as the 0 h5pyd 1.0 reads (an empty array of vlens, as an empty
    region of a vlen dataset reads, stays an array)."""
    if isinstance(v, tuple) and len(v) == 4 and v[0] == "nd" and v[2] == (0,) and not (
            isinstance(v[1], tuple) and v[1][:1] == ("vlen",)):
        return 0
    if isinstance(v, (list, tuple)):
        return type(v)(_emptied(x) for x in v)
    if isinstance(v, dict):
        return {k: _emptied(x) for k, x in v.items()}
    return v


def _null_space(a: Any, b: Any) -> bool:
    """A null-space dataset as h5py shows it, beside the scalar HSDS makes of it."""
    if isinstance(a, tuple) and a[:1] == ("dataset",) and isinstance(b, tuple) and b[:1] == ("dataset",):
        return a[2] is None and b[2] == ()
    if isinstance(a, tuple) and a[:1] == ("empty",):
        return not (isinstance(b, tuple) and b[:1] == ("empty",))
    return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) > 2 and a[0] is None and b[0] == []


def _scale_text(v: Any, paths: bool = True) -> Any:
    """Attributes with NAME and DIMENSION_LABELS as plain text, DIMENSION_LIST and REFERENCE_LIST
    as the paths they name (``paths`` false: as how many)."""
    if isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in v):
        v = dict(v)
    if not isinstance(v, dict):
        return v
    out = dict(v)
    if out.get("NAME") in ("", ("np", "|S0", b"")):
        del out["NAME"]  # (h5pyd makes a dataset attached unmade a scale named "")
    for k in ("DIMENSION_LIST", "REFERENCE_LIST"):
        if k in out:
            # (h5pyd attaches a scale once per dimension, where HDF5 lists it again; it keeps a
            # DIMENSION_LIST of no scale, which HDF5 deletes)
            out[k] = sorted(set(re.findall(r"\('ref', '(/[^']*)'\)", repr(out[k]))))
            if not out[k]:
                del out[k]
            elif not paths:
                out[k] = len(out[k])
    for k in ("NAME", "DIMENSION_LABELS"):
        x = out.get(k)
        if isinstance(x, tuple) and x[0] == "np":
            x = x[2]
        elif isinstance(x, tuple) and x[0] == "nd":
            x = x[3]
        out[k] = [e.decode() if isinstance(e, bytes) else e for e in x] if isinstance(x, list) else (
            x.decode() if isinstance(x, bytes) else x)
    return out


def _texts(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [_texts(x) for x in v]
    return v


def _flat(v: Any) -> Any:
    """Arrays with their shapes left out."""
    if isinstance(v, tuple) and len(v) == 4 and v[0] == "nd":
        return ("nd", v[1], _flat(v[3]))
    if isinstance(v, (list, tuple)):
        return type(v)(_flat(x) for x in v)
    return v


def _region_shapes(v: Any) -> Any:
    """Values with the shapes of the regions that region references read left out (in the
    attributes of the final tree too, a dict by name)."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "ref" and isinstance(v[1], tuple) and len(v[1]) == 2:
        name, read = v[1]
        if isinstance(read, tuple) and len(read) == 4 and read[0] == "nd":
            return ("ref", (name, ("nd", read[1], None, read[3])))
    if isinstance(v, dict):
        return {k: _region_shapes(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_region_shapes(x) for x in v)
    return v


def _regions_hidden(v: Any) -> Any:
    """Values with every region reference's reading left out."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "ref" and isinstance(v[1], tuple) and len(v[1]) == 2 and (
            v[1][0] == "dangling" or (isinstance(v[1][1], tuple) and v[1][1][:1] == ("nd",))):
        return ("ref", "(a region)")
    if isinstance(v, dict):
        return {k: _regions_hidden(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_regions_hidden(x) for x in v)
    return v


def _nulls(v: Any) -> Any:
    if v == b"None":
        return ("ref", None)
    if isinstance(v, (list, tuple)):
        return type(v)(_nulls(x) for x in v)
    return v


def _paths(v: Any) -> Any:
    """References with the path they were resolved to left out."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "ref" and isinstance(v[1], str):
        return ("ref", "(a path)")
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "ref" and isinstance(v[1], tuple) and len(v[1]) == 2 and (
            isinstance(v[1][0], str) and v[1][0] != "dangling"):
        return ("ref", ("(a path)", _paths(v[1][1])))  # (a region reference: its dataset's path, its values)
    if isinstance(v, (list, tuple)):
        return type(v)(_paths(x) for x in v)
    if isinstance(v, dict):
        return {k: _paths(x) for k, x in v.items()}
    return v


def _squeezed(v: Any) -> Any:
    if isinstance(v, tuple) and len(v) == 4 and v[0] == "nd" and v[2] == (1,) and isinstance(v[1], str):
        return ("nd", v[1], (), v[3])
    if isinstance(v, (list, tuple)):
        return type(v)(_squeezed(x) for x in v)
    if isinstance(v, dict):
        return {k: _squeezed(x) for k, x in v.items()}
    return v


def abandon(f: Any) -> None:
    """Close an h5pyd file without sending what it holds."""
    db = f.id.db
    for pending in (db._new_objects, db._dirty_objects, db._deleted_objects, db._resized_datasets,
                    db._dataset_updates):
        pending.clear()
    f.close()


def _differ(a: Outcome, b: Outcome) -> bool:
    if a.error or b.error:
        # h5pyd raises OSError for any refusal by the server, whatever h5py calls it
        return not (a.error and b.error and (same_error(a.error, b.error) or b.error == "OSError"))
    return bool(a.value != b.value)


def known_difference(text: str, local: Outcome, remote: Outcome) -> str | None:
    """Why a difference is h5pyd's own (HSDS would show it too), or None."""
    if text == "tree value" and isinstance(remote.value, tuple) and remote.value[:1] == ("error",) and (
            "has no attribute 'get'" in remote.value[-1]):
        return "h5json 2.0 reads no compound of compounds with vlen strings (the server's bytes are right)"
    if not local.error and not remote.error:
        if _squeezed(local.value) == _squeezed(remote.value):
            return "h5json 2.0 reads a one-element vlen as a 0-d array (the server sends [v], as HSDS)"
        if _emptied(local.value) == remote.value:
            return "h5pyd 1.0 reads an empty vlen element as 0 (API-NOTES 7.9)"
        if local.value == ("ref", None) and remote.value == ("np", "|S0", b""):
            return "h5pyd 1.0 reads a null reference as b''"
        if ".fields(" in text:
            return "h5pyd 1.0's fields() keeps the dataset's field order (h5py: the order asked)"
        if "('vlen', '>" in text:
            return "h5py 3.16 reads a big-endian vlen's elements as native numbers of swapped bytes"
        if "attrs" in text and "vstr" in text and "compound" in text:
            return "h5json 2.0 misreads compound attributes with a vlen string field (the JSON is right)"
        if text == "tree attrs" and _vstr_compounds_dropped(local.value) == _vstr_compounds_dropped(remote.value, local.value):
            return "h5json 2.0 misreads compound attributes with a vlen string field (the JSON is right; final tree)"
    if "(null space)" in text or (not local.error and not remote.error and _null_space(local.value, remote.value)):
        return "h5pyd 1.0 sends no shape for a null-space dataset, which HSDS (as h5lake) makes scalar"
    if not local.error and not remote.error and ("RegionReference" in repr(local.value) or "region" in text) and (
            _flat(local.value) == _flat(remote.value)
            or _region_shapes(local.value) == _region_shapes(remote.value)
            or _region_shapes(local.value) == _nulls(_region_shapes(remote.value))):  # (with a null reference, below)
        return ("h5pyd 1.0 reads a region in the shape of its selection as numpy gives it (h5py: the bounding "
                "block, 0 in every axis when empty)")
    if not local.error and not remote.error and _nulls(local.value) == _nulls(remote.value):
        return "h5pyd 1.0 holds a null reference it sent as the text 'None' until read back (then b'')"
    if not local.error and not remote.error and "/hard" in repr(local.value) + repr(remote.value) and (
            _paths(local.value) == _paths(remote.value)):
        return "an object reached by several hard links: each library names it by one of them"
    if "g0/'" in text and not local.error and not remote.error and repr(remote.value) == repr(local.value).replace(
            "'/g0'", "'/g0/'"):
        return "h5pyd 1.0 keeps the trailing '/' of the path it was given in the object's name"
    paths = "/hard" not in repr(local.value) + repr(remote.value)  # (else: an object of several names, below)
    if "attrs" in text and not local.error and not remote.error and "('stale', " in repr(local.value) and (
            _scale_text(local.value, paths) == _scale_text(remote.value, paths)):
        return ("HDF5 adds a REFERENCE_LIST row at every attach_scale and a detach removes one (a scale attached "
                "twice and detached keeps a stale row); h5pyd 1.0 lists a dataset's dimension once "
                "(_hl/dims.py _update_reflist) and its detach removes it (and the scale writes above)")
    if text.endswith(".attrs), keys") and not local.error and not remote.error and isinstance(local.value, list) and (
            isinstance(remote.value, list) and "CLASS" in local.value[1] and "NAME" not in local.value[1]
            and remote.value[0] == local.value[0] + 1 and sorted(remote.value[1]) == sorted([*local.value[1], "NAME"])):
        return ("h5pyd 1.0's attach_scale makes a dataset that is not a scale one with NAME '' (_hl/dims.py "
                "attach_scale -> create_scale -> h5ds.set_scale -> set_obj_name); HDF5's H5DSattach_scale writes "
                "CLASS alone")
    if "attrs" in text and not local.error and not remote.error and any(
            _scale_text(v, paths) == _scale_text(w, paths)
            for v, w in ((local.value, remote.value), (_squeezed(local.value), _squeezed(remote.value)))):
        return ("h5pyd 1.0 writes a scale's NAME and DIMENSION_LABELS as variable UTF-8 strings (HDF5: fixed, "
                "ASCII), REFERENCE_LIST as (dataset, index i4) (HDF5: dimension u4), DIMENSION_LIST's rows as refs")
    scale_names = {"NAME", "DIMENSION_LIST", "REFERENCE_LIST"}  # (h5pyd keeps a REFERENCE_LIST of no dataset)
    if "attrs" in text and not local.error and not remote.error and any(
            _scale_text(_region_shapes(v), paths) == _scale_text(_region_shapes(remote.value), paths)
            for v in (local.value, _emptied(local.value))):
        return ("a scale's attributes as h5pyd 1.0 writes them, regions read in the shape of their selection "
                "(and empty vlen elements read as 0; all above)")
    if local.error and remote.error == "error" and "format requires 0 <=" in remote.detail:
        return "h5json 2.0 fails to pack a region selection h5py refuses (struct.error, before any request)"
    if not local.error and not remote.error and "('dangling', 'TypeError')" in repr(remote.value) and (
            "RegionReference" in repr(local.value)) and (
            _scale_text(_regions_hidden(local.value), paths) == _scale_text(_regions_hidden(remote.value), paths)):
        return ("h5pyd 1.0 cannot read a region reaching past its dataset's extent, as after a shrink (h5json: "
                "'Region reference shape does not match dataset shape'; h5py reads what is left)")
    if not local.error and not remote.error and "('dangling', 'AttributeError')" in repr(remote.value) and (
            "'compound'" in repr(local.value) and "'vstr'" in repr(local.value)) and (
            _regions_hidden(local.value) == _regions_hidden(remote.value)):
        return ("h5json 2.0 cannot unpack a compound with a vlen string field (readElement: 'NoneType' object has "
                "no attribute 'get'), also where a region reference reads it; the server's values are right")
    if "create_group(" in text and isinstance(local.value, str) and isinstance(remote.value, str) and (
            local.value != remote.value and local.value.rsplit("/", 1)[-1] == remote.value.rsplit("/", 1)[-1]
            and set(remote.value.split("/")) <= set(local.value.split("/"))):
        return ("h5pyd 1.0's create_group('a/b/c') makes the missing groups on the way but names the new group "
                "from the last parent that existed (_hl/group.py: parent_name is not advanced)")
    if text == "tree attr order" and sorted(set(local.value or []) | scale_names) == sorted(
            set(remote.value or []) | scale_names):
        return ("an attribute assigned again keeps its place in creation order, as HSDS keeps its created time "
                "(h5pyd 1.0 sends modify() and assignment alike; h5py's assignment makes it anew, last)")
    unlinked_region = "('ref', (None, " in repr(remote.value) or (
        "dereference" in text and isinstance(remote.value, list) and remote.value[:1] == [None])
    if not local.error and not remote.error and (("'dangling'" in repr(local.value) and "'dangling'" not in repr(
            remote.value)) or ("'unlinked'" in repr(remote.value) and "'unlinked'" not in repr(local.value)) or (
            unlinked_region and "('ref', (None, " not in repr(local.value) and not (
                isinstance(local.value, list) and local.value[:1] == [None]))):
        return ("an unlinked object lives on, so references to it resolve (h5pyd 1.0 deletes the link only and "
                "HSDS keeps the object; HDF5 frees it, and may put a new object at its address)")
    if "dtype=f[" in text and not local.error and not remote.error and _texts(local.value) == _texts(remote.value):
        return "h5pyd 1.0 reads a new dataset of a committed string type from its cache as str (bytes once sent)"
    if "getclass=True" in text and local.error == "RuntimeError" and remote.error == "KeyError":
        return "h5pyd 1.0 raises KeyError for a soft link to nothing (h5py: RuntimeError)"
    if "getclass=True" in text and remote.error and "Component not found" in remote.detail and "/" in text:
        return "h5pyd 1.0's get('a/b', getclass=True) looks the whole path up again below a"
    if "make_scale(" in text and local.error and not remote.error:
        return "h5pyd 1.0 makes a scale of a dataset that has scales attached (h5py: RuntimeError)"
    if "detach_scale(" in text and local.error and not remote.error:
        return "h5pyd 1.0 detaches a scale that is not attached as nothing (h5py: RuntimeError)"
    if local.error and not remote.error and "] = " not in text and ("[" in text or "create_dataset" in text):
        return ("h5pyd 1.0 reads with index lists h5py refuses (unsorted, several) and sends chunks "
                "beyond a maxshape of 0, which means unlimited on the wire (as to HSDS)")
    if local.error and not remote.error and "] = " in text:
        return "h5pyd 1.0 makes a write h5py refuses (unsorted or broadcast index lists, masks)"
    for needle, why in KNOWN:
        if needle in text or (remote.error and needle in remote.detail):
            return why
    if remote.error and not remote.server and not local.error:
        last = remote.detail.strip().splitlines()[-1][:120]
        return f"raised inside h5pyd/h5json, no request made or answer read: {last}"
    return None


# (text of the operation or of h5pyd's exception, why it is the client's)
KNOWN = [
    (".astype(", "h5pyd 1.0's astype() reads in the dataset's own type (the dtype is never sent)"),
    ("f.move(", "h5pyd 1.0's Group.move is a no-op"),
    ("Link [", "h5pyd 1.0's del group[path] takes one link name (no '/' in it)"),
    ("numpy.empty(self.shape)[args]", "h5pyd 1.0's read_direct of an empty selection indexes numpy with a selection"),
    ("BaseType can't be deterined", "h5json 2.0 reads no vlen string in a nested compound attribute"),
    ("could not assign tuple of length", "h5json 2.0 reads no array field of a compound attribute"),
    ("Boolean mask shape must match dataset shape", "h5pyd 1.0 takes a mask only over the whole dataset"),
    ("out of range (0-", "h5pyd 1.0 refuses a negative index beside an index list in a write"),
    ("readElement", "h5json 2.0 cannot unpack some nested compounds with vlen strings (fields() reads)"),
    ("getElementSize", "h5json 2.0 cannot size a value holding None (a null reference, a vlen)"),
    ("copyElement", "h5json 2.0 cannot pack a compound of a vlen string and an array field"),
    ("cannot reshape array of size 1", "h5pyd 1.0 broadcasts no scalar of a vlen or compound type"),
    ("Invalid layout value", "h5json 2.0 refuses a chunk layout for a zero extent (before any request)"),
    ("_Group__getitem", "h5pyd 1.0's get(absolute path, getlink=True) fails in the client"),
    ("'ascii' codec can't encode", "h5pyd 1.0 encodes fixed UTF-8 attributes as ASCII (docs/fidelity.md)"),
    ("Wrong committed datatype for complex numbers",
     "h5pyd 1.0's attrs.create refuses every committed type but a complex one (its test is inverted)"),
    ("No dimension scale with name", "h5pyd 1.0 raises KeyError for a scale name not attached (h5py: RuntimeError)"),
    ("No dimension scale found for index", "h5pyd 1.0 raises IndexError for a scale index past the last (h5py: RuntimeError)"),
    ("Region reference shape does not match dataset shape",
     ("h5pyd 1.0 cannot read a region whose dataset's extent changed since it was made (h5json compares the "
      "shapes; h5py reads what is left, or refuses a selection past the extent)")),
    ("Dataset is not resizable", "h5pyd sends no maxdims without maxshape; HSDS answers none, h5json refuses"),
]
