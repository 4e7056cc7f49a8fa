"""One exception tree for the whole service.

Classes are grouped by what a caller does about them; the HTTP edge maps each class to a
status code in one place (``h5lake.api.errors``). Deep layers raise these, never HTTP errors.
"""

from __future__ import annotations


class H5LakeError(Exception):
    """Base of every error h5lake raises on purpose."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(H5LakeError):
    """The request is malformed or names something impossible."""

    status = 400


class Unauthorized(H5LakeError):
    """No valid credentials where they are required."""

    status = 401


class Forbidden(H5LakeError):
    """Valid credentials, but no permission."""

    status = 403


class NotFound(H5LakeError):
    status = 404


class MethodNotAllowed(H5LakeError):
    """The resource exists but does not allow this operation (e.g. a write to a linked dataset)."""

    status = 405


class Conflict(H5LakeError):
    """The request conflicts with the current state (existing name, lost race)."""

    status = 409


class AlreadyExists(Conflict):
    pass


class Gone(H5LakeError):
    status = 410


class TooLarge(H5LakeError):
    status = 413


class UnsupportedMediaType(H5LakeError):
    status = 415


class StorageError(H5LakeError):
    """The store failed in a way the caller cannot fix by changing the request."""

    status = 503


class DataCorruption(H5LakeError):
    """Stored bytes fail a checksum or cannot be decoded."""

    status = 500
