"""HDF5's scale-offset filter (id 6), byte for byte, from HDF5's description of the format.

No maintained library implements it (it is built into HDF5), so this module does.

* cd_values (20): ``scale type`` (0 float D-scale, 2 integer), ``scale factor`` (decimal digits
  for floats; for integers the number of bits, 0 meaning "work it out"), elements per chunk,
  class (0 integer, 1 float), size, sign (1 two's complement), byte order (0 LE, 1 BE), whether
  a fill value is defined, and the fill value's bytes (little-endian, in 4-byte words).
* A chunk is a 21-byte header (``minbits`` as 4 bytes LE, the byte 8, ``minval`` as 8 bytes LE,
  8 zero bytes) and then each value, minus the minimum, in ``minbits`` bits, most significant
  bit first, ``floor(values * minbits / 8) + 1`` bytes. Values are taken in the machine's byte
  order (HDF5 swaps a big-endian dataset first). Integers: ``minbits`` is the bits the span
  needs; with a fill value, fill elements are coded as all ones (and the span gets one more).
  Floats (D-scale): each value becomes ``round((v - min) * 10**D)`` in an integer of its size,
  computed in the float's own precision as HDF5's C code does; ``minval`` holds ``min``'s bits.
  When the span needs every bit, the values follow the header unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from h5lake.errors import DataCorruption, InvalidInput

HEADER = 21
SO_FLOAT_DSCALE, SO_FLOAT_ESCALE, SO_INT = 0, 1, 2
CLS_INTEGER, CLS_FLOAT = 0, 1
NPARMS = 20


def _log2_ceil(n: int) -> int:
    return max(0, (n - 1).bit_length()) if n > 0 else 0


class ScaleOffsetLayout:
    """The filter for one dataset, read from its 20 cd_values."""

    def __init__(self, cd: Sequence[int]) -> None:
        if len(cd) != NPARMS:
            raise InvalidInput(f"scaleoffset filter: {len(cd)} parameters, not {NPARMS}")
        self.cd = tuple(int(v) for v in cd)
        self.scale_type, factor = self.cd[0], self.cd[1]
        self.factor = factor - (1 << 32) if factor >= 1 << 31 else factor  # HDF5 reads it as a C int
        self.elements, self.cls, self.size = self.cd[2], self.cd[3], self.cd[4]
        self.signed, self.big_endian, self.has_fill = bool(self.cd[5]), bool(self.cd[6]), bool(self.cd[7])
        if self.cls == CLS_INTEGER and self.scale_type == SO_INT and self.size in (1, 2, 4, 8):
            self.dtype = np.dtype(f"<{'i' if self.signed else 'u'}{self.size}")
            self.factor = max(self.factor, 0)
            if self.factor > 8 * self.size:
                raise InvalidInput("scaleoffset filter: more bits than the type has")
        elif self.cls == CLS_FLOAT and self.scale_type == SO_FLOAT_DSCALE and self.size in (4, 8):
            self.dtype = np.dtype(f"<f{self.size}")
        else:
            raise InvalidInput("scaleoffset filter: only integers (scale type 2) and 4- or 8-byte floats (D-scale) are supported")
        self.ints = np.dtype(f"<i{self.size}")
        self.uints = np.dtype(f"<u{self.size}")
        fill = b"".join(struct.pack("<I", v & 0xFFFFFFFF) for v in self.cd[8:])[: self.size]
        self.fill = np.frombuffer(fill, dtype=self.dtype)[0] if self.has_fill else None

    @property
    def full(self) -> bool:
        """An integer filter told to keep every bit: HDF5 stores chunks unchanged."""
        return self.cls == CLS_INTEGER and self.factor == 8 * self.size

    def _native(self, buf: Any) -> np.ndarray:
        return np.frombuffer(buf, dtype=self.dtype.newbyteorder(">" if self.big_endian else "<")).astype(self.dtype)

    # -- encoding --

    def encode(self, buf: Any) -> bytes:
        if self.full:
            return bytes(buf)
        values = self._native(buf)
        if values.size != self.elements:
            raise InvalidInput(f"scaleoffset filter: a chunk of {values.size} values, not {self.elements}")
        if self.cls == CLS_INTEGER:
            minbits, minval, coded = self._integers(values)
        else:
            minbits, minval, coded = self._floats(values)
        header = struct.pack("<IB", minbits, 8) + struct.pack("<Q", minval & 0xFFFFFFFFFFFFFFFF) + bytes(8)
        if minbits == 8 * self.size:
            return header + values.astype(self.dtype).tobytes()
        body = bytearray(len(buf) * minbits // (8 * self.size) + 1)
        if minbits:
            bits = np.unpackbits(coded.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)[:, 64 - minbits :]
            packed = np.packbits(bits.reshape(-1)).tobytes()
            body[: len(packed)] = packed
        return header + bytes(body)

    def _integers(self, values: np.ndarray) -> tuple[int, int, np.ndarray]:
        fill = int(self.fill) if self.fill is not None else None
        kept = values if fill is None else values[values != self.fill]
        lo, hi = (int(kept.min()), int(kept.max())) if kept.size else (0, 0)
        top = (1 << (8 * self.size)) - 1
        minbits = self.factor
        if not minbits:
            if (hi - lo) & top > top - 2:
                return 8 * self.size, (0 if fill is not None else lo), values
            minbits = _log2_ceil(hi - lo + 1 + (fill is not None))
        if minbits == 8 * self.size:
            return minbits, lo, values
        # value - min, modulo 2**bits as HDF5's C arithmetic wraps, then the low minbits bits
        diff = values.view(self.uints).astype(np.uint64) - np.uint64(lo & top)
        coded = diff & np.uint64((1 << minbits) - 1)
        if fill is not None:
            coded = np.where(values == self.fill, np.uint64((1 << minbits) - 1), coded)
        return minbits, lo, coded

    def _floats(self, values: np.ndarray) -> tuple[int, int, np.ndarray]:
        ft = self.dtype.type
        p = ft(10.0) ** ft(self.factor) if self.size == 4 else 10.0 ** float(self.factor)
        p = ft(p)
        fill = self.fill
        eps = ft(10.0) ** ft(-self.factor)
        if fill is not None:
            is_fill = np.abs(values - fill) < eps
            kept = values[~is_fill]
        else:
            is_fill = np.zeros(values.shape, bool)
            kept = values
        lo = kept.min() if kept.size else ft(0)
        hi = kept.max() if kept.size else ft(0)
        minval = int.from_bytes(np.array([lo], dtype=self.dtype).tobytes(), "little")
        spread = _round_half_away(np.array([hi * p - lo * p], dtype=np.float64))[0]
        if spread > 2.0 ** (8 * self.size - 1):
            return 8 * self.size, minval, values
        span = int(spread) + 1
        minbits = _log2_ceil(span + 1 if fill is not None else span)
        if minbits == 8 * self.size:
            return minbits, minval, values
        scaled = (values * p - lo * p).astype(self.dtype)
        coded = _round_half_away(scaled.astype(np.float64)).astype(np.int64)
        coded = np.where(is_fill, (1 << minbits) - 1, coded)
        # stored as the integer of the float's size: the low minbits bits are packed
        return minbits, minval, (coded.astype(self.ints).view(self.uints).astype(np.uint64) & np.uint64((1 << minbits) - 1))

    # -- decoding --

    def decode(self, buf: Any, nbytes: int | None) -> bytes:
        if self.full:
            return bytes(buf)
        data = memoryview(buf).cast("B")
        n = self.elements
        if nbytes is not None and nbytes != n * self.size:
            raise DataCorruption(f"scaleoffset filter: parameters describe {n * self.size} bytes, the chunk {nbytes}")
        if len(data) < HEADER:
            raise DataCorruption("scaleoffset filter: the chunk is shorter than its header")
        minbits, minval_size = struct.unpack("<IB", data[:5])
        minval = int.from_bytes(bytes(data[5 : 5 + min(8, minval_size)]), "little")
        if minbits > 8 * self.size:
            raise DataCorruption(f"scaleoffset filter: {minbits} bits for a {self.size}-byte value")
        if minbits == 8 * self.size:
            raw = bytes(data[HEADER : HEADER + n * self.size])
            if len(raw) != n * self.size:
                raise DataCorruption("scaleoffset filter: the chunk is cut short")
            return self._out(np.frombuffer(raw, dtype=self.dtype))
        if minbits:
            stream = np.unpackbits(np.frombuffer(data[HEADER:], dtype=np.uint8))
            if stream.size < n * minbits:
                raise DataCorruption("scaleoffset filter: the chunk is cut short")
            bits = np.zeros((n, 64), dtype=np.uint8)
            bits[:, 64 - minbits :] = stream[: n * minbits].reshape(n, minbits)
            coded = np.packbits(bits, axis=1).view(">u8").reshape(n).astype(np.uint64)
        else:
            coded = np.zeros(n, dtype=np.uint64)
        mask = (1 << minbits) - 1
        is_fill = coded == np.uint64(mask) if self.fill is not None else np.zeros(n, bool)
        if self.cls == CLS_INTEGER:
            top = np.uint64((1 << (8 * self.size)) - 1)
            out = (coded + np.uint64(minval & 0xFFFFFFFFFFFFFFFF)) & top  # C's wrapping sum
            values = out.astype(self.uints).view(self.dtype).copy()
        else:
            lo = np.frombuffer(minval.to_bytes(8, "little")[: self.size], dtype=self.dtype)[0]
            ft = self.dtype.type
            p = ft(ft(10.0) ** ft(self.factor)) if self.size == 4 else ft(10.0 ** float(self.factor))
            values = (coded.astype(self.uints).view(self.ints).astype(self.dtype) / p + lo).astype(self.dtype)
        if self.fill is not None:
            values = np.where(is_fill, self.fill, values).astype(self.dtype)
        return self._out(values)

    def _out(self, values: np.ndarray) -> bytes:
        return np.ascontiguousarray(values, dtype=self.dtype.newbyteorder(">" if self.big_endian else "<")).tobytes()


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``lround``: to the nearest integer, halves away from zero (exact for any double)."""
    whole = np.trunc(x)
    frac = x - whole
    return whole + np.sign(x) * (np.abs(frac) >= 0.5)


def cd_values_for(scale_type: int, factor: int, t: dict[str, Any], elements: int) -> tuple[int, ...]:
    """The cd_values HDF5 computes for a dataset of type JSON ``t`` (an integer or float, no
    fill value) whose chunks hold ``elements`` values."""
    base = str(t.get("base", ""))
    cls = t.get("class")
    if cls == "H5T_INTEGER" and "precision" not in t:
        size = int(base[len("H5T_STD_I") : -2]) // 8
        kind, sign = CLS_INTEGER, int(base.startswith("H5T_STD_I"))
    elif cls == "H5T_FLOAT" and base.startswith("H5T_IEEE_F") and base[10:12] in ("32", "64"):
        size, kind, sign = int(base[10:12]) // 8, CLS_FLOAT, 0
    else:
        raise InvalidInput("scaleoffset filter: the type must be an integer or a 4- or 8-byte float")
    order = int(base.endswith("BE"))
    return (scale_type, factor & 0xFFFFFFFF, elements, kind, size, sign, order, 0) + (0,) * 12
