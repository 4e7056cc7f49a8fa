"""OpenID Connect: ``Authorization: Bearer <JWT>`` checked against an issuer's published keys.

The token's signature (asymmetric algorithms only), issuer, audience and expiry are checked with
PyJWT; the signing keys come from the issuer's JWKS (found through its discovery document unless
``jwks_url`` is given) and are cached. The user name is one claim of the token, and a user is an
admin when another claim (a string or a list, such as ``groups`` or ``roles``) holds the admin
value. Blocking (key fetches): call ``verify`` off the event loop.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jwt

_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


class TokenRejected(Exception):
    """The bearer token is not a valid token of the configured issuer; the message says why."""


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    audience: str
    jwks_url: str | None = None
    user_claim: str = "preferred_username"
    admin_claim: str | None = None
    admin_value: str | None = None
    leeway: float = 30.0


@dataclass(frozen=True)
class TokenIdentity:
    user: str
    admin: bool


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


class TokenVerifier:
    def __init__(self, config: OidcConfig) -> None:
        # Imported here: only a server that accepts tokens loads PyJWT and the cryptography
        # library under it (~5 MiB of private memory in every worker process).
        import jwt

        self._jwt = jwt
        self.config = config
        self._lock = threading.Lock()
        self._client: jwt.PyJWKClient | None = None

    def _jwks(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._client is None:
                url = self.config.jwks_url or self._discover()
                self._client = self._jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=5)
            return self._client

    def _discover(self) -> str:
        url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                return str(json.load(reply)["jwks_uri"])
        except (OSError, ValueError, KeyError) as exc:
            raise TokenRejected(f"cannot read the issuer's discovery document {url}: {exc}") from None

    def verify(self, token: str) -> TokenIdentity:
        try:
            key = self._jwks().get_signing_key_from_jwt(token)
            claims = self._jwt.decode(
                token,
                key.key,
                algorithms=_ALGORITHMS,
                audience=self.config.audience,
                issuer=self.config.issuer,
                leeway=self.config.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except self._jwt.PyJWKClientError as exc:
            raise TokenRejected(f"no signing key for this token: {exc}") from None
        except self._jwt.InvalidTokenError as exc:
            raise TokenRejected(f"invalid token: {exc}") from None
        user = claims.get(self.config.user_claim) or claims.get("sub")
        if not isinstance(user, str) or not user or ":" in user:
            raise TokenRejected(f"the token has no usable {self.config.user_claim!r} claim")
        return TokenIdentity(user, self._is_admin(claims))

    def _is_admin(self, claims: dict[str, object]) -> bool:
        name, value = self.config.admin_claim, self.config.admin_value
        if not name or value is None:
            return False
        held = claims.get(name)
        if isinstance(held, str):
            return held == value
        return isinstance(held, list) and value in held
