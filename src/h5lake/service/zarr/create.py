"""``PUT .../zarr.json``: a new group or array (made as ``POST /groups`` or ``/datasets`` makes
one, linked into its parent, missing groups on the way made too, as zarr-python expects of a
store), or an existing node's attributes and shape (a changed type, chunk grid or codecs is a
`Conflict`). Attributes are replaced as a whole, as a Zarr client writes them: those the body
leaves out are deleted, except the ones h5lake keeps for HDF5 (dimension scales, netCDF-4)."""

from __future__ import annotations

from typing import Any

from h5lake.errors import AlreadyExists, ConditionFailed, Conflict, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.zarrcreate import array_spec, attribute_spec, check_header, same_array, user_attributes
from h5lake.model.zarrtypes import HIDDEN_ATTRIBUTES, attribute_json
from h5lake.service.context import Caller, Service
from h5lake.service.datasets import core as datasets
from h5lake.service.documents import Doc
from h5lake.service.objects import attributes
from h5lake.service.objects import core as objects
from h5lake.service.views import Domain
from h5lake.service.zarr import nodes

KEPT = HIDDEN_ATTRIBUTES | nodes.NETCDF_HIDDEN | {"CLASS", "NAME", "_FillValue"}
"""Attributes a zarr.json PUT never deletes: shown in another form (or not at all)."""


async def _existing(svc: Service, domain: Domain, parts: tuple[str, ...]) -> tuple[nodes.Node | None, int]:
    """The node at ``parts`` (None when a component is missing) and how many parts were walked."""
    found = await nodes.load_root(svc, domain)
    node = found
    for n, name in enumerate(parts):
        if not node.is_group:
            raise InvalidInput(f"{node.path} is an array: {'/'.join(parts[n:])[:100]!r} cannot be below it")
        link = node.doc.get("links", {}).get(name)
        if link is None:
            return None, n
        doc, etag = await nodes.follow(svc, domain, link, nodes.join(node.path, name))
        node = nodes.Node(nodes.join(node.path, name), doc, [node.doc, *node.parents], etag)
    return node, len(parts)


async def put_meta(svc: Service, caller: Caller, key: nodes.Key, body: Any, create_only: bool = False) -> bool:
    """Create or update the node ``key`` names; True when it was created. ``create_only``
    (``If-None-Match: *``): `ConditionFailed` when it exists, or is made meanwhile."""
    kind = check_header(body)
    parts = key.parts[:-1]
    domain = await nodes.open_key(svc, caller, key, Permission.READ)
    node, _ = await _existing(svc, domain, parts)
    if node is None:
        return await _create(svc, caller, key, parts, kind, body, create_only)
    if create_only:
        raise ConditionFailed(f"If-None-Match: {node.path} exists")
    if not parts and kind != "group":
        raise Conflict("the root of a domain is a group")
    if node.is_group != (kind == "group"):
        raise Conflict(f"{node.path} is {'a group' if node.is_group else 'an array'}, not {'a group' if kind == 'group' else 'an array'}")
    domain = await nodes.open_key(svc, caller, key, Permission.UPDATE)
    nodes.check_object(caller, domain, node.doc, Permission.UPDATE)
    if kind == "array":
        view = await nodes.array_view(svc, domain, node.dataset)
        current = nodes.array_json(view, node.dataset, None)
        changed = same_array(current, body)
        if changed is not None:
            raise Conflict(f"{node.path}: a zarr.json PUT cannot change {changed} (make a new array)")
        shape = body.get("shape")
        if shape != current["shape"]:
            if not isinstance(shape, list) or len(shape) != len(current["shape"]):
                raise InvalidInput("shape must keep the array's rank")
            await datasets.resize(svc, caller, key.domain, node.doc["id"], {"shape": shape})
    await _set_attributes(svc, caller, key.domain, node.doc, user_attributes(body))
    return False


async def _create(svc: Service, caller: Caller, key: nodes.Key, parts: tuple[str, ...], kind: str, body: Doc,
                  create_only: bool) -> bool:
    if not parts:
        raise NotFound(f"domain {key.domain} has no root group")
    h5path = "/" + "/".join(parts)
    attrs = user_attributes(body)
    for attempt in range(_RACES):
        try:
            if kind == "group":
                made, _ = await objects.create_groups(svc, caller, key.domain, {"h5path": h5path}, implicit=True)
            else:
                spec = array_spec(body)
                made, _ = await datasets.create_datasets(svc, caller, key.domain, spec.post_body(h5path), implicit=True)
            break
        except (AlreadyExists, Conflict):
            # zarr-python writes a node's parents and the node at once: a group on the way (or
            # the node itself) was made meanwhile by another request
            domain = await nodes.open_key(svc, caller, key, Permission.UPDATE)
            node, _ = await _existing(svc, domain, parts)
            if node is not None and create_only:
                raise ConditionFailed(f"If-None-Match: {node.path} was made meanwhile") from None
            if node is not None and node.is_group == (kind == "group"):
                await _set_attributes(svc, caller, key.domain, node.doc, attrs)
                return False
            if node is not None or attempt == _RACES - 1:
                raise
    if attrs:
        await _set_attributes(svc, caller, key.domain, {"id": made[0]["id"], "attributes": {}}, attrs)
    return True


_RACES = 4  # creations lost to concurrent creations of the groups on the way, before giving up


async def _set_attributes(svc: Service, caller: Caller, domain_path: str, doc: Doc, wanted: dict[str, Any]) -> None:
    current = doc.get("attributes", {})
    wanted = {n: v for n, v in wanted.items() if n not in KEPT}
    changed = {n: attribute_spec(v) for n, v in wanted.items() if n not in current or attribute_json(current[n]) != v}
    gone = [n for n in current if n not in wanted and n not in KEPT]
    if changed:
        await attributes.put_attributes(svc, caller, domain_path, doc["id"], {"attributes": changed})
    if gone:
        await attributes.delete_attributes(svc, caller, domain_path, doc["id"], gone)
