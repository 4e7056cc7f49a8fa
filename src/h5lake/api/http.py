"""Request parsing and response helpers shared by every route."""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from typing import Any

import orjson
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from h5lake.api.hrefs import Hrefs
from h5lake.auth import Authenticator, Identity
from h5lake.chunks.buffers import BodyPool
from h5lake.errors import InvalidInput, TooLarge, Unauthorized
from h5lake.service.budget import Reservation
from h5lake.service.context import Caller, Service

OCTET = "application/octet-stream"
BODIES = BodyPool()  # the kept, page-aligned buffers binary bodies read whole are read into
JSON = "application/json; charset=utf-8"
# Flag spellings, compared lower-cased: h5pyd before 1.0 sends ``T`` (``include_attrs=T``), and
# HSDS reads any integer as a flag (non-zero: set).
_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off", ""}
_INTEGER = re.compile(r"[+-]?[0-9]+")
#: What `flag` accepts, as a JSON Schema pattern (the document's flags): a spelling above in any
#: case or an ASCII integer, with white space around. ``(?![\s\S])`` ends the text in both
#: ECMA-262 and Python regexes (``$`` lets a final newline through in Python's).
FLAG_PATTERN = (
    r"^\s*(?:"
    + "|".join("".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in w) for w in sorted(_TRUE | _FALSE) if w)
    + r"|[+-]?[0-9]+)?\s*(?![\s\S])"
)


class UnsupportedMediaType(InvalidInput):
    """The body comes in an encoding this route does not take (an HTTP notion: edge only)."""


def service(request: Request) -> Service:
    # the app's own attribute (`api.app.App`): ``app.state``'s lookups go through __getattr__
    svc: Service = request.scope["app"].service
    return svc


def caller(request: Request) -> Caller:
    """Who sent ``request``: found once per request by ``authenticate`` (the middleware), which
    keeps an ``Unauthorized`` for the handler to raise, so every route answers it alike."""
    identity: Identity | Unauthorized = request.scope["state"]["identity"]
    if isinstance(identity, Unauthorized):
        raise identity
    return service(request).caller(identity.user, admin=identity.admin)


class Authenticate:
    """ASGI middleware: checks the ``Authorization`` header off the event loop (password hashes,
    token keys) before the route runs, so handlers stay synchronous about who is asking."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "identity" not in scope.get("state", ()):  # not by `FastReads` already
            authenticator: Authenticator = scope["app"].state.authenticator
            headers = Headers(scope=scope).getlist("authorization")
            identity: Identity | Unauthorized
            try:
                identity = await authenticator.identify(one_authorization(headers))
            except Unauthorized as exc:
                identity = exc
            scope.setdefault("state", {})["identity"] = identity
        await self.app(scope, receive, send)


#: a percent-escape of a byte outside ASCII: only then may a URL decode into something not UTF-8
_HIGH_ESCAPE = re.compile(rb"%[89a-fA-F][0-9a-fA-F]")


def undecodable_url(scope: Scope) -> InvalidInput | None:
    """Why the request's path or query string does not percent-decode into UTF-8, if it does
    not. The server decodes them with replacement characters, so ``domain=/a%ff.h5`` or a
    link named ``%ff`` would otherwise be kept under a name the caller never sent."""
    for part, raw in (("path", scope.get("raw_path") or b""), ("query string", scope.get("query_string") or b"")):
        if _HIGH_ESCAPE.search(raw):
            try:
                urllib.parse.unquote_to_bytes(raw).decode()
            except UnicodeDecodeError as exc:
                return InvalidInput(f"the URL's {part} does not percent-decode into UTF-8 "
                                    f"(bytes {exc.object[exc.start:exc.end]!r}); encode names as UTF-8")
    return None


def one_authorization(headers: list[str]) -> str | None:
    """The request's one ``Authorization`` header. Several are refused rather than one picked: a
    proxy in front that adds its own might read another one than h5lake does."""
    if len(headers) > 1:
        raise Unauthorized(f"the request has {len(headers)} Authorization headers: send one")
    return headers[0] if headers else None


def domain_param(request: Request, *, required: bool = True) -> str:
    """The domain a request names: ``domain=`` or ``X-Hdf-domain``, an absolute path (HSDS
    answers 400 for a name without a ``/``; h5lake, which has no buckets in domain names,
    for any name not starting with one). An ``hdf5:/`` prefix is dropped, as HSDS does."""
    value = request.query_params.get("domain") or request.headers.get("x-hdf-domain")
    if value:
        value = value.removeprefix("hdf5:/")
        if not value.startswith("/"):
            raise InvalidInput(f"domain {value[:80]!r} must be an absolute path starting with '/'")
    if value is None and request.query_params.get("host"):
        # HSDS 1.0 answers 400 for the old DNS-style host parameter; so does h5lake
        raise InvalidInput("the host parameter is not supported: name the domain with ?domain= or X-Hdf-domain")
    if not value:
        if required:
            raise InvalidInput("no domain given (use ?domain= or the X-Hdf-domain header)")
        return ""
    return value


def flag(request: Request, name: str, default: bool = False) -> bool:
    value = request.query_params.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    if _INTEGER.fullmatch(lowered):  # ASCII digits only: int() would take "1_0" and other scripts' digits
        return int(lowered) != 0
    raise InvalidInput(f"parameter {name} must be 0 or 1, got {value[:40]!r}")


def int_param(request: Request, name: str, *, minimum: int = 0) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise InvalidInput(f"parameter {name} must be an integer, got {value[:40]!r}") from None
    if number < minimum:
        raise InvalidInput(f"parameter {name} must be at least {minimum}")
    return number


def limit_param(request: Request) -> int | None:
    """``Limit`` of the HDF REST API's listings and queries: a count, where 0 (as HSDS reads it,
    and as the API's openapi.yaml allows) or nothing means no limit."""
    return int_param(request, "Limit", minimum=0) or None


def check_content_coding(request: Request) -> None:
    """Bodies are taken as sent: one in a content coding (gzip...) is refused, not misread
    (and not inflated: a few kilobytes of gzip can be gigabytes)."""
    coding = ", ".join(request.headers.getlist("content-encoding")).lower()  # every line, as below
    if any(c.strip() not in ("", "identity") for c in coding.split(",")):
        raise UnsupportedMediaType(f"Content-Encoding {coding[:40]!r} is not supported: send the body uncompressed")
    # The HTTP parser takes a Transfer-Encoding list ending in chunked (``gzip, chunked``) and
    # undoes only the chunking: the body would be read still compressed. Every header line
    # counts (``identity`` then ``gzip, chunked`` on a second line passes the parser too).
    sent = ", ".join(request.headers.getlist("transfer-encoding"))
    if any(c.strip() not in ("", "chunked", "identity") for c in sent.lower().split(",")):
        raise UnsupportedMediaType(
            f"Transfer-Encoding {sent[:40]!r} is not supported: send the body uncompressed (chunked alone is fine)"
        )


async def body_bytes(request: Request, limit: int | None = None, hint: str = "") -> bytes:
    check_content_coding(request)
    limit = service(request).limits.max_request_size if limit is None else limit
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise TooLarge(f"request body of {length} bytes exceeds the limit of {limit}{hint}")
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise TooLarge(f"request body exceeds the limit of {limit} bytes{hint}")
        chunks.append(chunk)
    return b"".join(chunks)


def is_binary(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";")[0].strip() == OCTET


def wants_binary(request: Request) -> bool:
    return OCTET in request.headers.get("accept", "")


async def json_body(request: Request, *, allow_empty: bool = True) -> Any:
    """The JSON body. h5pyd sends POST JSON bodies without a Content-Type, so any content type
    other than octet-stream is parsed as JSON."""
    if is_binary(request):
        raise UnsupportedMediaType("expected a JSON body, got application/octet-stream")
    limits = service(request).limits
    data = await body_bytes(
        request,
        min(limits.max_json_size, limits.max_request_size),
        " for JSON; send values as application/octet-stream (binary bodies may be larger)",
    )
    if not data.strip():
        if allow_empty:
            return None
        raise InvalidInput("request body is empty")
    # A large body is parsed on the CPU pool: 100 MiB of JSON (or of NaN tokens, which only
    # the standard library reads) is seconds of work the event loop would not serve others.
    return await service(request).workers.cpu(parse_json, data, size=len(data))


#: Largest JSON body read with bare NaN/Infinity tokens. Only the standard library's parser
#: takes them, a C call that holds the interpreter for its whole run (~0.5 s per 10 MiB, on a
#: thread or not), so larger ones are refused rather than stalling every other request.
NAN_JSON_MAX_BYTES = 8 * 1024 * 1024


def parse_json(data: bytes) -> Any:
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, which RFC 8259 lets a reader skip
        data = data[3:]
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # Python clients (h5pyd) write NaN and Infinity as bare tokens, which strict JSON lacks.
        if "depth" in str(exc):
            raise InvalidInput("request body is nested more than 1024 levels deep") from None
        if "surrogate in string" in str(exc):  # not "str is not valid UTF-8: surrogates not allowed"
            raise InvalidInput(LONE_SURROGATE) from None
        if b"NaN" not in data and b"Infinity" not in data:
            # nothing the standard library would read differently: parsing a large body again
            # with it (one call holding the interpreter) only delayed everyone else
            raise InvalidInput(f"request body is not valid JSON: {exc}") from None
        if len(data) > NAN_JSON_MAX_BYTES:
            raise TooLarge(
                f"a JSON body with NaN or Infinity tokens may have at most {NAN_JSON_MAX_BYTES} bytes; "
                "send such values as application/octet-stream, or write \"NaN\" and \"Infinity\" as strings"
            ) from None
        try:
            parsed = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise InvalidInput(f"request body is not valid JSON: {exc}") from None
        # the standard library reads a lone surrogate escape into a str that no later step
        # can encode (orjson refuses it, so only bodies that came this way are searched)
        if b"\\u" in data and lone_surrogate(data):
            raise InvalidInput(LONE_SURROGATE)
        return parsed


LONE_SURROGATE = (
    "request body is not valid JSON: a string holds a lone surrogate escape (\\ud800-\\udfff not in a "
    "high-low pair), which is no Unicode character"
)


#: An escaped backslash (skipped, so that ``\\\\ud800`` is no escape) or a surrogate escape
_SURROGATE_ESCAPE = re.compile(rb"\\\\|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lone_surrogate(data: bytes) -> bool:
    """Does JSON text ``data`` escape a surrogate that is not half of a high-low pair?"""
    high_ends = -1  # where the last high surrogate escape ended, while it waits for its low half
    for found in _SURROGATE_ESCAPE.finditer(data):
        escape = found.group()
        low = len(escape) == 6 and escape[3:4].lower() in b"cdef"
        if high_ends >= 0:
            if not (low and found.start() == high_ends):
                return True
            high_ends = -1
        elif len(escape) == 6:
            if low:
                return True
            high_ends = found.end()
    return high_ends >= 0


class JSONResponse(Response):
    media_type = JSON

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY)


def links(request: Request) -> Hrefs:
    """The href builder of this request (its base URL and domain)."""
    return Hrefs(request, domain_param(request, required=False))


#: Buffered 200 responses up to this size carry an ``ETag`` (a hash of the body); hashing larger
#: ones would cost more than a client can save with it.
ETAG_MAX_BYTES = 1024 * 1024


def _tagged(response: Response) -> Response:
    body = response.body
    if response.status_code == 200 and len(body) <= ETAG_MAX_BYTES:
        # straight onto the raw header list: MutableHeaders would cost more than the hash
        response.raw_headers.append((b"etag", b'"' + hashlib.blake2b(body, digest_size=12).hexdigest().encode() + b'"'))
    return response


_JSON_TYPE = (b"content-type", JSON.encode("latin-1"))


class _Reply(JSONResponse):
    """A `JSONResponse` made without `Response.__init__`'s generic header work: the same
    ``raw_headers`` (length, type, then the ETag of a 200), for every JSON reply of a route."""

    def __init__(self, body: bytes, status: int) -> None:
        self.status_code = status
        self.background = None
        self.body = body
        headers = [(b"content-length", b"%d" % len(body)), _JSON_TYPE]
        if status == 200 and len(body) <= ETAG_MAX_BYTES:
            headers.append((b"etag", b'"' + hashlib.blake2b(body, digest_size=12).hexdigest().encode() + b'"'))
        self.raw_headers = headers


def ok(content: Any, status: int = 200) -> Response:
    return _Reply(orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), status)


def binary(data: bytes | memoryview, status: int = 200) -> Response:
    return _tagged(Response(data, status_code=status, media_type=OCTET))


HELD_SEND_BYTES = 4 * 1024 * 1024


class _Held(Response):
    """``response`` sent in slices of ``HELD_SEND_BYTES`` (the transport keeps only what the
    socket has not taken of one), its reservation released once it is sent or the client left."""

    def __init__(self, response: Response, reservation: Reservation) -> None:
        self.status_code = response.status_code
        self.background = response.background
        self.body = response.body
        self.raw_headers = response.raw_headers
        self.reservation = reservation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            view = memoryview(self.body).cast("B") if scope.get("method") != "HEAD" else memoryview(b"")
            self.body = b""
            for start in range(0, len(view), HELD_SEND_BYTES):
                await send({"type": "http.response.body", "body": view[start : start + HELD_SEND_BYTES], "more_body": True})
            del view
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.reservation.release()
        if self.background is not None:
            await self.background()


def held(response: Response, reservation: Reservation) -> Response:
    """``response``, whose making held ``reservation`` of the server's reply budget
    (`service.budget`): the bytes stay reserved until it is sent. A small one (it never waited)
    is released now and the response sent as it is."""
    if reservation.small:
        reservation.release()
        return response
    return _Held(response, reservation)
