"""HDF5's N-bit filter (id 5), byte for byte: the significant bits of every value, packed.

No maintained library implements it (hdf5plugin and imagecodecs carry plugins, and N-bit is
built into HDF5), so this module does, from HDF5's description of the format:

* The filter's client data (``cd_values``, which HDF5 computes from the dataset's type and chunk)
  are ``[count, no-op flag, elements per chunk, class, size, ...]``: class 1 (integer or float)
  continues ``size, order (0 LE, 1 BE), precision, offset``; class 2 (array) ``size`` and then
  its base; class 3 (compound) ``size, members`` and per member its byte ``offset`` and then its
  type; class 4 (anything else) ``size``, kept whole.
* A chunk is encoded as one bit stream, most significant bit first: for each element in turn,
  for each atomic part, its ``precision`` bits from the most significant down; for each whole
  part, its bytes in memory order. HDF5 writes ``floor(bits / 8) + 1`` bytes.
* Decoding writes the bits back and leaves every other bit (padding) zero.

The no-op flag is set when every part is full precision: HDF5 then stores chunks unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.errors import DataCorruption, InvalidInput
from h5lake.model.types import hdf5_size

ATOMIC, ARRAY, COMPOUND, NOOP = 1, 2, 3, 4
ORDER_LE, ORDER_BE = 0, 1


@dataclass(frozen=True, slots=True)
class _Part:
    """One piece of an element: ``precision`` bits at bit ``offset`` of an atomic value of
    ``size`` bytes at byte ``at``, or (``whole``) ``size`` bytes kept as they are."""

    at: int
    size: int
    whole: bool = False
    big_endian: bool = False
    precision: int = 0
    offset: int = 0

    @property
    def bits(self) -> int:
        return 8 * self.size if self.whole else self.precision


class NbitLayout:
    """An element's parts, read from cd_values."""

    def __init__(self, cd: Sequence[int]) -> None:
        if len(cd) < 3 or cd[0] != len(cd) or (len(cd) < 5 and not cd[1]):
            raise InvalidInput(f"nbit filter: {list(cd)} are not N-bit parameters")
        self.cd = tuple(int(v) for v in cd)
        self.noop = bool(cd[1])
        self.elements = int(cd[2])
        self.item_size = int(cd[4]) if len(cd) > 4 else 0
        self.parts: list[_Part] = []
        if not self.noop:
            end = self._walk(3, 0, top=True)
            if end != len(cd):
                raise InvalidInput("nbit filter: parameters do not describe one datatype")
        self.bits = sum(p.bits for p in self.parts)

    def _take(self, i: int, n: int) -> tuple[int, ...]:
        if i + n > len(self.cd):
            raise InvalidInput("nbit filter: parameters end inside the datatype they describe")
        return self.cd[i : i + n]

    def _walk(self, i: int, at: int, top: bool = False) -> int:
        """Read one type description at index ``i`` for a part at byte ``at``; the next index."""
        (cls,) = self._take(i, 1)
        if cls == ATOMIC:
            size, order, precision, offset = self._take(i + 1, 4)
            if not 0 < precision <= 8 * size or precision + offset > 8 * size or order not in (ORDER_LE, ORDER_BE):
                raise InvalidInput("nbit filter: invalid precision, offset or byte order")
            self.parts.append(_Part(at, size, False, order == ORDER_BE, precision, offset))
            return i + 5
        if cls == NOOP:
            (size,) = self._take(i + 1, 1)
            self.parts.append(_Part(at, size, whole=True))
            return i + 2
        if cls == ARRAY:
            (total,) = self._take(i + 1, 1)
            base_at = i + 2
            base_cls, base_size = self._take(base_at, 2)
            if base_cls == NOOP:  # HDF5 keeps an array of whole parts as one part of its total size
                self.parts.append(_Part(at, total, whole=True))
                return base_at + 2
            if base_size <= 0 or total % base_size:
                raise InvalidInput("nbit filter: an array size is not a multiple of its base size")
            nxt = base_at
            for k in range(total // base_size):
                nxt = self._walk(base_at, at + k * base_size)
            return nxt
        if cls == COMPOUND:
            _size, members = self._take(i + 1, 2)
            j = i + 3
            for _ in range(members):
                (offset,) = self._take(j, 1)
                j = self._walk(j + 1, at + offset)
            return j
        raise InvalidInput(f"nbit filter: unknown datatype class {cls} in its parameters")

    # -- the codec --

    def encode(self, buf: Any) -> bytes:
        if self.noop:
            return bytes(buf)
        n = self.elements
        data = np.frombuffer(buf, dtype=np.uint8)
        if data.size != n * self.item_size:
            raise InvalidInput(f"nbit filter: a chunk of {data.size} bytes is not {n} elements of {self.item_size} bytes")
        elems = data.reshape(n, self.item_size)
        columns = [_bits_of(elems, p) for p in self.parts]
        stream = np.concatenate(columns, axis=1).reshape(-1) if columns else np.zeros(0, np.uint8)
        out = np.packbits(stream).tobytes()
        return out if stream.size % 8 else out + b"\0"  # HDF5 writes floor(bits / 8) + 1 bytes

    def decode(self, buf: Any, nbytes: int | None) -> bytes:
        if self.noop:
            return bytes(buf)
        n = self.elements
        if nbytes is not None and nbytes != n * self.item_size:
            raise DataCorruption(f"nbit filter: parameters describe {n * self.item_size} bytes, the chunk {nbytes}")
        need = n * self.bits
        stream = np.unpackbits(np.frombuffer(buf, dtype=np.uint8))
        if stream.size < need:
            raise DataCorruption(f"nbit filter: the chunk holds {stream.size} bits, {need} are needed")
        bits = stream[:need].reshape(n, self.bits)
        out = np.zeros((n, self.item_size), dtype=np.uint8)
        col = 0
        for p in self.parts:
            _put_bits(out, p, bits[:, col : col + p.bits])
            col += p.bits
        return out.tobytes()


def _bits_of(elems: np.ndarray, p: _Part) -> np.ndarray:
    """The part's bits of every element, most significant first: an (n, bits) array of 0/1."""
    raw = elems[:, p.at : p.at + p.size]
    if p.whole:
        return np.unpackbits(raw, axis=1)
    msb_first = raw if p.big_endian else raw[:, ::-1]
    all_bits = np.unpackbits(msb_first, axis=1)
    top = 8 * p.size - p.offset
    return all_bits[:, top - p.precision : top]


def _put_bits(out: np.ndarray, p: _Part, bits: np.ndarray) -> None:
    if p.whole:
        out[:, p.at : p.at + p.size] = np.packbits(bits, axis=1)
        return
    all_bits = np.zeros((out.shape[0], 8 * p.size), dtype=np.uint8)
    top = 8 * p.size - p.offset
    all_bits[:, top - p.precision : top] = bits
    msb_first = np.packbits(all_bits, axis=1)
    out[:, p.at : p.at + p.size] = msb_first if p.big_endian else msb_first[:, ::-1]


# -- the parameters HDF5 computes from a type ------------------------------------------------------


def cd_values_for(t: Mapping[str, Any], elements: int) -> tuple[int, ...]:
    """The cd_values HDF5's ``set_local`` gives a dataset of type JSON ``t`` whose chunks hold
    ``elements`` values (h5lake's type JSON, with compound offsets and ``precision``)."""
    params: list[int] = []
    full = [True]
    _describe(t, params, full, top=True)
    cd = [0, 0, elements, *params]
    cd[0], cd[1] = len(cd), int(full[0])
    return tuple(cd)


def _size(t: Mapping[str, Any]) -> int:
    return int(hdf5_size(dict(t)))


def _atomic(t: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """(size, order, precision, offset) of an integer or float, else None."""
    cls = t["class"]
    if cls == "H5T_OPAQUE" and "hdf5Type" in t:
        d = t["hdf5Type"]
        if d["class"] in ("H5T_INTEGER", "H5T_FLOAT"):
            return int(d["size"]), ORDER_BE if d["order"] == "BE" else ORDER_LE, int(d["precision"]), int(d["offset"])
        return None
    if cls not in ("H5T_INTEGER", "H5T_FLOAT"):
        return None
    size = _size(t)
    order = ORDER_BE if str(t["base"]).endswith("BE") else ORDER_LE
    return size, order, int(t.get("precision", 8 * size)), int(t.get("offset", 0))


def _describe(t: Mapping[str, Any], params: list[int], full: list[bool], top: bool = False) -> None:
    atomic = _atomic(t)
    cls = t["class"]
    if atomic is not None:
        size, order, precision, offset = atomic
        params.extend((ATOMIC, size, order, precision, offset))
        if precision != 8 * size or offset:
            full[0] = False
    elif cls == "H5T_ARRAY":
        params.extend((ARRAY, _size(t)))
        _describe(t["base"], params, full)
    elif cls == "H5T_COMPOUND":
        params.extend((COMPOUND, _size(t), len(t["fields"])))
        at = 0
        for f in t["fields"]:
            offset = int(f.get("offset", at))
            params.append(offset)
            _describe(f["type"], params, full)
            at = offset + _size(f["type"])
    elif not top:
        params.extend((NOOP, _size(t)))
