"""PyTables' LZO1X filter with its adler32 and size trailer."""

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
    check_size,
    codec_lib,
)
from h5lake.errors import DataCorruption

_LZO_TABLE = 0  # PyTables' object type of a Table (src/tables.h), the one that may lack the trailer


@dataclass(frozen=True, slots=True)
class Lzo:
    """PyTables' LZO filter (305): an LZO1X stream, followed by a trailer of the adler32 of the
    decoded bytes and their count (4 bytes each, little-endian) unless the dataset is a Table
    older than version 2.0. Its cd_values are ``(level, version * 10, object type)``; level is
    unused. Old files with fewer values: decode looks for a valid trailer, encode writes none."""

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

    @property
    def trailer(self) -> bool | None:
        """Whether chunks end with the trailer; None when the cd_values cannot tell."""
        if len(self.cd) < 3:
            return None
        return not (self.cd[2] == _LZO_TABLE and self.cd[1] < 20)

    def encode(self, buf: Buffer) -> Buffer:
        packed: bytes = lzokay.compress(bytes(buf))
        if not self.trailer:
            return packed
        return packed + struct.pack("<II", zlib.adler32(buf), memoryview(buf).nbytes)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        data = memoryview(buf)
        if self.trailer is not False:
            out = self._decode_with_trailer(data, nbytes)
            if out is not None:
                return out
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

    def _decode_with_trailer(self, data: memoryview, nbytes: int | None) -> bytes | None:
        """The decoded chunk, checked against its trailer; None if the cd_values do not say
        whether there is one and the chunk has no valid one."""
        sure = self.trailer is True
        if data.nbytes < 8:
            if sure:
                raise DataCorruption("lzo filter: the chunk is shorter than its trailer")
            return None
        checksum, size = struct.unpack("<II", data[-8:])
        if sure:
            check_size("lzo", size, nbytes)
        elif nbytes not in (None, size):
            return None
        try:
            out: bytes = codec_lib.lzo_decode(data[:-8], out=size)
        except Exception:
            if sure:
                raise
            return None
        if len(out) == size and zlib.adler32(out) == checksum:
            return out
        if sure:
            raise DataCorruption("lzo filter: the adler32 checksum of the decoded chunk does not match")
        return None

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return self.params_from_cd(self.cd)

    def cd_values(self) -> tuple[int, ...]:
        return self.cd
