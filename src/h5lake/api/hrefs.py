"""Hypermedia: the ``hrefs`` of every resource response, built from the request's own base URL.

Each href is an absolute URL on the base the client used (the ``Forwarded`` or
``X-Forwarded-Proto``/``-Host``/``-Prefix`` headers of a proxy win over the socket's), with the
request's domain as a ``domain=`` query parameter, so a client can GET it as it is. The relation
names and which links each resource carries follow HSDS 1.0 (``docs/api.md``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from starlette.requests import Request

from h5lake.model.links import LinkClass

Href = dict[str, str]

#: Datasets with more elements than this get a ``preview`` link (a small selection) instead of
#: a ``data`` link to the whole value, as HSDS does.
PREVIEW_OVER = 100
_PREVIEW_EDGE = 10
_SCHEMES = frozenset({"http", "https"})


def _forwarded(header: str) -> tuple[str | None, str | None]:
    """``proto`` and ``host`` of the first (client-side) element of an RFC 7239 header."""
    proto = host = None
    for pair in header.split(",", 1)[0].split(";"):
        key, _, value = pair.strip().partition("=")
        value = value.strip().strip('"')
        key = key.lower()
        if key == "proto":
            proto = value.lower()
        elif key == "host":
            host = value
    return proto, host


_HOST = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:\[\]-]{1,255}")


def _plain_host(host: str | None) -> str | None:
    """A host[:port] that can go into a URL as it is (RFC 3986 reg-name, IPv6 literal, port),
    or None for anything else."""
    if host and _HOST.fullmatch(host):
        return host
    return None


_WANTED_ORDER = (b"host", b"forwarded", b"x-forwarded-proto", b"x-forwarded-host", b"x-forwarded-prefix")
_WANTED = frozenset(_WANTED_ORDER)


def base_url(request: Request) -> str:
    """``scheme://host[:port][prefix]`` as the client sees this server."""
    scope = request.scope
    found: dict[bytes, bytes] = {}
    for key, value in scope["headers"]:  # one pass over the raw headers: this runs on every reply
        if key in _WANTED and key not in found:
            found[key] = value
    server = scope.get("server")
    return _base_url(
        found.get(b"host"), found.get(b"forwarded"), found.get(b"x-forwarded-proto"), found.get(b"x-forwarded-host"),
        found.get(b"x-forwarded-prefix"), scope.get("scheme", "http"), tuple(server) if server else None,
        scope.get("root_path", ""),
    )  # fmt: skip


@lru_cache(maxsize=256)
def _base_url(
    raw_host: bytes | None,
    raw_forwarded: bytes | None,
    raw_proto: bytes | None,
    raw_fhost: bytes | None,
    raw_prefix: bytes | None,
    scheme: str,
    server: tuple[str, int] | None,
    root_path: str,
) -> str:
    """`base_url` of these headers and scope values (a few distinct ones recur: cached)."""
    found: dict[bytes, str] = {}
    for key, value in zip(_WANTED_ORDER, (raw_host, raw_forwarded, raw_proto, raw_fhost, raw_prefix)):
        if value is not None:
            found[key] = value.decode("latin-1")
    proto = host = None
    forwarded = found.get(b"forwarded")
    if forwarded:
        proto, host = _forwarded(forwarded)
    if proto is None and b"x-forwarded-proto" in found:
        proto = found[b"x-forwarded-proto"].split(",", 1)[0].strip().lower()
    if host is None and b"x-forwarded-host" in found:
        host = found[b"x-forwarded-host"].split(",", 1)[0].strip()
    host = _plain_host(host) or _plain_host(found.get(b"host"))
    if host is None:
        address = server or ("127.0.0.1", 80)
        host = f"{address[0]}:{address[1]}"
    if proto not in _SCHEMES:
        proto = scheme
    prefix = found.get(b"x-forwarded-prefix", "").strip().rstrip("/")
    if prefix:
        prefix = quote(prefix, safe="/") if prefix.startswith("/") else ""
    return f"{proto}://{host}{prefix}{root_path}"


@lru_cache(maxsize=4096)
def domain_query(domain: str) -> str:
    """``?domain=...`` for a domain path (few distinct paths recur: cached)."""
    return "?domain=" + quote(domain, safe="/") if domain else ""


def root_of(obj_id: str) -> str:
    """The root group of the domain an object belongs to: every id carries the first 16 hex
    digits of its domain's root, whose last 16 are the same digits shifted by 8."""
    digits = obj_id[2:].replace("-", "")[:16]
    full = digits + "".join("%x" % ((int(c, 16) + 8) % 16) for c in digits)
    return f"g-{full[:8]}-{full[8:16]}-{full[16:20]}-{full[20:26]}-{full[26:]}"


def segment(name: str) -> str:
    """A link title or attribute name as one path segment."""
    return quote(name, safe="")


class Hrefs:
    """The href builder of one request."""

    __slots__ = ("base", "domain_path", "query")

    def __init__(self, request: Request, domain: str) -> None:
        self.base = base_url(request)
        self.domain_path = domain
        self.query = domain_query(domain)

    def url(self, path: str, query: str = "") -> str:
        if query:
            return self.base + path + (self.query + "&" if self.query else "?") + query
        return self.base + path + self.query

    def of(self, *pairs: tuple[str, str]) -> list[Href]:
        base, query = self.base, self.query
        return [{"rel": rel, "href": base + path + query} for rel, path in pairs]

    def for_domain(self, path: str, *, root: str | None) -> str:
        return self.base + path + domain_query(root or "")

    # --- resources ----------------------------------------------------------------------------

    def domain(self, out: dict[str, Any]) -> list[Href]:
        root = out.get("root")
        if root:
            hrefs = self.of(
                ("self", "/"), ("database", "/datasets"), ("groupbase", "/groups"),
                ("typebase", "/datatypes"), ("root", f"/groups/{root}"),
            )
        else:
            hrefs = self.of(("self", "/"), ("domains", "/domains"))
        hrefs.append({"rel": "acls", "href": self.url("/acls")})
        path = out.get("domain") or self.domain_path
        parent = path.rstrip("/").rsplit("/", 1)[0] if isinstance(path, str) else ""
        if parent:
            hrefs.append({"rel": "parent", "href": self.for_domain("/", root=parent)})
        return hrefs

    def domains(self, items: list[dict[str, Any]]) -> list[Href]:
        for item in items:
            name = item.get("name")
            if isinstance(name, str):
                item["hrefs"] = [{"rel": "domain", "href": self.for_domain("/", root=name)}]
        return [{"rel": "self", "href": self.url("/domains")}]

    def collection(self, name: str, root: str | None) -> list[Href]:
        hrefs = self.of(("self", "/" + name), ("home", "/"))
        if root:
            hrefs.insert(1, {"rel": "root", "href": self.url(f"/groups/{root}")})
        return hrefs

    def obj(self, out: dict[str, Any]) -> list[Href]:
        obj_id = out["id"]
        root = out.get("root") or root_of(obj_id)
        kind = obj_id[0]
        if kind == "g":
            me = f"/groups/{obj_id}"
            return self.of(
                ("self", me), ("links", me + "/links"), ("root", f"/groups/{root}"), ("home", "/"),
                ("attributes", me + "/attributes"),
            )
        me = f"/{_collection_of(obj_id)}/{obj_id}"
        hrefs = self.of(("self", me), ("root", f"/groups/{root}"), ("home", "/"), ("attributes", me + "/attributes"))
        if kind == "m":
            hrefs.append({"rel": "keys", "href": self.url(me + "/keys")})
        if kind == "d":
            value = self._value_href(me, out.get("shape"))
            if value is not None:
                hrefs.append(value)
        return hrefs

    def _value_href(self, me: str, shape: Any) -> Href | None:
        if not isinstance(shape, dict) or shape.get("class") == "H5S_NULL":
            return None
        dims = shape.get("dims") or []
        count = 1
        for d in dims:
            count *= int(d)
        if count <= PREVIEW_OVER:
            return {"rel": "data", "href": self.url(me + "/value")}
        select = ",".join(f"0:{min(int(d), _PREVIEW_EDGE) if i >= len(dims) - 2 else 1}" for i, d in enumerate(dims))
        return {"rel": "preview", "href": self.url(me + "/value", "select=" + quote(f"[{select}]", safe=""))}

    def dataset_part(self, dset_id: str, part: str) -> list[Href]:
        """``/datasets/{id}/type``, ``/shape`` and ``/value``."""
        me = f"/datasets/{dset_id}"
        hrefs = self.of((("self", f"{me}/{part}")), ("owner", me), ("root", f"/groups/{root_of(dset_id)}"))
        if part == "value":
            hrefs.insert(2, {"rel": "home", "href": self.url("/")})
        return hrefs

    def links(self, group_id: str, links: Any) -> list[Href]:
        me = f"/groups/{group_id}"
        if isinstance(links, list):
            self._each_link(me, links)
        elif isinstance(links, dict):  # several groups: {group id: [links]}
            for gid, items in links.items():
                if isinstance(items, list):
                    self._each_link(f"/groups/{gid}", items)
        return self.of(("self", me + "/links"), ("home", "/"), ("owner", me))

    def _each_link(self, me: str, items: list[dict[str, Any]]) -> None:
        for link in items:
            if "id" in link and link.get("class") == LinkClass.HARD.value:
                link["target"] = self.url(f"/{link.get('collection') or _collection_of(link['id'])}/{link['id']}")
            if link.get("map_id"):
                link["target"] = self.url(f"/maps/{link['map_id']}")
            if "title" in link:
                link["href"] = self.url(f"{me}/links/{segment(link['title'])}")

    def link(self, group_id: str, link: dict[str, Any]) -> list[Href]:
        me = f"/groups/{group_id}"
        hrefs = self.of(("self", f"{me}/links/{segment(link.get('title', ''))}"), ("home", "/"), ("owner", me))
        if link.get("class") == LinkClass.HARD.value and "id" in link:
            target = f"/{link.get('collection') or _collection_of(link['id'])}/{link['id']}"
            hrefs.append({"rel": "target", "href": self.url(target)})
        if link.get("map_id"):
            hrefs.append({"rel": "target", "href": self.url(f"/maps/{link['map_id']}")})
        return hrefs

    def attributes(self, owner: str, items: Any) -> list[Href]:
        if isinstance(items, list):
            for attr in items:
                if isinstance(attr, dict) and "name" in attr:
                    attr["href"] = self.url(f"{owner}/attributes/{segment(attr['name'])}")
        return self.of(("self", owner + "/attributes"), ("home", "/"), ("owner", owner))

    def attribute(self, owner: str, name: str) -> list[Href]:
        return self.of(("self", f"{owner}/attributes/{segment(name)}"), ("home", "/"), ("owner", owner))

    def acls(self, user: str | None = None) -> list[Href]:
        me = "/acls" if user is None else f"/acls/{segment(user)}"
        return self.of(("self", me), ("home", "/"), ("owner", "/"))


def _collection_of(obj_id: str) -> str:
    return {"g": "groups", "d": "datasets", "t": "datatypes", "m": "maps"}.get(obj_id[:1], "groups")
