"""lzf (liblzf), as h5py's LZF filter writes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from h5lake.chunks.codecs.base import (
    H5Z_FLAG_OPTIONAL,
    Buffer,
    Context,
    FilterId,
    Params,
    codec_lib,
)


@dataclass(frozen=True, slots=True)
class Lzf:
    """h5py's LZF filter: a bare liblzf stream."""

    chunk_nbytes: int = 0  # only for cd_values, as h5py's set_local records it

    filter_id: ClassVar[FilterId] = FilterId.LZF
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Lzf:
        return cls(chunk_nbytes=ctx.chunk_nbytes or 0)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {}

    def encode(self, buf: Buffer) -> Buffer:
        result: bytes = codec_lib.lzf_encode(buf)
        return result

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        if nbytes is not None:
            result: bytes = codec_lib.lzf_decode(buf, out=nbytes)
            return result
        return _decode_unknown_size(buf)

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        return {}

    def cd_values(self) -> tuple[int, ...]:
        return (4, 0x105, self.chunk_nbytes)


MAX_RATIO = 88
"""No liblzf stream decodes to more than 88 times its size (a 3-byte back reference copies at
most 264 bytes), plus a little for a stream of one short reference."""


def _decode_unknown_size(buf: Buffer) -> bytes:
    """A stream whose decoded size is not known (a chunk of a variable-length type, serialized):
    liblzf's stream does not say it, and the codec's own guess (a few times the input) is too
    small for values that compress well, so the buffer grows until the stream fits."""
    n = memoryview(buf).nbytes
    limit = MAX_RATIO * n + 64
    size = min(max(4 * n, 4096), limit)
    while True:
        try:
            result: bytes = codec_lib.lzf_decode(buf, out=size)
            return result
        except Exception:
            if size >= limit:
                raise
            size = min(size * 4, limit)
