"""HDF5's own filters: deflate (gzip), shuffle and Fletcher-32."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from numcodecs.shuffle import Shuffle as _ByteShuffle

from h5lake.chunks.codecs.base import (
    H5Z_FLAG_OPTIONAL,
    Buffer,
    Context,
    FilterId,
    Params,
    codec_lib,
)
from h5lake.errors import DataCorruption


@dataclass(frozen=True, slots=True)
class Deflate:
    level: int = 4

    filter_id: ClassVar[FilterId] = FilterId.DEFLATE
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Deflate:
        return cls(level=p.integer("level", 4, 0, 9))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"level": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = codec_lib.deflate_encode(buf, self.level)  # zlib format, as HDF5 writes
        return result

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
        codec = _ByteShuffle(size)
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
