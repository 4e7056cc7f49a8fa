"""Who is asking: HTTP Basic credentials checked against a passwd file.

Lines are ``user:password`` or ``user:pbkdf2_sha256$<iterations>$<salt>$<hash>`` (the hash form is
what ``h5lake passwd`` prints, so nobody has to keep plain passwords). Verifying a salted hash is
deliberately slow, so successful checks are remembered by a fast digest of the password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from h5lake.errors import Unauthorized

_SCHEME = "pbkdf2_sha256"
_ITERATIONS = 200_000


def hash_password(password: str, *, iterations: int = _ITERATIONS) -> str:
    salt = secrets.token_hex(8)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations)
    return f"{_SCHEME}${iterations}${salt}${base64.b64encode(digest).decode()}"


def _verify(stored: str, password: str) -> bool:
    if stored.startswith(_SCHEME + "$"):
        try:
            _, iterations, salt, expected = stored.split("$", 3)
            digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), int(iterations))
        except ValueError:
            return False
        return hmac.compare_digest(base64.b64encode(digest).decode(), expected)
    return hmac.compare_digest(stored.encode(), password.encode())


def load_passwd(path: Path) -> dict[str, str]:
    users: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, secret = line.partition(":")
        if not sep or not user:
            raise ValueError(f"{path}:{n}: expected user:password")
        users[user] = secret
    return users


@dataclass
class Authenticator:
    """Maps an ``Authorization`` header to a user name (``None`` for anonymous).

    With no passwd file every Basic user name is trusted as given (development mode).
    """

    users: dict[str, str] | None
    _verified: set[tuple[str, bytes]] = field(default_factory=set)

    def user_for(self, header: str | None) -> str | None:
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            raise Unauthorized(f"unsupported authorization scheme {scheme!r}")
        try:
            user, sep, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthorized("malformed Basic credentials") from None
        if not sep or not user:
            raise Unauthorized("malformed Basic credentials")
        if self.users is None:
            return user
        memo = (user, hashlib.sha256(password.encode()).digest())
        if memo in self._verified:
            return user
        stored = self.users.get(user)
        if stored is None or not _verify(stored, password):
            raise Unauthorized("invalid user name or password")
        if len(self._verified) > 10_000:
            self._verified.clear()
        self._verified.add(memo)
        return user
