"""The store a server's settings name, opened without loading the application: ``h5lake
serve`` checks an S3 store before it starts its workers, and ``h5lake apikey`` and ``h5lake gc``
work on the store directly."""

from __future__ import annotations

from h5lake.config import Settings
from h5lake.storage import Store
from h5lake.storage.local import LocalStore


def open_store(settings: Settings) -> Store:
    if settings.storage:
        bucket, _, prefix = settings.storage[len("s3://") :].partition("/")
        return s3_store(bucket, prefix, settings)
    return LocalStore(settings.data)


def s3_store(bucket: str, prefix: str, settings: Settings) -> Store:
    # imported only when a server uses S3: the S3 client libraries are heavy to load
    from h5lake.storage.s3 import S3Store

    return S3Store(bucket, prefix=prefix, endpoint_url=settings.s3_endpoint, region=settings.s3_region)
