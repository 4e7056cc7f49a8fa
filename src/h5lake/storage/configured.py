"""The store a server's settings name, opened without loading the application: ``h5lake
serve`` checks an S3 store before it starts its workers, and ``h5lake apikey`` and ``h5lake gc``
work on the store directly."""

from __future__ import annotations

from collections.abc import Callable

from h5lake.config import Settings
from h5lake.storage import Store
from h5lake.storage.local import LocalStore

Kind = Callable[[type], type]
"""What a store's class becomes before the store is made (e.g. ``api/metering.metered_class``)."""


def _same(cls: type) -> type:
    return cls


def open_store(settings: Settings, kind: Kind = _same) -> Store:
    if settings.storage:
        bucket, _, prefix = settings.storage[len("s3://") :].partition("/")
        return s3_store(bucket, prefix, settings, kind)
    store: Store = kind(LocalStore)(settings.data)
    return store


def s3_store(bucket: str, prefix: str, settings: Settings, kind: Kind = _same) -> Store:
    # imported only when a server uses S3: the S3 client libraries are heavy to load
    from h5lake.storage.s3 import S3Store

    store: Store = kind(S3Store)(bucket, prefix=prefix, endpoint_url=settings.s3_endpoint, region=settings.s3_region)
    return store
