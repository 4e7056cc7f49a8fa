"""MD5 of many buffers (the ETags and chunk checksums of a bulk write) gives exactly hashlib's
digests of each, whatever the lengths and however many buffers share one call, including
strided views of one array."""

from __future__ import annotations

import hashlib
import os
import random

import numpy as np
import pytest

from h5lake.storage import md5


def _expected(buffers: list[bytes] | list[memoryview]) -> list[str]:
    return [hashlib.md5(b).hexdigest() for b in buffers]


@pytest.mark.parametrize("count", [0, 1, 2, 7, 8, 9, 15, 16, 17, 33])
def test_many_buffers_of_mixed_lengths(count: int) -> None:
    rng = random.Random(count)
    # lengths around MD5's 64-byte blocks and its padding boundary (55/56 bytes in the last block)
    lengths = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 4096, 65_537]
    buffers = [os.urandom(rng.choice(lengths)) for _ in range(count)]
    assert md5.md5_hex_many(buffers) == _expected(buffers)


def test_chunk_views_of_one_array() -> None:
    values = np.random.default_rng(14).random((40 * 64, 1024), dtype=np.float32)
    views = [values[i * 64 : (i + 1) * 64].reshape(-1).view(np.uint8).data for i in range(40)]
    assert md5.md5_hex_many(views) == _expected(views)
