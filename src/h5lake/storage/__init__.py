"""Storage: a narrow interface of bytes. Nothing here knows about HDF5."""

from h5lake.storage.base import Blob, ObjectInfo, PreconditionFailed, Store

__all__ = ["Blob", "ObjectInfo", "PreconditionFailed", "Store"]
