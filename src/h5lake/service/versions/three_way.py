"""The three-way comparison behind merge and cherry-pick (docs/versions.md, "Merge"): manifests
of a base, ours and theirs (all in the target's ids) in, the merged manifests and the conflicts
out. Pure: no store access except through the ``chunk_merge`` callback for a chunk changed on
both sides."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from h5lake.model.ids import FORKED
from h5lake.model.layout import COMPACT_KEY
from h5lake.service.documents import Doc, dumps

Tree = dict[str, Any]
Trees = dict[str, Tree]
Entry = list[Any] | str | None
"""A chunk: a table entry [sha256, etag], a compact dataset's base64 bytes, None: none (fill)."""
ChunkMerge = Callable[[str, str, Entry, Entry, Entry], Awaitable[tuple[Entry, str]]]
"""(object id, chunk name, base, ours, theirs) -> (the merged chunk, "") or (None, why it cannot be)."""

KEYED = ("attributes", "links")
IGNORED = ("lastModified", FORKED, "id", "root", "acls")  # not compared: differ by construction
SIDES = ("ours", "theirs")


def _summary(value: Any) -> Any:
    """A short description of one side's value for a conflict report."""
    if value is None:
        return None
    text = dumps(value)
    return value if len(text) <= 200 else {"bytes": len(text), "sha256": hashlib.sha256(text).hexdigest()[:16]}


def _etag_of(entry: Entry) -> Any:
    """What tells a chunk's bytes apart: a table entry's ETag, a compact chunk's base64 text."""
    return entry if entry is None or isinstance(entry, str) else entry[1]


@dataclass
class Merge:
    """One object's three-way merge, or the whole tree's."""

    base: Trees
    ours: Trees
    theirs: Trees
    paths: dict[str, str]
    resolve: dict[str, str]  # object path (or "*") -> "ours" | "theirs"
    chunk_merge: ChunkMerge
    conflicts: list[Doc] = field(default_factory=list)
    merged: Trees = field(default_factory=dict)
    elementwise: int = 0  # chunks changed on both sides in disjoint elements, merged
    taken: dict[str, int] = field(default_factory=lambda: {"ours": 0, "theirs": 0})  # conflicts resolved

    def _choice(self, obj_id: str) -> str | None:
        path = self.paths.get(obj_id, obj_id)
        return self.resolve.get(path) or self.resolve.get(obj_id) or self.resolve.get("*")

    def _conflict(self, obj_id: str, kind: str, ours: Any, theirs: Any, **extra: Any) -> str | None:
        """The resolution for this conflict, or None (then it is reported)."""
        choice = self._choice(obj_id)
        if choice is not None:
            self.taken[choice] += 1
            return choice
        entry = {"path": self.paths.get(obj_id, obj_id), "id": obj_id, "kind": kind, **extra,
                 "ours": _summary(ours), "theirs": _summary(theirs)}
        self.conflicts.append(entry)
        return None

    async def run(self) -> None:
        for obj_id in sorted(set(self.base) | set(self.ours) | set(self.theirs)):
            b, o, t = self.base.get(obj_id), self.ours.get(obj_id), self.theirs.get(obj_id)
            if b is None:  # new since the base: on one side, or on both when merged before
                if o is not None and t is not None and not same(o, t):
                    # an object the fork made, brought in by an earlier merge (it has the same id
                    # at every merge) and changed since: no base to compare with, so every part
                    # that differs is a conflict rather than one side's change being lost
                    self.merged[obj_id] = await self._object(obj_id, {"doc": {}}, o, t)
                elif o is not None:
                    self.merged[obj_id] = o
                elif t is not None:
                    self.merged[obj_id] = t
                continue
            if o is None or t is None:
                kept = o if o is not None else t
                if kept is None or same(b, kept):
                    continue  # deleted on one side (or both), unchanged on the other
                side = "ours" if o is not None else "theirs"
                choice = self._conflict(obj_id, "deleted", o and "changed" or "deleted",
                                        t and "changed" or "deleted")
                if choice == side:
                    self.merged[obj_id] = kept
                continue
            if same(b, t):
                self.merged[obj_id] = o
            elif same(b, o):
                self.merged[obj_id] = t
            else:
                self.merged[obj_id] = await self._object(obj_id, b, o, t)

    async def _object(self, obj_id: str, b: Tree, o: Tree, t: Tree) -> Tree:
        bd, od, td = b["doc"], o["doc"], t["doc"]
        doc = dict(od)
        for key in KEYED:
            doc[key] = self._keyed(obj_id, key[:-1], bd.get(key) or {}, od.get(key) or {}, td.get(key) or {})
            if not doc[key] and key not in od:
                doc.pop(key)
        for key in sorted(set(bd) | set(od) | set(td)):
            if key in KEYED or key in IGNORED:
                continue
            if key == COMPACT_KEY and _compact(od.get(key)) and _compact(td.get(key)) and _compact(bd.get(key) or {}):
                chunks = await self._chunks(obj_id, (bd.get(key) or {}).get("chunks") or {},
                                            od[key].get("chunks") or {}, td[key].get("chunks") or {})
                doc[key] = {**od[key], "chunks": chunks}
                continue
            value = self._value(obj_id, "shape" if key == "shape" else "object", key, bd.get(key), od.get(key), td.get(key))
            if value is None:
                doc.pop(key, None)
            else:
                doc[key] = value
        tree: Tree = {"doc": doc, "etag": doc_etag(doc)}
        if "chunks" in o or "chunks" in t:
            tree["chunks"] = await self._chunks(obj_id, b.get("chunks") or {}, o.get("chunks") or {}, t.get("chunks") or {})
        values = sorted(set(o.get("values") or []) | set(t.get("values") or []))
        if values:
            tree["values"] = values
        return tree

    def _value(self, obj_id: str, kind: str, name: str, b: Any, o: Any, t: Any) -> Any:
        if o == t or t == b:
            return o
        if o == b:
            return t
        choice = self._conflict(obj_id, kind, o, t, name=name)
        return t if choice == "theirs" else o

    def _keyed(self, obj_id: str, kind: str, b: dict[str, Any], o: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
        if kind == "link":
            b, o, t = _follow_renames(b, o, t)
        out: dict[str, Any] = {}
        for name in sorted(set(b) | set(o) | set(t)):
            value = self._value(obj_id, kind, name, b.get(name), o.get(name), t.get(name))
            if value is not None:
                out[name] = value
        return out

    async def _chunks(self, obj_id: str, b: dict[str, Any], o: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        clashes: list[str] = []
        reasons: set[str] = set()
        for name in sorted(set(b) | set(o) | set(t)):
            be, oe, te = b.get(name), o.get(name), t.get(name)
            eb, eo, et = _etag_of(be), _etag_of(oe), _etag_of(te)
            if eo == et or et == eb:
                chosen: Entry = oe
            elif eo == eb:
                chosen = te
            else:
                merged, why = await self.chunk_merge(obj_id, name, be, oe, te)
                if why:
                    clashes.append(name)
                    reasons.add(why)
                    chosen = oe
                else:
                    self.elementwise += 1
                    chosen = merged
            if chosen is not None:
                out[name] = chosen
        if clashes:
            choice = self._conflict(obj_id, "chunk", f"{len(clashes)} chunks changed",
                                    f"{len(clashes)} chunks changed", chunks=clashes, why=sorted(reasons))
            if choice == "theirs":
                for name in clashes:
                    if t.get(name) is None:
                        out.pop(name, None)
                    else:
                        out[name] = t[name]
        return out


def _target(link: Any) -> Any:
    """What a link points at: all but the time it was made (a rename makes the link anew)."""
    return {k: v for k, v in link.items() if k != "created"} if isinstance(link, dict) else link


def _renames(b: dict[str, Any], side: dict[str, Any]) -> dict[str, str]:
    """Links of the base that ``side`` renamed: old name -> new name, where the base's link is
    gone and exactly one new name points at the same place."""
    new = [m for m in side if m not in b]
    out: dict[str, str] = {}
    for name, link in b.items():
        if name not in side:
            same = [m for m in new if _target(side[m]) == _target(link)]
            if len(same) == 1:
                out[name] = same[0]
    return out


def _follow_renames(b: dict[str, Any], o: dict[str, Any], t: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """A link renamed on one side and changed (pointed elsewhere) under its old name on the other:
    the change moves to the new name, as if both sides had renamed it, with the renamed link as
    its base there. Then the name-by-name merge takes the change under the new name and drops
    the old one, instead of a deleted-and-changed conflict. Renamed on both sides: left as it
    is (name by name)."""
    ours, theirs = _renames(b, o), _renames(b, t)
    base, o2, t2 = dict(b), dict(o), dict(t)
    for renamed, side, other, other_renamed in ((ours, o, t2, theirs), (theirs, t, o2, ours)):
        for old, new in renamed.items():
            if old in other and new not in other and old not in other_renamed and _target(other[old]) != _target(b[old]):
                base[new] = side[new]
                other[new] = other.pop(old)
    return base, o2, t2


def _compact(value: Any) -> bool:
    """Values kept in the document and not being moved out (service.datasets.compact)."""
    return isinstance(value, dict) and not value.get("moving") and isinstance(value.get("chunks", {}), dict)


def comparable(doc: Doc) -> Doc:
    return {k: v for k, v in doc.items() if k not in IGNORED}


def same(a: Tree, b: Tree) -> bool:
    """The same document (but for its times and bookkeeping) and the same chunk bytes."""
    if comparable(a["doc"]) != comparable(b["doc"]):
        return False
    ca, cb = a.get("chunks") or {}, b.get("chunks") or {}
    return {n: e[1] for n, e in ca.items()} == {n: e[1] for n, e in cb.items()}


def doc_etag(doc: Doc) -> str:
    """The ETag the store will give ``doc`` once put (the MD5 of its bytes): a later commit then
    keeps this manifest (another ETag would only cost it a new manifest)."""
    return hashlib.md5(dumps(doc), usedforsecurity=False).hexdigest()
