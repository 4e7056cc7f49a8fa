"""Errors to HTTP responses, in one place: every error is JSON with a status and a message."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from h5lake.api.http import JSONResponse
from h5lake.errors import H5LakeError

log = logging.getLogger(__name__)

CHALLENGE = 'Basic realm="h5lake"'


def error_response(status: int, message: str) -> Response:
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)


async def h5lake_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, H5LakeError)
    if exc.status >= 500:
        log.error("%s %s: %s", request.method, request.url.path, exc.message)
    headers = {"Retry-After": "1"} if exc.status == 503 else None
    if exc.status == 401:  # RFC 9110: a 401 names its scheme; browsers then ask for a login
        headers = {"WWW-Authenticate": CHALLENGE}
    response = error_response(exc.status, exc.message)
    if headers:
        response.headers.update(headers)
    return response


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail))


async def unexpected_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error in %s %s", request.method, request.url.path)
    return error_response(500, f"internal error: {type(exc).__name__}")


HANDLERS = {H5LakeError: h5lake_error, HTTPException: http_error, Exception: unexpected_error}
