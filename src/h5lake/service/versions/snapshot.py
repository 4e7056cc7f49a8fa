"""The head of a domain as manifests, compared with a parent version's (docs/versions.md,
"Commit", step 2): what a commit stores, what a restore or merge compares the head with.

Cost follows the change since the parent version: every object is HEADed (and its chunk
catalog, for a dataset); an object whose document and chunk catalog are as the parent recorded
keeps the parent's manifest; of a changed dataset only the chunks whose catalog ETag differs
from the parent's chunk table are read, hashed and stored (create-only, once per bucket).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from h5lake.catalog.catalogs import parse_lines
from h5lake.errors import Conflict
from h5lake.model.ids import (
    CATALOG_FILES,
    FORKED,
    catalog_key,
    chunk_catalog_key,
    chunk_key,
    is_valid_id,
    object_key,
    parse_index_name,
    same_domain,
)
from h5lake.model.layout import is_linked
from h5lake.model.links import LinkClass
from h5lake.model.stored import VersionRecord
from h5lake.service.context import Service
from h5lake.service.documents import Doc
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.views import Domain
from h5lake.versions.content import sha256

Tree = dict[str, Any]
CHUNKED = ("d", "m")  # collections whose objects have chunks of their own (datasets, maps)


def _etag(raw: str) -> str:
    return raw.strip('"').replace(" ", "") or "-"


def children(doc: Doc) -> list[str]:
    """Ids an object's document refers to: hard links, a committed datatype."""
    out = [
        link["id"]
        for link in (doc.get("links") or {}).values()
        if isinstance(link, dict) and link.get("class") == LinkClass.HARD.value and is_valid_id(link.get("id"))
    ]
    if is_valid_id(doc.get("type")):
        out.append(doc["type"])
    return out


@dataclass
class Snapshot:
    """The head of a domain compared with a parent version's manifests."""

    svc: Service
    domain: Domain
    parent: dict[str, str]  # object id -> manifest hash in the parent version
    dry: bool = False  # only find out whether anything changed; store nothing
    memory: bool = False  # keep the head's manifests in ``trees`` (chunk ETags, no hashes); store nothing
    objects: dict[str, str] = field(default_factory=dict)
    trees: dict[str, Tree] = field(default_factory=dict)
    changed: bool = False
    blobs_written: int = 0
    tree: Tree = field(default_factory=dict)  # the root manifest, once run

    async def run(self) -> Tree:
        root = self.domain.require_root()
        queue = [root, *await self._catalogued(), *self.parent]
        seen: set[str] = set()
        while queue:
            wave = [i for i in dict.fromkeys(queue) if i not in seen and same_domain(i, root)]
            seen.update(wave)
            found = await self.svc.workers.map(wave, self._visit)
            queue = [c for kids in found for c in kids]
        if set(self.objects) != set(self.parent):
            self.changed = True
        self.tree = {"root": root, "objects": dict(sorted(self.objects.items()))}
        return self.tree

    async def _catalogued(self) -> list[str]:
        out: list[str] = []
        for name in CATALOG_FILES.values():
            blob = await self.svc.store.get(catalog_key(self.domain.path, name))
            if blob is not None:
                out.extend(parse_lines(blob.data))
        return out

    async def _visit(self, obj_id: str) -> list[str]:
        store, cas = self.svc.store, self.svc.cas
        info = await store.head(object_key(obj_id))
        if info is None:
            return []
        chunked = obj_id[0] in CHUNKED
        catalog = await store.head(chunk_catalog_key(self.domain.path, obj_id)) if chunked else None
        catalog_etag = None if catalog is None else _etag(catalog.etag)
        prev_sha = self.parent.get(obj_id)
        prev = await cas.get_tree(prev_sha) if prev_sha else None
        if prev_sha and prev is not None and prev["etag"] == _etag(info.etag) and prev.get("catalog") == catalog_etag:
            self.objects[obj_id] = prev_sha
            self.trees[obj_id] = prev
            return children(prev["doc"])
        if self.dry and prev_sha and prev is not None and prev["etag"] == _etag(info.etag) and chunked:
            # only the chunk catalog was rewritten (e.g. by a restore): compare the chunks' ETags
            now = await self._chunk_etags(obj_id, prev["doc"].get(FORKED))
            if {n: e[1] for n, e in now.items()} == {n: e[1] for n, e in prev.get("chunks", {}).items()}:
                self.objects[obj_id] = prev_sha
                return children(prev["doc"])
        self.changed = True
        found = await self.svc.docs.get(object_key(obj_id))
        if found is None or found.doc.get("root") != self.domain.root:
            return []
        if self.dry:
            self.objects[obj_id] = ""
            return children(found.doc)
        tree: Tree = {"doc": found.doc, "etag": _etag(found.etag)}
        if self.memory:
            if chunked and not is_linked(found.doc):
                tree["chunks"] = await self._chunk_etags(obj_id, found.doc.get(FORKED))
            self.objects[obj_id], self.trees[obj_id] = "", tree
            return children(found.doc)
        if chunked and not is_linked(found.doc):
            before = (prev or {}).get("chunks", {})
            tree["chunks"], tree["catalog"] = await self._chunks(obj_id, before, found.doc.get(FORKED))
        values = await attrvalues.commit_values(self.svc, obj_id, found.doc)
        if values:  # large attribute values, as blobs (gc keeps them)
            tree["values"] = values
        self.objects[obj_id] = await cas.put_tree(tree)
        return children(found.doc)

    async def _chunk_etags(self, obj_id: str, forked: str | None) -> dict[str, list[str | None]]:
        blob = await self.svc.store.get(chunk_catalog_key(self.domain.path, obj_id))
        lines = parse_lines(blob.data, chunks=True) if blob is not None else {}
        table: dict[str, list[str | None]] = {n: list(e) for n, e in (await self._forked_table(forked)).items()}
        table.update({name: [None, line.split()[1]] for name, line in lines.items()})
        return table

    async def _forked_table(self, forked: str | None) -> dict[str, list[str]]:
        """The chunks a forked dataset reads from its source until it writes its own."""
        return {} if not forked else (await self.svc.cas.get_tree(forked)).get("chunks", {})

    async def _chunks(
        self, obj_id: str, before: dict[str, list[str]], forked: str | None
    ) -> tuple[dict[str, list[str]], str | None]:
        blob = await self.svc.store.get(chunk_catalog_key(self.domain.path, obj_id))
        lines = parse_lines(blob.data, chunks=True) if blob is not None else {}
        table: dict[str, list[str]] = {n: e for n, e in (await self._forked_table(forked)).items() if n not in lines}
        todo: list[str] = []
        for name, line in lines.items():
            old = before.get(name)
            if old is not None and old[1] == line.split()[1]:
                table[name] = old
            else:
                todo.append(name)

        async def copy(name: str) -> None:
            chunk = await self.svc.store.get(chunk_key(obj_id, parse_index_name(name)))
            if chunk is None:
                return  # deleted since the catalog was read
            sha = await self.svc.workers.cpu(sha256, chunk.data, size=len(chunk.data))
            await self.svc.cas.copy_blob(chunk_key(obj_id, parse_index_name(name)), chunk.etag, chunk.data, sha)
            table[name] = [sha, _etag(chunk.etag)]
            self.blobs_written += 1

        await self.svc.workers.each(todo, copy)
        return dict(sorted(table.items())), None if blob is None else _etag(blob.etag)


async def head_tree(
    svc: Service, domain: Domain, parent: VersionRecord | None, *, dry: bool = False, memory: bool = False
) -> Snapshot:
    parent_objects = (await svc.cas.get_tree(parent["tree"]))["objects"] if parent else {}
    snap = Snapshot(svc, domain, parent_objects, dry=dry, memory=memory)
    await snap.run()
    return snap


COMMIT_ATTEMPTS = 10


async def consistent_tree(svc: Service, domain: Domain, parent: VersionRecord | None) -> str:
    """The head's root manifest, as of one moment: taken after the write intents on the domain
    have cleared, and checked (after they clear again) to still equal the head. A write by another
    process that ran while it was taken shows in that check (a changed document or chunk catalog)
    and the snapshot is taken again, from the one just made, so no such write is ever half in."""
    base = parent
    for _ in range(COMMIT_ATTEMPTS):
        await svc.catalog.settle(domain.path, svc.catalog.stale_after)
        snap = await head_tree(svc, domain, base)
        tree = await svc.cas.put_tree(snap.tree)
        await svc.catalog.settle(domain.path, svc.catalog.stale_after)
        if not (await head_tree(svc, domain, {"tree": tree}, dry=True)).changed:
            return tree
        base = {"tree": tree}
    raise Conflict(f"{domain.path} changed during {COMMIT_ATTEMPTS} attempts to commit it; try again")
