"""Passwords: the passwd file and its salted hashes.

Lines are ``user:pbkdf2_sha256$<iterations>$<salt>$<hash>`` (what ``h5lake passwd`` prints) or,
for development, ``user:password`` in plain text (the server warns about each such line).

Every check costs the same, whether the user exists, has a plain or an older (cheaper) hash, or
not: the response time must not tell an attacker which user names exist. The cost follows
OWASP's current guidance for PBKDF2-HMAC-SHA256 (600,000 iterations, 128-bit salt); hashes made
with fewer iterations by older versions are still read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

SCHEME = "pbkdf2_sha256"
ITERATIONS = 600_000
_SALT_BYTES = 16
_DUMMY_SALT = b"h5lake-no-such-user"


def hash_password(password: str, *, iterations: int = ITERATIONS) -> str:
    salt = secrets.token_hex(_SALT_BYTES)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations)
    return f"{SCHEME}${iterations}${salt}${base64.b64encode(digest).decode()}"


def is_hashed(stored: str) -> bool:
    return stored.startswith(SCHEME + "$")


def _burn(password: str, iterations: int) -> None:
    """Spend what a check of ``iterations`` would, so that every answer takes as long."""
    if iterations > 0:
        hashlib.pbkdf2_hmac("sha256", password.encode(), _DUMMY_SALT, iterations)


def verify_password(stored: str | None, password: str) -> bool:
    """True when ``password`` matches ``stored`` (a hash or a plain line); ``None`` is a user
    that does not exist. Costs at least ``ITERATIONS`` of PBKDF2 in every case. Blocking: call
    it off the event loop."""
    if stored is None:
        _burn(password, ITERATIONS)
        return False
    if not is_hashed(stored):
        _burn(password, ITERATIONS)
        return hmac.compare_digest(stored.encode(), password.encode())
    try:
        _, iterations_text, salt, expected = stored.split("$", 3)
        iterations = int(iterations_text)
        if not 0 < iterations <= 10 * ITERATIONS:
            raise ValueError(iterations)
    except ValueError:
        _burn(password, ITERATIONS)
        return False
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations)
    _burn(password, ITERATIONS - iterations)
    return hmac.compare_digest(base64.b64encode(digest).decode(), expected)


@dataclass(frozen=True)
class PasswdFile:
    users: dict[str, str]

    @property
    def plain_users(self) -> list[str]:
        """Users whose password is stored in plain text (the server warns about each)."""
        return [user for user, stored in self.users.items() if not is_hashed(stored)]


def load_passwd(path: Path) -> PasswdFile:
    users: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, secret = line.partition(":")
        if not sep or not user:
            raise ValueError(f"{path}:{n}: expected user:password")
        users[user] = secret
    return PasswdFile(users)
