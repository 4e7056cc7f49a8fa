"""A domain's metadata change token: a value that is replaced by a new one, never seen before,
after every change of any of the domain's object documents (groups, datasets, datatypes,
maps: links, attributes, shape, type, creation, deletion), by any process.

Why not the last-change stamp (`h5lake.catalog.changed`): it is moved by the catalog flusher,
after the write is acknowledged (about the flush delay later), and it is a time to the
millisecond; a reader that keeps an answer derived from the documents under it (the Zarr
bridge's consolidated metadata) would serve it stale in between.

Protocol (``.h5lake/meta/<16 hex digits of the root id>.txt``, `ids.meta_token_key`):

* a writer, after each change of an object document is stored and before it is acknowledged,
  deletes the token (`changed`: one ``delete`` of a key that is usually absent, ~10 us on a
  local store; one request on S3);
* a reader that derives something from the documents first reads the token (`current`),
  creating a fresh random one when there is none (create-only: of two racing readers one
  wins and both use its token), *then* reads the documents, and keeps what it derives under
  the token.

A change made after the reader's token read deletes that token afterwards, so a later reader
gets another token and never the kept answer; a change made before it is in what the reader
reads. Limit: a process that dies after storing a change and before deleting the token (the
request then fails, but the change stays) leaves the token in place: kept answers must
therefore also be bounded in age (the Zarr bridge trusts one for `CONSOLIDATED_MAX_AGE` s).
"""

from __future__ import annotations

import uuid

from h5lake.errors import Conflict
from h5lake.model import ids
from h5lake.storage.base import PreconditionFailed, Store

_MAX_ATTEMPTS = 20


async def current(store: Store, root_id: str) -> str:
    """The token of the domain of root ``root_id`` (made now when there is none)."""
    key = ids.meta_token_key(root_id)
    for _ in range(_MAX_ATTEMPTS):
        blob = await store.get(key)
        if blob is not None:
            return bytes(blob.data).decode("ascii", "replace").strip()
        token = uuid.uuid4().hex
        try:
            await store.put(key, token.encode(), if_none_match=True)
        except PreconditionFailed:
            continue  # another reader made one: use it
        return token
    raise Conflict(f"the metadata change token {key!r} is changing too often")


async def changed(store: Store, obj_id: str) -> None:
    """An object document of ``obj_id``'s domain was stored or deleted: drop the token."""
    await store.delete(ids.meta_token_key(obj_id))
