"""Parsing a large JSON document a slice at a time, so that others may run in between.

A group's links and an object's attributes live in its document, and a group may hold hundreds
of thousands of links (HDF5 does not bound them): ``orjson.loads`` of such a document is one
call that holds the interpreter (~0.26 s for 200,000 links, 17 MB, on the CI machine), during
which no other request is served. `parse_in_slices` reads the same JSON one entry at a time
with the standard library's C scanner and pauses (a generator ``yield``) after every ``step``
characters; whoever drives it lets others run at each pause (`service.documents.Documents.get`).
It takes about twice orjson's time in all, in pieces of a few milliseconds.

It reads what orjson wrote (documents in the store): compact JSON whose top level is an object.
Anything else (whitespace, another top level, malformed text) raises `NotSliceable`, and the
caller parses the text whole as before, so the result and its errors never differ from
``orjson.loads``'s for text orjson wrote: the same strings, integers, finite floats, ``None``,
lists and dictionaries in the same order (the standard library would also take ``NaN`` tokens
and lone surrogate escapes, which orjson never writes).
"""

from __future__ import annotations

import codecs
from collections.abc import Generator
from json import JSONDecoder
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import make_scanner
from typing import Any

_SCAN = make_scanner(JSONDecoder())  # type: ignore[arg-type]
STEP = 64 * 1024
"""Characters parsed between two pauses: ~1-4 ms."""


class NotSliceable(Exception):
    """The text is not compact JSON with an object at its top level (parse it whole)."""


def parse_in_slices(data: bytes, step: int = STEP) -> Generator[None, None, Any]:
    """The JSON object ``data`` holds, parsed with a pause after every ``step`` characters
    (the generator's value; it yields None at each pause). Each entry of the top-level object
    that is itself an object is read entry by entry; other values whole (a list, or an entry of
    a second-level object, is parsed in one go)."""
    text = yield from _decoded(data, step)
    if not text.startswith("{"):
        raise NotSliceable
    try:
        out, end = yield from _entries(text, 0, step, nested=True)
    except (ValueError, IndexError):
        raise NotSliceable from None
    if end != len(text):
        raise NotSliceable
    return out


def _decoded(data: bytes, step: int) -> Generator[None, None, str]:
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces = []
    try:
        for start in range(0, len(data), step):
            pieces.append(decoder.decode(data[start : start + step]))
            yield
        pieces.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise NotSliceable from None
    return "".join(pieces)


def _entries(text: str, i: int, step: int, nested: bool) -> Generator[None, None, tuple[dict[str, Any], int]]:
    """The object starting at ``text[i]`` (a ``{``) and the index after it; with ``nested``,
    values that are objects are read entry by entry too (one level down)."""
    out: dict[str, Any] = {}
    i += 1
    if text[i] == "}":
        return out, i + 1
    paused = i
    while True:
        if text[i] != '"':
            raise NotSliceable
        key, i = scanstring(text, i + 1)
        if text[i] != ":":
            raise NotSliceable
        i += 1
        if nested and text[i] == "{":
            value, i = yield from _entries(text, i, step, nested=False)
            paused = i
        else:
            value, i = _value(text, i)
        out[key] = value
        if i - paused >= step:
            yield
            paused = i
        c = text[i]
        i += 1
        if c == "}":
            return out, i
        if c != ",":
            raise NotSliceable


def _value(text: str, i: int) -> tuple[Any, int]:
    try:
        return _SCAN(text, i)
    except StopIteration:  # no JSON value at ``i``
        raise NotSliceable from None
