"""Errors to HTTP responses, in one place: every error is JSON with a status and a message.

The status of an error is found by walking its class hierarchy (most specific class first), so
the layers below name errors by what a caller does about them and never by a status code.
"""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from h5lake.api.http import JSONResponse, UnsupportedMediaType
from h5lake.api.observe import REQUEST_ID
from h5lake.errors import (
    Busy,
    CallerGone,
    ConditionFailed,
    Conflict,
    Forbidden,
    Gone,
    H5LakeError,
    InvalidInput,
    NotFound,
    ReadOnly,
    StorageUnavailable,
    TooLarge,
    Unauthorized,
)

log = logging.getLogger(__name__)

STATUS: dict[type[H5LakeError], int] = {
    InvalidInput: 400,
    UnsupportedMediaType: 415,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    ReadOnly: 405,
    ConditionFailed: 412,
    Conflict: 409,
    Gone: 410,
    TooLarge: 413,
    StorageUnavailable: 503,
    Busy: 503,
    CallerGone: 400,  # nobody reads it
    H5LakeError: 500,  # Internal, DataCorruption and anything not named above
}


def status_of(exc: H5LakeError) -> int:
    for cls in type(exc).__mro__:
        status = STATUS.get(cls)
        if status is not None:
            return status
    return 500


CHALLENGE = 'Basic realm="h5lake"'


def error_response(status: int, message: str) -> Response:
    """The JSON error reply; it names the request's id (`api/observe.py`) when there is one."""
    error: dict[str, object] = {"status": status, "message": message}
    rid = REQUEST_ID.get()
    if rid:
        error["request_id"] = rid
    return JSONResponse({"error": error}, status_code=status)


async def h5lake_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, H5LakeError)
    status = status_of(exc)
    message = exc.message
    if isinstance(exc, StorageUnavailable):
        # the store's own words name local paths, buckets and endpoints: they go to the log only
        log.error("%s %s (request %s): %s", request.method, request.url.path, REQUEST_ID.get(), exc.message)
        message = "the store is unavailable; try again shortly"
    elif status >= 500:
        log.error("%s %s (request %s): %s", request.method, request.url.path, REQUEST_ID.get(), exc.message)
    response = error_response(status, message)
    if isinstance(exc, (StorageUnavailable, Busy)):
        response.headers["Retry-After"] = "1"
    if status == 401:  # RFC 9110: a 401 names its scheme; browsers then ask for a login
        response.headers["WWW-Authenticate"] = CHALLENGE
    return response


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    response = error_response(exc.status_code, str(exc.detail))
    response.headers.update(exc.headers or {})  # a 405's Allow (RFC 9110 says it must be sent)
    return response


async def unexpected_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error in %s %s (request %s)", request.method, request.url.path, REQUEST_ID.get())
    return error_response(500, f"internal error: {type(exc).__name__}")


async def client_disconnected(request: Request, exc: Exception) -> Response:
    """The client left before its body was all sent: nobody reads the answer, and it is not
    the server's error (no traceback in the log)."""
    return error_response(400, "the client closed the connection before its request body was complete")


HANDLERS = {
    H5LakeError: h5lake_error,
    HTTPException: http_error,
    ClientDisconnect: client_disconnected,
    Exception: unexpected_error,
}
