"""HDF5 Map objects, pure part: key and value types, the bytes of keys and values, the hash that
places a key, and the binary format of a pair bucket (docs/maps.md).

A key is its bytes in the key type (packed, in the type's byte order; a variable-length string
is its encoded bytes, which may not hold NUL, as in HDF5). Two keys are equal when these bytes
are. A value is its wire bytes in the value type (packed for fixed-size types, the format of
:mod:`h5lake.model.vlen` otherwise).

In memory a set of keys is a numpy ``S<width>`` array (exact for fixed widths: every key has
the width; lossless for strings without NUL) and values a ``V<size>`` array or, for
variable-length values, an object array of ``bytes``. No I/O here.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.errors import DataCorruption, InvalidInput
from h5lake.maps.keys import bit_reversed, fingerprints, key_hashes
from h5lake.model import vlen
from h5lake.model.fromjson import json_to_array
from h5lake.model.types import (
    CharSet,
    TypeClass,
    TypeJson,
    array_dims,
    empty_array,
    is_variable,
    type_class,
    wire_dtype,
)
from h5lake.model.values import array_to_bytes, array_to_json, bytes_to_array

MAX_KEY_BYTES = 4096
"""The longest key (fixed width or encoded string)."""

_KEY_CLASSES = (TypeClass.INTEGER, TypeClass.FLOAT, TypeClass.STRING, TypeClass.OPAQUE)


def check_key_type(t: TypeJson, *, top: bool = True) -> None:
    """Key types: integers, floats, fixed or variable-length strings, fixed-size opaque, and
    compounds of fixed-size members of those."""
    cls = type_class(t)
    if cls is TypeClass.COMPOUND:
        for f in t["fields"]:
            check_key_type(f["type"], top=False)
    elif cls not in _KEY_CLASSES:
        raise InvalidInput(f"{cls.value} cannot be a map key type")
    if is_variable(t) and not top:
        raise InvalidInput("a compound key type needs fixed-size members")
    if not is_variable(t) and wire_dtype(t).itemsize > MAX_KEY_BYTES:
        raise InvalidInput(f"map keys are at most {MAX_KEY_BYTES} bytes")


def check_value_type(t: TypeJson) -> None:
    """Any type a dataset accepts; here only the empty compound is refused."""
    if type_class(t) is TypeClass.COMPOUND and not t["fields"]:
        raise InvalidInput("a map value type needs at least one field")


# --- keys -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyCodec:
    """Keys of one key type: JSON, packed bodies and URL path text to ``S`` arrays and back."""

    type_json: TypeJson

    @property
    def variable(self) -> bool:
        return is_variable(self.type_json)

    @property
    def width(self) -> int:
        """Bytes of a fixed-size key; 0 for variable-length strings."""
        return 0 if self.variable else wire_dtype(self.type_json).itemsize

    def _from_strings(self, items: list[bytes]) -> np.ndarray[Any, Any]:
        for k in items:
            if b"\0" in k:
                raise InvalidInput("a variable-length string key cannot hold NUL")
            if len(k) > MAX_KEY_BYTES:
                raise InvalidInput(f"map keys are at most {MAX_KEY_BYTES} bytes")
        width = max((len(k) for k in items), default=0)
        return np.array(items, dtype=f"S{max(1, width)}")

    def from_json(self, keys: Any) -> np.ndarray[Any, Any]:
        if not isinstance(keys, list):
            raise InvalidInput("keys must be a list")
        with _named("keys"):
            arr = json_to_array(keys, self.type_json, (len(keys),))
        if self.variable:
            return self._from_strings([_string_bytes(k) for k in arr])
        raw = array_to_bytes(arr, self.type_json)
        return np.frombuffer(raw, dtype=f"S{self.width}").copy()

    def from_text(self, text: str) -> np.ndarray[Any, Any]:
        """A key in a URL path: a string for string key types, decimal text for integers."""
        cls = type_class(self.type_json)
        if cls is TypeClass.STRING:
            value: Any = text
        elif cls is TypeClass.INTEGER:
            try:
                value = int(text, 10)
            except ValueError:
                raise InvalidInput(f"key {text[:40]!r} is not a decimal integer") from None
        else:
            raise InvalidInput(f"keys of class {cls.value} are given in batch bodies only (PUT/POST /maps/{{id}}/keys)")
        try:
            return self.from_json([value])
        except InvalidInput as e:
            raise InvalidInput(e.message.replace("keys[0]", f"key {text[:40]!r}", 1)) from None

    def from_packed(self, data: bytes | memoryview) -> np.ndarray[Any, Any]:
        """Packed keys: ``width`` bytes each, or the variable-length wire format."""
        if self.variable:
            return self._from_strings([_string_bytes(k) for k in _decode_all(data, self.type_json)])
        view = memoryview(data).cast("B")
        if len(view) % self.width:
            raise InvalidInput(f"packed keys: {len(view)} bytes is not a multiple of the key size {self.width}")
        return np.frombuffer(view, dtype=f"S{self.width}").copy()

    def from_cursor(self, raw: bytes) -> np.ndarray[Any, Any]:
        """One key from its raw bytes (a page cursor)."""
        if self.variable:
            return self._from_strings([raw])
        if len(raw) != self.width:
            raise InvalidInput("Cursor is not a cursor of this map")
        return np.frombuffer(raw, dtype=f"S{self.width}").copy()

    def to_array(self, keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Keys as elements of the key type (``str``/``bytes`` for variable-length strings)."""
        if self.variable:
            utf8 = self.type_json.get("charSet") == CharSet.UTF8
            out = np.empty(len(keys), dtype=object)
            out[:] = [k.decode("utf-8", "replace") if utf8 else k for k in keys.tolist()]
            return out
        return bytes_to_array(keys.astype(f"S{self.width}").tobytes(), self.type_json, (len(keys),))

    def to_json(self, keys: np.ndarray[Any, Any]) -> list[Any]:
        out: list[Any] = array_to_json(self.to_array(keys), self.type_json)
        return out

    def to_packed(self, keys: np.ndarray[Any, Any]) -> bytes:
        if self.variable:
            return vlen.encode_array(self.to_array(keys), self.type_json)
        return keys.astype(f"S{self.width}").tobytes()


@contextmanager
def _named(what: str) -> Iterator[None]:
    """An element's error names the list it is in (``keys[3]``), not ``value[3]``."""
    try:
        yield
    except InvalidInput as e:
        message = e.message
        if message.startswith(("value[", "value ")):
            message = what + message[len("value") :]
        raise InvalidInput(message) from None


def _string_bytes(k: Any) -> bytes:
    return k.encode("utf-8") if isinstance(k, str) else bytes(k)


def _decode_all(data: bytes | memoryview, t: TypeJson) -> list[Any]:
    """Elements of a variable-length wire body, as many as it holds."""
    view = memoryview(data).cast("B")
    decode = vlen.decoder(t)
    out, offset = [], 0
    try:
        while offset < len(view):
            item, offset = decode(view, offset)
            out.append(item)
    except (IndexError, ValueError, struct.error) as e:
        raise InvalidInput(f"malformed variable-length body: {e}") from None
    return out


# --- values ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueCodec:
    """Values of one value type: JSON and packed bodies to a ``V`` or object array and back."""

    type_json: TypeJson

    @property
    def variable(self) -> bool:
        return is_variable(self.type_json)

    @property
    def size(self) -> int:
        return 0 if self.variable else wire_dtype(self.type_json).itemsize

    def _split(self, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        n = len(arr)
        if self.variable:
            out = np.empty(n, dtype=object)
            out[:] = [array_to_bytes(arr[i : i + 1], self.type_json) for i in range(n)]
            return out
        return np.frombuffer(array_to_bytes(arr, self.type_json), dtype=f"V{self.size}").copy()

    def from_json(self, values: Any, count: int) -> np.ndarray[Any, Any]:
        if not isinstance(values, list) or len(values) != count:
            raise InvalidInput(f"values must be a list of {count} values, one per key")
        with _named("values"):
            arr = json_to_array(values, self.type_json, (count,))
        return self._split(arr)

    def one_from_json(self, value: Any) -> np.ndarray[Any, Any]:
        return self._split(json_to_array(value, self.type_json, ())[np.newaxis, ...])

    def from_packed(self, data: bytes | memoryview, count: int | None = None) -> np.ndarray[Any, Any]:
        if self.variable:
            dims, elem = array_dims(self.type_json)
            per = int(np.prod(dims)) if dims else 1
            ends = _element_ends(data, elem)
            if len(ends) % per or (count is not None and len(ends) != count * per):
                raise InvalidInput("packed values do not match the value type")
            raw = bytes(data)
            cuts = [0] + ends[per - 1 :: per]
            out = np.empty(len(cuts) - 1, dtype=object)
            out[:] = [raw[a:b] for a, b in itertools.pairwise(cuts)]
            return out
        view = memoryview(data).cast("B")
        if len(view) % self.size or (count is not None and len(view) != count * self.size):
            want = f"{count * self.size}" if count is not None else f"a multiple of {self.size}"
            raise InvalidInput(f"packed values: expected {want} bytes, got {len(view)}")
        return np.frombuffer(view, dtype=f"V{self.size}").copy()

    def to_array(self, values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return bytes_to_array(self.to_packed(values), self.type_json, (len(values),))

    def to_json(self, values: np.ndarray[Any, Any]) -> list[Any]:
        out: list[Any] = array_to_json(self.to_array(values), self.type_json)
        return out

    def to_packed(self, values: np.ndarray[Any, Any]) -> bytes:
        if self.variable:
            return b"".join(values.tolist())
        return values.tobytes()

    def zero(self) -> bytes:
        """The packed form of an absent value in a binary batch reply: the type's default
        element (zeros, empty strings, empty sequences)."""
        return array_to_bytes(empty_array(self.type_json, (1,)), self.type_json)


def field_ends(data: memoryview, key_type: TypeJson, value_type: TypeJson) -> list[tuple[int, int, int]]:
    """(start, end of key, end of value) of each (key, value) record of a variable-length wire
    body (a compound of the two: each field by the rules of :mod:`h5lake.model.vlen`)."""
    view = data.cast("B") if data.format != "B" else data
    read_key, read_value = vlen.decoder(key_type), vlen.decoder(value_type)
    out, offset = [], 0
    try:
        while offset < len(view):
            _, mid = read_key(view, offset)
            _, end = read_value(view, mid)
            out.append((offset, mid, end))
            offset = end
    except (IndexError, ValueError, struct.error) as e:
        raise InvalidInput(f"malformed variable-length body: {e}") from None
    return out


def _element_ends(data: bytes | memoryview, t: TypeJson) -> list[int]:
    """The offset after each element of a variable-length wire body, as many as it holds."""
    view = memoryview(data).cast("B")
    decode = vlen.decoder(t)
    ends, offset = [], 0
    try:
        while offset < len(view):
            _, offset = decode(view, offset)
            ends.append(offset)
    except (IndexError, ValueError, struct.error) as e:
        raise InvalidInput(f"malformed variable-length body: {e}") from None
    return ends


# --- pairs and buckets ----------------------------------------------------------------------------


@dataclass(slots=True)
class Pairs:
    """Pairs in iteration order: by bit-reversed key hash, then key bytes."""

    keys: np.ndarray[Any, Any]
    values: np.ndarray[Any, Any]

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, index: Any) -> Pairs:
        return Pairs(self.keys[index], self.values[index])


def empty_pairs(value_variable: bool, value_size: int) -> Pairs:
    values = np.empty(0, dtype=object) if value_variable else np.empty(0, dtype=f"V{max(1, value_size)}")
    return Pairs(np.empty(0, dtype="S1"), values)


def _concat_keys(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    width = max(a.dtype.itemsize, b.dtype.itemsize)
    return np.concatenate([a.astype(f"S{width}"), b.astype(f"S{width}")])


def _sortable(keys: np.ndarray[Any, Any], variable_keys: bool) -> np.ndarray[Any, Any]:
    """Keys as something that sorts like their bytes, faster: big-endian integers when the width
    allows."""
    width = keys.dtype.itemsize
    return keys.view(f">u{width}") if width in (1, 2, 4, 8) and not variable_keys else keys


def merge(old: Pairs, new: Pairs, deleted: np.ndarray[Any, Any], variable_keys: bool) -> tuple[Pairs, int, int]:
    """``old`` (in iteration order) with ``new`` applied in order (``deleted[i]``: new pair
    ``i`` is a delete, its value ignored). Returns (pairs in order, keys added, keys removed).

    Only the new pairs are sorted; they are then placed among the old ones by binary search.
    """
    width = max(old.keys.dtype.itemsize, new.keys.dtype.itemsize)
    old_keys = old.keys.astype(f"S{width}", copy=False)
    new_keys = new.keys.astype(f"S{width}", copy=False)
    hn = bit_reversed(key_hashes(new_keys, variable_keys))
    order = np.argsort(hn, kind="stable")
    if len(order) > 1 and np.any(hn[order][:-1] == hn[order][1:]):  # repeated keys (or collisions)
        order = np.lexsort((np.arange(len(new_keys)), _sortable(new_keys, variable_keys), hn))
    last = np.ones(len(order), dtype=bool)
    sk, sh = new_keys[order], hn[order]
    if len(order) > 1:
        last[:-1] = (sk[:-1] != sk[1:]) | (sh[:-1] != sh[1:])
    pick = order[last]
    keys_u, hn_u, gone_u, values_u = new_keys[pick], hn[pick], deleted[pick], new.values[pick]
    if not len(old):
        keep = ~gone_u
        return Pairs(keys_u[keep], values_u[keep]), int(np.count_nonzero(keep)), 0
    ho = bit_reversed(key_hashes(old_keys, variable_keys))
    lo = np.searchsorted(ho, hn_u, "left")
    hi = np.searchsorted(ho, hn_u, "right")
    span = hi - lo
    at = np.minimum(lo, len(old_keys) - 1)
    match = (span == 1) & (old_keys[at] == keys_u)
    if np.any(span > 1) or np.any((span == 1) & ~match):  # a hash collision: sort it all out
        return _merge_by_sorting(old, new, deleted, variable_keys)
    added = int(np.count_nonzero(~match & ~gone_u))
    removed = int(np.count_nonzero(match & gone_u))
    keep_old = np.ones(len(old_keys), dtype=bool)
    keep_old[lo[match]] = False
    removed_before = np.concatenate([[0], np.cumsum(~keep_old)])[lo]
    insert = ~gone_u
    where = (lo - removed_before)[insert]
    out_keys = np.insert(old_keys[keep_old], where, keys_u[insert])
    out_values = np.insert(old.values[keep_old], where, values_u[insert])
    return Pairs(out_keys, out_values), added, removed


def _merge_by_sorting(old: Pairs, new: Pairs, deleted: np.ndarray[Any, Any], variable_keys: bool) -> tuple[Pairs, int, int]:
    """:func:`merge` by sorting everything (the general case, hash collisions included)."""
    keys = _concat_keys(old.keys, new.keys)
    values = np.concatenate([old.values, new.values]) if len(old) else new.values
    if not len(old) and values.dtype != new.values.dtype:
        values = new.values
    gone = np.concatenate([np.zeros(len(old), dtype=bool), deleted])
    was_old = np.concatenate([np.ones(len(old), dtype=bool), np.zeros(len(new), dtype=bool)])
    hrev = bit_reversed(key_hashes(keys, variable_keys))
    width = keys.dtype.itemsize
    sortable = keys.view(f">u{width}") if width in (1, 2, 4, 8) and not variable_keys else keys  # same order, faster
    order = np.lexsort((np.arange(len(keys)), sortable, hrev))
    keys_s, hrev_s = sortable[order], hrev[order]
    last = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        last[:-1] = (keys_s[:-1] != keys_s[1:]) | (hrev_s[:-1] != hrev_s[1:])
    first = np.ones(len(order), dtype=bool)
    first[1:] = last[:-1]
    # a key existed before when its run starts with an old pair
    group = np.cumsum(first) - 1
    existed = np.zeros(int(group[-1]) + 1 if len(group) else 0, dtype=bool)
    existed[group[first]] = was_old[order][first]
    keep = last & ~gone[order]
    final_groups = group[last]
    now = ~gone[order][last]
    added = int(np.count_nonzero(now & ~existed[final_groups]))
    removed = int(np.count_nonzero(~now & existed[final_groups]))
    picked = order[keep]
    out_keys = keys[picked]
    if not variable_keys:
        out_keys = out_keys.astype(keys.dtype)
    return Pairs(out_keys, values[picked]), added, removed


def after(pairs: Pairs, marker_hrev: int, marker_key: bytes, variable_keys: bool) -> Pairs:
    """The pairs that come after the marker key in iteration order."""
    hrev = bit_reversed(key_hashes(pairs.keys, variable_keys))
    mh = np.uint64(marker_hrev)
    return pairs.take((hrev > mh) | ((hrev == mh) & (pairs.keys > np.bytes_(marker_key))))


@dataclass(frozen=True, slots=True)
class KeyFinder:
    """The keys of a leaf ready to be searched: their fingerprints sorted, and where each is."""

    keys: np.ndarray[Any, Any]
    fingerprints: np.ndarray[Any, Any]
    order: np.ndarray[Any, Any]

    @classmethod
    def of(cls, keys: np.ndarray[Any, Any]) -> KeyFinder:
        prints = fingerprints(keys)
        order = np.argsort(prints).astype(np.int32)
        return cls(keys, prints[order], order)

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.fingerprints.nbytes + self.order.nbytes)

    def find(self, want: np.ndarray[Any, Any], prints: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, Any]:
        """For each wanted key, its index among the keys, or -1. ``prints``: the wanted keys'
        fingerprints when they have the keys' width."""
        if not len(self.keys) or not len(want):
            return np.full(len(want), -1)
        if prints is None or want.dtype != self.keys.dtype:
            # a key wider than every key here is none of them: its cut form only finds candidates
            prints = fingerprints(want.astype(self.keys.dtype, copy=False))
        pos = np.minimum(np.searchsorted(self.fingerprints, prints), len(self.keys) - 1)
        candidate = self.order[pos].astype(np.int64)
        same = self.fingerprints[pos] == prints
        hit = same & (self.keys[candidate] == want)
        out = np.where(hit, candidate, -1)
        for i in np.flatnonzero(same & ~hit):  # fingerprints that collide: look at every key
            match = np.flatnonzero(self.keys == want[i])
            if len(match):
                out[i] = match[0]
        return out


def lookup(pairs: Pairs, keys: np.ndarray[Any, Any], variable_keys: bool) -> np.ndarray[Any, Any]:
    """For each key, its index in ``pairs`` (in iteration order) or -1."""
    if len(keys) <= 4:  # a few keys: a scan each beats indexing the bucket
        width = max(pairs.keys.dtype.itemsize, keys.dtype.itemsize)
        have = pairs.keys.astype(f"S{width}", copy=False)
        want = keys.astype(f"S{width}", copy=False)
        if width in (1, 2, 4, 8) and not variable_keys:  # compare as integers: much faster
            have, want = have.view(f"u{width}"), want.view(f"u{width}")
        out = np.full(len(want), -1)
        for i, k in enumerate(want):
            hit = np.flatnonzero(have == k)
            if len(hit):
                out[i] = hit[0]
        return out
    return KeyFinder.of(pairs.keys).find(keys)


_HEADER = struct.Struct("<4sBBBBQqq")
HEADER_SIZE = _HEADER.size  # 32
_MAGIC = b"H5LM"
_LEAF, _SPLIT = 0, 1
_VLEN_KEYS, _VLEN_VALUES, _RAW_KEYS = 1, 2, 4


@dataclass(frozen=True, slots=True)
class BucketHeader:
    split: bool
    depth: int
    count: int
    children: tuple[int, int]
    version: int = 1
    """1: a leaf's keys and values filtered as one payload; 2: an indexed leaf (maps/leaf.py)."""
    key_bytes: int = 0
    """Format 2: the stored bytes of the key section, after the header."""
    generation: int = 0
    """Format 2: a random number drawn by each encoding of the leaf."""
    raw_keys: bool = False
    """Format 2: the key section is stored unfiltered (filtering did not make it smaller)."""


def parse_header(data: bytes | memoryview) -> BucketHeader:
    if len(data) < HEADER_SIZE:
        raise DataCorruption("map bucket is shorter than its header")
    magic, version, kind, depth, _flags, count, c0, c1 = _HEADER.unpack_from(data)
    if magic != _MAGIC or version not in (1, 2) or kind not in (_LEAF, _SPLIT) or version == 2 and kind != _LEAF:
        raise DataCorruption("not a map bucket")
    if version == 2:
        if c0 < 0:
            raise DataCorruption("not a map bucket")
        return BucketHeader(False, depth, count, (0, 0), 2, c0, c1, bool(_flags & _RAW_KEYS))
    return BucketHeader(kind == _SPLIT, depth, count, (c0, c1))


def split_marker(depth: int, children: tuple[int, int]) -> bytes:
    return _HEADER.pack(_MAGIC, 1, _SPLIT, depth, 0, 0, children[0], children[1])


def leaf_header(depth: int, count: int, variable_keys: bool, variable_values: bool, key_bytes: int,
                generation: int, raw_keys: bool) -> bytes:
    """The header of a leaf of format 2 (maps/leaf.py)."""
    flags = (_VLEN_KEYS if variable_keys else 0) | (_VLEN_VALUES if variable_values else 0) | (_RAW_KEYS if raw_keys else 0)
    return _HEADER.pack(_MAGIC, 2, _LEAF, depth, flags, count, key_bytes, generation)


def section(items: np.ndarray[Any, Any], variable: bool) -> bytes:
    """Keys or values end to end: packed, or (variable-length) 4-byte lengths then the bytes."""
    if not variable:
        return items.tobytes()
    parts = items.tolist()
    lengths = np.array([len(p) for p in parts], dtype="<u4")
    return lengths.tobytes() + b"".join(parts)


def leaf_payload(pairs: Pairs, variable_keys: bool, variable_values: bool) -> bytes:
    """The uncompressed body of a leaf: its keys, then its values."""
    return section(pairs.keys, variable_keys) + section(pairs.values, variable_values)


def leaf_bytes(depth: int, count: int, variable_keys: bool, variable_values: bool, encoded: bytes) -> bytes:
    flags = (_VLEN_KEYS if variable_keys else 0) | (_VLEN_VALUES if variable_values else 0)
    return _HEADER.pack(_MAGIC, 1, _LEAF, depth, flags, count, 0, 0) + encoded


def read_section(view: memoryview, at: int, count: int, variable: bool, width: int,
                  kind: str) -> tuple[np.ndarray[Any, Any], int]:
    if not variable:
        end = at + count * width
        if end > len(view):
            raise DataCorruption("map bucket is truncated")
        return np.frombuffer(view[at:end], dtype=f"{kind}{max(1, width)}").copy(), end
    lengths = np.frombuffer(view[at : at + 4 * count], dtype="<u4").astype(np.int64)
    at += 4 * count
    ends = at + np.cumsum(lengths)
    if len(ends) and int(ends[-1]) > len(view):
        raise DataCorruption("map bucket is truncated")
    starts = ends - lengths
    items = [bytes(view[s:e]) for s, e in zip(starts.tolist(), ends.tolist())]
    end = int(ends[-1]) if len(ends) else at
    if kind == "S":
        width_v = max((len(i) for i in items), default=0)
        return np.array(items, dtype=f"S{max(1, width_v)}"), end
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out, end


def parse_leaf(payload: bytes, count: int, keys: KeyCodec, values: ValueCodec) -> Pairs:
    view = memoryview(payload)
    k, at = read_section(view, 0, count, keys.variable, keys.width, "S")
    v, at = read_section(view, at, count, values.variable, values.size, "V")
    if at != len(view):
        raise DataCorruption("map bucket has trailing bytes")
    return Pairs(k, v)


def payload_size(pairs: Pairs, variable_keys: bool, variable_values: bool) -> int:
    def size(items: np.ndarray[Any, Any], variable: bool) -> int:
        if not variable:
            return int(items.nbytes)
        return 4 * len(items) + sum(len(i) for i in items.tolist())

    if variable_keys:
        key_bytes = 4 * len(pairs) + int(np.char.str_len(pairs.keys).sum()) if len(pairs) else 0
    else:
        key_bytes = int(pairs.keys.nbytes)
    return key_bytes + size(pairs.values, variable_values)


def partition(pairs: Pairs, depth: int, variable_keys: bool) -> tuple[Pairs, Pairs]:
    """The pairs of a bucket at ``depth`` split by bit ``depth`` of their key hash; each half
    keeps the iteration order."""
    bit = (key_hashes(pairs.keys, variable_keys) >> np.uint64(depth)) & np.uint64(1)
    one = bit.astype(bool)
    return pairs.take(~one), pairs.take(one)
