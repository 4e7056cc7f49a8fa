"""The plugin filters of the blosc family: blosc, lz4, bitshuffle and zstd, each in its
HDF5 filter's framing."""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from h5lake.chunks.codecs.base import (
    H5Z_FLAG_OPTIONAL,
    Buffer,
    Context,
    FilterId,
    Params,
    check_size,
    codec_lib,
)
from h5lake.errors import DataCorruption, InvalidInput


class BloscCompressor(enum.Enum):
    """Blosc 1 compressors with their codes in the HDF5 blosc filter's ``cd_values[6]``."""

    BLOSCLZ = "blosclz"
    LZ4 = "lz4"
    LZ4HC = "lz4hc"
    ZLIB = "zlib"
    ZSTD = "zstd"

    @property
    def code(self) -> int:
        return _BLOSC_CODES[self]


_BLOSC_CODES = {
    BloscCompressor.BLOSCLZ: 0,
    BloscCompressor.LZ4: 1,
    BloscCompressor.LZ4HC: 2,
    BloscCompressor.ZLIB: 4,
    BloscCompressor.ZSTD: 5,
}
_BLOSC_BY_CODE = {code: c.value for c, code in _BLOSC_CODES.items()} | {3: "snappy"}


class BloscShuffle(enum.IntEnum):
    NOSHUFFLE = 0
    SHUFFLE = 1
    BITSHUFFLE = 2


_BLOSC_SHUFFLES: dict[str | int, BloscShuffle] = {
    **{s.name.lower(): s for s in BloscShuffle},
    **{int(s): s for s in BloscShuffle},
    "none": BloscShuffle.NOSHUFFLE,
}
_BLOSC_MAX_TYPESIZE = 255  # larger types are compressed with type size 1, as the filter does
_BLOSC_HEADER = struct.Struct("<4BIII")  # version, versionlz, flags, typesize, nbytes, bs, cbytes


@dataclass(frozen=True, slots=True)
class Blosc:
    """The HDF5 blosc filter (hdf5-blosc): one plain blosc 1 buffer per chunk."""

    compressor: BloscCompressor = BloscCompressor.BLOSCLZ
    level: int = 5
    shuffle: BloscShuffle = BloscShuffle.SHUFFLE
    typesize: int = 1
    chunk_nbytes: int = 0  # only for cd_values, as the filter's set_local records it

    filter_id: ClassVar[FilterId] = FilterId.BLOSC
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Blosc:
        compressor = p.choice("compressor", "blosclz", {c.value: c for c in BloscCompressor})
        # A preceding shuffle filter already did the shuffling: don't shuffle twice by default.
        default_shuffle = "noshuffle" if ctx.after_shuffle else "shuffle"
        return cls(
            compressor=compressor,
            level=p.integer("level", 5, 0, 9),
            shuffle=p.choice("shuffle", default_shuffle, _BLOSC_SHUFFLES),
            typesize=ctx.base_itemsize,
            chunk_nbytes=ctx.chunk_nbytes or 0,
        )

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if len(cd) > 4:
            params["level"] = cd[4]
        if len(cd) > 5:
            params["shuffle"] = BloscShuffle(cd[5]).name.lower() if cd[5] <= 2 else cd[5]
        if len(cd) > 6:
            params["compressor"] = _BLOSC_BY_CODE.get(cd[6], str(cd[6]))
        return params

    def encode(self, buf: Buffer) -> Buffer:
        # imagecodecs takes blosc's type size from an array's item size, not from a keyword.
        view = memoryview(buf).cast("B")
        typesize = self.typesize if self.typesize <= _BLOSC_MAX_TYPESIZE else 1
        elements = np.frombuffer(view, dtype=f"V{typesize}") if len(view) % typesize == 0 else view
        result: bytes = codec_lib.blosc_encode(
            elements,
            self.level,
            compressor=self.compressor.code,
            shuffle=int(self.shuffle),
            numthreads=1,
        )
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < _BLOSC_HEADER.size:
            raise DataCorruption("blosc filter: chunk is shorter than the blosc header")
        *_, decoded, _blocksize, cbytes = _BLOSC_HEADER.unpack_from(view)
        if cbytes != len(view):
            raise DataCorruption(f"blosc filter: header says {cbytes} bytes, chunk has {len(view)}")
        check_size("blosc", decoded, nbytes)
        result: bytes = codec_lib.blosc_decode(view, numthreads=1)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {
            "compressor": self.compressor.value,
            "level": self.level,
            "shuffle": self.shuffle.name.lower(),
        }

    def cd_values(self) -> tuple[int, ...]:
        # Slots 0-3 (filter version, blosc format, type size, chunk bytes) as set_local fills them.
        return (
            2,
            2,
            self.typesize,
            self.chunk_nbytes,
            self.level,
            int(self.shuffle),
            self.compressor.code,
        )


_LZ4_MAX_BLOCK = 0x7E000000  # LZ4_MAX_INPUT_SIZE
_LZ4H5_HEADER = struct.Struct(">QI")  # decoded size, block size


@dataclass(frozen=True, slots=True)
class Lz4:
    """The HDF5 LZ4 filter: 8-byte BE size, 4-byte BE block size, then size-prefixed blocks."""

    block_size: int = 0  # bytes; 0 means the filter's default (1 GiB, so one block per chunk)
    # h5pyd sends a "level" for lz4 (its compression_opts), but HDF5's LZ4 filter has none: the
    # level is kept and shown, as HSDS shows what the client sent, and changes nothing.
    level: int | None = None

    filter_id: ClassVar[FilterId] = FilterId.LZ4
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Lz4:
        level = p.optional_int("level", 0, 9)
        return cls(block_size=p.integer("blockSize", 0, 0, _LZ4_MAX_BLOCK), level=level)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"blockSize": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = codec_lib.lz4h5_encode(buf, blocksize=self.block_size or None)
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < _LZ4H5_HEADER.size:
            raise DataCorruption("lz4 filter: chunk is shorter than its header")
        decoded, block = _LZ4H5_HEADER.unpack_from(view)
        check_size("lz4", decoded, nbytes)
        if decoded and not block:
            raise DataCorruption("lz4 filter: header has a zero block size")
        result: bytes = codec_lib.lz4h5_decode(view)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {"blockSize": self.block_size} if self.level is None else {"blockSize": self.block_size, "level": self.level}

    def cd_values(self) -> tuple[int, ...]:
        return (self.block_size,)


class BitshuffleCompressor(enum.Enum):
    NONE = "none"
    LZ4 = "lz4"
    ZSTD = "zstd"


_BSHUF_CODES = {
    BitshuffleCompressor.NONE: 0,
    BitshuffleCompressor.LZ4: 2,
    BitshuffleCompressor.ZSTD: 3,
}
_BSHUF_BY_CODE = {code: c.value for c, code in _BSHUF_CODES.items()}
_BSHUF_HEADER = struct.Struct(">QI")  # decoded size, block size in bytes
_BSHUF_BLOCK_MULTIPLE = 8


def _bitshuffle_default_block(elem_size: int) -> int:
    """bitshuffle's default block, in elements: about 8 KiB, a multiple of 8, at least 128."""
    block = 8192 // elem_size
    return max(block - block % _BSHUF_BLOCK_MULTIPLE, 128)


def _bitshuffle_blocks(n_elements: int, block: int) -> list[int]:
    """Element counts of the compressed blocks; the remaining ``n % 8`` elements stay raw."""
    full, left = divmod(n_elements, block)
    last = left - left % _BSHUF_BLOCK_MULTIPLE
    return [block] * full + ([last] if last else [])


@dataclass(frozen=True, slots=True)
class Bitshuffle:
    """The HDF5 bitshuffle filter; compressed variants frame blocks like ``bshuf_compress_*``."""

    elem_size: int
    block_size: int = 0  # elements; 0 means bitshuffle's default
    compressor: BitshuffleCompressor = BitshuffleCompressor.NONE
    level: int = 0  # zstd level, only with the zstd compressor

    filter_id: ClassVar[FilterId] = FilterId.BITSHUFFLE
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Bitshuffle:
        block = p.integer("blockSize", 0, 0, 1 << 28)
        if block % _BSHUF_BLOCK_MULTIPLE:
            raise InvalidInput(f"bitshuffle filter: blockSize must be a multiple of 8, not {block}")
        compressor = p.choice("compressor", "none", {c.value: c for c in BitshuffleCompressor})
        level = 0
        if compressor is BitshuffleCompressor.ZSTD:
            level = p.integer("level", 3, 1, 22)
        elif p.has("level"):
            raise InvalidInput("bitshuffle filter: level applies only to the zstd compressor")
        return cls(ctx.itemsize, block, compressor, level)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if len(cd) > 3:
            params["blockSize"] = cd[3]
        if len(cd) > 4:
            params["compressor"] = _BSHUF_BY_CODE.get(cd[4], str(cd[4]))
        if len(cd) > 5 and cd[4] == _BSHUF_CODES[BitshuffleCompressor.ZSTD]:
            params["level"] = cd[5]
        return params

    @property
    def _block(self) -> int:
        return self.block_size or _bitshuffle_default_block(self.elem_size)

    def _compress_block(self, block: memoryview) -> bytes:
        if self.compressor is BitshuffleCompressor.LZ4:
            result: bytes = codec_lib.lz4_encode(block, header=False)
            return result
        return _zstd().compress(block, self.level)

    def _decompress_block(self, block: memoryview, out: memoryview) -> int:
        if self.compressor is BitshuffleCompressor.LZ4:
            return len(codec_lib.lz4_decode(block, header=False, out=out))
        data = _zstd().decompress(block)
        out[: len(data)] = data  # a block longer than ``out`` raises, a shorter one is caught
        return len(data)

    def encode(self, buf: Buffer) -> Buffer:
        view = memoryview(buf).cast("B")
        size = self.elem_size
        if len(view) % size:
            raise InvalidInput("bitshuffle filter: chunk is not a whole number of elements")
        shuffled = memoryview(codec_lib.bitshuffle_encode(view, itemsize=size, blocksize=self._block)).cast("B")
        if self.compressor is BitshuffleCompressor.NONE:
            return shuffled
        parts: list[Buffer] = [_BSHUF_HEADER.pack(len(view), self._block * size)]
        pos = 0
        for count in _bitshuffle_blocks(len(view) // size, self._block):
            packed = self._compress_block(shuffled[pos : pos + count * size])
            parts += (len(packed).to_bytes(4, "big"), packed)
            pos += count * size
        parts.append(shuffled[pos:])
        return b"".join(parts)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        size = self.elem_size
        if self.compressor is BitshuffleCompressor.NONE:
            if len(view) % size:
                raise DataCorruption("bitshuffle filter: chunk is not a whole number of elements")
            result: bytes = codec_lib.bitshuffle_decode(view, itemsize=size, blocksize=self._block)
            return result
        if len(view) < _BSHUF_HEADER.size:
            raise DataCorruption("bitshuffle filter: chunk is shorter than its header")
        decoded, block_bytes = _BSHUF_HEADER.unpack_from(view)
        check_size("bitshuffle", decoded, nbytes)
        block, rem = divmod(block_bytes, size)
        if decoded % size or rem or not block or block % _BSHUF_BLOCK_MULTIPLE:
            raise DataCorruption("bitshuffle filter: header is inconsistent")
        out = bytearray(decoded)
        out_view = memoryview(out)
        pos, opos = _BSHUF_HEADER.size, 0
        for count in _bitshuffle_blocks(decoded // size, block):
            packed_len = int.from_bytes(view[pos : pos + 4], "big")
            packed = view[pos + 4 : pos + 4 + packed_len]
            if len(packed) != packed_len:
                raise DataCorruption("bitshuffle filter: chunk is truncated")
            want = count * size
            if self._decompress_block(packed, out_view[opos : opos + want]) != want:
                raise DataCorruption("bitshuffle filter: a block decoded to the wrong size")
            pos += 4 + packed_len
            opos += want
        if len(view) - pos != decoded - opos:
            raise DataCorruption("bitshuffle filter: chunk has the wrong length")
        out_view[opos:] = view[pos:]
        result = codec_lib.bitshuffle_decode(out, itemsize=size, blocksize=block)
        return memoryview(result).cast("B")

    def encoded_size(self, nbytes: int) -> int | None:
        return nbytes if self.compressor is BitshuffleCompressor.NONE else None

    def json_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"blockSize": self.block_size, "compressor": self.compressor.value}
        if self.compressor is BitshuffleCompressor.ZSTD:
            params["level"] = self.level
        return params

    def cd_values(self) -> tuple[int, ...]:
        # set_local shifts user values up by 3 and fills version and element size.
        values: tuple[int, ...] = (self.block_size, _BSHUF_CODES[self.compressor])
        if self.compressor is BitshuffleCompressor.ZSTD:
            values += (self.level,)
        return values


@dataclass(frozen=True, slots=True)
class Zstd:
    """The HDF5 zstd filter: one zstd frame (with its content size) per chunk."""

    level: int = 3

    filter_id: ClassVar[FilterId] = FilterId.ZSTD
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Zstd:
        return cls(level=p.integer("level", 3, 1, 22))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"level": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        return _zstd().compress(buf, self.level)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        # The frame records its size (HDF5's zstd filter needs it); the pipeline checks it.
        return _zstd().decompress(buf)

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {"level": self.level}

    def cd_values(self) -> tuple[int, ...]:
        return (self.level,)


def _zstd() -> Any:
    """numcodecs' zstd, loaded when first used (numcodecs: 5 MiB resident in every worker)."""
    import numcodecs.zstd

    return numcodecs.zstd
