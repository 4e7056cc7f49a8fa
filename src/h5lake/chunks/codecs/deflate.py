"""HDF5's own filters: deflate (gzip), shuffle and Fletcher-32."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from h5lake.chunks.codecs.base import (
    H5Z_FLAG_OPTIONAL,
    Buffer,
    Context,
    FilterId,
    Params,
    codec_lib,
)
from h5lake.errors import DataCorruption

PIECE_BYTES = 64 * 1024  # the most input one probe stands for
MIN_PIECE_BYTES = 16 * 1024  # a shorter piece is never judged noise: too few bytes to tell
PROBE_BYTES = 4096  # deflated at the chunk's level to tell whether its piece compresses
PROBES = 4  # probes a piece: a quarter of it deflated, to spare deflating all of it
WINDOW = 32 * 1024  # how far back deflate looks for a match (RFC 1951)
REPEAT_BYTES = 32  # a probe's first bytes, looked for in the window before it
PERIODS = (1, 2, 4, 8)  # a byte equal to the one this far back, in noise 1 time in 256
STORED_MAX = 65535  # the most bytes one stored deflate block holds (RFC 1951, 3.2.4)


def _zlib_header(level: int) -> bytes:
    """RFC 1950's two bytes: deflate with a 32 KiB window, FLEVEL as libdeflate sets it (zlib
    says 3 for level 7, libdeflate 2), so that a chunk's header does not depend on its bytes."""
    flevel = 0 if level < 2 else 1 if level < 6 else 2 if level < 8 else 3
    cmf, flg = 0x78, flevel << 6
    return bytes((cmf, flg | (31 - (cmf * 256 + flg) % 31)))


def _incompressible(piece: memoryview, level: int) -> bool:
    """Whether deflate at ``level`` finds nothing to gain in any of ``PROBES`` probes of
    ``PROBE_BYTES``, one in the middle of each quarter of ``piece`` (it keeps a probe of noise
    as a stored block, a few bytes longer). Several probes because a plane of measured values is
    not alike throughout: in one test piece the middle was noise and the quarters around it
    shrank by 2-3%. (The order-0 entropy of the bytes was tried as a second test and dropped:
    pieces deflate shrinks by under 0.15% show 7.93-7.98 bits a byte, one it shrinks by 2.3%
    showed 7.96.)

    A probe alone misses repeats further apart than itself (rows of noise repeated, a stack of
    one frame: stored they were 35-50 times libdeflate's size), so each probe's first
    ``REPEAT_BYTES`` are also looked for in the ``WINDOW`` before it within the piece; in noise
    32 bytes never recur, and when they do the piece goes to libdeflate. Nor do probes see a
    stretch of one value between them (fill values, a masked region: stored, up to a sixth of
    a piece more than libdeflate's): a piece where a byte equals the one 1, 2, 4 or 8 before it
    twice as often as in noise is not noise either (~25 us a piece, a probe's cost)."""
    if len(piece) < MIN_PIECE_BYTES:
        return False
    whole = bytes(piece)  # (``bytes.find`` searches within bounds without copying)
    v = np.frombuffer(whole, dtype=np.uint8)
    if any(np.count_nonzero(v[k:] == v[:-k]) > len(v) // 128 for k in PERIODS):
        return False
    for i in range(PROBES):
        start = len(piece) * (2 * i + 1) // (2 * PROBES) - PROBE_BYTES // 2
        probe = piece[start : start + PROBE_BYTES]
        if whole.find(probe[:REPEAT_BYTES], max(0, start - WINDOW), start + REPEAT_BYTES - 1) >= 0:
            return False
        if len(codec_lib.deflate_encode(probe, level, raw=True)) < len(probe):
            return False
    return True


def _pieces(size: int, plane: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the pieces judged one by one: each ``plane`` bytes (a shuffled
    chunk's byte planes: a piece never mixes two) cut into equal pieces of at most
    ``PIECE_BYTES``."""
    plane = plane if 0 < plane < size else size
    for first in range(0, size, plane):
        length = min(plane, size - first)
        count = -(-length // PIECE_BYTES)
        for i in range(count):
            yield first + length * i // count, first + length * (i + 1) // count


def _stored_blocks(view: memoryview, final: bool) -> list[bytes | memoryview]:
    """``view`` as stored deflate blocks, byte-aligned: a block header byte (BFINAL on the last
    when ``final``, BTYPE 00, the padding bits), LEN and NLEN, then the bytes as they are."""
    parts: list[bytes | memoryview] = []
    for start in range(0, len(view), STORED_MAX):
        part = view[start : start + STORED_MAX]
        last = final and start + STORED_MAX >= len(view)
        parts.append(struct.pack("<BHH", 1 if last else 0, len(part), 0xFFFF ^ len(part)))
        parts.append(part)
    return parts


def deflate_zlib(buf: Buffer, level: int, plane: int = 0) -> bytes:
    """``buf`` as a zlib stream (RFC 1950), as HDF5's deflate filter stores a chunk.

    libdeflate at ``level``, except that a leading stretch deflate cannot compress is written
    as stored blocks without searching it for matches. Shuffled floats are the common case: the
    low mantissa bytes come first and are noise, and libdeflate spent ~60% of a chunk's time
    searching them before storing them anyway. The pieces from the start (``_pieces``: at most
    ``PIECE_BYTES``, each within one byte plane of ``plane`` bytes) are judged one by one, by
    deflating ``PROBES`` stretches of ``PROBE_BYTES`` of each at ``level``
    (``_incompressible``); the stored stretch ends before the first piece that may compress,
    and everything from there on is libdeflate's raw deflate stream (its first block begins on
    the byte after the last stored block, as RFC 1951 reads a stream). No match of the
    compressed part reaches back into the stored part, which costs nothing on noise. Any zlib
    reader, HDF5's included, reads the result. A chunk whose first piece may compress gets
    libdeflate's bytes unchanged. What is given up: what the probes miss, such as repeats at
    distances longer than a probe (4-32 KiB) in a piece whose probes are noise."""
    view = memoryview(buf).cast("B")
    size = len(view)
    stored = 0
    if level > 0 and size:  # (an empty chunk has no pieces)
        for start, end in _pieces(size, plane):
            if not _incompressible(view[start:end], level):
                break
            stored = end
    if stored == 0:
        plain: bytes = codec_lib.deflate_encode(view, level)  # zlib format, as HDF5 writes
        return plain
    parts: list[bytes | memoryview] = [_zlib_header(level), *_stored_blocks(view[:stored], final=stored == size)]
    if stored < size:
        parts.append(codec_lib.deflate_encode(view[stored:], level, raw=True))
    parts.append(struct.pack(">I", codec_lib.zlibng_adler32(view)))
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class Deflate:
    level: int = 4
    plane: int = 0  # bytes in one byte plane of a chunk (its element count), when known

    filter_id: ClassVar[FilterId] = FilterId.DEFLATE
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Deflate:
        planes = ctx.chunk_nbytes // ctx.itemsize if ctx.chunk_nbytes else 0
        return cls(level=p.integer("level", 4, 0, 9), plane=planes)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"level": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        return deflate_zlib(buf, self.level, self.plane)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        result: bytes = codec_lib.zlibng_decode(buf, out=nbytes)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {"level": self.level}

    def cd_values(self) -> tuple[int, ...]:
        return (self.level,)


@dataclass(frozen=True, slots=True)
class Shuffle:
    """HDF5 byte shuffle: byte ``j`` of every element together; a ragged tail stays in place."""

    elementsize: int

    filter_id: ClassVar[FilterId] = FilterId.SHUFFLE
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Shuffle:
        return cls(elementsize=ctx.itemsize)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {}

    def _apply(self, buf: Buffer, forward: bool) -> Buffer:
        size = self.elementsize
        view = memoryview(buf).cast("B")
        whole = len(view) - len(view) % size
        if size <= 1 or whole == 0:
            return buf
        from numcodecs.shuffle import Shuffle  # loaded when first used (5 MiB resident)

        codec = Shuffle(size)
        if whole == len(view):
            out = codec.encode(view) if forward else codec.decode(view)
            return memoryview(out).cast("B")
        result = bytearray(view)
        body = codec.encode(view[:whole]) if forward else codec.decode(view[:whole])
        result[:whole] = memoryview(body).cast("B")
        return result

    def encode(self, buf: Buffer) -> Buffer:
        return self._apply(buf, forward=True)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        return self._apply(buf, forward=False)

    def encoded_size(self, nbytes: int) -> int | None:
        return nbytes

    def json_params(self) -> dict[str, Any]:
        return {}

    def cd_values(self) -> tuple[int, ...]:
        return ()


def _fletcher32_byteswapped(checksum: int) -> int:
    """The checksum as HDF5 1.6.0-1.6.2 stored it (bytes swapped within each 16-bit half)."""
    return ((checksum & 0x00FF00FF) << 8) | ((checksum >> 8) & 0x00FF00FF)


@dataclass(frozen=True, slots=True)
class Fletcher32:
    """HDF5's Fletcher-32: the checksum of the data, appended as 4 little-endian bytes."""

    filter_id: ClassVar[FilterId] = FilterId.FLETCHER32
    flags: ClassVar[int] = 0  # mandatory, as H5Pset_fletcher32 makes it

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Fletcher32:
        return cls()

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {}

    def encode(self, buf: Buffer) -> Buffer:
        checksum: int = codec_lib.h5checksum_fletcher32(buf)
        return b"".join((buf, checksum.to_bytes(4, "little")))

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < 4:
            raise DataCorruption("fletcher32 filter: chunk is shorter than its checksum")
        data = view[:-4]
        stored = int.from_bytes(view[-4:], "little")
        checksum: int = codec_lib.h5checksum_fletcher32(data)
        if stored != checksum and stored != _fletcher32_byteswapped(checksum):
            raise DataCorruption("fletcher32 filter: checksum mismatch, the chunk is corrupt")
        return data

    def encoded_size(self, nbytes: int) -> int | None:
        return nbytes + 4

    def json_params(self) -> dict[str, Any]:
        return {}

    def cd_values(self) -> tuple[int, ...]:
        return ()
