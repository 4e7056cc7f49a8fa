"""A node's entries, for store clients that list a group's members instead of reading the
consolidated metadata (zarr-python's ``members()`` with ``use_consolidated=False``): a GET of
the node's own path answers an HTML page of links (what fsspec's HTTP file system parses), a
``PROPFIND`` with ``Depth: 1`` a WebDAV multistatus (what obstore's HTTP store sends).

A group lists ``zarr.json`` and each member that has a Zarr form (what the group's
``_h5lake_omitted`` names is not listed); an array lists ``zarr.json`` and ``c`` (chunk keys
are not listed: a reader computes them from the chunk grid).
"""

from __future__ import annotations

from dataclasses import dataclass

from h5lake.errors import NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection
from h5lake.model.stored import as_dataset, as_group
from h5lake.model.zarrtypes import Unrepresentable
from h5lake.service.context import Caller, Service
from h5lake.service.zarr import nodes


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    is_dir: bool  # a member (group or array) or an array's ``c``; else ``zarr.json``


@dataclass(frozen=True, slots=True)
class Listing:
    path: str  # the node's HDF5 path
    entries: list[Entry]


async def list_node(svc: Service, caller: Caller, key: nodes.Key, node: nodes.Node | None = None) -> Listing:
    """The entries of the node ``key`` names (its parts: the HDF5 path, nothing after it)."""
    domain = await nodes.open_key(svc, caller, key, Permission.READ)
    if node is None:
        node, rest = await nodes.walk(svc, caller, domain, key.parts, Permission.READ)
        if rest:
            raise NotFound(f"{'/'.join(key.parts)[:200]} names no Zarr group or array")
    if not node.is_group:
        return Listing(node.path, [Entry(nodes.META, False), Entry("c", True)])
    entries = [Entry(nodes.META, False)]
    for m in await nodes.members(svc, caller, domain, as_group(node.doc)):
        if m.doc is None:
            continue
        if Collection.of(str(m.doc["id"])) is not Collection.GROUPS:
            if nodes.netcdf_dimension(m.doc):
                continue
            try:
                await nodes.array_view(svc, domain, as_dataset(m.doc), chunks=False)
            except Unrepresentable:
                continue
        entries.append(Entry(m.name, True))
    return Listing(node.path, entries)
