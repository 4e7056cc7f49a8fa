"""PyTables' LZO1X filter: a bare LZO1X stream (and, in files of PyTables 0.5 to 0.7, a trailer)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import imagecodecs
import lzokay

from h5lake.chunks.codecs.base import (
    H5Z_FLAG_OPTIONAL,
    MAX_CHUNK_NBYTES,
    Buffer,
    Context,
    FilterId,
    Params,
    codec_lib,
)
from h5lake.errors import DataCorruption


@dataclass(frozen=True, slots=True)
class Lzo:
    """PyTables' LZO filter (305). Its cd_values are ``(level, version * 10, object type)``; level
    is unused. PyTables writes each chunk as a bare LZO1X stream: the adler32-and-size trailer its
    filter once appended was switched off in PyTables 0.8 (``#undef CHECKSUM`` in src/H5Zlzo.c,
    2004), whatever the cd_values say, so every file of a current PyTables (its own test files
    ``Tables_lzo1.h5``, ``Tables_lzo2.h5`` among them) has none. Decoding takes the bare stream
    and, only when that fails, a chunk of PyTables 0.5 to 0.7: the stream followed by the
    adler32 of the decoded bytes and their count (4 bytes each, little-endian), checked.
    Encoding writes the bare stream, which every PyTables reads."""

    cd: tuple[int, ...] = (1, 10, 1)

    filter_id: ClassVar[FilterId] = FilterId.LZO
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL  # as PyTables sets it

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Lzo:
        level = p.integer("level", 1, 0, 9)
        if not p.has("version") and not p.has("objectType"):
            return cls((level, 10, 1))
        version = p.integer("version", 10, 0, 1 << 31)
        if not p.has("objectType"):
            return cls((level, version))
        return cls((level, version, p.integer("objectType", 1, 0, 1 << 31)))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return dict(zip(("level", "version", "objectType"), cd, strict=False))

    def encode(self, buf: Buffer) -> Buffer:
        packed: bytes = lzokay.compress(bytes(buf))
        return packed

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        data = memoryview(buf)
        try:
            out = self._decode_bare(data, nbytes)
        except imagecodecs.LzoError as exc:
            legacy = self._decode_with_trailer(data, nbytes)
            if legacy is None:
                raise DataCorruption(f"lzo filter: the chunk cannot be decoded ({exc})") from None
            return legacy
        if nbytes is not None and len(out) != nbytes:
            legacy = self._decode_with_trailer(data, nbytes)
            if legacy is None:
                raise DataCorruption(f"lzo filter: the chunk decodes to {len(out)} bytes, not {nbytes}")
            return legacy
        return out

    @staticmethod
    def _decode_bare(data: memoryview, nbytes: int | None) -> bytes:
        if nbytes is not None:
            result: bytes = codec_lib.lzo_decode(data, out=nbytes)
            return result
        size = 4 * data.nbytes + 64  # no size given: grow the output until it fits, as PyTables does
        while True:
            try:
                grown: bytes = codec_lib.lzo_decode(data, out=size)
                return grown
            except imagecodecs.LzoError as exc:
                if "OutputOverrun" not in str(exc) or size >= MAX_CHUNK_NBYTES:
                    raise
                size *= 2

    @staticmethod
    def _decode_with_trailer(data: memoryview, nbytes: int | None) -> bytes | None:
        """The decoded chunk of a PyTables 0.5 to 0.7 file, checked against its trailer; None
        when the chunk has no valid trailer."""
        if data.nbytes < 8:
            return None
        checksum, size = struct.unpack("<II", data[-8:])
        if nbytes not in (None, size) or size > MAX_CHUNK_NBYTES:
            return None
        try:
            out: bytes = codec_lib.lzo_decode(data[:-8], out=size)
        except Exception:  # noqa: BLE001 - not a stream with a trailer either: the caller says so
            return None
        if len(out) == size and zlib.adler32(out) == checksum:
            return out
        return None

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return self.params_from_cd(self.cd)

    def cd_values(self) -> tuple[int, ...]:
        return self.cd
