"""Regular expressions of ``/openapi.json``: what the server takes in a domain, an id, a version
reference, a flag, as JSON Schema patterns, so that a tool generating requests from the document
(schemathesis) sends only what is accepted, and what it sends outside them is refused.

A pattern may be narrower than the check it stands for (a domain's components are limited to 60
characters here, the store's check counts 255 bytes), never wider. Every one is anchored and
ends in `END`, valid in ECMA-262 (JSON Schema's dialect) and Python alike.
"""

from __future__ import annotations

import re

from h5lake.api.http import FLAG_PATTERN
from h5lake.model.ids import MAX_DOMAIN_BYTES, TOMBSTONES, VERSIONS

#: the end of the text (Python's ``$`` also matches before a final newline, which a tool
#: generating text from the pattern then sends)
END = r"(?![\s\S])"


def whole(regex: str) -> str:
    return f"^(?:{regex}){END}"


def inner(pattern: str) -> str:
    """The regex of an anchored pattern, to use inside another."""
    return pattern.removeprefix("^").removesuffix(END)


FLAG = FLAG_PATTERN
# A domain as `model.ids.normalize_domain` takes it: components of 1 to 255 characters without
# control characters or backslash, none "." or "..", none reserved (".h5lake...", "-...",
# ".domain....", ".history", ".gone", ".x.json", ".x.txt"), and no "@" (D@REF names a version);
# at most MAX_DOMAIN_BYTES characters. The store counts both limits in UTF-8 bytes: text of
# characters beyond ASCII near them is the one case the pattern admits and the server refuses.
_STOP = rf"(?:/|{END})"
PART = (rf"(?!\.{{1,2}}{_STOP})(?!\.h5lake|-|\.domain\.)(?!\.(?:[^/]*\.)?(?:json|txt){_STOP})"
        rf"(?!(?:{re.escape(VERSIONS)}|{re.escape(TOMBSTONES.rstrip('/'))}){_STOP})[^/\x00-\x1f\x7f-\x9f\\@]{{1,255}}")
DOMAIN = whole(f"(?:/{PART})+/*")
DOMAIN_CHARS = MAX_DOMAIN_BYTES
# ids as h5lake makes them (an id of HSDS's other grouping names no object here: 404)
HEX_ID = "-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{6}-[0-9a-f]{6}"
ANY_ID = whole(f"[gdtm]{HEX_ID}")
VERSION = r"v[1-9][0-9]{0,11}"
# a tag name (versions/names.py): not a version id, nor a time
TAG = whole(rf"(?!{VERSION}{END})(?![0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})[A-Za-z0-9][A-Za-z0-9._-]{{0,99}}")
# a version reference: a version id, ~N, a date, or a tag name
REF = whole(rf"{VERSION}|~[0-9]{{1,9}}|20[0-9]{{2}}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|{inner(TAG)}")
# a domain, or a version of one (D or D@REF), as "from" of a fork names it; a version (D@REF)
DOMAIN_OR_VERSION = whole(rf"(?:/{PART})+(?:@(?:{inner(REF)}))?")
DOMAIN_VERSION = whole(rf"(?:/{PART})+@(?:{inner(REF)})")
# domain queries the parser takes (model/query.py), without parentheses, "in" and "not":
# names and literals, compared, joined by & and |
_NAME = r"(?!(?:and|or|not|in|where|AND|OR|NOT)(?![A-Za-z0-9_]))[A-Za-z_][A-Za-z0-9_]{0,30}"
_NUMBER = r"-?(?:[0-9]{1,9}(?:\.[0-9]{0,9})?|\.[0-9]{1,9})(?:[eE][+-]?[0-9]{1,3})?"
_OPERAND = rf"(?:{_NAME}|{_NUMBER}|'[A-Za-z0-9 ]{{0,20}}')"
_COMPARE = rf"{_OPERAND}(?: *(?:==|!=|<=|>=|<|>) *{_OPERAND})?"
DOMAIN_QUERY = whole(rf" *{_COMPARE}(?: *[&|] *{_COMPARE}){{0,3}} *")
# names of a list and the separators the document offers: no name holds a separator
NAME_LIST = whole(r"[^/,;|]{1,255}(?:[/,;|][^/,;|]{1,255}){0,99}")
# a user name (model/acl.py takes any printable text without / : \ up to 256 characters)
USER = whole(r"[A-Za-z0-9_.@+-]{1,64}")
# a Zarr key: the domain and HDF5 path, then zarr.json or a chunk key
ZARR_KEY = whole(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,19}(?:/[A-Za-z0-9_][A-Za-z0-9_.-]{0,19}){0,5}/(?:zarr\.json|c(?:/[0-9]{1,4}){0,4})")
# a shape as the ``shape`` parameter of a packed attribute carries it
_COUNT = r"(?:0|[1-9][0-9]{0,8})"  # JSON: no leading zeros
SHAPE_TEXT = whole(rf"\[(?:{_COUNT}(?:, ?{_COUNT}){{0,31}})?\]|{_COUNT}")
#: standard base64 (RFC 4648), padded, as ``value_base64`` must be
BASE64 = whole(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
