"""One exception tree for the whole service.

Classes are grouped by what a caller does about them: fix the request (`InvalidInput`), look
elsewhere (`NotFound`), ask for access (`Unauthorized`, `Forbidden`), re-read and retry
(`Conflict`), write somewhere writable (`ReadOnly`), ask for less (`TooLarge`), wait
(`StorageUnavailable`), or report a bug or damage (`Internal`). Nothing here knows HTTP: the edge
maps each class to a status code in one place (``h5lake.api.errors``), walking the class
hierarchy, so a new subclass answers as its parent does.
"""

from __future__ import annotations


class H5LakeError(Exception):
    """Base of every error h5lake raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(H5LakeError):
    """The request is malformed or names something impossible: the caller fixes the request."""


class Unauthorized(H5LakeError):
    """No valid credentials where they are required."""


class Forbidden(H5LakeError):
    """Valid credentials (or none needed), but no permission for this."""


class NotFound(H5LakeError):
    """The domain, object, link, attribute... does not exist (or is not where it was named)."""


class ReadOnly(H5LakeError):
    """The thing exists but cannot be changed this way (a dataset linked to an HDF5 file, a
    version of a domain, a domain opened read-only)."""


class Conflict(H5LakeError):
    """The request conflicts with the current state (an existing name, a lost race, a changed
    source file): re-read, then retry or give up."""


class AlreadyExists(Conflict):
    """A create-only write found something already there."""


class ConditionFailed(Conflict):
    """A conditional request's precondition (``If-Match``, ``If-None-Match``) does not hold now."""


class Gone(H5LakeError):
    """The thing existed and has been removed for good."""


class TooLarge(H5LakeError):
    """The request or its answer exceeds a size policy: ask for less at a time."""


class Busy(H5LakeError):
    """The server's memory for large answers is taken by others (``service.budget``): retry later."""


class CallerGone(H5LakeError):
    """The caller went away before its answer was made: the work was stopped."""


class StorageUnavailable(H5LakeError):
    """The store failed in a way the caller cannot fix by changing the request: retry later."""


StorageError = StorageUnavailable  # the name storage backends and their tests use


class Internal(H5LakeError):
    """A bug or damaged data: nothing the caller can do but report it."""


class DataCorruption(Internal):
    """Stored bytes fail a checksum or cannot be decoded."""
