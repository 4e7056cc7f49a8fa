"""A small, thread-safe client for the HDF REST API, as ``h5lake load`` and ``export`` use it.

Why not h5pyd: the tools need exact control over what goes over the wire (ids chosen here,
binary bodies, batching, concurrency) and must work with any server that speaks the HDF REST
API, so they talk HTTP themselves. Connection settings are found the way h5pyd finds them
(:func:`resolve_settings`), so a user's ``~/.hscfg`` works for both.

Every call is one HTTP request with the ``domain`` (and ``bucket``) query parameters added.
Sessions are per thread (``requests.Session`` is not thread-safe); transient failures (connection
errors, 500/502/503/504) are retried with backoff, other failures raise :class:`RestError`
naming the request and quoting the server's message.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import requests
from requests.adapters import HTTPAdapter

OCTET = "application/octet-stream"
RETRY_STATUS = frozenset({500, 502, 503, 504})
DEFAULT_ENDPOINT = "http://127.0.0.1:5101"
NOT_A_URL = "not a valid server URL (expected http://HOST:PORT)"


class RestError(Exception):
    """A request failed; ``status`` is the HTTP status, or None when no response came."""

    def __init__(self, method: str, path: str, status: int | None, message: str) -> None:
        self.method, self.path, self.status, self.message = method, path, status, message
        where = f"{method} {path}"
        super().__init__(f"{where} failed ({status}): {message}" if status else f"{where} failed: {message}")


@dataclass(frozen=True, slots=True)
class Settings:
    endpoint: str
    username: str | None = None
    password: str | None = None
    bucket: str | None = None


def _read_hscfg(path: Path) -> dict[str, str]:
    """``key = value`` lines of an h5pyd config file; ``#`` starts a comment."""
    values: dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        return values
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if value and value.lower() != "none":
            values[key.lower()] = value
    return values


def resolve_settings(
    endpoint: str | None = None,
    username: str | None = None,
    password: str | None = None,
    bucket: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Explicit values, else ``HS_ENDPOINT``/``HS_USERNAME``/``HS_PASSWORD``/``HS_BUCKET``, else
    ``hs_endpoint``/``hs_username``/``hs_password``/``hs_bucket`` from ``~/.hscfg``."""
    env = os.environ if environ is None else environ
    cfg = _read_hscfg(config_file or Path.home() / ".hscfg")

    def pick(given: str | None, name: str) -> str | None:
        if given:
            return given
        return env.get(f"HS_{name.upper()}") or cfg.get(f"hs_{name}")

    return Settings(
        endpoint=(pick(endpoint, "endpoint") or DEFAULT_ENDPOINT).rstrip("/"),
        username=pick(username, "username"),
        password=pick(password, "password"),
        bucket=pick(bucket, "bucket"),
    )


def _message(response: requests.Response) -> str:
    """The server's error message: h5lake's JSON ``error.message``, else the body's text."""
    try:
        body = response.json()
    except ValueError:
        return (response.text or response.reason or "").strip()[:500]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))[:500]
    return str(body)[:500]


class RestClient:
    """Requests against one domain of one server, safe to share between threads."""

    def __init__(
        self,
        settings: Settings,
        domain: str,
        *,
        pool_size: int = 16,
        retries: int = 4,
        timeout: float = 300.0,
    ) -> None:
        self.settings = settings
        self.domain = domain
        self.pool_size = pool_size
        self.retries = retries
        self.timeout = timeout
        self._local = threading.local()

    # -- plumbing ------------------------------------------------------------------------------

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=4, pool_maxsize=self.pool_size)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            if self.settings.username:
                session.auth = (self.settings.username, self.settings.password or "")
            self._local.session = session
        return session

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: bytes | memoryview | None = None,
        binary_reply: bool = False,
        ok: tuple[int, ...] = (200, 201),
    ) -> requests.Response:
        query: dict[str, Any] = {"domain": self.domain}
        if self.settings.bucket:
            query["bucket"] = self.settings.bucket
        query.update(params or {})
        headers = {"Accept": OCTET if binary_reply else "application/json"}
        body: bytes | memoryview | None = data
        if isinstance(body, memoryview):
            body = body.cast("B")  # sent as it is (one ``sendall``, no copy); its length in bytes
        if json is not None:
            body = orjson.dumps(json, option=orjson.OPT_SERIALIZE_NUMPY)
            headers["Content-Type"] = "application/json"
        elif data is not None:
            headers["Content-Type"] = OCTET
        url = self.settings.endpoint + path
        delay = 0.5
        for attempt in range(self.retries + 1):
            try:
                response = self._session().request(
                    method, url, params=query, data=body, headers=headers, timeout=self.timeout
                )
            except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                    requests.exceptions.MissingSchema) as exc:
                raise RestError(method, path, None, connection_problem(exc)) from None
            except requests.RequestException as exc:
                if attempt == self.retries:
                    raise RestError(method, path, None, connection_problem(exc)) from None
            else:
                if response.status_code in ok:
                    return response
                if response.status_code not in RETRY_STATUS or attempt == self.retries:
                    raise RestError(method, path, response.status_code, _message(response))
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
        raise AssertionError("unreachable")

    # -- JSON and binary helpers ---------------------------------------------------------------

    def get_json(self, path: str, **params: Any) -> Any:
        return _json(self.request("GET", path, params=params))

    def put_json(self, path: str, body: Any, **params: Any) -> Any:
        return _json(self.request("PUT", path, params=params, json=body))

    def post_json(self, path: str, body: Any, **params: Any) -> Any:
        return _json(self.request("POST", path, params=params, json=body))

    def delete(self, path: str, **params: Any) -> None:
        self.request("DELETE", path, params=params, ok=(200, 204, 410))

    def get_bytes(self, path: str, **params: Any) -> bytes:
        response = self.request("GET", path, params=params, binary_reply=True)
        if response.headers.get("Content-Type", "").split(";")[0].strip() != OCTET:
            # a server may answer JSON even when asked for binary; the caller decides
            raise RestError("GET", path, response.status_code, "expected a binary reply, got JSON")
        return response.content

    def put_bytes(self, path: str, data: bytes | memoryview, **params: Any) -> None:
        """PUT a binary body; a (C-contiguous) view is sent from its memory, not copied."""
        self.request("PUT", path, params=params, data=data)

    # -- the domain ----------------------------------------------------------------------------

    def domain_exists(self) -> bool:
        try:
            self.request("GET", "/")
        except RestError as exc:
            if exc.status in (404, 410):
                return False
            raise
        return True

    def about(self) -> dict[str, Any]:
        result: dict[str, Any] = _json(self.request("GET", "/about"))
        return result

    def probe(self, connect_timeout: float = 2.0) -> None:
        """One ``GET /about`` with the credentials, not retried, waiting at most
        ``connect_timeout`` seconds for a connection: a wrong endpoint or password shows at once
        instead of after the retries meant for a server that blips during a long transfer."""
        url = self.settings.endpoint + "/about"
        try:
            response = self._session().get(url, timeout=(connect_timeout, self.timeout))
        except requests.RequestException as exc:
            raise RestError("GET", "/about", None, connection_problem(exc)) from None
        if response.status_code != 200:
            raise RestError("GET", "/about", response.status_code, _message(response))


def connection_problem(exc: requests.RequestException) -> str:
    """What went wrong before any answer came, in a few words (urllib3's text is a paragraph)."""
    if isinstance(exc, requests.exceptions.InvalidURL | requests.exceptions.InvalidSchema
                  | requests.exceptions.MissingSchema):
        return NOT_A_URL
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "no connection within the time allowed"
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return "the server did not answer in time"
    text = str(exc)
    for needle, words in (
        ("Connection refused", "connection refused"),
        ("NameResolutionError", "host name not found"),
        ("Name or service not known", "host name not found"),
        ("Network is unreachable", "network unreachable"),
        ("No route to host", "no route to host"),
        ("timed out", "no connection within the time allowed"),
        ("Connection reset", "connection reset"),
        ("RemoteDisconnected", "the server closed the connection"),
        ("SSLError", "TLS handshake failed"),
    ):
        if needle in text:
            return words
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _json(response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        import json

        return json.loads(response.content)  # bare NaN/Infinity from a Python server
