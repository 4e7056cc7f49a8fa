"""HDF5 Map objects in HDF5 files, which cannot hold them (docs/maps.md, "Export and load").

``h5lake export`` writes each map as a one-dimensional compound dataset of ``(key, value)``
records at the map's link, marked with the attribute ``H5LAKE_MAP`` (JSON: the key and value
types and creation properties, exactly as the server has them); the map's own attributes go on
the dataset. ``h5lake load`` turns every dataset so marked back into a map: the same types,
creation properties, pairs and attributes (the dataset is loaded as usual first, then replaced).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import h5py
import numpy as np

from h5lake.client.rest import RestClient
from h5lake.model.fromjson import json_to_array
from h5lake.model.types import to_dtype
from h5lake.model.values import array_to_json

MARK = "H5LAKE_MAP"
"""The attribute that marks a dataset as an exported map."""
MAP_LINK_PREFIX = "/.maps/"
PAGE = 100_000


def _soft_map_links(group: h5py.Group, seen: set[Any]) -> list[tuple[h5py.Group, str, str]]:
    """(group, link name, map id) of every soft link to ``/.maps/<id>`` below ``group``."""
    out = []
    for name in list(group):
        try:
            link = group.get(name, getlink=True)
        except TypeError:  # a user-defined link: h5py has no class for it, and it is not a map
            continue
        if isinstance(link, h5py.SoftLink) and link.path.startswith(MAP_LINK_PREFIX):
            out.append((group, name, link.path[len(MAP_LINK_PREFIX) :]))
        elif isinstance(link, h5py.HardLink):
            child = group.get(name)
            if isinstance(child, h5py.Group) and child.id not in seen:
                seen.add(child.id)
                out += _soft_map_links(child, seen)
    return out


def links_maps(docs: Iterable[dict[str, Any]]) -> bool:
    """Whether any group of ``docs`` (descriptions with their links) links a map."""
    return any(
        isinstance(link, dict) and str(link.get("h5path", "")).startswith(MAP_LINK_PREFIX)
        for doc in docs for link in (doc.get("links") or {}).values()
    )


def _pairs(client: RestClient, map_id: str) -> tuple[list[Any], list[Any]]:
    keys: list[Any] = []
    values: list[Any] = []
    params: dict[str, Any] = {"Limit": PAGE, "IncludeValues": 1}
    while True:
        page = client.get_json(f"/maps/{map_id}/keys", **params)
        keys += page["keys"]
        values += page["values"]
        if page.get("cursor") is None:
            return keys, values
        params["Cursor"] = page["cursor"]


def export_maps(client: RestClient, path: str) -> int:
    """Replace the soft links to maps in the exported file ``path`` by marked compound datasets;
    returns how many maps were written."""
    count = 0
    with h5py.File(path, "r+") as f:
        for group, name, map_id in _soft_map_links(f, {f.id}):
            doc = client.get_json(f"/maps/{map_id}")
            key_type, value_type = doc["key_type"], doc["value_type"]
            keys, values = _pairs(client, map_id)
            n = len(keys)
            records = np.empty(n, dtype=[("key", to_dtype(key_type)), ("value", to_dtype(value_type))])
            if n:
                records["key"] = json_to_array(keys, key_type, (n,))
                records["value"] = json_to_array(values, value_type, (n,))
            del group[name]
            dset = group.create_dataset(name, data=records, maxshape=(None,), chunks=(max(1, min(n, 65536)),))
            mark = {"key_type": key_type, "value_type": value_type,
                    "creationProperties": doc.get("creationProperties", {})}
            dset.attrs[MARK] = json.dumps(mark)
            attrs = client.get_json(f"/maps/{map_id}/attributes", IncludeData=1)["attributes"]
            for attr in attrs:
                shape = attr["shape"]
                dims = tuple(shape.get("dims", ())) if shape.get("class") == "H5S_SIMPLE" else ()
                dset.attrs.create(attr["name"], json_to_array(attr["value"], attr["type"], dims),
                                  dtype=to_dtype(attr["type"]))
            count += 1
    return count


def _marked(f: h5py.File) -> list[tuple[str, h5py.Dataset]]:
    found: list[tuple[str, h5py.Dataset]] = []

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset) and MARK in obj.attrs:
            found.append(("/" + name, obj))

    f.visititems(visit)
    return found


def _attribute_body(attr: dict[str, Any]) -> dict[str, Any]:
    shape = attr["shape"]
    out: dict[str, Any] = {"type": attr["type"], "value": attr.get("value")}
    if shape.get("class") == "H5S_SIMPLE":
        out["shape"] = shape["dims"]
    elif shape.get("class") == "H5S_NULL":
        out["shape"] = "H5S_NULL"
    return out


def load_maps(client: RestClient, f: h5py.File) -> int:
    """Turn the marked datasets just loaded from ``f`` back into maps; returns how many."""
    count = 0
    for path, dset in _marked(f):
        mark = json.loads(dset.attrs[MARK])
        parent_path, _, name = path.rpartition("/")
        parent = client.get_json("/", h5path=parent_path or "/")["id"]
        loaded = client.get_json(f"/groups/{parent}/links/{quote(name, safe='')}")["link"]["id"]
        attrs = client.get_json(f"/datasets/{loaded}/attributes", IncludeData=1)["attributes"]
        client.delete(f"/groups/{parent}/links/{quote(name, safe='')}")
        client.delete(f"/datasets/{loaded}")
        body = {"key_type": mark["key_type"], "value_type": mark["value_type"],
                "creationProperties": mark.get("creationProperties", {}), "link": {"id": parent, "name": name}}
        map_id = client.post_json("/maps", body)["id"]
        records = dset[()]
        for start in range(0, len(records), PAGE):
            part = records[start : start + PAGE]
            client.put_json(f"/maps/{map_id}/keys", {
                "keys": array_to_json(part["key"], mark["key_type"]),
                "values": array_to_json(part["value"], mark["value_type"]),
            })
        kept = {a["name"]: _attribute_body(a) for a in attrs if a["name"] != MARK}
        if kept:
            client.put_json(f"/maps/{map_id}/attributes", {"attributes": kept})
        count += 1
    return count
