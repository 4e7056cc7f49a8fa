"""MD5 hex digests (the ETags and the catalogs' chunk checksums), of one buffer or of many.

MD5 is one chain of dependent operations: OpenSSL hashes one buffer at ~5 cycles a byte (2.1 ms
of CPU per MiB on the development machine), more than all the rest of a durable bulk write. The
chunks of one request are independent buffers, so ``md5_hex_many`` hashes up to sixteen at once
in the lanes of AVX2 registers (``_md5lanes``, built from setup.py): the same digests at ~0.5 ms
per MiB. Where that module is missing (not built) or the CPU lacks AVX2, ``hashlib`` hashes
each buffer: the same digests, only slower.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

try:
    from h5lake.storage import _md5lanes
except ImportError:  # not built: hashlib gives the same digests
    _md5lanes = None  # type: ignore[assignment]

Buffer = bytes | bytearray | memoryview

# Buffers hashed at once by one call: 16 with AVX2 (two chains of 8 lanes), else 1.
LANES = _md5lanes.lanes() if _md5lanes is not None else 1


def md5_hex(data: Buffer) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def md5_hex_many(buffers: Sequence[Buffer]) -> list[str]:
    """The MD5 hex digest of each buffer (C-contiguous), in order; the GIL is released while
    the lanes hash, so this may run on a worker thread beside the event loop."""
    if LANES > 1 and len(buffers) > 1:
        return [digest.hex() for digest in _md5lanes.digests(buffers)]
    return [md5_hex(b) for b in buffers]
