"""Storage: a narrow interface of bytes. Nothing here knows about HDF5."""

from h5lake.storage.base import LATER, AnswersAtOnce, Blob, Later, ObjectInfo, PreconditionFailed, Store

__all__ = ["LATER", "AnswersAtOnce", "Blob", "Later", "ObjectInfo", "PreconditionFailed", "Store"]
