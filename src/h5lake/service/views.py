"""The seam every read of a domain goes through: an opened `Domain` and the `DomainView` it is
read through.

Two views implement it: the head (`HeadView`, here), the documents and chunks as they are now,
writable; and a version of the domain (`service/versions/view.VersionView`), documents resolved from
a snapshot, chunks from the content-addressed store, ``writable`` False. Handlers, use cases and
the chunk engine ask the view and never the store, so a read does not know which one it goes
through; `service/versions/view.py` picks the version view when a domain is opened at ``@ref``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from h5lake.catalog.written import CatalogedChunks
from h5lake.chunks.locate import ChunkLocator
from h5lake.errors import InvalidInput, ReadOnly
from h5lake.model.acl import Permission
from h5lake.model.ids import object_key
from h5lake.model.stored import DomainDoc
from h5lake.service.documents import Documents, Versioned
from h5lake.storage import LATER, AnswersAtOnce, Blob, Later, Store
from h5lake.versions.content import ContentStore, ForkedChunks


class DomainView(Protocol):
    """Where one domain's object documents and native chunks are read from."""

    @property
    def writable(self) -> bool:
        """False for a view whose contents cannot change (a version)."""
        ...

    async def object(self, obj_id: str) -> Versioned | None:
        """An object's document as this view sees it, or None when it has none."""
        ...

    def chunks(self, dataset_id: str, forked_from: str | None = None) -> ChunkLocator:
        """Where the native chunks of a dataset are, as this view sees them (``forked_from``:
        the manifest of the version a forked dataset falls back to, docs/versions.md)."""
        ...


class HeadView:
    """The domain as it is now: documents and chunks straight from the store."""

    writable = True

    def __init__(self, docs: Documents, store: Store, cas: ContentStore) -> None:
        self.docs = docs
        self.store = store
        self.cas = cas
        self._at_once = docs.store if isinstance(docs.store, AnswersAtOnce) else None

    async def object(self, obj_id: str) -> Versioned | None:
        return await self.docs.get(object_key(obj_id))

    async def stored(self, obj_id: str) -> Blob | None:
        """An object's document as stored, unparsed, with its ETag (`Documents.parsed`)."""
        return await self.docs.store.get(object_key(obj_id))

    def stored_at_once(self, obj_id: str) -> Blob | None | Later:
        """`stored`'s answer when the store has it without waiting, else `LATER`."""
        if self._at_once is None:
            return LATER
        return self._at_once.get_at_once(object_key(obj_id))

    def chunks(self, dataset_id: str, forked_from: str | None = None) -> ChunkLocator:
        if forked_from:
            return ForkedChunks(self.cas, dataset_id, forked_from)
        return CatalogedChunks(self.store, dataset_id)


@dataclass(frozen=True, slots=True)
class Domain:
    """A domain (or folder) opened for one request, and the view its contents are read through."""

    path: str
    doc: DomainDoc
    etag: str
    view: DomainView

    @property
    def root(self) -> str | None:
        return self.doc.get("root")

    @property
    def owner(self) -> str:
        return str(self.doc.get("owner", ""))

    @property
    def is_folder(self) -> bool:
        return "root" not in self.doc

    def require_root(self) -> str:
        if self.root is None:
            raise InvalidInput(f"{self.path} is a folder, not a domain")
        return self.root


READ_PERMISSIONS = (Permission.READ, Permission.READ_ACL)


def refuse_change(domain: Domain, permission: Permission) -> None:
    """Read-only, decided for a domain as opened: a view that is not writable (a version) allows
    reading only. `opened.check_writable` adds what a dataset's own layout allows."""
    if not domain.view.writable and permission not in READ_PERMISSIONS:
        raise ReadOnly(f"{domain.path} is a version (read-only): changes go to the head domain")
