"""What every chunk filter shares: HDF5 filter ids and names, the parse context and
parameter reader, and the ``ChunkFilter`` protocol each codec family implements.

The byte formats and libraries of each filter are listed in ``chunks.filters``.
"""

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeAlias

import imagecodecs

from h5lake.errors import DataCorruption, InvalidInput

Buffer: TypeAlias = bytes | bytearray | memoryview
"""What the filters accept and return: any contiguous bytes-like object."""

codec_lib: Any = imagecodecs  # its stubs reject memoryview, which every codec here accepts

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
    def reply_class(self) -> str:
        """The ``class`` stored and answered: the ``H5Z_FILTER_*`` name for the filters h5json's
        FILTER_DEFS list (HSDS's), else ``H5Z_FILTER_USER`` with the id, as HSDS names a plugin
        filter. h5pyd 1.0 fails on any other class name (``dset.compression``: KeyError "filter
        class H5Z_FILTER_LZO is not supported"), and so did hsget."""
        return self.class_name if self not in (FilterId.LZO, FilterId.BLOSC2) else "H5Z_FILTER_USER"

    @property
    def canonical_name(self) -> str:
        """The ``name`` h5pyd (h5json ``FILTER_DEFS``) uses for this filter."""
        return _CANONICAL_NAMES[self]


KNOWN_FILTER_IDS: frozenset[int] = frozenset(int(f) for f in FilterId)
"""The filter ids h5lake names (`FilterId`): it has a codec for each but snappy and blosc2, which
the server keeps declared whatever their flags (``chunks.filters.NO_CODEC_FILTERS``). Any other
id is a plugin h5lake only records, and only when HDF5 may skip it (``H5Z_FLAG_OPTIONAL``):
``h5lake load`` refuses a mandatory one before sending anything, and ``h5lake export`` writes
the chunks of an optional one with the filter skipped (docs/fidelity.md, "Recorded filters")."""


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
NAME_TO_ID: dict[str, FilterId] = {
    **{name: fid for fid, name in _CANONICAL_NAMES.items()},
    "deflate": FilterId.DEFLATE,  # h5py's and HDF5's name
    "zlib": FilterId.DEFLATE,  # h5json treats it as gzip
    "blosc": FilterId.BLOSC,  # h5py/hdf5plugin name
    "bshuf": FilterId.BITSHUFFLE,  # hdf5plugin name
}
CLASS_TO_ID: dict[str, FilterId] = {fid.class_name: fid for fid in FilterId}

UNSUPPORTED: dict[FilterId, str] = {
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
    "zstd",
    "deflate",
)
"""The domain JSON ``compressors`` list: each name h5pyd may send as ``compression=`` that we
store. ``deflate`` is gzip (HSDS lists both); ``lz4hc`` becomes blosc with the lz4hc compressor.
``zlib`` is not listed, as HSDS does not list it: h5json sends it as gzip, answered as gzip (a
client checking that a listed name comes back would fail on it); a filter named ``zlib`` is
still taken as deflate."""


# ----------------------------------------------------------------------------------------------
# Parsing helpers


@dataclass(frozen=True, slots=True)
class Context:
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


class Params:
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
        if not isinstance(key_value, str | int) or isinstance(key_value, bool) or key_value not in choices:
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


def check_size(label: str, declared: int, limit: int | None) -> None:
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
