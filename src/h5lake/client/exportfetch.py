"""The reading half of ``h5lake export``: every object reachable from a domain's root, by id,
with its links and attributes, in the forms `exportwriter.Writer` writes, a page at a time.

`Fetcher.pages` reads the pages of ``GET /?getobjs=1`` on a thread of its own, at most
`PAGES_AHEAD` pages ahead of the writer, so the server makes the next page while the client
writes this one. An older server, or one that does not page its listing, is read one GET per
object, breadth first, and its objects come as a single page."""

from __future__ import annotations

import base64
import queue
import threading
from collections.abc import Generator, Iterator
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
FIRST_PAGE = 100
"""Objects asked for in the first page; each next page asks twice as many, up to `PAGE`: the
writer starts sooner, and the server makes each page while the client writes the one before."""
PAGES_AHEAD = 1
"""Pages read and held beyond the one being written."""


def bare_id(value: str) -> str:
    return value.split("/", 1)[1] if "/" in value else value


class Fetcher:
    """The objects reachable from the root: `pages` of them as they are read, and any one by id
    (`fetch`). ``docs`` holds the objects read and not yet written (`exportwriter.Writer`
    takes each out as it makes it)."""

    def __init__(self, client: RestClient, pool: ThreadPoolExecutor) -> None:
        self.client = client
        self.pool = pool
        self.docs: dict[str, Doc] = {}

    def fetch(self, obj_id: str) -> Doc:
        """One object, read alone."""
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

    def pages(self, root: str) -> Generator[dict[str, Doc], None, None]:
        """Every object, by pages of ``GET /?getobjs=1`` when the server pages them (h5lake),
        else one GET per object, breadth first, as one page (a listing the server left
        incomplete is completed by the writer, which `fetch`es what it lacks). Pages are read
        on a thread of their own, `PAGES_AHEAD` ahead of the caller."""
        ahead: queue.Queue[tuple[str, Any]] = queue.Queue(PAGES_AHEAD)
        stop = threading.Event()

        def put(item: tuple[str, Any]) -> bool:
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def read() -> None:
            try:
                for page in self._pages(root):
                    if not put(("page", page)):
                        return
                put(("end", None))
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                put(("error", exc))

        reader = threading.Thread(target=read, name="h5lake-export-pages", daemon=True)
        reader.start()
        try:
            while True:
                kind, item = ahead.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise item
                yield item
        finally:
            stop.set()
            reader.join()

    def _pages(self, root: str) -> Iterator[dict[str, Doc]]:
        params: dict[str, Any] = {"getobjs": 1, "include_attrs": 1, "include_links": 1, "Limit": FIRST_PAGE, "include_values": 1}
        while True:
            reply = self.client.get_json("/", **params)
            listed = reply.get("domain_objs")
            if not isinstance(listed, dict) or ("Marker" not in params and root not in listed):
                yield self._each(root)  # not listed (a large domain on HSDS, or an older server)
                return
            yield {oid: self._normalized(oid, {**doc, "id": oid}) for oid, doc in listed.items() if oid[:1] in COLLECTIONS}
            marker = reply.get("nextMarker")
            if not isinstance(marker, str):
                return
            params["Marker"] = marker
            params["Limit"] = min(PAGE, 2 * params["Limit"])

    def _each(self, root: str) -> dict[str, Doc]:
        docs: dict[str, Doc] = {}
        frontier = [root]
        while frontier:
            futures = {oid: self.pool.submit(self.fetch, oid) for oid in frontier if oid not in docs}
            frontier = []
            for oid, fut in futures.items():
                docs[oid] = doc = fut.result()
                for link in doc.get("links", {}).values():
                    target = link.get("id")
                    if link.get("class", LinkClass.HARD.value) == LinkClass.HARD.value and target:
                        target = bare_id(target)
                        if target not in docs and target not in frontier and target not in futures:
                            frontier.append(target)
        return docs
