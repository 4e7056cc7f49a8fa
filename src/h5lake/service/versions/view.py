"""Versions of a domain: the history records, names (ids, tags, ``~N``, times) and the read-only
view a version is read through (docs/versions.md).

A version ``v<N>`` is the record ``<domain>/.history/<N:012d>.json`` (written create-only: the
commit point) naming its root manifest. ``.history/latest`` is a hint of the highest N; the
truth is found by probing the next numbers. A deleted version's record is replaced by a stub
``{"id", "number", "parent", "deleted": true}`` so its number is never reused.
"""

from __future__ import annotations

from typing import cast

from h5lake.chunks.locate import ChunkLocator
from h5lake.errors import InvalidInput, NotFound
from h5lake.model.ids import latest_hint_key, tag_key, version_key
from h5lake.model.stored import Manifest, RootManifest, VersionRecord, VersionTag
from h5lake.service.context import Service
from h5lake.service.documents import Doc, Versioned
from h5lake.service.views import Domain
from h5lake.versions.content import VersionChunks
from h5lake.versions.names import Ref, parse_ref, version_id

PUBLIC_FIELDS = ("id", "parent", "created", "author", "message", "metadata")


async def get_record(svc: Service, path: str, number: int) -> VersionRecord | None:
    found = await svc.docs.get(version_key(path, number))
    return None if found is None else cast(VersionRecord, found.doc)


async def highest_number(svc: Service, path: str) -> int:
    """The highest version number ever committed (deleted ones too); 0 for none."""
    hint = await svc.store.get(latest_hint_key(path))
    n = int(hint.data) if hint is not None and hint.data.isdigit() else 0
    while n > 0 and await svc.store.head(version_key(path, n)) is None:
        n -= 1  # a hint ahead of the records (a gap cannot happen: numbers are created in order)
    while await svc.store.head(version_key(path, n + 1)) is not None:
        n += 1
    return n


async def latest(svc: Service, path: str, below: int | None = None) -> VersionRecord | None:
    """The newest live version (numbered below ``below`` when given), or None."""
    n = await highest_number(svc, path) if below is None else below - 1
    while n > 0:
        record = await get_record(svc, path, n)
        if record is not None and not record.get("deleted"):
            return record
        n -= 1
    return None


async def set_hint(svc: Service, path: str, number: int) -> None:
    await svc.store.put(latest_hint_key(path), str(number).encode())


def public(record: VersionRecord) -> Doc:
    """A record as listed: ``parents`` names both of a merge (the second as ``FORK@vN``)."""
    out: Doc = {k: record.get(k) for k in PUBLIC_FIELDS}
    out["parents"] = record.get("parents") or ([] if record.get("parent") is None else [record["parent"]])
    for key in ("merged", "cherryPicked"):
        if key in record:
            out[key] = record[key]
    return out


async def require(svc: Service, path: str, number: int) -> VersionRecord:
    record = await get_record(svc, path, number)
    if record is None or record.get("deleted"):
        raise NotFound(f"version {version_id(number)} of {path} not found")
    return record


async def get_tag(svc: Service, path: str, name: str) -> VersionTag | None:
    found = await svc.docs.get(tag_key(path, name))
    return None if found is None else cast(VersionTag, found.doc)


async def resolve(svc: Service, path: str, ref: Ref) -> VersionRecord:
    """The live version record ``ref`` names; 404 naming it when there is none."""
    if ref.number is not None:
        return await require(svc, path, ref.number)
    if ref.tag is not None:
        tag = await get_tag(svc, path, ref.tag)
        if tag is None:
            raise NotFound(f"no version or tag {ref.tag!r} in {path}")
        return await require(svc, path, int(tag["number"]))
    if ref.time is not None:
        record = await _at_time(svc, path, ref.time)
    else:
        record = await latest(svc, path)
        for _ in range(ref.back or 0):
            if record is None:
                break
            record = await latest(svc, path, below=int(record["number"]))
    if record is None:
        raise NotFound(f"no version {ref.text} of {path}")
    return record


async def _at_time(svc: Service, path: str, when: float) -> VersionRecord | None:
    """The newest live version created at or before ``when``: records (stubs of forgotten ones
    too) are numbered in time order, so a binary search finds it in O(log n) reads."""
    lo, hi = 0, await highest_number(svc, path)  # invariant: version lo is at or before, hi+1 after
    while lo < hi:
        mid = (lo + hi + 1) // 2
        record = await get_record(svc, path, mid)
        if record is not None and float(record["created"]) <= when:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    found = await get_record(svc, path, lo)
    if found is not None and not found.get("deleted"):
        return found
    return await latest(svc, path, below=lo)


async def list_versions(svc: Service, path: str, limit: int | None, marker: str | None) -> list[Doc]:
    """Live versions, newest first, after ``marker`` (a version id) when given."""
    from_number = await highest_number(svc, path) + 1
    if marker:
        ref = parse_ref(marker)
        if ref.number is None:
            raise InvalidInput(f"Marker {marker[:40]!r} is not a version id")
        from_number = ref.number
    out: list[Doc] = []
    record = await latest(svc, path, below=from_number)
    while record is not None and (limit is None or len(out) < limit):
        out.append(public(record))
        record = await latest(svc, path, below=int(record["number"]))
    return out


class VersionView:
    """A committed version: documents from its manifests, chunks from the content store."""

    writable = False

    def __init__(self, svc: Service, record: VersionRecord, root_tree: RootManifest) -> None:
        self.svc = svc
        self.record = record
        self.objects: dict[str, str] = root_tree["objects"]
        self._read: dict[str, Manifest] = {}  # the manifests this request has read

    async def tree(self, obj_id: str) -> Manifest | None:
        sha = self.objects.get(obj_id)
        if sha is None:
            return None
        tree = self._read[obj_id] = await self.svc.cas.get_manifest(sha)
        return tree

    async def object(self, obj_id: str) -> Versioned | None:
        tree = await self.tree(obj_id)
        return None if tree is None else Versioned(tree["doc"], tree["etag"])

    def chunks(self, dataset_id: str, forked_from: str | None = None) -> ChunkLocator:
        """The dataset's chunks, from its manifest: the one ``object`` read for this request, else
        read at the first chunk located (the locator does not depend on the order of the calls)."""
        tree = self._read.get(dataset_id)
        if tree is not None:
            return VersionChunks(self.svc.store, tree.get("chunks", {}))
        return VersionChunks(self.svc.store, manifest=lambda: self.tree(dataset_id))


async def open_version(svc: Service, head: Domain, ref_text: str) -> Domain:
    """The domain ``head`` as committed in version ``ref_text`` (its ACLs stay the head's)."""
    record = await resolve(svc, head.path, parse_ref(ref_text))
    root_tree = await svc.cas.get_root(record["tree"])
    doc = head.doc.copy()
    doc["root"] = root_tree["root"]
    doc["lastModified"] = record["created"]
    return Domain(f"{head.path}@{ref_text}", doc, record["tree"], VersionView(svc, record, root_tree))


