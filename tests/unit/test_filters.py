"""The chunk filter pipeline: round trips, HDF5 byte compatibility both ways, corruption, specs.

Compatibility is checked against HDF5 itself (h5py, plus hdf5plugin for plugin filters): chunks
HDF5 wrote decode with our pipeline, and chunks we encode, written with ``write_direct_chunk``,
read back through HDF5.

Run ``python tests/unit/test_filters.py`` to print encode/decode throughput.
"""

from __future__ import annotations

import itertools
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import imagecodecs
import lzokay
import numcodecs.zstd
import numpy as np
import pytest
from h5json import filters as h5json_filters

from h5lake.chunks.filters import (
    SUPPORTED_COMPRESSORS,
    FilterPipeline,
    from_h5py_dcpl,
)
from h5lake.errors import DataCorruption, InvalidInput

SHUFFLE = {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"}
FLETCHER32 = {"class": "H5Z_FILTER_FLETCHER32", "id": 3, "name": "fletcher32"}


def gzip(level: int = 4) -> dict[str, Any]:
    return {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": level}


def blosc(compressor: str, shuffle: str = "shuffle", level: int = 5) -> dict[str, Any]:
    return {"id": 32001, "compressor": compressor, "shuffle": shuffle, "level": level}


def bitshuffle(compressor: str = "none", block: int = 0, **extra: Any) -> dict[str, Any]:
    return {"id": 32008, "compressor": compressor, "blockSize": block, **extra}


ZSTD = {"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd"}
LZF = {"class": "H5Z_FILTER_LZF", "id": 32000, "name": "lzf"}
LZ4 = {"class": "H5Z_FILTER_LZ4", "id": 32004, "name": "lz4"}
SZIP = {"class": "H5Z_FILTER_SZIP", "id": 4, "name": "szip"}

# Filter lists every supported filter and the common combinations run through.
PIPELINES: dict[str, list[Any]] = {
    "gzip0": [gzip(0)],
    "gzip4": [gzip(4)],
    "gzip9": [gzip(9)],
    "shuffle": [SHUFFLE],
    "fletcher32": [FLETCHER32],
    "szip-nn": [{**SZIP, "coding": "H5_SZIP_NN_OPTION_MASK", "pixelsPerBlock": 16}],
    "szip-ec": [{**SZIP, "coding": "H5_SZIP_EC_OPTION_MASK", "pixelsPerBlock": 8}],
    "lzf": [LZF],
    **{f"blosc-{c}": [blosc(c)] for c in ("blosclz", "lz4", "lz4hc", "zlib", "zstd")},
    "blosc-bitshuffle": [blosc("lz4", "bitshuffle")],
    "blosc-noshuffle": [blosc("zstd", "noshuffle", 9)],
    "lz4": [LZ4],
    "lz4-blocks": [{**LZ4, "blockSize": 1000}],
    "bitshuffle": [bitshuffle()],
    "bitshuffle-lz4": [bitshuffle("lz4")],
    "bitshuffle-zstd": [bitshuffle("zstd", level=5)],
    "bitshuffle-lz4-block64": [bitshuffle("lz4", 64)],
    "zstd": [ZSTD],
    "shuffle+gzip": [SHUFFLE, gzip(5)],
    "shuffle+zstd": [SHUFFLE, {**ZSTD, "level": 7}],
    "fletcher32+gzip": [FLETCHER32, gzip(6)],
    "fletcher32+shuffle+gzip": [FLETCHER32, SHUFFLE, gzip()],
    "shuffle+lz4": [SHUFFLE, LZ4],
    "shuffle+blosc": [SHUFFLE, {"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "blosclz"}],
    "lz4hc": [{"class": "H5Z_FILTER_LZ4HC", "id": 32005, "name": "lz4hc", "level": 9}],
    "bitshuffle+fletcher32": [bitshuffle("lz4"), FLETCHER32],
}

# Element types and chunk shapes, including a chunk whose element count is not a multiple of 8.
DTYPES = ["<f4", "<i2", ">i4", "<f8", "u1"]
CHUNK = (24, 40)
ODD_CHUNK = (7, 13)


def smooth(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Compressible, not constant: a slow wave plus a little noise."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    wave = np.sin(np.linspace(0, 6 * np.pi, n)) * 100 + rng.normal(0, 0.5, n)
    return wave.reshape(shape).astype(np.dtype(dtype))


def pipeline_for(name: str, dtype: str, chunk: tuple[int, ...] = CHUNK) -> FilterPipeline:
    return FilterPipeline.from_json(PIPELINES[name], np.dtype(dtype), chunk)


# ----------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_round_trip(name: str, dtype: str) -> None:
    for chunk in (CHUNK, ODD_CHUNK):
        pipeline = pipeline_for(name, dtype, chunk)
        raw = smooth(chunk, dtype).tobytes()
        stored = pipeline.encode(raw)
        assert isinstance(stored, bytes)
        assert pipeline.decode(stored) == raw
        assert pipeline.decode(memoryview(stored)) == raw
        # Without the chunk shape (no size hints) decoding gives the same bytes.
        if "szip" not in name:
            bare = FilterPipeline.from_json(PIPELINES[name], np.dtype(dtype))
            assert bare.decode(stored) == raw


def test_compression_actually_compresses() -> None:
    raw = smooth((256, 256), "<f4").tobytes()
    for name in ("gzip4", "shuffle+gzip", "shuffle+zstd", "blosc-lz4", "bitshuffle-lz4"):
        stored = pipeline_for(name, "<f4", (256, 256)).encode(raw)
        assert len(stored) < 0.9 * len(raw), name


def noisy_floats(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """A smooth field with noise in its last digits, as measured data is: shuffled, its low
    mantissa bytes (first, little-endian) are noise deflate cannot compress, the rest compresses."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0 : shape[0], 0 : shape[1]] / 64.0
    return (np.sin(x) * np.cos(y) + rng.normal(0, 0.01, shape)).astype(dtype)


def leading_stored_bytes(stream: bytes) -> int:
    """How many bytes the stored deflate blocks at the start of a zlib stream hold."""
    at, total = 2, 0
    while at + 5 <= len(stream) and stream[at] & 0b110 == 0:  # BTYPE 00 (we write them aligned)
        length, inverse = struct.unpack_from("<HH", stream, at + 1)
        assert length ^ inverse == 0xFFFF
        total += length
        at += 5 + length
        if stream[at - 5 - length] & 1:  # BFINAL
            break
    return total


# Chunks larger than the 64 KiB pieces the deflate encoder judges: noise first (stored), then
# compressible bytes (libdeflate), all noise (all stored, the last block final), a size that is
# not a multiple of a piece, and an 8-byte type (six noise planes of eight).
BIG = {
    "f4-256x256": ("<f4", (256, 256)),
    "f4-300x301": ("<f4", (300, 301)),
    "f8-128x256": ("<f8", (128, 256)),
}


@pytest.mark.parametrize("level", [1, 4, 9])
@pytest.mark.parametrize("kind", sorted(BIG))
def test_shuffled_noise_is_stored_and_hdf5_reads_it(tmp_path: Path, kind: str, level: int) -> None:
    dtype, chunk = BIG[kind]
    data = noisy_floats((chunk[0] * 2, chunk[1]), dtype)
    pipeline = FilterPipeline.from_json([SHUFFLE, gzip(level)], np.dtype(dtype), chunk)
    first = data[: chunk[0]].tobytes()
    stored = pipeline.encode(first)
    assert pipeline.decode(stored) == first
    # the noise planes (the low two of four bytes, five of eight) went in as stored blocks
    planes = len(first) // np.dtype(dtype).itemsize
    assert leading_stored_bytes(stored) >= planes * (2 if dtype == "<f4" else 5) - 65536
    # and the chunk is as small as libdeflate makes it (within 0.1%)
    shuffled = FilterPipeline.from_json([SHUFFLE], np.dtype(dtype), chunk).encode(first)
    assert len(stored) <= 1.001 * len(imagecodecs.deflate_encode(shuffled, level))
    write_with_pipeline(tmp_path / "ours.h5", pipeline, data, chunk)
    with h5py.File(tmp_path / "ours.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)


@pytest.mark.parametrize("size", [65536, 3 * 65536 + 7, 1 << 20])
def test_deflate_of_noise_alone_is_stored_blocks_hdf5_reads(tmp_path: Path, size: int) -> None:
    raw = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    pipeline = FilterPipeline.from_json([gzip(6)], np.dtype("u1"), (size,))
    stored = pipeline.encode(raw.tobytes())
    # every whole 64 KiB piece stored as it is (a short last piece too little to judge goes to
    # libdeflate, which stores it as well)
    assert leading_stored_bytes(stored) >= size - size % 65536
    assert len(stored) <= 2 + size + 5 * (-(-size // 65535) + 1) + 4
    write_with_pipeline(tmp_path / "ours.h5", pipeline, raw, (size,))
    with h5py.File(tmp_path / "ours.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][...], raw)


def test_noise_then_zeros_stores_the_noise_and_compresses_the_rest() -> None:
    raw = np.random.default_rng(5).bytes(3 * 65536) + bytes(5 * 65536)
    pipeline = FilterPipeline.from_json([gzip(4)], np.dtype("u1"), (len(raw),))
    stored = pipeline.encode(raw)
    assert leading_stored_bytes(stored) == 3 * 65536
    assert len(stored) < 3 * 65536 + 2000
    assert pipeline.decode(stored) == raw


def test_empty_pipeline_passes_bytes_through() -> None:
    pipeline = FilterPipeline.from_json([], 4)
    assert pipeline.encode(b"abcd") == b"abcd"
    assert pipeline.decode(bytearray(b"abcd")) == b"abcd"
    assert pipeline.to_json() == []
    assert FilterPipeline.from_json(None, 4).filters == ()


def test_encode_accepts_numpy_and_memoryview() -> None:
    data = smooth(CHUNK, "<f4")
    pipeline = pipeline_for("shuffle+gzip", "<f4")
    stored = pipeline.encode(data.data.cast("B"))
    assert pipeline.decode(stored) == data.tobytes()


# ----------------------------------------------------------------------------------------------
# HDF5 compatibility, both directions

# How HDF5 itself (h5py / hdf5plugin) is asked for the same filters, independent of our code.
H5PY_KWARGS: dict[str, dict[str, Any]] = {
    "gzip": {"compression": "gzip", "compression_opts": 4},
    "shuffle+gzip": {"shuffle": True, "compression": "gzip", "compression_opts": 6},
    "fletcher32": {"fletcher32": True},
    "fletcher32+shuffle+gzip": {"fletcher32": True, "shuffle": True, "compression": "gzip"},
    "szip-nn16": {"compression": "szip", "compression_opts": ("nn", 16)},
    "szip-ec8": {"compression": "szip", "compression_opts": ("ec", 8)},
    "lzf": {"compression": "lzf"},
    "shuffle+lzf": {"shuffle": True, "compression": "lzf"},
    **{
        f"blosc-{c}": dict(hdf5plugin.Blosc(cname=c, clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
        for c in ("blosclz", "lz4", "lz4hc", "zlib", "zstd")
    },
    "blosc-bitshuffle": dict(hdf5plugin.Blosc(cname="lz4", shuffle=hdf5plugin.Blosc.BITSHUFFLE)),
    "lz4": dict(hdf5plugin.LZ4()),
    "lz4-blocks": dict(hdf5plugin.LZ4(nbytes=1000)),
    "bitshuffle": dict(hdf5plugin.Bitshuffle(cname="none")),
    "bitshuffle-lz4": dict(hdf5plugin.Bitshuffle(cname="lz4")),
    "bitshuffle-zstd": dict(hdf5plugin.Bitshuffle(cname="zstd", clevel=5)),
    "bitshuffle-lz4-block64": dict(hdf5plugin.Bitshuffle(nelems=64, cname="lz4")),
    "zstd": dict(hdf5plugin.Zstd(clevel=5)),
    "shuffle+zstd": {"shuffle": True, **hdf5plugin.Zstd(clevel=3)},
}
COMPAT_DTYPES = ["<f4", ">i4", "<i2", "<f8"]
SHAPE = (50, 70)  # with CHUNK, edge chunks are partial, as in real files


def chunk_offsets(shape: tuple[int, ...], chunk: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    return itertools.product(*(range(0, s, c) for s, c in zip(shape, chunk, strict=True)))


def full_chunk(data: np.ndarray, offset: tuple[int, ...], chunk: tuple[int, ...]) -> bytes:
    """The chunk at ``offset`` as HDF5 stores it: full size, padded past the dataset's edge."""
    out = np.zeros(chunk, dtype=data.dtype)
    part = data[tuple(slice(o, o + c) for o, c in zip(offset, chunk, strict=True))]
    out[tuple(slice(0, n) for n in part.shape)] = part
    return out.tobytes()


@pytest.mark.parametrize("dtype", COMPAT_DTYPES)
@pytest.mark.parametrize("name", sorted(H5PY_KWARGS))
def test_decodes_chunks_hdf5_wrote(tmp_path: Path, name: str, dtype: str) -> None:
    data = smooth(SHAPE, dtype)
    with h5py.File(tmp_path / "h.h5", "w") as f:
        dset = f.create_dataset("d", data=data, chunks=CHUNK, **H5PY_KWARGS[name])
        pipeline = FilterPipeline.from_json(from_h5py_dcpl(dset), dset.dtype, dset.chunks)
        assert len(pipeline.filters) == dset.id.get_create_plist().get_nfilters()
        for offset in chunk_offsets(SHAPE, CHUNK):
            mask, stored = dset.id.read_direct_chunk(offset)
            assert pipeline.decode(stored, mask) == full_chunk(data, offset, CHUNK)


def write_with_pipeline(
    path: Path, pipeline: FilterPipeline, data: np.ndarray, chunk: tuple[int, ...]
) -> None:
    """Export as a later issue will: our filter list in the DCPL, our bytes as the chunks."""
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(chunk)
        for filter_id, flags, cd_values in pipeline.hdf5_filters():
            dcpl.set_filter(filter_id, flags, cd_values)
        space = h5py.h5s.create_simple(data.shape)
        tid = h5py.h5t.py_create(data.dtype)
        dsid = h5py.h5d.create(f.id, b"d", tid, space, dcpl=dcpl)
        for offset in chunk_offsets(data.shape, chunk):
            dsid.write_direct_chunk(offset, pipeline.encode(full_chunk(data, offset, chunk)))


@pytest.mark.parametrize("dtype", COMPAT_DTYPES)
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_hdf5_reads_chunks_we_wrote(tmp_path: Path, name: str, dtype: str) -> None:
    data = smooth(SHAPE, dtype)
    pipeline = pipeline_for(name, dtype)
    write_with_pipeline(tmp_path / "ours.h5", pipeline, data, CHUNK)
    with h5py.File(tmp_path / "ours.h5", "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)
        # And HDF5 sees the filters we meant, in order.
        assert [
            int(f["d"].id.get_create_plist().get_filter(i)[0]) for i in range(len(pipeline.filters))
        ] == [fid for fid, _, _ in pipeline.hdf5_filters()]


DETERMINISTIC = {
    "shuffle": {"shuffle": True},
    "fletcher32": {"fletcher32": True},
    "shuffle+fletcher32": {"shuffle": True, "fletcher32": True},
    "bitshuffle": dict(hdf5plugin.Bitshuffle(cname="none")),
}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_deterministic_filters_match_hdf5_bytes_exactly(tmp_path: Path, name: str) -> None:
    data = smooth(SHAPE, "<f4")
    with h5py.File(tmp_path / "h.h5", "w") as f:
        dset = f.create_dataset("d", data=data, chunks=CHUNK, **DETERMINISTIC[name])
        pipeline = FilterPipeline.from_json(from_h5py_dcpl(dset), dset.dtype, dset.chunks)
        for offset in chunk_offsets(SHAPE, CHUNK):
            _, stored = dset.id.read_direct_chunk(offset)
            assert pipeline.encode(full_chunk(data, offset, CHUNK)) == stored


def test_lzf_chunk_hdf5_skipped_is_read_through_the_filter_mask(tmp_path: Path) -> None:
    noise = np.random.default_rng(1).integers(0, 2**32, size=SHAPE, dtype="<u4")
    with h5py.File(tmp_path / "h.h5", "w") as f:
        dset = f.create_dataset("d", data=noise, chunks=CHUNK, compression="lzf")
        pipeline = FilterPipeline.from_json(from_h5py_dcpl(dset), dset.dtype, dset.chunks)
        mask, stored = dset.id.read_direct_chunk((0, 0))
        assert mask == 1  # LZF could not shrink random data, so HDF5 stored it unfiltered
        assert pipeline.decode(stored, mask) == full_chunk(noise, (0, 0), CHUNK)


# ----------------------------------------------------------------------------------------------
# Corruption


def test_fletcher32_detects_flipped_bits() -> None:
    pipeline = pipeline_for("fletcher32", "<f4")
    stored = pipeline.encode(smooth(CHUNK, "<f4").tobytes())
    for pos in (0, 1, 17, len(stored) // 2, len(stored) - 5, len(stored) - 1):
        corrupt = bytearray(stored)
        corrupt[pos] ^= 0x01
        with pytest.raises(DataCorruption, match="fletcher32"):
            pipeline.decode(bytes(corrupt))


def test_fletcher32_with_gzip_never_returns_garbage() -> None:
    pipeline = pipeline_for("fletcher32+gzip", "<f4")
    raw = smooth(CHUNK, "<f4").tobytes()
    stored = pipeline.encode(raw)
    rng = np.random.default_rng(2)
    for pos in rng.integers(0, len(stored), size=50):
        corrupt = bytearray(stored)
        corrupt[pos] ^= 1 << int(rng.integers(0, 8))
        with pytest.raises(DataCorruption):
            pipeline.decode(bytes(corrupt))


def test_fletcher32_accepts_hdf5_1_6_byte_order() -> None:
    """HDF5 1.6.0-1.6.2 stored the checksum with each 16-bit half byte-swapped."""
    pipeline = pipeline_for("fletcher32", "<f4")
    stored = pipeline.encode(smooth(CHUNK, "<f4").tobytes())
    c = stored[-4:]
    old = stored[:-4] + bytes((c[1], c[0], c[3], c[2]))
    assert pipeline.decode(old) == stored[:-4]


def test_truncated_deflate_is_corruption() -> None:
    raw = smooth(CHUNK, "<f4").tobytes()
    for chunk_shape in (CHUNK, None):
        pipeline = FilterPipeline.from_json([gzip()], np.dtype("<f4"), chunk_shape)
        stored = pipeline.encode(raw)
        with pytest.raises(DataCorruption, match="gzip"):
            pipeline.decode(stored[: len(stored) // 2])


COMPRESSING = [n for n in sorted(PIPELINES) if n not in ("shuffle", "bitshuffle", "fletcher32")]


@pytest.mark.parametrize("name", COMPRESSING)
def test_truncated_or_garbage_chunks_are_corruption(name: str) -> None:
    pipeline = pipeline_for(name, "<f4")
    stored = pipeline.encode(smooth(CHUNK, "<f4").tobytes())
    rng = np.random.default_rng(3)
    bad_chunks = [stored[:3], b"", rng.bytes(len(stored)), rng.bytes(11)]
    if "szip" not in name:  # see test_szip_truncation_needs_fletcher32
        bad_chunks += [stored[: len(stored) // 2], stored[:-1]]
    for bad in bad_chunks:
        with pytest.raises(DataCorruption):
            pipeline.decode(bad)


def test_szip_truncation_needs_fletcher32() -> None:
    """An szip stream has no end marker or checksum: libaec (like HDF5) decodes a truncated one
    to full size. With fletcher32 in the pipeline the damage is caught."""
    szip = PIPELINES["szip-nn"]
    pipeline = FilterPipeline.from_json([*szip, FLETCHER32], np.dtype("<f4"), CHUNK)
    stored = pipeline.encode(smooth(CHUNK, "<f4").tobytes())
    with pytest.raises(DataCorruption, match="fletcher32"):
        pipeline.decode(stored[: len(stored) // 2] + stored[-4:])


def test_trailing_bytes_after_a_complete_stream_are_ignored_as_hdf5_does() -> None:
    raw = smooth(CHUNK, "<f4").tobytes()
    for name in ("gzip4", "lz4"):
        pipeline = pipeline_for(name, "<f4")
        assert pipeline.decode(pipeline.encode(raw) + b"\0" * 7) == raw


@pytest.mark.parametrize("compressor", ["lz4", "zstd"])
def test_bitshuffle_block_that_decodes_short_is_corruption(compressor: str) -> None:
    pipeline = FilterPipeline.from_json([bitshuffle(compressor)], 4)  # no size hint
    packed = (
        imagecodecs.lz4_encode(b"\1" * 32, header=False)
        if compressor == "lz4"
        else numcodecs.zstd.compress(b"\1" * 32, 3)
    )
    # 16 four-byte elements: one 64-byte block, whose payload holds only 32 bytes.
    chunk = struct.pack(">QI", 64, 8192) + len(packed).to_bytes(4, "big") + packed
    with pytest.raises(DataCorruption, match="bitshuffle"):
        pipeline.decode(chunk)


def test_wrong_size_without_compression_is_corruption() -> None:
    pipeline = pipeline_for("shuffle", "<f4")
    with pytest.raises(DataCorruption, match="bytes"):
        pipeline.decode(b"\x00" * 12)


def test_lz4_header_claiming_huge_size_is_corruption() -> None:
    pipeline = FilterPipeline.from_json([LZ4], 4)
    with pytest.raises(DataCorruption, match="lz4"):
        pipeline.decode((1 << 40).to_bytes(8, "big") + (1 << 20).to_bytes(4, "big") + b"\0" * 8)


# ----------------------------------------------------------------------------------------------
# Filter mask


def test_filter_mask_skips_filters() -> None:
    pipeline = pipeline_for("shuffle+gzip", "<f4")
    raw = smooth(CHUNK, "<f4").tobytes()
    shuffled_only = FilterPipeline.from_json([SHUFFLE], 4).encode(raw)
    gzip_only = FilterPipeline.from_json([gzip(5)], 4).encode(raw)
    assert pipeline.decode(shuffled_only, filter_mask=0b10) == raw
    assert pipeline.decode(gzip_only, filter_mask=0b01) == raw
    assert pipeline.decode(raw, filter_mask=0b11) == raw
    assert pipeline.decode(pipeline.encode(raw), filter_mask=0) == raw


def test_filter_mask_must_be_a_non_negative_int() -> None:
    pipeline = pipeline_for("gzip4", "<f4")
    for mask in (-1, True, "1"):
        with pytest.raises(InvalidInput):
            pipeline.decode(b"", mask)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# Parsing, normalization and the compressors list


def test_h5pyd_filter_list_is_normalized() -> None:
    sent = [
        {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"},
        {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 5},
    ]
    pipeline = FilterPipeline.from_json(sent, 4)
    assert pipeline.to_json() == sent
    assert FilterPipeline.from_json(pipeline.to_json(), 4) == pipeline


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_to_json_round_trips(name: str) -> None:
    pipeline = pipeline_for(name, "<f4")
    again = FilterPipeline.from_json(pipeline.to_json(), np.dtype("<f4"), CHUNK)
    assert again == pipeline
    for item in pipeline.to_json():
        assert {"class", "id", "name"} <= item.keys()
        h5json_filters.getFilterItem(item["class"])  # h5pyd knows every class we report


@pytest.mark.parametrize(
    "spec",
    [
        {"class": "H5Z_FILTER_DEFLATE", "level": 3},
        {"id": 1, "level": 3},
        {"name": "gzip", "level": 3},
        {"name": "deflate", "level": 3},
        {"name": "zlib", "level": 3},
        {"name": "GZIP", "level": 3},
        {"class": "H5Z_FILTER_USER", "id": 1, "name": "deflate", "level": 3},
        {"id": 1, "parameters": [3]},
    ],
)
def test_a_filter_can_be_named_by_class_id_or_name(spec: dict[str, Any]) -> None:
    assert FilterPipeline.from_json([spec], 4).to_json() == [gzip(3)]


def test_bare_names_and_ids_are_accepted() -> None:
    pipeline = FilterPipeline.from_json(["shuffle", 32000, "bshuf", "blosc", "zstd"], 4)
    assert [f["id"] for f in pipeline.to_json()] == [2, 32000, 32008, 32001, 32015]


def test_defaults() -> None:
    js = FilterPipeline.from_json(["gzip", "blosc", "zstd", "lz4", "bitshuffle"], 4).to_json()
    assert js[0]["level"] == 4
    assert (js[1]["compressor"], js[1]["level"], js[1]["shuffle"]) == ("blosclz", 5, "shuffle")
    assert js[2]["level"] == 3
    assert js[3]["blockSize"] == 0
    assert js[4]["compressor"] == "none"


def test_blosc_after_a_shuffle_filter_does_not_shuffle_again_by_default() -> None:
    js = FilterPipeline.from_json(["shuffle", "blosc"], 4).to_json()
    assert js[1]["shuffle"] == "noshuffle"
    explicit = FilterPipeline.from_json(["shuffle", {"name": "blosc", "shuffle": "bitshuffle"}], 4)
    assert explicit.to_json()[1]["shuffle"] == "bitshuffle"


def test_hsds_compressor_names_become_blosc() -> None:
    lz4hc = FilterPipeline.from_json(
        [{"class": "H5Z_FILTER_LZ4HC", "id": 32005, "name": "lz4hc"}], 4
    )
    assert lz4hc.to_json() == [
        {
            "class": "H5Z_FILTER_BLOSC",
            "id": 32001,
            "name": "lz4hc",  # named after its compressor (h5pyd reads the name as compression)
            "compressor": "lz4hc",
            "level": 5,
            "shuffle": "shuffle",
        }
    ]
    named = FilterPipeline.from_json(
        [{"class": "H5Z_FILTER_BLOSC", "id": 32001, "name": "zstd"}], 4
    )
    assert named.to_json()[0]["compressor"] == "zstd"
    # the JSON h5lake writes reads back as the same filter
    assert FilterPipeline.from_json(lz4hc.to_json(), 4).to_json() == lz4hc.to_json()


def test_plugin_cd_values_are_accepted_as_parameters() -> None:
    pipeline = FilterPipeline.from_json([{"id": 32001, "parameters": [2, 2, 4, 0, 7, 2, 5]}], 4)
    assert pipeline.to_json()[0] | {} == {
        "class": "H5Z_FILTER_BLOSC",
        "id": 32001,
        "name": "zstd",
        "compressor": "zstd",
        "level": 7,
        "shuffle": "bitshuffle",
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": 12}, "gzip.*level"),
        ({"name": "gzip", "level": True}, "gzip.*level"),
        ({"name": "gzip", "level": "4"}, "gzip.*level"),
        ({"name": "gzip", "levle": 4}, "gzip.*levle"),
        ({"class": "H5Z_FILTER_NOPE"}, "H5Z_FILTER_NOPE"),
        ({"id": 31999, "name": "mystery"}, "31999.*mystery"),
        ({"name": "brotli"}, "brotli"),
        ({"class": "H5Z_FILTER_DEFLATE", "id": 2}, "H5Z_FILTER_DEFLATE"),
        ({"class": "H5Z_FILTER_SHUFFLE", "name": "gzip"}, "gzip"),
        ({"id": "1"}, "id"),
        ({"class": "H5Z_FILTER_NBIT", "id": 5, "name": "nbit", "parameters": [9, 0, 1]}, "nbit"),
        ({"class": "H5Z_FILTER_NBIT", "id": 5, "parameters": [8, 0, 4, 1, 4, 0, 30, 5]}, "nbit.*precision"),
        ({"class": "H5Z_FILTER_SCALEOFFSET", "id": 6, "scaleType": "H5Z_SO_FLOAT_ESCALE"}, "scaleoffset.*scaleType"),
        ({"class": "H5Z_FILTER_SCALEOFFSET", "id": 6, "parameters": [2, 0, 10]}, "scaleoffset.*parameters"),
        ({"class": "H5Z_FILTER_SNAPPY", "id": 32003, "name": "snappy"}, "snappy"),
        ({"id": 32026}, "blosc2"),
        ({"name": "blosc", "compressor": "snappy"}, "blosc.*compressor"),
        ({"name": "blosc", "shuffle": "sideways"}, "blosc.*shuffle"),
        ({"name": "blosc", "compressor": ["lz4"]}, "blosc.*compressor"),
        ({"name": "zstd", "level": 23}, "zstd.*level"),
        ({"name": "lz4", "blockSize": -1}, "lz4.*blockSize"),
        ({"name": "bitshuffle", "blockSize": 100}, "bitshuffle.*multiple of 8"),
        ({"name": "bitshuffle", "compressor": "lz4", "level": 3}, "bitshuffle.*level"),
        ({"name": "szip", "pixelsPerBlock": 4}, "szip.*pixelsPerBlock"),
        ({"name": "szip", "coding": "H5_SZIP_XX_OPTION_MASK"}, "szip.*coding"),
        ({"id": 32001, "parameters": [1, -2]}, "blosclz.*parameters"),
        (["gzip"], "filter"),
        (None, "filter"),
    ],
)
def test_invalid_specs_are_rejected_by_name(spec: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        FilterPipeline.from_json([spec], np.dtype("<f4"), CHUNK)


def test_filters_must_be_a_list() -> None:
    with pytest.raises(InvalidInput, match="list"):
        FilterPipeline.from_json({"name": "gzip"}, 4)


def test_szip_needs_the_chunk_shape_unless_fully_specified() -> None:
    with pytest.raises(InvalidInput, match="szip.*chunk shape"):
        FilterPipeline.from_json([SZIP], 4)
    full = {**SZIP, "pixelsPerBlock": 16, "bitsPerPixel": 32, "pixelsPerScanLine": 40}
    pipeline = FilterPipeline.from_json([full], 4)
    raw = smooth(CHUNK, "<f4").tobytes()
    assert pipeline.decode(pipeline.encode(raw)) == raw


def test_supported_compressors_are_what_h5pyd_sends_and_we_accept() -> None:
    assert len(set(SUPPORTED_COMPRESSORS)) == len(SUPPORTED_COMPRESSORS)
    for name in SUPPORTED_COMPRESSORS:
        spec = h5json_filters.getFilterItem(name)  # what h5pyd puts in creationProperties
        pipeline = FilterPipeline.from_json([spec], np.dtype("<f4"), CHUNK)
        raw = smooth(CHUNK, "<f4").tobytes()
        assert pipeline.decode(pipeline.encode(raw)) == raw
    for name in set(h5json_filters.COMPRESSION_FILTER_NAMES) - set(SUPPORTED_COMPRESSORS):
        with pytest.raises(InvalidInput):
            FilterPipeline.from_json([h5json_filters.getFilterItem(name)], 4, CHUNK)


def test_from_h5py_dcpl_keeps_scaleoffset_parameters_and_decodes(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "h.h5", "w") as f:
        dset = f.create_dataset("d", data=np.arange(100, dtype="i4"), chunks=(10,), scaleoffset=0)
        (item,) = from_h5py_dcpl(dset)
        assert (item["class"], item["id"], item["name"]) == (
            "H5Z_FILTER_SCALEOFFSET",
            6,
            "scaleoffset",
        )
        assert isinstance(item["parameters"], list) and len(item["parameters"]) == 20
        pipeline = FilterPipeline.from_json([item], dset.dtype, dset.chunks)
        stored = dset.id.read_direct_chunk((30,))[1]
        assert np.frombuffer(pipeline.decode(stored), "<i4").tolist() == list(range(30, 40))
        assert pipeline.encode(np.arange(30, 40, dtype="<i4").tobytes()) == stored


def test_from_h5py_dcpl_matches_h5pyd_shape(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "h.h5", "w") as f:
        dset = f.create_dataset(
            "d",
            shape=(100,),
            dtype="f4",
            chunks=(10,),
            shuffle=True,
            compression="gzip",
            compression_opts=5,
        )
        assert from_h5py_dcpl(dset) == [SHUFFLE, gzip(5)]
        plain = f.create_dataset("p", shape=(10,), dtype="f4")
        assert from_h5py_dcpl(plain) == []


# ----------------------------------------------------------------------------------------------
# Throughput (python tests/unit/test_filters.py)


def _benchmark() -> None:
    shape = (512, 512)  # 1 MiB of float32
    data = np.sin(np.linspace(0, 8 * np.pi, shape[0] * shape[1], dtype=np.float64))
    raw = (data * 1000).astype("<f4").reshape(shape).tobytes()
    cases = {
        "shuffle": [SHUFFLE],
        "shuffle + gzip 4": [SHUFFLE, gzip(4)],
        "gzip 4": [gzip(4)],
        "shuffle + zstd 3": [SHUFFLE, ZSTD],
        "zstd 3": [ZSTD],
        "lz4": [LZ4],
        "blosc lz4 (byte shuffle)": [blosc("lz4")],
        "blosc blosclz (byte shuffle)": [blosc("blosclz")],
        "blosc zstd (byte shuffle)": [blosc("zstd")],
        "bitshuffle + lz4": [bitshuffle("lz4")],
        "fletcher32": [FLETCHER32],
    }
    print(f"1 MiB float32 chunk {shape}, smooth data; MB/s of raw bytes, best of 5 x 20 runs")
    print(f"{'pipeline':30s} {'encode':>9s} {'decode':>9s} {'ratio':>7s}")
    for label, filters in cases.items():
        pipeline = FilterPipeline.from_json(filters, np.dtype("<f4"), shape)
        stored = pipeline.encode(raw)
        assert pipeline.decode(stored) == raw
        rates = []
        for fn, arg in ((pipeline.encode, raw), (pipeline.decode, stored)):
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(20):
                    fn(arg)
                best = min(best, (time.perf_counter() - t0) / 20)
            rates.append(len(raw) / best / 1e6)
        print(f"{label:30s} {rates[0]:9.0f} {rates[1]:9.0f} {len(raw) / len(stored):7.2f}")


if __name__ == "__main__":
    _benchmark()


# -- PyTables' LZO filter (issue 17 item 5) ------------------------------------------------------


@pytest.mark.parametrize(
    ("cd", "framed"), [((1, 27, 0), False), ((5, 10, 4), False), ((1, 10, 0), False), ((1, 23, 0), True), ((5, 10, 4), True)]
)
def test_lzo_reads_and_writes_pytables_chunks(cd: tuple[int, ...], framed: bool) -> None:
    """Chunks of PyTables >= 0.8 are bare LZO1X streams whatever the cd_values say; those of
    0.5 to 0.7 have a trailer, read too. Written chunks are always bare."""
    from tests.roundtrip.corpus import pytables_lzo_chunk

    raw = smooth(CHUNK, "<f4").tobytes()
    pipeline = FilterPipeline.from_json([{"id": 305, "parameters": list(cd)}], np.dtype("<f4"), CHUNK)
    assert pipeline.hdf5_filters() == [(305, 1, cd)]
    assert pipeline.to_json()[0]["name"] == "lzo"
    assert pipeline.decode(pytables_lzo_chunk(raw, framed)) == raw
    assert pipeline.decode(pipeline.encode(raw)) == raw
    assert pipeline.encode(raw) == lzokay.compress(raw)


def test_lzo_checksum_mismatch_is_corruption() -> None:
    from tests.roundtrip.corpus import pytables_lzo_chunk

    raw = smooth(CHUNK, "<f4").tobytes()
    stored = bytearray(pytables_lzo_chunk(raw, True))
    stored[-8] ^= 0xFF
    pipeline = FilterPipeline.from_json([{"id": 305, "parameters": [1, 27, 0]}], np.dtype("<f4"), CHUNK)
    with pytest.raises(DataCorruption, match="lzo"):
        pipeline.decode(bytes(stored))
