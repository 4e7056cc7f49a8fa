"""What an S3 put sends: the body's SHA-256 signed only without TLS, and buffers of any layout
stored byte for byte without being copied to ``bytes`` first (storage/s3.py, "Hashing")."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from tests.storage.conftest import s3_store
from tests.support.s3server import S3Server

from h5lake.storage.s3 import S3Store


@pytest.mark.parametrize(
    ("endpoint", "unsigned"),
    [(None, "true"), ("https://s3.example.org", "true"), ("HTTPS://s3.example.org:9000", "true"),
     ("http://127.0.0.1:9000", "false")],
)
def test_the_payload_is_signed_only_without_tls(endpoint: str | None, unsigned: str) -> None:
    store = S3Store("bucket", endpoint_url=endpoint, region="us-east-1", access_key_id="a", secret_access_key="b")
    assert store._store is not None
    assert store._store.config["unsigned_payload"] == unsigned
    forced = S3Store("bucket", endpoint_url=endpoint, region="us-east-1", unsigned_payload=unsigned != "true")
    assert forced._store is not None
    assert forced._store.config["unsigned_payload"] == ("false" if unsigned == "true" else "true")


@pytest.mark.slow
@pytest.mark.parametrize("unsigned", [False, True], ids=["signed", "unsigned"])
async def test_views_of_any_layout_are_stored_as_their_bytes(s3_server: S3Server, unsigned: bool) -> None:
    store = s3_store(s3_server, unsigned_payload=unsigned)
    try:
        array = np.arange(64 * 1024, dtype=np.float64).reshape(256, 256)
        bodies = {
            "float-rows": memoryview(array[10:20]),  # contiguous, format "d", two dimensions
            "bytes-view": memoryview(array.tobytes())[8:-8],
            "strided": memoryview(array[:, ::2]),  # not contiguous: copied
            "bytes": array[3].tobytes(),
        }
        for key, body in bodies.items():
            expected = bytes(body) if isinstance(body, bytes) else np.asarray(body).tobytes()
            etag = await store.put(key, body)
            blob = await store.get(key)
            assert blob is not None and blob.data == expected, key
            # S3's ETag of a single-part put: the catalog's checksum (md5 of the bytes)
            assert etag == hashlib.md5(expected, usedforsecurity=False).hexdigest() == blob.etag, key
    finally:
        await store.close()
