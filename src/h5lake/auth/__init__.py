"""Who is asking: Basic credentials, API keys and OpenID Connect tokens, to a user name.

``Authenticator.identify`` turns an ``Authorization`` header into an ``Identity``. The slow part
(PBKDF2, JWKS fetches) runs in threads, never on the event loop, at most ``_HASHERS`` at a time,
so a flood of wrong passwords slows only itself; concurrent checks of the same credentials share
one computation. Successful password checks are remembered under an HMAC with a key made at
start-up, so the memory of a running server holds no fast-to-test digest of any password.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import secrets
from collections import OrderedDict
from dataclasses import dataclass

from h5lake.auth.apikeys import ApiKeys, looks_like_key
from h5lake.auth.oidc import OidcConfig, TokenRejected, TokenVerifier, looks_like_jwt
from h5lake.auth.passwords import PasswdFile, hash_password, load_passwd, verify_password
from h5lake.errors import Unauthorized

__all__ = [
    "ApiKeys",
    "Authenticator",
    "Identity",
    "OidcConfig",
    "PasswdFile",
    "TokenVerifier",
    "hash_password",
    "load_passwd",
]

_HASHERS = 2
_REMEMBERED = 10_000


@dataclass(frozen=True)
class Identity:
    user: str | None  # None: anonymous
    admin: bool = False  # granted by the identity provider (a token claim); --admin adds more


ANONYMOUS = Identity(None)


class Authenticator:
    """Maps an ``Authorization`` header to an ``Identity``.

    With no passwd file, Basic credentials are trusted as given (development mode, which the
    settings allow only on loopback or with ``--insecure-no-auth``), unless OpenID Connect is
    configured, in which case Basic is refused.
    """

    def __init__(
        self,
        passwd: PasswdFile | None,
        *,
        apikeys: ApiKeys | None = None,
        tokens: TokenVerifier | None = None,
    ) -> None:
        self._passwd = passwd
        self._apikeys = apikeys
        self._tokens = tokens
        self._secret = secrets.token_bytes(32)
        self._remembered: OrderedDict[bytes, None] = OrderedDict()
        self._pending: dict[bytes, asyncio.Future[bool]] = {}
        self._hashers = asyncio.Semaphore(_HASHERS)

    async def identify(self, header: str | None) -> Identity:
        if not header:
            return ANONYMOUS
        scheme, _, credentials = header.strip().partition(" ")
        scheme = scheme.lower()
        if scheme == "basic":
            return Identity(await self._basic(credentials.strip()))
        if scheme == "bearer":
            return await self._bearer(credentials.strip())
        raise Unauthorized(f"unsupported authorization scheme {scheme[:20]!r}: use Basic or Bearer")

    async def _basic(self, token: str) -> str:
        try:
            user, sep, password = base64.b64decode(token, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise Unauthorized("malformed Basic credentials") from None
        if not sep or not user:
            raise Unauthorized("malformed Basic credentials")
        if self._passwd is None:
            if self._tokens is not None:
                raise Unauthorized("this server takes bearer tokens, not passwords")
            return user
        # keyed BLAKE2b: a MAC like HMAC-SHA256, at a quarter of its cost (OpenSSL 3's HMAC
        # setup dominates for short inputs); every request with credentials computes it
        memo = hashlib.blake2b(f"{user}\0{password}".encode(), key=self._secret, digest_size=32).digest()
        if memo in self._remembered:
            self._remembered.move_to_end(memo)
            return user
        if not await self._check_once(memo, self._passwd.users.get(user), password):
            raise Unauthorized("invalid user name or password")
        self._remembered[memo] = None
        while len(self._remembered) > _REMEMBERED:
            self._remembered.popitem(last=False)
        return user

    async def _check_once(self, memo: bytes, stored: str | None, password: str) -> bool:
        """One PBKDF2 check in a thread, shared by every concurrent request with these credentials."""
        pending = self._pending.get(memo)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[memo] = future
        try:
            async with self._hashers:
                ok = await asyncio.to_thread(verify_password, stored, password)
            future.set_result(ok)
            return ok
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: waiters re-raise it, nobody else need see it
            raise
        finally:
            del self._pending[memo]

    async def _bearer(self, token: str) -> Identity:
        if not token or len(token) > 16_384:
            raise Unauthorized("malformed bearer token")
        if self._apikeys is not None and looks_like_key(token):
            user = await self._apikeys.user_for(token)
            if user is None:
                raise Unauthorized("unknown or revoked API key")
            return Identity(user)
        if self._tokens is not None and looks_like_jwt(token):
            try:
                found = await asyncio.to_thread(self._tokens.verify, token)
            except TokenRejected as exc:
                raise Unauthorized(str(exc)) from None
            return Identity(found.user, found.admin)
        raise Unauthorized("bearer token not accepted: neither an API key of this server nor a token of its issuer")
