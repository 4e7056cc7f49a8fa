"""Name globs (``pattern=`` of link, attribute and domain listings).

The standard library turns a glob into a regular expression in time that grows with the square
of the number of ``[`` in it (each one scans ahead for its ``]``), holding the interpreter: a
pattern of 5,000 ``[`` took 8.5 s, one of 60,000 (within a URL) would take minutes. Names are
matched against at most ``MAX_PATTERN`` characters of glob, which costs a few milliseconds.
"""

from __future__ import annotations

import fnmatch

from h5lake.errors import InvalidInput

MAX_PATTERN = 256


def check_pattern(pattern: str) -> str:
    if len(pattern) > MAX_PATTERN:
        raise InvalidInput(f"pattern is at most {MAX_PATTERN} characters, got {len(pattern)}")
    return pattern


def matches(name: str, pattern: str) -> bool:
    """Whether ``name`` matches the glob ``pattern`` (case-sensitive; checked first)."""
    return fnmatch.fnmatchcase(name, check_pattern(pattern))
