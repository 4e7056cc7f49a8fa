"""HDF5 chunk filter pipelines whose stored bytes are HDF5's own filtered chunk bytes.

Why: a chunk we store must be readable by HDF5 once exported with ``write_direct_chunk``, and a
chunk inside an existing ``.h5`` file must decode with this same code. So every filter here writes
and reads its HDF5 filter's byte format, including the framing of the plugin filters, while the
compression itself is done by well-kept codec libraries:

==============  =====  =======================================================================
filter          id     library
==============  =====  =======================================================================
deflate/gzip    1      libdeflate to encode, zlib-ng to decode (both through imagecodecs)
shuffle         2      numcodecs ``Shuffle``
fletcher32      3      HDF5's own checksum code (imagecodecs ``h5checksum``)
szip            4      libaec (imagecodecs), with HDF5's 4-byte size header
lzf             32000  liblzf (imagecodecs)
blosc           32001  c-blosc 1 (imagecodecs); compressors blosclz, lz4, lz4hc, zlib, zstd
lz4             32004  lz4 with the HDF5 LZ4 filter framing (imagecodecs ``lz4h5``)
bitshuffle      32008  bitshuffle (imagecodecs), lz4 blocks (imagecodecs) or zstd blocks
                       (numcodecs); the HDF5 framing is done here
zstd            32015  numcodecs ``zstd`` (a plain zstd frame, as the HDF5 zstd filter writes)
lzo             305    PyTables' LZO1X filter: lzokay to encode, liblzokay (imagecodecs) to
                       decode; PyTables' framing (adler32 and size trailer) is done here
==============  =====  =======================================================================

``lz4hc`` (32005) is HSDS's name for blosc with the lz4hc compressor, not an HDF5 filter; it is
accepted and normalized to blosc (32001). nbit (5) is HDF5's own format, written here
(``chunks.nbit``), and so is scaleoffset (6) (``chunks.scaleoffset``): they need the
dataset's type (``type_json``). snappy (32003) and blosc2 (32026) are rejected with
``InvalidInput``.

Contract: ``encode`` and ``decode`` are synchronous CPU work; callers run them off the event
loop. ``decode`` never returns garbage: a Fletcher-32 mismatch, a truncated stream or any other
decoding failure raises ``DataCorruption``. Give the chunk shape whenever the chunk has a fixed
size: decode then also checks every chunk decodes to exactly that many bytes. One format limit:
an szip stream has no end marker or checksum, so libaec, like HDF5, decodes a stream cut short
inside its body to full size; only a Fletcher-32 filter in the pipeline catches that.
"""

from __future__ import annotations

import enum
import math
import struct
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

import imagecodecs
import lzokay
import numcodecs.zstd
import numpy as np
from numcodecs.shuffle import Shuffle as _ByteShuffle

from h5lake.chunks import nbit, scaleoffset
from h5lake.errors import DataCorruption, H5LakeError, InvalidInput

if TYPE_CHECKING:
    import h5py

Buffer: TypeAlias = bytes | bytearray | memoryview
"""What the filters accept and return: any contiguous bytes-like object."""

_codecs: Any = imagecodecs  # its stubs reject memoryview, which every codec here accepts

H5Z_FLAG_OPTIONAL = 0x0001
"""HDF5 filter flag: the filter may be skipped for a chunk (its bit set in the filter mask)."""

MAX_CHUNK_NBYTES = 1 << 32
"""HDF5 chunks are under 4 GiB; a header claiming more is corrupt."""


class FilterId(enum.IntEnum):
    """HDF5 filter ids, with the HSDS/h5pyd ``H5Z_FILTER_*`` class names as member names."""

    DEFLATE = 1
    SHUFFLE = 2
    FLETCHER32 = 3
    SZIP = 4
    NBIT = 5
    SCALEOFFSET = 6
    LZF = 32000
    BLOSC = 32001
    SNAPPY = 32003
    LZ4 = 32004
    LZ4HC = 32005
    BITSHUFFLE = 32008
    ZSTD = 32015
    BLOSC2 = 32026
    LZO = 305

    @property
    def class_name(self) -> str:
        return f"H5Z_FILTER_{self.name}"

    @property
    def canonical_name(self) -> str:
        """The ``name`` h5pyd (h5json ``FILTER_DEFS``) uses for this filter."""
        return _CANONICAL_NAMES[self]


_CANONICAL_NAMES: dict[FilterId, str] = {
    FilterId.DEFLATE: "gzip",
    FilterId.SHUFFLE: "shuffle",
    FilterId.FLETCHER32: "fletcher32",
    FilterId.SZIP: "szip",
    FilterId.NBIT: "nbit",
    FilterId.SCALEOFFSET: "scaleoffset",
    FilterId.LZF: "lzf",
    FilterId.BLOSC: "blosclz",
    FilterId.SNAPPY: "snappy",
    FilterId.LZ4: "lz4",
    FilterId.LZ4HC: "lz4hc",
    FilterId.BITSHUFFLE: "bitshuffle",
    FilterId.ZSTD: "zstd",
    FilterId.BLOSC2: "blosc2",
    FilterId.LZO: "lzo",
}
_NAME_TO_ID: dict[str, FilterId] = {
    **{name: fid for fid, name in _CANONICAL_NAMES.items()},
    "deflate": FilterId.DEFLATE,  # h5py's and HDF5's name
    "zlib": FilterId.DEFLATE,  # h5json treats it as gzip
    "blosc": FilterId.BLOSC,  # h5py/hdf5plugin name
    "bshuf": FilterId.BITSHUFFLE,  # hdf5plugin name
}
_CLASS_TO_ID: dict[str, FilterId] = {fid.class_name: fid for fid in FilterId}

_UNSUPPORTED: dict[FilterId, str] = {
    FilterId.SNAPPY: "the snappy filter (32003) is not supported; use lz4 or zstd instead",
    FilterId.BLOSC2: "the blosc2 filter (32026) is not supported yet; use blosc (32001)",
}

SUPPORTED_COMPRESSORS: tuple[str, ...] = (
    "gzip",
    "szip",
    "lzf",
    "blosclz",
    "lz4",
    "lz4hc",
    "zlib",
    "zstd",
)
"""The domain JSON ``compressors`` list: each name h5pyd may send as ``compression=`` that we
store. ``zlib`` is h5json's alias of gzip; ``lz4hc`` becomes blosc with the lz4hc compressor."""


# ----------------------------------------------------------------------------------------------
# Parsing helpers


@dataclass(frozen=True, slots=True)
class _Context:
    """What HDF5's ``set_local`` callbacks learn from the dataset: type and chunk shape."""

    itemsize: int
    base_itemsize: int  # element size of an array type's base, else itemsize
    big_endian: bool
    chunk_shape: tuple[int, ...] | None
    after_shuffle: bool  # a shuffle or bitshuffle filter precedes this one
    type_json: Mapping[str, Any] | None = None  # the dataset's type, when known (nbit needs it)

    @property
    def chunk_nbytes(self) -> int | None:
        if self.chunk_shape is None:
            return None
        n = self.itemsize
        for d in self.chunk_shape:
            n *= d
        return n


class _Params:
    """A filter's JSON parameters; every access names the filter in its error."""

    def __init__(self, label: str, values: Mapping[str, Any]) -> None:
        self.label = label
        self._values = dict(values)

    def has(self, key: str) -> bool:
        return key in self._values

    def integer(self, key: str, default: int, lo: int, hi: int) -> int:
        value = self._values.pop(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InvalidInput(
                f"{self.label} filter: {key} must be an integer from {lo} to {hi}, not {value!r}"
            )
        return value

    def choice(self, key: str, default: str, choices: Mapping[str | int, Any]) -> Any:
        value = self._values.pop(key, default)
        key_value = value.lower() if isinstance(value, str) else value
        if (
            not isinstance(key_value, str | int)
            or isinstance(key_value, bool)
            or key_value not in choices
        ):
            names = ", ".join(str(c) for c in choices if isinstance(c, str))
            raise InvalidInput(f"{self.label} filter: {key} must be one of {names}, not {value!r}")
        return choices[key_value]

    def take(self, key: str) -> Any:
        """A parameter as given (None when absent); the caller checks it."""
        return self._values.pop(key, None)

    def optional_int(self, key: str, lo: int, hi: int) -> int | None:
        if key not in self._values:
            return None
        return self.integer(key, 0, lo, hi)

    def finish(self) -> None:
        if self._values:
            unknown = ", ".join(sorted(self._values))
            raise InvalidInput(f"{self.label} filter: unknown parameter(s) {unknown}")


def _check_size(label: str, declared: int, limit: int | None) -> None:
    if declared > (limit if limit is not None else MAX_CHUNK_NBYTES):
        raise DataCorruption(f"{label} filter: header claims {declared} decoded bytes")


# ----------------------------------------------------------------------------------------------
# The filters


class ChunkFilter(Protocol):
    """One HDF5 filter with its parameters resolved for a dataset (after ``set_local``)."""

    filter_id: ClassVar[FilterId]
    flags: ClassVar[int]

    def encode(self, buf: Buffer) -> Buffer: ...

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        """Undo ``encode``; ``nbytes`` is the exact decoded size when known."""
        ...

    def encoded_size(self, nbytes: int) -> int | None:
        """Size of ``encode``'s output for ``nbytes`` of input, when it does not depend on data."""
        ...

    def json_params(self) -> dict[str, Any]: ...

    def cd_values(self) -> tuple[int, ...]:
        """Client data for ``H5Pset_filter`` that makes HDF5 write this same format."""
        ...


@dataclass(frozen=True, slots=True)
class Deflate:
    level: int = 4

    filter_id: ClassVar[FilterId] = FilterId.DEFLATE
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: _Params, ctx: _Context) -> Deflate:
        return cls(level=p.integer("level", 4, 0, 9))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"level": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = _codecs.deflate_encode(buf, self.level)  # zlib format, as HDF5 writes
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        result: bytes = _codecs.zlibng_decode(buf, out=nbytes)
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
    def parse(cls, p: _Params, ctx: _Context) -> Shuffle:
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
    def parse(cls, p: _Params, ctx: _Context) -> Fletcher32:
        return cls()

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {}

    def encode(self, buf: Buffer) -> Buffer:
        checksum: int = _codecs.h5checksum_fletcher32(buf)
        return b"".join((buf, checksum.to_bytes(4, "little")))

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < 4:
            raise DataCorruption("fletcher32 filter: chunk is shorter than its checksum")
        data = view[:-4]
        stored = int.from_bytes(view[-4:], "little")
        checksum: int = _codecs.h5checksum_fletcher32(data)
        if stored != checksum and stored != _fletcher32_byteswapped(checksum):
            raise DataCorruption("fletcher32 filter: checksum mismatch, the chunk is corrupt")
        return data

    def encoded_size(self, nbytes: int) -> int | None:
        return nbytes + 4

    def json_params(self) -> dict[str, Any]:
        return {}

    def cd_values(self) -> tuple[int, ...]:
        return ()


class SzipCoding(enum.Enum):
    EC = "H5_SZIP_EC_OPTION_MASK"
    NN = "H5_SZIP_NN_OPTION_MASK"


_SZIP_MASK_BITS = {SzipCoding.EC: 4, SzipCoding.NN: 32}
_SZIP_ALLOW_K13, _SZIP_LSB, _SZIP_MSB, _SZIP_RAW = 1, 8, 16, 128
_SZIP_MAX_BLOCKS_PER_SCANLINE = 128


def _szip_scanline(pixels_per_block: int, chunk_shape: tuple[int, ...]) -> int:
    """Pixels per scanline as HDF5's szip ``set_local`` derives it from the chunk shape."""
    npoints = 1
    for d in chunk_shape:
        npoints *= d
    scanline = chunk_shape[-1] if chunk_shape else 1
    limit = pixels_per_block * _SZIP_MAX_BLOCKS_PER_SCANLINE
    if scanline < pixels_per_block:
        if npoints < pixels_per_block:
            raise InvalidInput("szip filter: pixelsPerBlock exceeds the elements in a chunk")
        return min(limit, npoints)
    return min(limit, scanline)


@dataclass(frozen=True, slots=True)
class Szip:
    """HDF5 szip (libaec in szip mode): a 4-byte little-endian decoded size, then the stream."""

    coding: SzipCoding
    pixels_per_block: int
    bits_per_pixel: int
    pixels_per_scanline: int
    msb_first: bool

    filter_id: ClassVar[FilterId] = FilterId.SZIP
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: _Params, ctx: _Context) -> Szip:
        coding = p.choice(
            "coding", "H5_SZIP_NN_OPTION_MASK", {c.value.lower(): c for c in SzipCoding}
        )
        ppb = p.integer("pixelsPerBlock", 8, 2, 32)
        if ppb not in (8, 16, 32):
            raise InvalidInput(f"szip filter: pixelsPerBlock must be 8, 16 or 32, not {ppb}")
        bpp = p.optional_int("bitsPerPixel", 1, 64)
        if bpp is None:
            precision = 8 * ctx.base_itemsize
            if precision > 64:
                raise InvalidInput("szip filter: elements wider than 64 bits cannot be szipped")
            bpp = precision if precision <= 24 else 32 if precision <= 32 else 64
        if not (bpp <= 24 or bpp in (32, 64)):
            raise InvalidInput(f"szip filter: bitsPerPixel must be 1-24, 32 or 64, not {bpp}")
        pps = p.optional_int("pixelsPerScanLine", 1, ppb * _SZIP_MAX_BLOCKS_PER_SCANLINE)
        if pps is None:
            if ctx.chunk_shape is None:
                raise InvalidInput("szip filter: needs the chunk shape to set pixelsPerScanLine")
            pps = _szip_scanline(ppb, ctx.chunk_shape)
        return cls(coding, ppb, bpp, pps, msb_first=ctx.big_endian)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        if len(cd) < 4:
            return {}
        coding = SzipCoding.EC if cd[0] & _SZIP_MASK_BITS[SzipCoding.EC] else SzipCoding.NN
        return {
            "coding": coding.value,
            "pixelsPerBlock": cd[1],
            "bitsPerPixel": cd[2],
            "pixelsPerScanLine": cd[3],
        }

    @property
    def options_mask(self) -> int:
        order = _SZIP_MSB if self.msb_first else _SZIP_LSB
        return _SZIP_MASK_BITS[self.coding] | _SZIP_ALLOW_K13 | _SZIP_RAW | order

    def _args(self) -> tuple[int, int, int, int]:
        return (
            self.options_mask,
            self.pixels_per_block,
            self.bits_per_pixel,
            self.pixels_per_scanline,
        )

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = _codecs.szip_encode(buf, *self._args(), header=True)
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < 4:
            raise DataCorruption("szip filter: chunk is shorter than its header")
        _check_size("szip", int.from_bytes(view[:4], "little"), nbytes)
        result: bytes = _codecs.szip_decode(view, *self._args(), header=True)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {
            "coding": self.coding.value,
            "pixelsPerBlock": self.pixels_per_block,
            "bitsPerPixel": self.bits_per_pixel,
            "pixelsPerScanLine": self.pixels_per_scanline,
        }

    def cd_values(self) -> tuple[int, ...]:
        # H5Pset_szip's two user values; HDF5's set_local adds the rest from type and chunk.
        return (_SZIP_MASK_BITS[self.coding] | _SZIP_ALLOW_K13, self.pixels_per_block)


@dataclass(frozen=True, slots=True)
class Lzf:
    """h5py's LZF filter: a bare liblzf stream."""

    chunk_nbytes: int = 0  # only for cd_values, as h5py's set_local records it

    filter_id: ClassVar[FilterId] = FilterId.LZF
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: _Params, ctx: _Context) -> Lzf:
        return cls(chunk_nbytes=ctx.chunk_nbytes or 0)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {}

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = _codecs.lzf_encode(buf)
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        result: bytes = _codecs.lzf_decode(buf, out=nbytes)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {}

    def cd_values(self) -> tuple[int, ...]:
        return (4, 0x105, self.chunk_nbytes)


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
    def parse(cls, p: _Params, ctx: _Context) -> Blosc:
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
        result: bytes = _codecs.blosc_encode(
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
        _check_size("blosc", decoded, nbytes)
        result: bytes = _codecs.blosc_decode(view, numthreads=1)
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

    filter_id: ClassVar[FilterId] = FilterId.LZ4
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: _Params, ctx: _Context) -> Lz4:
        # h5pyd sends a "level" for lz4, but HDF5's LZ4 filter has none: accepted and dropped.
        p.optional_int("level", 0, 9)
        return cls(block_size=p.integer("blockSize", 0, 0, _LZ4_MAX_BLOCK))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"blockSize": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = _codecs.lz4h5_encode(buf, blocksize=self.block_size or None)
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < _LZ4H5_HEADER.size:
            raise DataCorruption("lz4 filter: chunk is shorter than its header")
        decoded, block = _LZ4H5_HEADER.unpack_from(view)
        _check_size("lz4", decoded, nbytes)
        if decoded and not block:
            raise DataCorruption("lz4 filter: header has a zero block size")
        result: bytes = _codecs.lz4h5_decode(view)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {"blockSize": self.block_size}

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
    def parse(cls, p: _Params, ctx: _Context) -> Bitshuffle:
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
            result: bytes = _codecs.lz4_encode(block, header=False)
            return result
        return numcodecs.zstd.compress(block, self.level)

    def _decompress_block(self, block: memoryview, out: memoryview) -> int:
        if self.compressor is BitshuffleCompressor.LZ4:
            return len(_codecs.lz4_decode(block, header=False, out=out))
        data = numcodecs.zstd.decompress(block)
        out[: len(data)] = data  # a block longer than ``out`` raises, a shorter one is caught
        return len(data)

    def encode(self, buf: Buffer) -> Buffer:
        view = memoryview(buf).cast("B")
        size = self.elem_size
        if len(view) % size:
            raise InvalidInput("bitshuffle filter: chunk is not a whole number of elements")
        shuffled = memoryview(
            _codecs.bitshuffle_encode(view, itemsize=size, blocksize=self._block)
        ).cast("B")
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
            result: bytes = _codecs.bitshuffle_decode(view, itemsize=size, blocksize=self._block)
            return result
        if len(view) < _BSHUF_HEADER.size:
            raise DataCorruption("bitshuffle filter: chunk is shorter than its header")
        decoded, block_bytes = _BSHUF_HEADER.unpack_from(view)
        _check_size("bitshuffle", decoded, nbytes)
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
        result = _codecs.bitshuffle_decode(out, itemsize=size, blocksize=block)
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
    def parse(cls, p: _Params, ctx: _Context) -> Zstd:
        return cls(level=p.integer("level", 3, 1, 22))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"level": cd[0]} if cd else {}

    def encode(self, buf: Buffer) -> Buffer:
        return numcodecs.zstd.compress(buf, self.level)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        # The frame records its size (HDF5's zstd filter needs it); the pipeline checks it.
        return numcodecs.zstd.decompress(buf)

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {"level": self.level}

    def cd_values(self) -> tuple[int, ...]:
        return (self.level,)


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
    def parse(cls, p: _Params, ctx: _Context) -> Lzo:
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
            result: bytes = _codecs.lzo_decode(data, out=nbytes)
            return result
        size = 4 * data.nbytes + 64  # no size given: grow the output until it fits, as PyTables does
        while True:
            try:
                grown: bytes = _codecs.lzo_decode(data, out=size)
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
            _check_size("lzo", size, nbytes)
        elif nbytes not in (None, size):
            return None
        try:
            out: bytes = _codecs.lzo_decode(data[:-8], out=size)
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


@dataclass(frozen=True, slots=True)
class Nbit:
    """HDF5's N-bit filter (``chunks.nbit``). Its cd_values are the ones a file gives
    (``parameters``), else computed from the dataset's type and chunk shape as HDF5 does."""

    cd: tuple[int, ...] = ()
    given: bool = False  # the cd_values came with the filter (a file's); kept in its JSON
    file_flags: int | None = None  # a file's flags for the filter, kept for export

    filter_id: ClassVar[FilterId] = FilterId.NBIT
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: _Params, ctx: _Context) -> Nbit:
        given = p.take("parameters")
        flags = p.take("flags")
        if flags is not None and (isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags < 1 << 32):
            raise InvalidInput("nbit filter: flags must be an unsigned integer")
        if given:
            layout = nbit.NbitLayout(given)
            if not layout.noop and layout.item_size != ctx.itemsize:
                raise InvalidInput(f"nbit filter: parameters describe {layout.item_size}-byte elements, the type has {ctx.itemsize}")
            if ctx.chunk_shape is not None and layout.elements != math.prod(ctx.chunk_shape):
                raise InvalidInput(f"nbit filter: parameters describe chunks of {layout.elements} elements, not {math.prod(ctx.chunk_shape)}")
            return cls(layout.cd, True, flags)
        if ctx.type_json is None or ctx.chunk_shape is None:
            return cls(())  # only described (for export: HDF5 computes the parameters itself)
        return cls(nbit.cd_values_for(ctx.type_json, math.prod(ctx.chunk_shape)))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"parameters": list(cd)} if cd else {}

    @property
    def _layout(self) -> nbit.NbitLayout:
        if not self.cd:
            raise InvalidInput("nbit filter: the dataset's type and chunk shape are needed to apply it")
        return nbit.NbitLayout(self.cd)

    def encode(self, buf: Buffer) -> Buffer:
        return self._layout.encode(buf)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        return self._layout.decode(buf, nbytes)

    def encoded_size(self, nbytes: int) -> int | None:
        layout = self._layout
        return nbytes if layout.noop else layout.elements * layout.bits // 8 + 1

    def json_params(self) -> dict[str, Any]:
        if not self.given:
            return {}
        out: dict[str, Any] = {"parameters": list(self.cd)}
        if self.file_flags is not None:
            out["flags"] = self.file_flags
        return out

    def cd_values(self) -> tuple[int, ...]:
        return ()  # HDF5's set_local computes them from the dataset


_SCALE_TYPES = {"H5Z_SO_FLOAT_DSCALE": scaleoffset.SO_FLOAT_DSCALE, "H5Z_SO_INT": scaleoffset.SO_INT}


@dataclass(frozen=True, slots=True)
class ScaleOffset:
    """HDF5's scale-offset filter (``chunks.scaleoffset``): integers, and floats with D-scaling.
    Its cd_values are a file's (``parameters``), else worked out from ``scaleType`` and
    ``scaleOffset`` and the dataset's type and chunk shape as HDF5 does for a dataset without
    a fill value."""

    cd: tuple[int, ...] = ()
    given: bool = False
    file_flags: int | None = None
    scale_type: int = scaleoffset.SO_INT
    factor: int = 0

    filter_id: ClassVar[FilterId] = FilterId.SCALEOFFSET
    flags: ClassVar[int] = 0  # HDF5's H5Pset_scaleoffset makes it mandatory

    @classmethod
    def parse(cls, p: _Params, ctx: _Context) -> ScaleOffset:
        given = p.take("parameters")
        flags = p.take("flags")
        if flags is not None and (isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags < 1 << 32):
            raise InvalidInput("scaleoffset filter: flags must be an unsigned integer")
        if given:
            layout = scaleoffset.ScaleOffsetLayout(given)
            if layout.size != ctx.itemsize:
                raise InvalidInput(f"scaleoffset filter: parameters describe {layout.size}-byte values, the type has {ctx.itemsize}")
            if ctx.chunk_shape is not None and layout.elements != math.prod(ctx.chunk_shape):
                raise InvalidInput(f"scaleoffset filter: parameters describe chunks of {layout.elements} values, not {math.prod(ctx.chunk_shape)}")
            return cls(layout.cd, True, flags, layout.scale_type, layout.factor)
        scale_type = p.choice("scaleType", "H5Z_SO_INT", {k.lower(): v for k, v in _SCALE_TYPES.items()})
        factor = p.integer("scaleOffset", 0, -(1 << 31), (1 << 31) - 1)
        if ctx.type_json is None or ctx.chunk_shape is None:
            return cls((), False, None, scale_type, factor)
        cd = scaleoffset.cd_values_for(scale_type, factor, dict(ctx.type_json), math.prod(ctx.chunk_shape))
        scaleoffset.ScaleOffsetLayout(cd)  # refuses what it cannot apply, by name
        return cls(cd, False, None, scale_type, factor)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"parameters": list(cd)} if cd else {}

    @property
    def _layout(self) -> scaleoffset.ScaleOffsetLayout:
        if not self.cd:
            raise InvalidInput("scaleoffset filter: the dataset's type and chunk shape are needed to apply it")
        return scaleoffset.ScaleOffsetLayout(self.cd)

    def encode(self, buf: Buffer) -> Buffer:
        return self._layout.encode(buf)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        return self._layout.decode(buf, nbytes)

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        if self.given:
            out: dict[str, Any] = {"parameters": list(self.cd)}
            if self.file_flags is not None:
                out["flags"] = self.file_flags
            return out
        name = {v: k for k, v in _SCALE_TYPES.items()}[self.scale_type]
        return {"scaleType": name, "scaleOffset": self.factor}

    def cd_values(self) -> tuple[int, ...]:
        return (self.scale_type, self.factor & 0xFFFFFFFF)


class _FilterKind(Protocol):
    def parse(self, p: _Params, ctx: _Context) -> ChunkFilter: ...

    def params_from_cd(self, cd: Sequence[int]) -> dict[str, Any]: ...


_KINDS: dict[FilterId, _FilterKind] = {
    FilterId.DEFLATE: Deflate,
    FilterId.SHUFFLE: Shuffle,
    FilterId.FLETCHER32: Fletcher32,
    FilterId.SZIP: Szip,
    FilterId.LZF: Lzf,
    FilterId.BLOSC: Blosc,
    FilterId.LZ4: Lz4,
    FilterId.BITSHUFFLE: Bitshuffle,
    FilterId.ZSTD: Zstd,
    FilterId.LZO: Lzo,
    FilterId.NBIT: Nbit,
    FilterId.SCALEOFFSET: ScaleOffset,
}


# ----------------------------------------------------------------------------------------------
# Resolving a filter spec


def _resolve(spec: object) -> tuple[FilterId, dict[str, Any]]:
    """The filter a spec names (by class, id or name; they must agree) and its parameters."""
    if isinstance(spec, str):
        spec = {"name": spec}
    elif isinstance(spec, int) and not isinstance(spec, bool):
        spec = {"id": spec}
    if not isinstance(spec, Mapping):
        raise InvalidInput(f"a filter must be an object with class, id or name, not {spec!r}")
    params = {k: v for k, v in spec.items() if k not in ("class", "id", "name")}
    raw_id, cls, name = spec.get("id"), spec.get("class"), spec.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"filter name must be a string, not {name!r}")
    candidates: list[FilterId] = []
    if raw_id is not None:
        if isinstance(raw_id, bool) or not isinstance(raw_id, int):
            raise InvalidInput(f"filter id must be an integer, not {raw_id!r}")
        try:
            candidates.append(FilterId(raw_id))
        except ValueError:
            raise InvalidInput(f"filter {raw_id} ({name or 'unnamed'}) is not supported") from None
    if cls is not None and cls != "H5Z_FILTER_USER":  # h5pyd's class for unnamed filters
        if cls not in _CLASS_TO_ID:
            raise InvalidInput(f"filter class {cls!r} is unknown")
        candidates.append(_CLASS_TO_ID[cls])
    by_name = _NAME_TO_ID.get(name.lower()) if name is not None else None
    if not candidates:
        if by_name is None:
            raise InvalidInput(f"filter {name!r} is unknown")
        candidates.append(by_name)
    fid = candidates[0]
    if any(c is not fid for c in candidates):
        raise InvalidInput(f"filter class {cls} does not match filter id {raw_id}")
    if by_name is not None and by_name is not fid:
        # HSDS style: a blosc filter named after its compressor ("lz4", "zstd", ...).
        if fid is FilterId.BLOSC and name is not None and "compressor" not in params:
            params["compressor"] = name.lower()
        else:
            raise InvalidInput(f"filter name {name!r} does not match filter {fid.class_name}")
    return fid, params


def _parse_filter(spec: object, ctx: _Context) -> ChunkFilter:
    fid, values = _resolve(spec)
    label = fid.canonical_name
    if fid in _UNSUPPORTED:
        raise InvalidInput(_UNSUPPORTED[fid])
    if fid is FilterId.LZ4HC:
        fid, values = FilterId.BLOSC, {"compressor": "lz4hc", **values}
    kind = _KINDS[fid]
    cd = values.pop("parameters", None)
    if cd is not None:
        if not isinstance(cd, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 32 for v in cd
        ):
            raise InvalidInput(f"{label} filter: parameters must be a list of unsigned integers")
        values = {**kind.params_from_cd(cd), **values}
    params = _Params(label, values)
    parsed = kind.parse(params, ctx)
    params.finish()
    return parsed


# ----------------------------------------------------------------------------------------------
# The pipeline


def _filter_json(f: ChunkFilter) -> dict[str, Any]:
    fid = f.filter_id
    return {"class": fid.class_name, "id": int(fid), "name": fid.canonical_name, **f.json_params()}


@dataclass(frozen=True, slots=True)
class FilterPipeline:
    """A dataset's filters in HDF5 order, resolved for its type and chunk shape.

    ``encode`` applies the filters in order, ``decode`` undoes them in reverse. With
    ``chunk_nbytes`` known, decode also checks every chunk decodes to exactly that size.
    """

    filters: tuple[ChunkFilter, ...] = ()
    chunk_nbytes: int | None = None

    @classmethod
    def from_json(
        cls,
        filters: object,
        dtype: np.dtype[Any] | int,
        chunk_shape: Sequence[int] | None = None,
        *,
        type_json: Mapping[str, Any] | None = None,
    ) -> FilterPipeline:
        """Build from a creationProperties ``filters`` list.

        ``dtype`` is the dataset's numpy dtype (or just its item size, taken as little-endian);
        ``chunk_shape`` is needed by szip and lets decode check sizes. Raises ``InvalidInput``
        naming the filter for anything unknown, unsupported or malformed.
        """
        if filters is None:
            filters = []
        if not isinstance(filters, list | tuple):
            raise InvalidInput(f"filters must be a list, not {type(filters).__name__}")
        if isinstance(dtype, int):
            itemsize, base_itemsize, big_endian = dtype, dtype, False
        else:
            itemsize = dtype.itemsize
            base = dtype.subdtype[0] if dtype.subdtype is not None else dtype
            base_itemsize = base.itemsize
            big_endian = base.byteorder == ">" or (base.byteorder == "=" and sys.byteorder == "big")
        if itemsize <= 0:
            raise InvalidInput("filters need a datatype with a positive size")
        shape = tuple(int(d) for d in chunk_shape) if chunk_shape is not None else None
        parsed: list[ChunkFilter] = []
        after_shuffle = False
        for spec in filters:
            ctx = _Context(itemsize, base_itemsize, big_endian, shape, after_shuffle, type_json)
            f = _parse_filter(spec, ctx)
            parsed.append(f)
            after_shuffle = after_shuffle or f.filter_id in (FilterId.SHUFFLE, FilterId.BITSHUFFLE)
        if len(parsed) > 32:
            raise InvalidInput("HDF5 allows at most 32 filters on a dataset")
        nbytes = _Context(itemsize, base_itemsize, big_endian, shape, False).chunk_nbytes
        return cls(tuple(parsed), nbytes)

    def to_json(self) -> list[dict[str, Any]]:
        """The normalized filter list, each with ``class``, ``id``, ``name`` and parameters."""
        return [_filter_json(f) for f in self.filters]

    def hdf5_filters(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """``(filter id, flags, cd_values)`` for ``H5Pset_filter``, in order, for export."""
        return [(int(f.filter_id), f.flags, f.cd_values()) for f in self.filters]

    def encode(self, raw: Buffer) -> bytes:
        """Filter one chunk's raw bytes into what HDF5 stores for it (filter mask 0)."""
        buf: Buffer = raw
        for f in self.filters:
            try:
                buf = f.encode(buf)
            except H5LakeError:
                raise
            except Exception as exc:
                name = f.filter_id.canonical_name
                raise InvalidInput(f"{name} filter cannot encode this chunk: {exc}") from exc
        return buf if isinstance(buf, bytes) else bytes(buf)

    def decode(self, stored: Buffer, filter_mask: int = 0) -> bytes:
        """Undo the filters; bit ``i`` of ``filter_mask`` set means filter ``i`` was skipped."""
        if isinstance(filter_mask, bool) or not isinstance(filter_mask, int) or filter_mask < 0:
            raise InvalidInput(f"filter mask must be a non-negative integer, not {filter_mask!r}")
        sizes: list[int | None] = []
        size = self.chunk_nbytes
        for i, f in enumerate(self.filters):
            sizes.append(size)
            if not filter_mask >> i & 1 and size is not None:
                size = f.encoded_size(size)
        buf: Buffer = stored
        for i in reversed(range(len(self.filters))):
            if filter_mask >> i & 1:
                continue
            f = self.filters[i]
            try:
                buf = f.decode(buf, sizes[i])
            except DataCorruption:
                raise
            except Exception as exc:
                name = f.filter_id.canonical_name
                raise DataCorruption(f"{name} filter cannot decode this chunk: {exc}") from exc
        if self.chunk_nbytes is not None:
            decoded = memoryview(buf).nbytes
            if decoded != self.chunk_nbytes:
                raise DataCorruption(f"chunk decoded to {decoded} bytes, not {self.chunk_nbytes}")
        return buf if isinstance(buf, bytes) else bytes(buf)


# ----------------------------------------------------------------------------------------------
# Existing HDF5 datasets


def _hdf5_filter_json(fid: int, cd: Sequence[int], hdf5_name: str) -> dict[str, Any]:
    try:
        known = FilterId(fid)
    except ValueError:
        return {"class": "H5Z_FILTER_USER", "id": fid, "name": hdf5_name, "parameters": list(cd)}
    base = {"class": known.class_name, "id": fid, "name": known.canonical_name}
    kind = _KINDS.get(known)
    if kind is None:
        return {**base, "parameters": list(cd)}
    return {**base, **kind.params_from_cd(cd)}


def from_h5py_dcpl(dset: h5py.Dataset) -> list[dict[str, Any]]:
    """The filter list JSON for an existing h5py dataset, as ``FilterPipeline.from_json`` takes.

    Filters this module does not support come back with their raw ``parameters`` (cd_values),
    so the caller can report them; ``from_json`` then rejects them by name.
    """
    plist = dset.id.get_create_plist()
    filters = []
    for i in range(plist.get_nfilters()):
        fid, _flags, cd, raw_name = plist.get_filter(i)
        name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        filters.append(_hdf5_filter_json(int(fid), [int(v) for v in cd], name))
    return filters
