"""The deflate encoder's framing (stored blocks for leading noise, then libdeflate's raw stream,
in one zlib stream) over random chunks: every zlib reader we rely on and HDF5 itself read them.

A chunk is a mix of stretches of noise, zeros, repeats and measured-looking floats, 0 to 2 MiB,
at every gzip level, with or without shuffle, for element sizes 1 to 8.
"""

from __future__ import annotations

import random
import struct
import zlib
from typing import Any

import h5py
import imagecodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from h5lake.chunks.filters import FilterPipeline

SHUFFLE = {"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"}
MIB = 1024 * 1024
KINDS = ("noise", "zeros", "repeat", "floats")


def gzip(level: int) -> dict[str, Any]:
    return {"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": level}


def stretch(kind: str, length: int, seed: int) -> bytes:
    rng = random.Random(seed)
    if kind == "noise":
        return rng.randbytes(length)
    if kind == "zeros":
        return bytes(length)
    if kind == "repeat":
        return (rng.randbytes(rng.randint(1, 300)) * (length + 1))[:length]
    # a smooth field with noise in its last digits: shuffled, its low bytes are noise
    x = np.arange(-(-length // 4), dtype=np.float64) / 500.0
    noisy = np.sin(x) + np.random.default_rng(seed).normal(0, 1e-3, len(x))
    return noisy.astype("<f4").tobytes()[:length]


stretches = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 768 * 1024), st.integers(0, 2**32)), max_size=5
)


def chunk_of(parts: list[tuple[str, int, int]], itemsize: int) -> bytes:
    raw = b"".join(stretch(kind, length, seed) for kind, length, seed in parts)[: 2 * MIB]
    return raw[: len(raw) - len(raw) % itemsize]


def final_block_seen(stream: bytes) -> bool:
    """zlib reports a stream that lacks its final block as incomplete (Z_BUF_ERROR); a
    decompressor object says so by ``eof``."""
    d = zlib.decompressobj()
    d.decompress(stream)
    return d.eof and not d.unused_data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(parts=stretches, level=st.integers(0, 9), shuffle=st.booleans(), itemsize=st.integers(1, 8))
# every piece noise, so no libdeflate part follows (a whole number of 65535-byte stored blocks,
# one byte more, a piece too short to judge); noise then zeros; an empty chunk
@example(parts=[("noise", 2 * 65535, 1)], level=6, shuffle=False, itemsize=1)
@example(parts=[("noise", 65536, 2)], level=1, shuffle=False, itemsize=1)
@example(parts=[("noise", 16 * 1024, 3)], level=9, shuffle=False, itemsize=1)
@example(parts=[("noise", 4 * 65536, 4)], level=4, shuffle=True, itemsize=8)
@example(parts=[("noise", 3 * 65536, 5), ("zeros", 5 * 65536, 0)], level=4, shuffle=False, itemsize=1)
@example(parts=[("floats", 2 * MIB, 6)], level=4, shuffle=True, itemsize=4)
@example(parts=[], level=4, shuffle=False, itemsize=1)
def test_every_reader_reads_what_deflate_wrote(
    parts: list[tuple[str, int, int]], level: int, shuffle: bool, itemsize: int
) -> None:
    raw = chunk_of(parts, itemsize)
    dtype = np.dtype(f"S{itemsize}")
    count = len(raw) // itemsize
    filters = [SHUFFLE, gzip(level)] if shuffle else [gzip(level)]
    pipeline = FilterPipeline.from_json(filters, dtype, (count,) if count else None)
    stored = pipeline.encode(raw)
    deflated = stored  # gzip is the last filter: its output is what is stored
    shuffled = bytes(pipeline.filters[0].encode(raw)) if shuffle else raw
    assert zlib.decompress(deflated) == shuffled
    assert final_block_seen(deflated)
    # the header is the one libdeflate writes at this level, whatever the chunk holds
    assert deflated[:2] == imagecodecs.deflate_encode(b"x", level)[:2]
    (cmf, flg), adler = deflated[:2], struct.unpack(">I", deflated[-4:])[0]
    assert cmf == 0x78 and (cmf * 256 + flg) % 31 == 0 and not flg & 0x20
    assert adler == zlib.adler32(raw if not shuffle else shuffled)
    # within libdeflate's own worst case (5 bytes a block of at least 5,000 bytes; nothing
    # bounds a stored chunk's size but HDF5's 4 GiB, far off)
    assert len(deflated) <= len(raw) + 5 * (len(raw) // 5000 + 2) + 6
    for decode in (imagecodecs.zlibng_decode, imagecodecs.deflate_decode):
        assert bytes(decode(deflated, out=len(raw))) == shuffled
    assert pipeline.decode(stored) == raw
    if not count:
        return  # HDF5 has no empty chunk
    with h5py.File(f"chunk-{id(raw)}.h5", "w", driver="core", backing_store=False) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((count,))
        for filter_id, flags, cd_values in pipeline.hdf5_filters():
            dcpl.set_filter(filter_id, flags, cd_values)
        space = h5py.h5s.create_simple((count,))
        dsid = h5py.h5d.create(f.id, b"d", h5py.h5t.py_create(dtype), space, dcpl=dcpl)
        dsid.write_direct_chunk((0,), stored)
        assert f["d"][...].tobytes() == raw


@pytest.mark.parametrize("level", range(10))
def test_empty_chunk_deflates_at_every_level(level: int) -> None:
    pipeline = FilterPipeline.from_json([gzip(level)], np.dtype("u1"), (1024,))
    stored = pipeline.encode(b"")
    assert zlib.decompress(stored) == b""
    assert imagecodecs.zlibng_decode(stored) == b""


@pytest.mark.parametrize(("itemsize", "period"), [(1, 5000), (1, 20000), (1, 30000), (4, 4096 * 4), (8, 6000 * 8)])
def test_repeats_longer_than_a_probe_still_compress(itemsize: int, period: int) -> None:
    """Rows of noise repeated (a stack of one frame, a vector broadcast): each 4 KiB probe alone
    is noise, but deflate's 32 KiB window finds every row again. Stored, the chunk would be
    35-50 times what libdeflate makes of it."""
    row = random.Random(period).randbytes(period)
    raw = (row * (MIB // period + 1))[:MIB]
    filters = [SHUFFLE, gzip(4)] if itemsize > 1 else [gzip(4)]
    pipeline = FilterPipeline.from_json(filters, np.dtype(f"S{itemsize}"), (MIB // itemsize,))
    shuffled = bytes(pipeline.filters[0].encode(raw)) if itemsize > 1 else raw
    stored = pipeline.encode(raw)
    assert len(stored) <= 1.01 * len(imagecodecs.deflate_encode(shuffled, 4)) + 64
    assert pipeline.decode(stored) == raw


@pytest.mark.parametrize(("fill", "run"), [(b"\0", 8192), (b"\xff", 3000), (struct.pack("<f", float("nan")), 11000)])
def test_fill_between_probes_still_compresses(fill: bytes, run: int) -> None:
    """Noise with a stretch of one value (fill values, a masked region) where no probe looks:
    the four 4 KiB probes of a 64 KiB piece see noise, yet deflate saves most of the stretch."""
    rng = random.Random(run)
    pieces = []
    for _ in range(16):
        piece = bytearray(rng.randbytes(65536))
        piece[11 * 1024 : 11 * 1024 + run] = (fill * run)[:run]  # between the first two probes
        pieces.append(bytes(piece))
    raw = b"".join(pieces)
    pipeline = FilterPipeline.from_json([gzip(4)], np.dtype("u1"), (len(raw),))
    stored = pipeline.encode(raw)
    assert len(stored) <= 1.01 * len(imagecodecs.deflate_encode(raw, 4)) + 64
    assert pipeline.decode(stored) == raw
