"""What the chunk engine needs to know about one dataset, gathered once per request."""

from __future__ import annotations

import base64
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from h5lake.chunks.buffers import aligned_empty
from h5lake.chunks.codecs import precision
from h5lake.chunks.filters import FilterPipeline, codec_filters
from h5lake.chunks.locate import ChunkLocator
from h5lake.errors import DataCorruption, InvalidInput
from h5lake.model.fromjson import fill_value_array
from h5lake.model.types import is_variable, reduced_precision, to_dtype
from h5lake.model.values import array_to_bytes, bytes_to_array

ALIGNED_COPY = 1024 * 1024  # a gathered chunk this large is copied into page-aligned memory (storage/direct.DIRECT_MIN)


@dataclass(frozen=True, slots=True)
class ChunkCodec:
    """Chunk arrays to stored bytes and back.

    Fixed-size types are stored as the C-order array passed through the dataset's filter
    pipeline, exactly the bytes HDF5 would keep for that chunk. Variable-length types are stored
    in the binary transfer encoding (a uint32 byte count before each element) and then filtered.
    The seed schema suggests a JSON array for them; JSON cannot hold arbitrary bytes or region
    references and is several times slower, so fidelity wins (see docs/storage.md).
    """

    type_json: dict[str, Any]
    dtype: np.dtype[Any]
    chunk_shape: tuple[int, ...]
    pipeline: FilterPipeline
    variable: bool
    reduced: bool = False  # integers with reduced precision or a bit offset (chunks.codecs.precision)

    @classmethod
    def for_dataset(cls, type_json: dict[str, Any], chunk_shape: tuple[int, ...], filters: Any) -> ChunkCodec:
        variable = is_variable(type_json)
        dtype = to_dtype(type_json)
        element: Any = 1 if variable else dtype
        pipeline = FilterPipeline.from_json(filters or [], element, None if variable else chunk_shape, type_json=type_json)
        return cls(type_json, dtype, chunk_shape, pipeline, variable, not variable and reduced_precision(type_json))

    @property
    def chunk_bytes(self) -> int:
        n = self.dtype.itemsize
        for c in self.chunk_shape:
            n *= c
        return n

    def decode(self, stored: bytes, filter_mask: int = 0) -> np.ndarray:
        raw = self.pipeline.decode(stored, filter_mask)
        if self.variable:
            try:
                return bytes_to_array(raw, self.type_json, self.chunk_shape)
            except InvalidInput as exc:
                raise DataCorruption(f"a variable-length chunk cannot be decoded: {exc.message}") from None
        if len(raw) != self.chunk_bytes:
            raise DataCorruption(f"chunk holds {len(raw)} bytes, expected {self.chunk_bytes}")
        # An array type (numpy subarray dtype) lives in memory as its base type with the array's
        # dims appended to the chunk's shape.
        arr = np.frombuffer(raw, dtype=self.dtype.base).reshape(self.chunk_shape + self.dtype.shape)
        return precision.from_stored(arr, self.type_json) if self.reduced else arr

    def encode(self, chunk: np.ndarray) -> bytes | memoryview:
        """The bytes to store for ``chunk``: without filters, a view of the C-order array (no
        copy of what may be megabytes; a store's ``put`` takes any contiguous buffer)."""
        if self.variable:
            return self.pipeline.encode(array_to_bytes(chunk, self.type_json))
        if self.reduced:  # stored as HDF5 stores it: each value shifted to its bit offset
            chunk = precision.to_stored(np.asarray(chunk, dtype=self.dtype.base), self.type_json)
        base = self.dtype.base
        if not self.pipeline.filters and chunk.dtype == base and not chunk.flags.c_contiguous and chunk.nbytes >= ALIGNED_COPY:
            # a chunk gathered from a wider selection: copied once, into page-aligned memory, so
            # the local store writes it past the page cache (storage/direct.py)
            contiguous = aligned_empty(chunk.shape, base)
            contiguous[...] = chunk
            return contiguous.reshape(-1).view(np.uint8).data
        raw = np.ascontiguousarray(chunk, dtype=base).reshape(-1).view(np.uint8).data
        return self.pipeline.encode(raw) if self.pipeline.filters else raw


def pipeline_item_size(type_json: dict[str, Any]) -> int:
    """The element size filters such as shuffle work with (1 for variable-length chunks)."""
    return 1 if is_variable(type_json) else max(1, to_dtype(type_json).itemsize)


@dataclass(frozen=True, slots=True)
class DatasetLayout:
    dataset_id: str
    domain: str
    shape: tuple[int, ...]
    codec: ChunkCodec
    fill: np.ndarray  # 0-d array of the dataset's dtype
    locator: ChunkLocator
    origin: tuple[int, ...] = ()  # elements added at the front per dimension (layout "origin")

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        return self.codec.chunk_shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.codec.dtype

    def is_interior(self, index: tuple[int, ...]) -> bool:
        """True when chunk ``index`` lies wholly inside the dataset's extent."""
        origin = self.origin or (0,) * len(self.shape)
        return all(
            i * c >= -o and (i + 1) * c <= n - o for i, c, n, o in zip(index, self.chunk_shape, self.shape, origin)
        )

    def empty_chunk(self) -> np.ndarray:
        chunk = np.empty(self.chunk_shape, dtype=self.dtype)
        chunk[...] = self.fill
        return chunk


_CODEC_CACHE_SIZE = 256
_codecs: OrderedDict[bytes, tuple[ChunkCodec, np.ndarray]] = OrderedDict()


def codec_and_fill(
    type_json: dict[str, Any], chunk_shape: tuple[int, ...], filters: Any, fill_json: Any, fill_bytes: str | None = None
) -> tuple[ChunkCodec, np.ndarray]:
    """A dataset's codec and (read-only) fill element, shared by every request that asks with
    the same type, chunk shape, filters and fill value (``fill_bytes``, its packed bytes in
    base64 where they are kept beside the JSON form, ``EXACT_FILL``, is the fill value then).

    Both are pure functions of those values, so a cache keyed by them is never stale, even
    when another process changes the dataset: a changed document asks with a different key.
    Building them parses the type and the filters, a good part of a small read's cost.
    """
    key = orjson.dumps([type_json, chunk_shape, filters, fill_json, fill_bytes], option=orjson.OPT_SORT_KEYS)
    found = _codecs.get(key)
    if found is not None:
        _codecs.move_to_end(key)
        return found
    codec = ChunkCodec.for_dataset(type_json, chunk_shape, codec_filters(filters))
    if fill_bytes is not None:
        fill = bytes_to_array(base64.b64decode(fill_bytes), type_json, ())
    else:
        fill = fill_value_array(type_json, fill_json)
    if codec.dtype.subdtype is None:  # an H5T_ARRAY fill keeps its dims as its shape (numpy folds them)
        fill = np.asarray(fill, dtype=codec.dtype)
    fill.flags.writeable = False
    _codecs[key] = codec, fill
    if len(_codecs) > _CODEC_CACHE_SIZE:
        _codecs.popitem(last=False)
    return codec, fill
