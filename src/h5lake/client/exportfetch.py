"""The reading half of ``h5lake export``: every object reachable from a domain's root, by id,
with its links and attributes, in the forms `exportwriter.Writer` writes."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from h5lake.client.rest import RestClient, RestError
from h5lake.model.fromjson import EXACT_FILL
from h5lake.model.layout import native_layout
from h5lake.model.links import LinkClass
from h5lake.model.stored import Doc
from h5lake.model.values import array_to_json, bytes_to_array

COLLECTIONS = {"g": "groups", "d": "datasets", "t": "datatypes"}
PAGE = 2000
"""Objects asked for in one ``GET /?getobjs=1`` page (a server may answer fewer)."""


def bare_id(value: str) -> str:
    return value.split("/", 1)[1] if "/" in value else value


class Fetcher:
    """Every object reachable from the root, by id, with its links and attributes."""

    def __init__(self, client: RestClient, pool: ThreadPoolExecutor) -> None:
        self.client = client
        self.pool = pool
        self.docs: dict[str, Doc] = {}

    def get(self, obj_id: str) -> Doc:
        if obj_id not in self.docs:
            self.docs[obj_id] = self._get(obj_id)
        return self.docs[obj_id]

    def _get(self, obj_id: str) -> Doc:
        col = COLLECTIONS[obj_id[0]]
        params = {"include_attrs": 1, "include_links": 1} if col == "groups" else {"include_attrs": 1}
        return self._normalized(obj_id, self.client.get_json(f"/{col}/{obj_id}", **params))

    def _normalized(self, obj_id: str, doc: Doc) -> Doc:
        """An object's description in the forms the writer takes (an attribute whose value it
        left out is read now)."""
        col = COLLECTIONS[obj_id[0]]
        props = doc.get("creationProperties")
        if col == "datasets" and isinstance(props, dict) and "layout" in props:
            # a linked dataset (load --link) is written as the file had it: chunked, filtered
            doc["creationProperties"] = dict(props, layout=native_layout(props["layout"]))
        if col == "groups" and isinstance(doc.get("links"), list):  # an older server's list form
            doc["links"] = {link["title"]: link for link in doc["links"]}
        if "attributes" not in doc or isinstance(doc["attributes"], list):
            doc["attributes"] = self._attributes(col, obj_id, doc.get("attributes"))
        for name, attr in doc["attributes"].items():
            if isinstance(attr, dict) and "value" not in attr and (attr.get("shape") or {}).get("class") != "H5S_NULL":
                doc["attributes"][name] = self._left_out(col, obj_id, name, attr)
        props = doc.get("creationProperties", {})
        if not isinstance(props, dict):
            # an encoded property list (the HDF5 REST VOL connector's): opaque here, defaults used
            doc["creationProperties"] = {}
        elif props.get("fillValue_encoding") == "base64" and isinstance(props.get("fillValue"), str) \
                and isinstance(doc.get("type"), dict):
            t = doc["type"]  # a fill value answered as its packed bytes in base64: kept as such
            raw = base64.b64decode(props["fillValue"])
            doc["creationProperties"] = {**props, "fillValue": array_to_json(bytes_to_array(raw, t, ()), t),
                                         EXACT_FILL: props["fillValue"]}
        return doc

    def _attributes(self, col: str, obj_id: str, listed: Any) -> Doc:
        if isinstance(listed, list) and all("value" in a or a.get("shape", {}).get("class") == "H5S_NULL" for a in listed):
            return {a["name"]: a for a in listed}
        reply = self.client.get_json(f"/{col}/{obj_id}/attributes", IncludeData=1)
        return {a["name"]: a for a in reply.get("attributes", [])}

    def _left_out(self, col: str, obj_id: str, name: str, attr: Doc) -> Doc:
        """An attribute whose value the object's description left out (h5lake leaves out a large
        value whose JSON passes the reply limit, or past what one request carries together): read
        alone, as its packed bytes in base64 (any name goes in the body, none in the URL)."""
        reply = self.client.post_json(f"/{col}/{obj_id}/attributes", {"attr_names": [name]}, encoding="base64")
        found = reply.get("attributes") or []
        if not found or not isinstance(found[0].get("value"), str):
            raise RestError("POST", f"/{col}/{obj_id}/attributes", 200, f"no value for attribute {name!r}")
        return {**attr, "value_base64": found[0]["value"]}

    def fetch_all(self, root: str) -> None:
        """Every object, by pages of ``GET /?getobjs=1`` when the server pages them (h5lake),
        else one GET per object, breadth first (a listing the server left incomplete is
        completed by `get` as objects are asked for)."""
        if not self._fetch_listed(root):
            self._fetch_each(root)

    def _fetch_listed(self, root: str) -> bool:
        params: dict[str, Any] = {"getobjs": 1, "include_attrs": 1, "include_links": 1, "Limit": PAGE, "include_values": 1}
        while True:
            reply = self.client.get_json("/", **params)
            listed = reply.get("domain_objs")
            if not isinstance(listed, dict) or ("Marker" not in params and root not in listed):
                return False  # not listed (a large domain on HSDS, or an older server)
            for oid, doc in listed.items():
                if oid[:1] in COLLECTIONS and oid not in self.docs:  # (an object listed again: the same)
                    self.docs[oid] = self._normalized(oid, {**doc, "id": oid})
            marker = reply.get("nextMarker")
            if not isinstance(marker, str):
                return True
            params["Marker"] = marker

    def _fetch_each(self, root: str) -> None:
        frontier = [root]
        while frontier:
            futures = {oid: self.pool.submit(self._get, oid) for oid in frontier if oid not in self.docs}
            frontier = []
            for oid, fut in futures.items():
                self.docs[oid] = doc = fut.result()
                for link in doc.get("links", {}).values():
                    target = link.get("id")
                    if link.get("class", LinkClass.HARD.value) == LinkClass.HARD.value and target:
                        target = bare_id(target)
                        if target not in self.docs and target not in frontier and target not in futures:
                            frontier.append(target)
