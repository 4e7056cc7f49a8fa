"""The grammar of a versioned domain name, ``D@REF`` (docs/versions.md). Pure: no I/O.

``REF`` is one of

* a version id, ``v<N>`` (``v1``, ``v42``);
* ``~N``: N versions before the latest (``~0`` is the latest);
* an ISO 8601 time (``2026-11-24``, ``2026-11-24T04:00:00Z``, ``...+02:00``): the latest version
  created at or before it (a time without a zone is UTC);
* a tag name: a letter or digit, then letters, digits, ``.``, ``_``, ``-`` (at most 100), that is
  neither a version id nor a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from h5lake.errors import InvalidInput

_VERSION_ID = re.compile(r"^v([1-9][0-9]{0,11})$")
_BACK = re.compile(r"^~([0-9]{1,9})$")
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9:.]+(Z|[+-][0-9:]+)?)?$")


@dataclass(frozen=True, slots=True)
class Ref:
    """One parsed REF: exactly one of its fields is set."""

    text: str
    number: int | None = None  # v<N>
    back: int | None = None  # ~N
    time: float | None = None  # epoch seconds
    tag: str | None = None


def split_domain(name: str) -> tuple[str, str | None]:
    """``("/a/f.h5", "v3")`` for ``/a/f.h5@v3``; ``(name, None)`` without ``@``."""
    if "@" not in name:
        return name, None
    path, _, ref = name.rpartition("@")
    if "@" in path or not path:
        raise InvalidInput(f"domain name {name[:120]!r} has more than one '@'")
    return path, ref


def version_id(number: int) -> str:
    return f"v{number}"


def parse_version_id(text: str) -> int:
    """The number of a version id ``v<N>``; 400 when ``text`` is not one."""
    m = _VERSION_ID.match(text) if isinstance(text, str) else None
    if m is None:
        raise InvalidInput(f"{str(text)[:80]!r} is not a version id (v1, v2, ...)")
    return int(m.group(1))


def check_tag_name(name: str) -> str:
    if not isinstance(name, str) or not _TAG.match(name) or _VERSION_ID.match(name) or _TIME.match(name):
        raise InvalidInput(
            f"invalid tag name {str(name)[:80]!r}: letters, digits, '.', '_', '-' (not a version id or a time)"
        )
    return name


def parse_ref(text: str) -> Ref:
    if not text:
        raise InvalidInput("empty version reference after '@'")
    if m := _VERSION_ID.match(text):
        return Ref(text, number=int(m.group(1)))
    if m := _BACK.match(text):
        return Ref(text, back=int(m.group(1)))
    if _TIME.match(text):
        return Ref(text, time=parse_time(text))
    if _TAG.match(text):
        return Ref(text, tag=text)
    raise InvalidInput(f"malformed version reference {text[:80]!r} (a version id, a tag, ~N or an ISO 8601 time)")


def parse_time(text: str) -> float:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"malformed time {text[:80]!r} in a version reference") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
