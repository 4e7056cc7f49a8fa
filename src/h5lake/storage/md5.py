"""MD5 hex digests (the ETags and the catalogs' chunk checksums), of one buffer or of many.

MD5 is the checksum the storage schema (seed 001) names for objects and chunks, and what S3
returns as the ETag of a plain PUT. OpenSSL (through ``hashlib``) hashes one buffer at ~5 cycles
a byte, 2.1 ms of CPU per MiB on the development machine: the largest single cost of a durable
bulk write (docs/performance.md). ``md5_hex_many`` takes the chunks of one write together so the
engine can hash a window of them on a worker thread (``hashlib`` releases the GIL) while the
previous window is stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

Buffer = bytes | bytearray | memoryview


def md5_hex(data: Buffer) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def md5_hex_many(buffers: Sequence[Buffer]) -> list[str]:
    """The MD5 hex digest of each buffer, in order."""
    return [md5_hex(b) for b in buffers]
