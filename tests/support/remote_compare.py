"""Compare an HDF5 file read with h5py against the same content read through h5pyd.

Every object reachable from the root is visited once (hard links to an object seen before are
compared as links only): group link names and kinds, soft and external link targets,
attributes (names, dtype, shape, value), datasets (dtype, shape, chunks, values) and committed
datatypes. Values are compared NaN-aware; object references by the path they point at.

What h5pyd 1.0 itself cannot represent (see docs/fidelity.md) is reported as a ``limit``
rather than a difference when the server's plain REST answer is right; everything else is a
``diff``. ``compare(source_path, domain, **h5pyd_options)`` returns both lists.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import h5py
import h5pyd
import numpy as np
import requests
from h5json.hdf5dtype import createDataType

MAX_READ = 64 << 20  # bytes of one dataset read whole; larger ones are read in a few slices


@dataclass
class Result:
    diffs: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    objects: int = 0


def _kind(obj: Any) -> str:
    if isinstance(obj, h5py.Group | h5pyd.Group):
        return "group"
    if isinstance(obj, h5py.Dataset | h5pyd.Dataset):
        return "dataset"
    return "datatype"


def _ref_names(file: Any, values: Any) -> Any:
    """Object references as the names of what they point at (None for a null reference)."""
    flat = np.asarray(values, dtype=object).reshape(-1)
    names: list[str | None] = []
    for ref in flat:
        if not ref:
            names.append(None)
            continue
        try:  # h5pyd reads a region reference as its own object, whose dataset is ``.id``
            names.append(file[ref.id if isinstance(ref, h5pyd.RegionReference) else ref].name)
        except Exception as exc:  # noqa: BLE001 - a dangling reference has no name
            names.append(f"<{type(exc).__name__}>")
    return names


H5PYD_READ_LIMITS = (
    # h5pyd 1.0 fails on these itself (the server's answer is checked with a plain REST read)
    "Invalid region reference byte stream",  # h5lake's region blobs (docs/fidelity.md)
    "cannot create an OBJECT array from memory buffer",  # region references in compounds
    "cannot reshape array of size",  # variable-length strings inside array types
    "codec can't encode character",  # fixed-length UTF-8 strings in attributes
    "Failed to parse vlen data",  # a vlen of vlens
    "setting an array element with a sequence",  # compounds inside arrays, in attributes (h5json's jsonToArray)
)


def _not_utf8(value: Any) -> bool:
    """Bytes JSON cannot hold (docs/fidelity.md, "Attribute bytes JSON cannot hold"): h5pyd 1.0
    reads attributes from the JSON value only."""
    flat = np.asarray(value, dtype=object).reshape(-1) if not isinstance(value, bytes) else [value]
    for v in flat:
        if isinstance(v, bytes | np.bytes_):
            try:
                bytes(v).decode("utf-8")
            except UnicodeDecodeError:
                return True
        if isinstance(v, str) and any("\udc80" <= c <= "\udcff" for c in v):
            return True  # h5py's surrogate escapes for such bytes in an ASCII vlen string
    return False


def _lenient(value: Any) -> Any:
    """What h5pyd 1.0 makes of some values: an empty sequence of a vlen reads as 0, fixed strings
    keep their space padding, a dangling reference fails with another error than h5py's."""
    if isinstance(value, np.ndarray) and value.size == 0 and value.ndim >= 1:
        return 0  # also an empty element of a vlen of vlens or of arrays (shape (0, n))
    if isinstance(value, np.ndarray | np.generic) and np.asarray(value).dtype.kind == "f" and np.asarray(value).itemsize > 8:
        return np.asarray(value).view(f"V{np.asarray(value).itemsize}")  # carried as opaque bytes
    if isinstance(value, np.ndarray | np.generic) and np.asarray(value).dtype.kind == "c":
        return [_lenient(np.asarray(value).real), _lenient(np.asarray(value).imag)]
    if isinstance(value, np.ndarray | np.generic) and np.asarray(value).dtype.names == ("r", "i"):
        return [_lenient(np.asarray(value)["r"]), _lenient(np.asarray(value)["i"])]
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).rstrip(b" ")
    if isinstance(value, str) and value.startswith("<") and value.endswith("Error>"):
        return "<dangling>"
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        return np.array([bytes(v).rstrip(b" ") for v in value.reshape(-1)], dtype=object).reshape(value.shape)
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        out = np.empty(value.shape, dtype=object)
        for i, v in enumerate(value.reshape(-1)):
            out.reshape(-1)[i] = _lenient(v)
        return out
    if isinstance(value, np.ndarray) and value.dtype.names:
        return [_lenient(value[n]) for n in value.dtype.names]
    if isinstance(value, np.void) and value.dtype.names:
        return [_lenient(value[n]) for n in value.dtype.names]
    if isinstance(value, list):
        return [_lenient(v) for v in value]
    return value


def _normal(value: Any) -> Any:
    """A value as a comparable Python object: bytes and str alike, arrays as nested lists.
    References inside vlens and compounds (h5py's Reference, h5pyd's id strings) are a marker."""
    if isinstance(value, h5py.Empty | h5pyd.Empty) or value is None:
        return ("<empty>",)
    if isinstance(value, h5py.Reference | h5py.RegionReference) or _is_id(value):
        return "<ref>" if value else "<null ref>"
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return ("array", value.shape, value.dtype.kind, np.nan_to_num(value, nan=1.2345e-300).tolist(), np.isnan(value).tolist())
        if value.dtype.kind == "O":
            return ("array", value.shape, [_normal(v) for v in value.reshape(-1)])
        if value.dtype.names:
            return ("array", value.shape, [_normal(value[n]) for n in value.dtype.names])
        if value.dtype.kind == "S":
            return ("array", value.shape, [_normal(v) for v in value.reshape(-1).tolist()])
        if value.dtype.kind == "V":
            return ("array", value.shape, value.tobytes())
        return ("array", value.shape, value.tolist())
    if isinstance(value, np.void):
        if value.dtype.names:
            return tuple(_normal(value[n]) for n in value.dtype.names)
        return bytes(value.tobytes())
    if isinstance(value, np.generic):
        return _normal(np.asarray(value))
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value


def _is_id(value: Any) -> bool:
    """An object reference as h5pyd gives it: ``b"datasets/d-..."`` (or groups, datatypes)."""
    text = bytes(value) if isinstance(value, bytes | np.bytes_) else None
    return text is not None and (text.startswith((b"groups/g-", b"datasets/d-", b"datatypes/t-")))


def _dtype_text(dt: np.dtype[Any]) -> str:
    """The dtype with h5py's metadata (string kind, enum, vlen, ref) spelled out; references
    are only "ref" (h5py's is an object dtype, h5pyd's a fixed string of ids)."""
    if h5py.check_ref_dtype(dt) is not None:
        return "ref"
    if dt.kind == "f" and dt.itemsize > 8:  # long double: carried as opaque bytes of its size
        return f"|V{dt.itemsize}"
    if dt.kind == "c":  # as h5pyd 1.0 reads HDF5's complex: the compound (r, i)
        half = np.dtype(f"{dt.byteorder if dt.byteorder != '=' else '<'}f{dt.itemsize // 2}")
        return f"r:{half.str},i:{half.str}"
    fields: Any = dt.fields or {}
    parts = [dt.str if not dt.names else ",".join(f"{n}:{_dtype_text(fields[n][0])}" for n in dt.names)]
    if dt.subdtype is not None:
        parts = [f"{_dtype_text(dt.subdtype[0])}{dt.subdtype[1]}"]
    string = h5py.check_string_dtype(dt)
    if string is not None:
        parts.append(f"str:{string.encoding}:{string.length}")
    vlen = h5py.check_vlen_dtype(dt)
    if vlen is not None and string is None:
        parts.append(f"vlen:{_dtype_text(vlen)}")
    enum = h5py.check_enum_dtype(dt)
    if enum is not None:
        parts.append(f"enum:{sorted(enum.items())}")
    return "|".join(parts)


def _carried(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    """A float numpy has (long double) that h5lake carries as opaque bytes of its size (V16)."""
    return a.kind == "f" and a.itemsize > 8 and b.kind == "V" and b.itemsize == a.itemsize


def _complex_as_void(dt: np.dtype[Any]) -> np.dtype[Any]:
    """``dt`` with every complex part (also in compounds and arrays) as opaque bytes of its size."""
    if dt.kind == "c":
        return np.dtype(f"V{dt.itemsize}")
    if dt.subdtype is not None:
        return np.dtype((_complex_as_void(dt.subdtype[0]), dt.subdtype[1]))
    if dt.names:
        fields: Any = dt.fields
        return np.dtype({"names": list(dt.names), "formats": [_complex_as_void(fields[n][0]) for n in dt.names], "offsets": [fields[n][1] for n in dt.names], "itemsize": dt.itemsize})
    return dt


def _native_complex(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    """HDF5 2.0's native complex type (H5T_COMPLEX), carried by h5lake as opaque bytes of its size:
    h5pyd 1.0 reads them as ``V8``/``V16``, also inside compounds and arrays (the compound form
    of complex is `_complex_as_pair`)."""
    return a != b and _complex_as_void(a) != a and _dtype_text(_complex_as_void(a)) == _dtype_text(b)


def _as_file_bytes(value: Any, b: np.dtype[Any]) -> Any:
    """h5py's complex values as the opaque bytes h5lake carries them in (the file's byte order)."""
    arr = np.asarray(value)
    return arr.view(_complex_as_void(arr.dtype)) if _complex_as_void(arr.dtype) != arr.dtype else value


def _h5py_vlen_fix(dt: np.dtype[Any], values: Any) -> Any:
    """h5py returns the elements of a vlen of a non-native integer or float in a native-order
    array holding the file-order bytes (h5dump and h5lake give the true values): view them in
    the base type's order."""
    base = h5py.check_vlen_dtype(dt)
    if base is None or h5py.check_string_dtype(dt) is not None or base.byteorder not in "<>" or base.isnative:
        return values
    flat = np.asarray(values, dtype=object).reshape(-1)
    fixed = np.empty(flat.shape, dtype=object)
    for i, v in enumerate(flat):
        fixed[i] = np.asarray(v).view(base)
    return fixed.reshape(np.shape(values))


def _complex_as_pair(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    """h5pyd 1.0 reads HDF5's complex (a compound of two floats named r and i) as that compound."""
    return a.kind == "c" and b.names == ("r", "i") and b["r"] == np.dtype(f"{a.byteorder if a.byteorder != '=' else '<'}f{a.itemsize // 2}")


def _is_ref(dt: np.dtype[Any]) -> bool:
    return h5py.check_ref_dtype(dt) is not None


def _same_values(a: Any, b: Any) -> bool:
    try:
        return bool(_normal(a) == _normal(b))
    except ValueError:
        return False


def _same_leniently(a: Any, b: Any) -> bool:
    try:
        return bool(_normal(_lenient(a)) == _normal(_lenient(b)))
    except (ValueError, TypeError):
        return False


class _Walker:
    def __init__(self, src: h5py.File, out: Any, domain: str, options: dict[str, Any]) -> None:
        self.src, self.out, self.domain, self.options = src, out, domain, options
        self.result = Result()
        self.seen: set[int] = set()

    def diff(self, text: str) -> None:
        self.result.diffs.append(text)

    def run(self) -> Result:
        self.object("/", self.src["/"], self.out["/"])
        return self.result

    def object(self, path: str, a: Any, b: Any) -> None:
        addr = h5py.h5o.get_info(a.id).addr
        if addr in self.seen:
            return
        self.seen.add(addr)
        self.result.objects += 1
        if _kind(a) != _kind(b):
            self.diff(f"{path}: kind {_kind(a)} != {_kind(b)}")
            return
        self.attributes(path, a, b)
        if isinstance(a, h5py.Group):
            self.group(path, a, b)
        elif isinstance(a, h5py.Dataset):
            self.dataset(path, a, b)
        else:
            try:
                self.dtype(f"{path} (datatype)", a.dtype, b.dtype)
            except (TypeError, ValueError) as exc:
                self.result.limits.append(f"{path}: h5py has no numpy type for it ({exc})")

    def dtype(self, where: str, a: np.dtype[Any], b: np.dtype[Any]) -> bool:
        ta, tb = _dtype_text(a), _dtype_text(b)
        if _complex_as_pair(a, b):
            self.result.limits.append(f"{where}: complex read by h5pyd as the compound (r, i)")
            return True
        if _carried(a, b):
            self.result.limits.append(f"{where}: {a} carried as opaque bytes (docs/fidelity.md)")
            return False
        if _native_complex(a, b):
            self.result.limits.append(f"{where}: HDF5's native {a} carried as opaque bytes, compared as bytes (docs/fidelity.md)")
            return True
        if ta != tb:
            self.diff(f"{where}: dtype {ta} != {tb}")
            return False
        return True

    def attributes(self, path: str, a: Any, b: Any) -> None:
        names_a = list(a.attrs)
        try:
            names_b = list(b.attrs)
        except Exception as exc:  # noqa: BLE001 - reported as the difference it is
            self.diff(f"{path}: listing attributes failed: {type(exc).__name__}: {exc}")
            return
        if sorted(names_a) != sorted(names_b):
            self.diff(f"{path}: attribute names {sorted(names_a)} != {sorted(names_b)}")
        for name in names_a:
            if name not in names_b:
                continue
            where = f"{path} attribute {name!r}"
            try:
                value_a = a.attrs[name]
            except Exception as exc:  # noqa: BLE001 - h5py cannot read it either: nothing to compare
                self.result.limits.append(f"{where}: h5py cannot read it ({type(exc).__name__})")
                continue
            try:
                value_b = b.attrs[name]
                dt_b = createDataType(b.id.db.getAttribute(b.id.uuid, name)["type"])
            except Exception as exc:  # noqa: BLE001
                self.read_failed(where, exc, b, f"attributes/{name}")
                continue
            try:
                dt_a = a.attrs.get_id(name).dtype
            except (TypeError, ValueError) as exc:
                self.result.limits.append(f"{where}: h5py has no numpy type for it ({exc})")
                continue
            self.dtype(where, dt_a, dt_b)
            if _complex_as_pair(dt_a, dt_b):
                value_b = _as_complex(value_b)
            if _native_complex(dt_a, dt_b):
                value_a = _as_file_bytes(value_a, dt_b)
            if _is_ref(dt_a):
                value_a, value_b = _ref_names(self.src, value_a), _ref_names(self.out, value_b)
            if _same_values(value_a, value_b):
                continue
            if _same_leniently(value_a, value_b):
                self.result.limits.append(f"{where}: equal as h5pyd 1.0 reads it (empty vlen as 0, space padding kept)")
            elif _not_utf8(value_a):
                self.result.limits.append(f"{where}: bytes that are not UTF-8, which h5pyd 1.0 reads from JSON")
            else:
                self.diff(f"{where}: value {_short(value_a)} != {_short(value_b)}")

    def group(self, path: str, a: h5py.Group, b: Any) -> None:
        names_a = list(a)
        try:
            names_b = list(b)
        except Exception as exc:  # noqa: BLE001
            self.diff(f"{path}: listing links failed: {type(exc).__name__}: {exc}")
            return
        if sorted(names_a) != sorted(names_b):
            missing = sorted(set(names_a) - set(names_b))[:5]
            extra = sorted(set(names_b) - set(names_a))[:5]
            self.diff(f"{path}: link names differ ({len(names_a)} vs {len(names_b)}; missing {missing}, extra {extra})")
        if a.id.get_create_plist().get_link_creation_order() and names_a != names_b and sorted(names_a) == sorted(names_b):
            self.diff(f"{path}: creation order {names_a[:5]} != {names_b[:5]}")
        for name in names_a:
            if name not in names_b:
                continue
            child = f"{path.rstrip('/')}/{name}"
            try:
                la = a.get(name, getlink=True)
            except TypeError:  # a user-defined link class: h5py cannot show it
                self.result.limits.append(f"{child}: user-defined link, not readable by h5py")
                continue
            lb = b.get(name, getlink=True)
            if type(la).__name__ != type(lb).__name__:
                self.diff(f"{child}: link {type(la).__name__} != {type(lb).__name__}")
                continue
            if isinstance(la, h5py.SoftLink):
                if la.path != lb.path:
                    self.diff(f"{child}: soft link {la.path} != {lb.path}")
                continue
            if isinstance(la, h5py.ExternalLink):
                if (la.filename, la.path) != (lb.filename, lb.path):
                    self.diff(f"{child}: external link {(la.filename, la.path)} != {(lb.filename, lb.path)}")
                continue
            if not isinstance(la, h5py.HardLink):
                continue
            try:
                oa = a[name]
            except Exception:  # noqa: BLE001 - h5py cannot open it (a missing filter, say)
                self.result.limits.append(f"{child}: h5py cannot open it")
                continue
            try:
                ob = b[name]
            except TypeError as exc:  # h5json has no numpy type for the type JSON the server sent
                self.result.limits.append(f"{child}: h5pyd cannot open it: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001
                self.diff(f"{child}: h5pyd open failed: {type(exc).__name__}: {exc}")
                continue
            self.object(child, oa, ob)

    def dataset(self, path: str, a: h5py.Dataset, b: Any) -> None:
        if a.shape != b.shape:
            self.diff(f"{path}: shape {a.shape} != {b.shape}")
            return
        try:
            dt_a = a.dtype
        except (TypeError, ValueError) as exc:  # no numpy type for it (an 80-bit float in 16 bytes of another layout, H5T_TIME)
            self.result.limits.append(f"{path}: h5py has no numpy type for it ({exc})")
            return
        if not self.dtype(path, dt_a, b.dtype):
            return
        if a.shape is None or a.size == 0:
            return
        pair = _complex_as_pair(a.dtype, b.dtype)
        try:
            values_a = self.read(a)
        except Exception as exc:  # noqa: BLE001 - h5py cannot read it (a missing filter plugin)
            self.result.limits.append(f"{path}: h5py cannot read it ({type(exc).__name__}: {exc})")
            return
        try:
            values_b = self.read(b)
        except Exception as exc:  # noqa: BLE001
            self.read_failed(path, exc, b, "value")
            return
        if pair:
            values_b = _as_complex(values_b)
        if _native_complex(a.dtype, b.dtype):
            values_a = [_as_file_bytes(v, b.dtype) for v in values_a] if isinstance(values_a, list) else _as_file_bytes(values_a, b.dtype)
        if not isinstance(values_a, list):
            values_a = _h5py_vlen_fix(dt_a, values_a)
        if _is_ref(a.dtype):
            values_a, values_b = _ref_names(self.src, values_a), _ref_names(self.out, values_b)
        if _same_values(values_a, values_b):
            return
        if _same_leniently(values_a, values_b):
            self.result.limits.append(f"{path}: equal as h5pyd 1.0 reads it (empty vlen as 0, space padding kept)")
        else:
            self.diff(f"{path}: values differ: {_first_difference(values_a, values_b)}")

    def read_failed(self, where: str, exc: BaseException, obj: Any, tail: str) -> None:
        """A limit of h5pyd when its message is a known one and the server answers the same
        read over plain REST (binary); a difference otherwise."""
        text = f"{type(exc).__name__}: {str(exc)[:300]}"
        if any(known in str(exc) for known in H5PYD_READ_LIMITS):
            collection = {"d": "datasets", "g": "groups", "t": "datatypes"}[obj.id.uuid[0]]
            rsp = requests.get(
                f"{self.options['endpoint']}/{collection}/{obj.id.uuid}/{tail}",
                params={"domain": self.domain},
                auth=(self.options["username"], self.options["password"]),
                headers={"Accept": "application/octet-stream"},
                timeout=60,
            )
            if rsp.status_code == 200:
                self.result.limits.append(f"{where}: h5pyd 1.0 cannot read it ({text})")
                return
            self.diff(f"{where}: REST read answered {rsp.status_code}")
            return
        self.diff(f"{where}: h5pyd read failed: {text}")

    @staticmethod
    def read(d: Any) -> Any:
        if d.shape == () or d.size * d.dtype.itemsize <= MAX_READ:
            return d[()]
        step = max(1, d.shape[0] // 4)
        return [d[i : i + 1] for i in range(0, d.shape[0], step)]


def _as_complex(value: Any) -> Any:
    if isinstance(value, h5py.Empty | h5pyd.Empty):  # a null-space attribute has no values to convert
        return value
    if isinstance(value, list):
        return [_as_complex(v) for v in value]
    value = np.asarray(value)
    if value.dtype.kind == "c" or value.ndim == 0 and not value.dtype.names:
        return value
    if value.dtype.names:
        return value["r"] + 1j * value["i"]
    return value[..., 0] + 1j * value[..., 1]  # h5pyd gave the pairs as a plain array


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 200 else text[:200] + "..."


def _first_difference(a: Any, b: Any) -> str:
    with contextlib.suppress(Exception):  # shapes numpy cannot line up: the whole values instead
        fa, fb = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
        for i, (x, y) in enumerate(zip(fa, fb, strict=False)):
            if not _same_values(x, y):
                return f"at flat index {i}: {_short(x)} != {_short(y)}"
    return f"{_short(a)} != {_short(b)}"


def compare(source: str, domain: str, **options: Any) -> Result:
    with h5py.File(source, "r") as src, h5pyd.File(domain, "r", **options) as out:
        return _Walker(src, out, domain, options).run()
