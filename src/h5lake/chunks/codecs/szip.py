"""szip (libaec) with HDF5's 4-byte size header."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

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
    def parse(cls, p: Params, ctx: Context) -> Szip:
        coding = p.choice("coding", "H5_SZIP_NN_OPTION_MASK", {c.value.lower(): c for c in SzipCoding})
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
        # "pixelsPerScanline" as the API documentation, h5pyd and the REST VOL connector spell it;
        # "pixelsPerScanLine" as h5lake wrote it before (documents stored then)
        if p.has("pixelsPerScanLine") and p.has("pixelsPerScanline"):
            raise InvalidInput("szip filter: give pixelsPerScanline once")
        key = "pixelsPerScanLine" if p.has("pixelsPerScanLine") else "pixelsPerScanline"
        pps = p.optional_int(key, 1, ppb * _SZIP_MAX_BLOCKS_PER_SCANLINE)
        if pps is None:
            if ctx.chunk_shape is None:
                raise InvalidInput("szip filter: needs the chunk shape to set pixelsPerScanline")
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
            "pixelsPerScanline": cd[3],
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
        result: bytes = codec_lib.szip_encode(buf, *self._args(), header=True)
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        view = memoryview(buf).cast("B")
        if len(view) < 4:
            raise DataCorruption("szip filter: chunk is shorter than its header")
        check_size("szip", int.from_bytes(view[:4], "little"), nbytes)
        result: bytes = codec_lib.szip_decode(view, *self._args(), header=True)
        return result

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {
            "coding": self.coding.value,
            "pixelsPerBlock": self.pixels_per_block,
            "bitsPerPixel": self.bits_per_pixel,
            "pixelsPerScanline": self.pixels_per_scanline,
        }

    def cd_values(self) -> tuple[int, ...]:
        # H5Pset_szip's two user values; HDF5's set_local adds the rest from type and chunk.
        return (_SZIP_MASK_BITS[self.coding] | _SZIP_ALLOW_K13, self.pixels_per_block)
