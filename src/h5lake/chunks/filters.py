"""HDF5 chunk filter pipelines whose stored bytes are HDF5's own filtered chunk bytes.

Why: a chunk we store must be readable by HDF5 once exported with ``write_direct_chunk``, and a
chunk inside an existing ``.h5`` file must decode with this same code. So every filter here writes
and reads its HDF5 filter's byte format, including the framing of the plugin filters, while the
compression itself is done by well-kept codec libraries:

==============  =====  =======================================================================
filter          id     library
==============  =====  =======================================================================
deflate/gzip    1      libdeflate to encode, zlib-ng to decode (both through imagecodecs)
                       (noise at a chunk's start as stored blocks: ``codecs.deflate``)
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
                       decode; bare streams as PyTables >= 0.8 writes them (0.5-0.7 trailers read)
==============  =====  =======================================================================

``lz4hc`` (32005) is HSDS's name for blosc with the lz4hc compressor, not an HDF5 filter; it is
accepted and normalized to blosc (32001). nbit (5) is HDF5's own format, written here
(``chunks.codecs.nbit``), and so is scaleoffset (6) (``chunks.codecs.scaleoffset``): they need the
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

import reprlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from h5lake.chunks.codecs.base import (
    CLASS_TO_ID,
    KNOWN_FILTER_IDS,
    NAME_TO_ID,
    SUPPORTED_COMPRESSORS,
    UNSUPPORTED,
    Buffer,
    ChunkFilter,
    Context,
    FilterId,
    Params,
)
from h5lake.chunks.codecs.blosc import Bitshuffle, Blosc, Lz4, Zstd
from h5lake.chunks.codecs.deflate import Deflate, Fletcher32, Shuffle
from h5lake.chunks.codecs.lzf import Lzf
from h5lake.chunks.codecs.lzo import Lzo
from h5lake.chunks.codecs.scaling import Nbit, ScaleOffset
from h5lake.chunks.codecs.szip import Szip
from h5lake.errors import DataCorruption, H5LakeError, InvalidInput

if TYPE_CHECKING:
    import h5py

__all__ = ["KNOWN_FILTER_IDS", "SUPPORTED_COMPRESSORS", "FilterId", "FilterPipeline", "from_h5py_dcpl"]


class _FilterKind(Protocol):
    def parse(self, p: Params, ctx: Context) -> ChunkFilter: ...

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
        raise InvalidInput(f"a filter must be an object with class, id or name, not {reprlib.repr(spec)}")
    params = {k: v for k, v in spec.items() if k not in ("class", "id", "name")}
    raw_id, cls, name = spec.get("id"), spec.get("class"), spec.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"filter name must be a string, not {reprlib.repr(name)}")
    candidates: list[FilterId] = []
    if raw_id is not None:
        if isinstance(raw_id, bool) or not isinstance(raw_id, int):
            raise InvalidInput(f"filter id must be an integer, not {reprlib.repr(raw_id)}")
        try:
            candidates.append(FilterId(raw_id))
        except ValueError:
            raise InvalidInput(f"filter {raw_id} ({name or 'unnamed'}) is not supported") from None
    if cls is not None and cls != "H5Z_FILTER_USER":  # h5pyd's class for unnamed filters
        if not isinstance(cls, str) or cls not in CLASS_TO_ID:
            raise InvalidInput(f"filter class {reprlib.repr(cls)} is unknown")
        candidates.append(CLASS_TO_ID[cls])
    by_name = NAME_TO_ID.get(name.lower()) if name is not None else None
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
        elif fid is FilterId.BLOSC and name is not None and params["compressor"] == name.lower():
            pass  # as h5lake itself names a blosc filter (below)
        else:
            raise InvalidInput(f"filter name {name!r} does not match filter {fid.class_name}")
    return fid, params


def _parse_filter(spec: object, ctx: Context) -> ChunkFilter:
    fid, values = _resolve(spec)
    label = fid.canonical_name
    if fid in UNSUPPORTED:
        raise InvalidInput(UNSUPPORTED[fid])
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
    params = Params(label, values)
    parsed = kind.parse(params, ctx)
    params.finish()
    return parsed


# ----------------------------------------------------------------------------------------------
# The pipeline


def _filter_json(f: ChunkFilter) -> dict[str, Any]:
    fid = f.filter_id
    params = f.json_params()
    name = fid.canonical_name
    if fid is FilterId.BLOSC and isinstance(params.get("compressor"), str):
        # named after its compressor, as HSDS names it: h5pyd reports the name as the dataset's
        # compression, so compression="lz4hc" reads back as "lz4hc"
        name = params["compressor"]
    return {"class": fid.reply_class, "id": int(fid), "name": name, **params}


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
            ctx = Context(itemsize, base_itemsize, big_endian, shape, after_shuffle, type_json)
            f = _parse_filter(spec, ctx)
            parsed.append(f)
            after_shuffle = after_shuffle or f.filter_id in (FilterId.SHUFFLE, FilterId.BITSHUFFLE)
        if len(parsed) > 32:
            raise InvalidInput("HDF5 allows at most 32 filters on a dataset")
        nbytes = Context(itemsize, base_itemsize, big_endian, shape, False).chunk_nbytes
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
    return filters_of_plist(dset.id.get_create_plist())


def filters_of_plist(plist: Any) -> list[dict[str, Any]]:
    """:func:`from_h5py_dcpl` of a dataset creation property list (h5py ``PropDCID``)."""
    filters = []
    for i in range(plist.get_nfilters()):
        fid, _flags, cd, raw_name = plist.get_filter(i)
        name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        filters.append(_hdf5_filter_json(int(fid), [int(v) for v in cd], name))
    return filters


# --- filters kept declared: in the creation properties, not applied to stored chunks ----------


NO_CODEC_FILTERS = frozenset({"SNAPPY", "BLOSC2"})
"""Known HDF5 filters ``chunks.filters`` has no codec for; with unknown plugin ids flagged
optional (which HDF5 itself may skip) these are declared, not applied. Any other unknown filter
is refused at creation."""


def declared_filter_id(spec: Any) -> int | None:
    """The id of a filter the chunk engine has no codec for, else None.

    Such a filter (nbit, scaleoffset, a plugin such as bzip2...) is *declared*: it is kept in
    the creation properties exactly as given, so clients and ``h5lake export`` see and re-create
    it, but stored chunks are kept without it (their bytes are HDF5's with that filter skipped,
    as if its bit were set in the chunk's filter mask). Values read back are unchanged: the
    lossy filters among these (scaleoffset, nbit on reduced precision) were applied, if at all,
    by whoever wrote the values.
    """
    if not isinstance(spec, dict):
        return None
    raw = spec.get("id")
    if raw is None:
        raw = next((int(f) for f in FilterId if f.class_name == spec.get("class")), None)
    if not isinstance(raw, int) or isinstance(raw, bool):
        return None
    try:
        known = FilterId(raw)
    except ValueError:
        # An unknown filter is refused (400) unless HDF5 itself may skip it: H5Z_FLAG_OPTIONAL.
        flags = spec.get("flags", 0)
        optional = isinstance(flags, int) and bool(flags & 1)
        return raw if 0 < raw < 65536 and optional else None
    return raw if known.name in NO_CODEC_FILTERS else None


def codec_filters(filters: Any) -> Any:
    """The filters the chunk engine applies to stored chunks: all but the declared ones
    (see :func:`declared_filter_id`). Non-lists pass through for the pipeline to reject."""
    if not isinstance(filters, list):
        return filters
    return [f for f in filters if declared_filter_id(f) is None]
