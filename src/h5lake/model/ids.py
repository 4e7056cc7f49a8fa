"""Object ids and the storage key schema of the seed (001, "Group key", "Chunk key", "Domains").

Ids look like ``g-b76eacdd-d16f54ec-3fe6-245559-e7dc64``: a collection letter and 32 lowercase hex
digits grouped 8-8-4-6-6. h5pyd builds child ids itself from the root id's first 16 hex digits, so
a root id's last 16 digits are its first 16 each shifted by 8 (mod 16), and every other object of
the domain shares the root's first 16 digits.
"""

from __future__ import annotations

import enum
import hashlib
import re
import secrets
from typing import Final

from h5lake.errors import InvalidInput, NotFound
from h5lake.storage.base import MAX_KEY_BYTES


class Collection(enum.Enum):
    GROUPS = "g"
    DATASETS = "d"
    DATATYPES = "t"
    MAPS = "m"

    @property
    def path(self) -> str:
        return {"g": "groups", "d": "datasets", "t": "datatypes", "m": "maps"}[self.value]

    @classmethod
    def of(cls, obj_id: str) -> Collection | None:
        """The collection an id's prefix names (``g-...`` groups), without validating the rest:
        for ids read from stored documents; `parse_id` checks an id that comes from a request."""
        return _COLLECTIONS.get(obj_id[:1]) if obj_id[1:2] == "-" else None

    @classmethod
    def from_path(cls, name: str) -> Collection:
        found = _BY_PATH.get(name)  # a dict: every route with {collection} asks, once a request
        if found is None:
            raise InvalidInput(f"unknown collection {name!r}")
        return found


_BY_PATH: dict[str, Collection] = {c.path: c for c in Collection}

# \Z, not $: $ matches before a trailing newline, and "g-...\n" then reached the storage key check (a 500)
_ID_RE = re.compile(r"^([gdtm])-([0-9a-f]{8})-([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{6})-([0-9a-f]{6})\Z")
_GROUPING = (8, 8, 4, 6, 6)
# An id HSDS could have made: a collection letter, a dash and a lowercase uuid of 36 characters in
# any grouping (e.g. uuid1's 8-4-4-4-12). Not being of h5lake's form, it names no object here:
# 404, as HSDS answers for an unknown id.
_FOREIGN_ID_RE = re.compile(r"^[gdtm]-[0-9a-f-]{36}\Z")


def _format(prefix: str, hex32: str) -> str:
    parts, pos = [], 0
    for n in _GROUPING:
        parts.append(hex32[pos : pos + n])
        pos += n
    return prefix + "-" + "-".join(parts)


def hex_digits(obj_id: str) -> str:
    """The 32 hex digits of an id, without dashes or prefix."""
    return obj_id[2:].replace("-", "")


def new_root_id() -> str:
    first = secrets.token_hex(8)
    second = "".join("%x" % ((int(c, 16) + 8) % 16) for c in first)
    return _format("g", first + second)


def new_object_id(collection: Collection, root_id: str) -> str:
    return _format(collection.value, hex_digits(root_id)[:16] + secrets.token_hex(8))


def object_id_with(collection: Collection, root_id: str, number: int) -> str:
    """The id of an object of the domain whose root is ``root_id``, told apart by ``number``
    (below 2**64) instead of random digits: ``h5lake load`` uses an object's file address."""
    return _format(collection.value, hex_digits(root_id)[:16] + f"{number:016x}")


class IdsWith:
    """:func:`object_id_with` for one root, its fixed part made once: ``ids(collection, number)``."""

    def __init__(self, root_id: str) -> None:
        first = hex_digits(root_id)[:16]
        self.root_id = root_id
        self.prefixes = {c: f"{c.value}-{first[:8]}-{first[8:16]}-" for c in Collection}

    def __call__(self, collection: Collection, number: int) -> str:
        tail = f"{number:016x}"
        return f"{self.prefixes[collection]}{tail[:4]}-{tail[4:10]}-{tail[10:]}"


def derived_object_id(collection: Collection, root_id: str, seed: str) -> str:
    """An id of the domain of ``root_id`` that is the same every time for the same ``seed`` (a
    merge gives an object a fork made the same id in the target at every merge)."""
    return _format(collection.value, hex_digits(root_id)[:16] + hashlib.sha256(seed.encode()).hexdigest()[:16])


def strip_collection_prefix(ref: str) -> str:
    """Accept both ``d-...`` and ``datasets/d-...`` forms."""
    if not isinstance(ref, str):  # a request's list of ids may hold anything
        raise InvalidInput(f"an object id must be a string, not {type(ref).__name__}")
    for c in Collection:
        if ref.startswith(c.path + "/"):
            return ref[len(c.path) + 1 :]
    return ref


_COLLECTIONS = {c.value: c for c in Collection}


_VALID_IDS: dict[str, Collection] = {}  # ids found valid, and their collection (a request parses ids twice or more)
_VALID_IDS_MAX = 4096


def parse_id(obj_id: str, expected: Collection | None = None) -> Collection:
    """Validate an object id and return its collection."""
    collection = _VALID_IDS.get(obj_id) if type(obj_id) is str else None
    if collection is None:
        if not isinstance(obj_id, str):
            raise InvalidInput("object id must be a string")
        m = _ID_RE.match(obj_id)
        if m is None:
            if _FOREIGN_ID_RE.match(obj_id):
                raise NotFound(f"no object has the id {obj_id!r}")
            raise InvalidInput(f"invalid object id {obj_id!r}")
        collection = _COLLECTIONS[m.group(1)]
        if len(_VALID_IDS) >= _VALID_IDS_MAX:
            _VALID_IDS.clear()
        _VALID_IDS[obj_id] = collection
    if expected is not None and collection is not expected:
        raise InvalidInput(f"id {obj_id!r} is not a {expected.path[:-1]} id")
    return collection


def is_valid_id(obj_id: object) -> bool:
    return isinstance(obj_id, str) and _ID_RE.match(obj_id) is not None


def same_domain(obj_id: str, root_id: str) -> bool:
    if obj_id in _VALID_IDS and root_id in _VALID_IDS:  # both of the id format: the digits sit at 2-9 and 11-18
        return obj_id[2:19] == root_id[2:19]
    return hex_digits(obj_id)[:16] == hex_digits(root_id)[:16]


def _hashed(name: str) -> str:
    return hashlib.md5(name.encode()).hexdigest()[:5] + "-" + name


def object_key(obj_id: str) -> str:
    """``<md5-prefix>-g-<uuid>`` (likewise ``-d-``, ``-t-`` and ``-m-``)."""
    key = _OBJECT_KEYS.get(obj_id)
    if key is None:
        if len(_OBJECT_KEYS) >= _OBJECT_KEYS_MAX:
            _OBJECT_KEYS.clear()
        key = _OBJECT_KEYS[obj_id] = _hashed(obj_id)
    return key


def attribute_values_prefix(obj_id: str) -> str:
    """``<object key>.attrs/``: where an object's large attribute values are kept, one object
    each (docs/storage.md, "Large attributes"); listed only to collect them."""
    return object_key(obj_id) + ".attrs/"


def is_attribute_values_prefix(entry: str) -> bool:
    """Whether ``entry`` (a prefix a listing of the top of the bucket finds) is an object's
    `attribute_values_prefix`, not a folder or domain."""
    if not entry.endswith(".attrs/"):
        return False
    key = entry[: -len(".attrs/")]
    obj_id = key[6:]
    return (_ID_RE.match(obj_id) is not None or _FOREIGN_ID_RE.match(obj_id) is not None) and _hashed(obj_id) == key


def attribute_value_key(obj_id: str, token: str) -> str:
    """``<object key>.attrs/<token>``: one large attribute value, ``token`` a fresh uuid hex."""
    return attribute_values_prefix(obj_id) + token


#: Keys of objects named lately: every request reads one or more (an MD5 costs ~4 us). Cleared when full.
_OBJECT_KEYS: dict[str, str] = {}
_OBJECT_KEYS_MAX = 4096


def index_name(index: tuple[int, ...]) -> str:
    """A chunk index as it names the chunk in keys, catalogs, manifests and compact documents:
    ``"0_3"``. A scalar dataset's one chunk, index ``()``, is stored as chunk ``"0"``: the same
    name as index ``(0,)``, whose parse (`parse_index_name`) it is."""
    return "_".join(str(i) for i in index) or "0"


def parse_index_name(name: str) -> tuple[int, ...]:
    """``"0_3"`` -> ``(0, 3)``; ValueError unless every part is an integer."""
    return tuple(int(i) for i in name.split("_"))


def chunk_id(obj_id: str, index: tuple[int, ...]) -> str:
    """A dataset's chunk is ``c-<uuid>_<i>_<j>`` (the seed's form); any other object's bulk
    object (a map's pair bucket) keeps its prefix: ``c-m-<uuid>_<n>``."""
    # A scalar dataset has one chunk with the empty index; it is stored as chunk 0.
    body = obj_id.removeprefix("d-")
    return "c-" + body + "_" + index_name(index)


def chunk_key(obj_id: str, index: tuple[int, ...]) -> str:
    """``<md5-prefix>-c-<uuid>_<i>_<j>...`` (``-c-m-<uuid>_<n>`` for a map's buckets)"""
    return _hashed(chunk_id(obj_id, index))


def parse_chunk_key(key: str) -> tuple[str, tuple[int, ...]]:
    """Inverse of ``chunk_key``: (dataset or map id, chunk index)."""
    body = key[6:]
    if not body.startswith("c-"):
        raise ValueError(f"not a chunk key: {key!r}")
    name, *coords = body[2:].split("_")
    obj_id = name if name[1:2] == "-" else "d-" + name
    return obj_id, tuple(int(c) for c in coords)


# --- domains ---------------------------------------------------------------------------------

DOMAIN_FILE = ".domain.json"
# control characters (C0, DEL, C1), surrogates and the backslash: one regex search per
# component instead of a Python loop over its characters (every request names a domain)
_BAD_DOMAIN_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\\\\]")


#: The longest key h5lake keeps under a domain's prefix, past the prefix: a tag's record,
#: ``.history/tags/<100 characters>.json`` (119 bytes); object documents' tombstones and chunk
#: catalogs (``.<id>.chunks.txt``) are shorter.
DOMAIN_KEY_ROOM = 128
#: The longest domain path, in UTF-8 bytes: every key under it stays within the storage key
#: limit (seed 001: 1,024 bytes, ``storage.base.MAX_KEY_BYTES``).
MAX_DOMAIN_BYTES = MAX_KEY_BYTES - DOMAIN_KEY_ROOM


def normalize_domain(path: str) -> str:
    """Validate a domain path and return it as ``/a/b/c`` (no trailing slash).

    Refuses ``..``, ``.``, empty components, control characters and backslashes, so a domain can
    never name a key outside its folder.
    """
    if type(path) is str:
        known = _NORMALIZED.get(path)
        if known is not None:
            return known
    normalized = _normalize_domain(path)
    if len(_NORMALIZED) >= _NORMALIZED_MAX:
        _NORMALIZED.clear()
    _NORMALIZED[path] = normalized
    return normalized


#: Domain paths normalized lately (every request names one; a check costs ~10 us). Cleared when full.
_NORMALIZED: dict[str, str] = {}
_NORMALIZED_MAX = 4096


def _normalize_domain(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise InvalidInput("domain is required")
    if len(path) > MAX_DOMAIN_BYTES or len(path.encode("utf-8", "surrogatepass")) > MAX_DOMAIN_BYTES:
        raise InvalidInput(
            f"domain path too long: {len(path.encode('utf-8', 'surrogatepass'))} bytes in UTF-8, over the limit of "
            f"{MAX_DOMAIN_BYTES} (storage keys are at most {MAX_KEY_BYTES} bytes, and h5lake keeps keys of up "
            f"to {DOMAIN_KEY_ROOM} bytes more under a domain)"
        )
    if not path.startswith("/"):
        path = "/" + path
    path = path.rstrip("/") or "/"
    if path == "/":
        return path
    for part in path[1:].split("/"):
        if part in ("", ".", "..") or part.startswith(".") and part.endswith((".json", ".txt")):
            raise InvalidInput(f"invalid domain path {path!r}")
        if part.startswith((".h5lake", "-", ".domain.")) or part in _RESERVED_PARTS or len(part.encode()) > 255:
            raise InvalidInput(f"domain path component {part[:40]!r} is reserved or too long")
        if _BAD_DOMAIN_CHAR.search(part):
            raise InvalidInput(f"invalid character in domain path {path!r}")
    return path


def domain_prefix(domain: str) -> str:
    """Storage prefix of everything under a domain: ``a/b/c/``."""
    return "" if domain == "/" else domain[1:] + "/"


def domain_key(domain: str) -> str:
    """``<path>/.domain.json``, stored without a leading slash."""
    return domain_prefix(domain) + DOMAIN_FILE


def parent_domain(domain: str) -> str | None:
    if domain == "/":
        return None
    parent = domain.rsplit("/", 1)[0]
    return parent or "/"


TOMBSTONES = ".gone/"


def tombstone_key(domain: str, obj_id: str) -> str:
    """An empty marker left when an object of ``domain`` is deleted, so a later request for it
    answers 410 Gone (as HSDS does) rather than 404; removed with the domain."""
    return domain_prefix(domain) + TOMBSTONES + obj_id


def domain_tombstone_key(domain: str) -> str:
    """An empty marker left when a domain or folder is deleted (410 Gone afterwards, as HSDS
    answers); removed when one is made again at the path."""
    return domain_prefix(domain) + ".domain.gone"


CATALOG_FILES: dict[Collection, str] = {
    Collection.GROUPS: ".groups.txt",
    Collection.DATASETS: ".datasets.txt",
    Collection.DATATYPES: ".datatypes.txt",
    Collection.MAPS: ".maps.txt",
}
"""The domain catalogs, one per collection, named under the domain's prefix (:func:`catalog_key`)."""

PENDING_PREFIX = ".h5lake/pending/"
"""Write intents, one object each (:func:`intent_key`), outside every domain."""

_INTENT_KEY = re.compile("^" + re.escape(PENDING_PREFIX) + r"[0-9a-f]{32}\.json$")


def intent_key(token: str) -> str:
    """The key of a write intent named by 32 hex digits."""
    return f"{PENDING_PREFIX}{token}.json"


def is_intent_key(key: str) -> bool:
    return _INTENT_KEY.match(key) is not None


ALIVE_PREFIX = ".h5lake/alive/"
"""A process's heartbeat while it holds write intents (:func:`alive_key`), beside them."""


def alive_key(token: str) -> str:
    """The heartbeat of the process whose intents name ``token`` (32 hex digits) as their owner."""
    return f"{ALIVE_PREFIX}{token}.json"


GC_RECORD = ".h5lake/gc.json"
"""What ``h5lake gc`` runs have reclaimed (`versions/gc.GcRecord`), read by ``/metrics``."""


def catalog_key(domain: str, name: str) -> str:
    """Domain catalogs: ``.groups.txt``, ``.datasets.txt``, ``.datatypes.txt``, ``.maps.txt`` (:data:`CATALOG_FILES`)."""
    return domain_prefix(domain) + name


CHANGED_FILE = ".changed.txt"
"""A domain's last change (seconds since the epoch, as text), moved forward by the catalog
flusher after writes (:mod:`h5lake.catalog.changed`); listings read it."""


def changed_key(domain: str) -> str:
    return domain_prefix(domain) + CHANGED_FILE


META_PREFIX = ".h5lake/meta/"
"""Domains' metadata change tokens (:func:`meta_token_key`, `h5lake.catalog.metatoken`)."""
ZARR_PREFIX = ".h5lake/zarr/"
"""Consolidated Zarr metadata kept whole per domain (:func:`zarr_consolidated_key`)."""


def meta_token_key(obj_id: str) -> str:
    """The metadata change token of the domain ``obj_id`` belongs to: named by the 16 hex digits
    every object id of a domain shares with its root group's (`new_object_id`), so a change
    found by object id alone names it."""
    return f"{META_PREFIX}{hex_digits(obj_id)[:16]}.txt"


def zarr_consolidated_key(root_id: str, variant: str) -> str:
    """The consolidated root ``zarr.json`` of the domain of root ``root_id``, kept by
    `h5lake.service.zarr.consolidated` (``variant``: its codec profile)."""
    return f"{ZARR_PREFIX}{hex_digits(root_id)}.{variant}.bin"


def derived_keys(root_id: str) -> list[str]:
    """What h5lake keeps outside a domain's prefix about the domain of root ``root_id``, derived
    from its documents: removed with the domain (`service.domains.reclaim`)."""
    return [meta_token_key(root_id), *(zarr_consolidated_key(root_id, v) for v in ("all", "core"))]


def object_id_of_key(key: str) -> str | None:
    """The object id whose document ``key`` is (`object_key`), else None."""
    if len(key) < 8 or key[5:6] != "-" or key[7:8] != "-":
        return None
    obj_id = key[6:]
    return obj_id if is_valid_id(obj_id) and object_key(obj_id) == key else None


def chunk_catalog_key(domain: str, dataset_id: str) -> str:
    return domain_prefix(domain) + "." + dataset_id + ".chunks.txt"


# --- versions (docs/versions.md) ---------------------------------------------------------------

VERSIONS = ".history"
"""The folder of a domain's history under its prefix; refused as a domain path component.
(Not ``.versions``: SeaweedFS keeps its own S3 object versions in ``<key>.versions`` folders
and leaves them out of listings.)"""

#: Names h5lake keeps beside a domain's document under its prefix (``ids.tombstone_key``,
#: ``domain_tombstone_key``, ``versions_prefix``): a sub-domain so named would lie among them
#: (a folder ``.domain.gone`` made its parent undeletable; ``.gone/<id>`` met an object's tombstone)
_RESERVED_PARTS = frozenset({VERSIONS, TOMBSTONES.rstrip("/")})

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def blob_key(sha: str) -> str:
    """A committed chunk's bytes, bucket-wide, named by the SHA-256 of those bytes (hash first)."""
    return sha + ".blob"


def tree_key(sha: str) -> str:
    """A manifest (JSON), bucket-wide, named by the SHA-256 of its bytes."""
    return sha + ".tree"


def is_sha(text: object) -> bool:
    return isinstance(text, str) and _SHA256.match(text) is not None


def versions_prefix(domain: str) -> str:
    return domain_prefix(domain) + VERSIONS + "/"


def version_key(domain: str, number: int) -> str:
    """The record of version ``v<number>``: written create-only, the commit point."""
    return f"{versions_prefix(domain)}{number:012d}.json"


def latest_hint_key(domain: str) -> str:
    return versions_prefix(domain) + "latest"


def tag_key(domain: str, name: str) -> str:
    return f"{versions_prefix(domain)}tags/{name}.json"


FORKED: Final = "forkedChunks"
"""The dataset document field of a fork: the manifest hash of the source version's dataset,
whose chunks it reads until it writes its own (never shown to clients)."""


def fork_base_key(domain: str, root_id: str) -> str:
    """What the fork of root ``root_id`` was made from (keeps the source version's chunks alive
    for gc). Named by the root: forks racing for one path each put their own, so the one that
    loses cannot replace the winner's (stores written by older h5lake releases hold
    ``base.json``, which gc reads alike; docs/versions.md, "Storage keys")."""
    return versions_prefix(domain) + f"base-{root_id}.json"
