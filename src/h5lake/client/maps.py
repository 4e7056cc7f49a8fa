"""``h5lake.client.Map``: HDF5 Map objects of an h5lake server from Python (docs/maps.md).

h5py and h5pyd have no map type. A `Map` is opened from an h5pyd ``File`` or ``Group`` and talks
to the same server as that file, with its endpoint, credentials and auth headers, read through
h5pyd's public connection object (``obj.id.db.plugin.http_conn``: ``endpoint``, ``domain``,
``mode``, ``getHeaders()``); requests go through a ``requests.Session`` of its own. Keys and
values are numpy dtypes, as in h5py; fixed-size pairs travel packed, others as JSON.

The server shows a link to a map as a soft link to ``/.maps/<map id>`` (h5pyd 1.0 knows no map
ids), which h5pyd cannot follow. Importing this module therefore teaches h5pyd's ``Group`` to
open such a link as a `Map` (:func:`install`): ``group["name"]`` then gives the map, as
``H5Oopen`` does in HDF5, and ``Map(group["name"])`` is the same map; ``group[map_id]`` opens
a map by its id, as h5pyd opens other objects. Every other name is left to h5pyd.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

import numpy as np
import requests

from h5lake.extras import need

# h5pyd (and h5json, which comes with it) are the client extra: h5lake[client]
h5pyd = need("h5pyd", "h5lake.client")
_hdf5dtype = need("h5json.hdf5dtype", "h5lake.client")
createDataType, getTypeItem = _hdf5dtype.createDataType, _hdf5dtype.getTypeItem

from h5lake.client import exact

OCTET = "application/octet-stream"
BATCH = 100_000
"""Keys per request of `get_many` and `delete_many`."""
PUT_BATCH = 1_000_000
PUT_BATCH_BYTES = 256 * 1024 * 1024
"""A packed batch put sends at most this many pairs and bytes per request."""
PAGE = 10_000
"""Keys per request while iterating."""


class MapError(IOError):
    """The server refused a map request; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


def _connection(obj: Any) -> Any:
    return obj.id.db.plugin.http_conn


def _is_fixed(dt: np.dtype[Any]) -> bool:
    if dt.hasobject or dt.metadata and ("vlen" in dt.metadata or "ref" in dt.metadata):
        return False
    if dt.names and dt.fields is not None:
        return all(_is_fixed(dt.fields[n][0]) for n in dt.names)
    if dt.subdtype is not None:
        return _is_fixed(dt.subdtype[0])
    return True


class Map:
    """A map opened from an h5pyd group (or file) and a name or path relative to it.

    ``m[k] = v``, ``m[k]``, ``k in m``, ``del m[k]``, ``len(m)``, iteration (in pages),
    ``keys()``/``values()``/``items()``, ``get_many(keys)``, ``update(mapping)`` and
    ``delete_many(keys)`` (in batches).
    """

    id: str
    _conn: Any

    def __init__(self, where: Any, name: str | None = None, *, map_id: str | None = None) -> None:
        if isinstance(where, Map):  # Map(group["name"]): the map h5pyd opened, in a session of its own
            if name is not None or map_id is not None:
                raise TypeError("a Map is opened from a map alone, or from a group and a name")
            self._connect(where._conn)
            map_id = where.id
        else:
            self._connect(_connection(where))
        if map_id is None:
            if name is None:
                raise TypeError("give the map's name (or path) relative to the group, or map_id")
            map_id = self._find(where, name)
        self.id = map_id
        doc = self._json("GET", f"/maps/{self.id}")
        self.key_type, self.value_type = doc["key_type"], doc["value_type"]
        self.key_dtype: np.dtype[Any] = createDataType(self.key_type)
        self.value_dtype: np.dtype[Any] = createDataType(self.value_type)
        self._packed = _is_fixed(self.key_dtype) and _is_fixed(self.value_dtype)
        kc = self.key_type.get("class") if isinstance(self.key_type, dict) else None
        self._path_keys = kc in ("H5T_INTEGER", "H5T_STRING")

    # -- opening
    @classmethod
    def create(cls, where: Any, name: str | None, key_dtype: Any, value_dtype: Any, *,
               filters: list[dict[str, Any]] | None = None, bucket_bytes: int | None = None) -> Map:
        """A new map linked as ``name`` in the group ``where`` (anonymous when ``name`` is None)."""
        conn = _connection(where)
        if conn.mode == "r":
            raise OSError("the file is open read-only")
        where.file.flush()  # the group must exist on the server before a link is made in it
        body: dict[str, Any] = {"key_type": getTypeItem(np.dtype(key_dtype)),
                                "value_type": getTypeItem(np.dtype(value_dtype))}
        props: dict[str, Any] = {}
        if filters is not None:
            props["filters"] = filters
        if bucket_bytes is not None:
            props["bucketBytes"] = bucket_bytes
        if props:
            body["creationProperties"] = props
        parent = where
        if name is not None:
            head, _, base = name.rstrip("/").rpartition("/")
            parent = where[head] if head else where
            body["link"] = {"id": parent.id.uuid, "name": base}
        maker = cls.__new__(cls)
        maker._connect(conn)
        created = maker._json("POST", "/maps", json=body)
        if name is not None:
            # h5pyd holds the group's links it has read: add the new one, as the server shows it
            link = maker._json("GET", f"/groups/{parent.id.uuid}/links/{quote(base, safe='')}")["link"]
            known = parent.id.db.getObjectById(parent.id.uuid).setdefault("links", {})
            known[base] = {k: link[k] for k in ("class", "created", "h5path", "collection", "map_id") if k in link}
        maker.close()
        return cls(where, map_id=created["id"])

    def _connect(self, conn: Any) -> None:
        self._conn = conn
        self.endpoint = conn.endpoint.rstrip("/")
        self.domain = conn.domain
        self.writable = conn.mode != "r"
        self._headers = {k: v for k, v in conn.getHeaders().items() if k.lower() != "accept-encoding"}
        self._session = requests.Session()

    def _find(self, where: Any, name: str) -> str:
        map_id = self._map_at(where, name)
        if map_id is None:
            raise TypeError(f"{name!r} is not a map")
        return map_id

    def _map_at(self, where: Any, name: str) -> str | None:
        """The id of the map the link ``name`` (a name or path from ``where``) names, or None
        when it names something else. ``KeyError`` when there is no such link."""
        head, _, base = name.rstrip("/").rpartition("/")
        parent = where[head] if head else (where.file["/"] if name.startswith("/") else where)
        if not base:
            return None  # the root group
        try:
            link = self._json("GET", f"/groups/{parent.id.uuid}/links/{quote(base, safe='')}")["link"]
        except MapError as e:
            if e.status == 404:
                raise KeyError(name) from None
            raise
        map_id = link.get("map_id") or (link.get("id") if str(link.get("id", "")).startswith("m-") else None)
        return None if not map_id else str(map_id)

    # -- HTTP
    def _request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                 ok: tuple[int, ...] = (200, 201), **kw: Any) -> requests.Response:
        headers = dict(self._headers)
        headers.update(kw.pop("headers", {}))
        query = {"domain": self.domain, **(params or {})}
        r = self._session.request(method, self.endpoint + path, params=query, headers=headers, timeout=300, **kw)
        if r.status_code not in ok:
            if method == "HEAD" and not r.content:
                # a reply to HEAD has no body (RFC 9110), so no message: the same request as a
                # GET (as safe) brings the server's
                r = self._session.request("GET", self.endpoint + path, params=query, headers=headers, timeout=300, **kw)
            try:
                message = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = r.text[:200]
            if r.status_code == 404 and method in ("GET", "DELETE", "HEAD") and "/key/" in path:
                raise KeyError(message)
            raise MapError(r.status_code, message)
        return r

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        return self._request(method, path, **kw).json()

    def _check_writable(self) -> None:
        if not self.writable:
            raise OSError("the file is open read-only")

    def _key_path(self, key: Any) -> str:
        item = self._keys_array([key])[0]  # refuses a key that is not exactly of the key type
        if isinstance(item, np.generic):
            item = item.item()
        if isinstance(item, bytes):
            item = item.decode("utf-8")
        return f"/maps/{self.id}/key/{quote(str(item), safe='')}"

    # -- conversions: exact, or refused naming the key (`exact`)
    def _keys_array(self, keys: Iterable[Any]) -> np.ndarray[Any, Any]:
        try:
            return exact.convert(keys, self.key_dtype, rounding=False)
        except exact.Inexact as e:
            raise ValueError(f"{exact.sentence(f'key {_shown(e.item)}', e)} (the map's key type is {exact.describe(self.key_dtype)})") from None

    def _values_array(self, values: Iterable[Any], keys: Any) -> np.ndarray[Any, Any]:
        try:
            return exact.convert(values, self.value_dtype, rounding=True)
        except exact.Inexact as e:
            key = keys[e.index] if e.index < len(keys) else "?"
            subject = f"value {_shown(e.item)} of key {_shown(key)}"
            raise ValueError(f"{exact.sentence(subject, e)} (the map's value type is {exact.describe(self.value_dtype)})") from None

    def _json_items(self, arr: np.ndarray[Any, Any]) -> list[Any]:
        out = []
        for item in arr.tolist():
            out.append(_jsonable(item))
        return out

    # -- single keys
    def __setitem__(self, key: Any, value: Any) -> None:
        self.update([(key, value)])

    def __getitem__(self, key: Any) -> Any:
        if self._path_keys:
            if self._packed:
                r = self._request("GET", self._key_path(key), headers={"Accept": OCTET})
                return np.frombuffer(r.content, dtype=self.value_dtype)[0]
            return self._json("GET", self._key_path(key))["value"]
        values, found = self.get_many([key])
        if not found[0]:
            raise KeyError(key)
        return values[0]

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: Any) -> bool:
        if self._path_keys:
            r = self._request("HEAD", self._key_path(key), ok=(200, 404))
            return r.status_code == 200
        return bool(self.get_many([key])[1][0])

    def __delitem__(self, key: Any) -> None:
        self._check_writable()
        if self._path_keys:
            self._request("DELETE", self._key_path(key))
            return
        if self.delete_many([key]) == 0:
            raise KeyError(key)

    def __len__(self) -> int:
        return int(self._json("GET", f"/maps/{self.id}", params={"verbose": 1})["stats"]["pairCount"])

    # -- batches
    def update(self, pairs: Mapping[Any, Any] | Iterable[tuple[Any, Any]] | None = None, /, *,
               keys: Any = None, values: Any = None, batch: int | None = None) -> int:
        """Put pairs (a mapping, (key, value) pairs, or ``keys=`` and ``values=`` arrays) in
        batches of ``batch`` pairs (default: up to 1,000,000 pairs and 256 MiB packed, 100,000
        as JSON); returns how many keys were new."""
        self._check_writable()
        if pairs is not None:
            items = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
            keys = [k for k, _ in items]
            values = [v for _, v in items]
        k_arr = self._keys_array(keys)
        v_arr = self._values_array(values, k_arr)
        if len(v_arr) != len(k_arr):
            raise ValueError(f"{len(k_arr)} keys but {len(v_arr)} values")
        if batch is None:
            record = self.key_dtype.itemsize + self.value_dtype.itemsize
            batch = max(1, min(PUT_BATCH, PUT_BATCH_BYTES // record)) if self._packed else BATCH
        added = 0
        for start in range(0, len(k_arr), batch):
            k, v = k_arr[start : start + batch], v_arr[start : start + batch]
            if self._packed:
                records = np.empty(len(k), dtype=[("k", self.key_dtype), ("v", self.value_dtype)])
                records["k"], records["v"] = k, v
                r = self._json("PUT", f"/maps/{self.id}/keys", data=records.tobytes(),
                               headers={"Content-Type": OCTET})
            else:
                body = {"keys": self._json_items(np.asarray(k)), "values": [_jsonable(x) for x in list(v)]}
                r = self._json("PUT", f"/maps/{self.id}/keys", json=body)
            added += int(r["added"])
        return added

    def get_many(self, keys: Iterable[Any], *, batch: int = BATCH) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """``(values, found)``: the values of ``keys`` (an array of the value dtype; zeros or
        empty where absent) and a boolean array saying which keys were there."""
        k_arr = self._keys_array(keys)
        values = np.zeros(len(k_arr), dtype=self.value_dtype)
        found = np.zeros(len(k_arr), dtype=bool)
        for start in range(0, len(k_arr), batch):
            k = k_arr[start : start + batch]
            n = len(k)
            if self._packed:
                r = self._request("POST", f"/maps/{self.id}/keys", data=np.ascontiguousarray(k).tobytes(),
                                  headers={"Content-Type": OCTET, "Accept": OCTET})
                found[start : start + n] = np.frombuffer(r.content[:n], dtype=np.uint8).astype(bool)
                values[start : start + n] = np.frombuffer(r.content[n:], dtype=self.value_dtype)
            else:
                reply = self._json("POST", f"/maps/{self.id}/keys", json={"keys": self._json_items(np.asarray(k))})
                found[start : start + n] = reply["found"]
                for i, (v, f) in enumerate(zip(reply["values"], reply["found"])):
                    if f:
                        values[start + i] = _from_json(v, self.value_dtype)
        return values, found

    def delete_many(self, keys: Iterable[Any], *, batch: int = BATCH) -> int:
        """Delete keys (absent ones ignored); returns how many were there."""
        self._check_writable()
        k_arr = self._keys_array(keys)
        deleted = 0
        for start in range(0, len(k_arr), batch):
            k = k_arr[start : start + batch]
            if _is_fixed(self.key_dtype):
                r = self._json("DELETE", f"/maps/{self.id}/keys", data=np.ascontiguousarray(k).tobytes(),
                               headers={"Content-Type": OCTET})
            else:
                r = self._json("DELETE", f"/maps/{self.id}/keys", json={"keys": self._json_items(np.asarray(k))})
            deleted += int(r["deleted"])
        return deleted

    # -- iteration
    def pages(self, *, values: bool = False, page: int = PAGE) -> Iterator[tuple[list[Any], list[Any] | None]]:
        """(keys, values or None) a page at a time, in the map's stable order."""
        cursor = None
        while True:
            params: dict[str, Any] = {"Limit": page}
            if values:
                params["IncludeValues"] = 1
            if cursor is not None:
                params["Cursor"] = cursor
            if self._packed:
                r = self._request("GET", f"/maps/{self.id}/keys", params=params, headers={"Accept": OCTET})
                if values:
                    records = np.frombuffer(r.content, dtype=[("k", self.key_dtype), ("v", self.value_dtype)])
                    if len(records):
                        yield records["k"].tolist(), list(records["v"])
                elif r.content:
                    yield np.frombuffer(r.content, dtype=self.key_dtype).tolist(), None
                cursor = r.headers.get("X-H5Lake-Cursor")
                if cursor is None:
                    return
                continue
            reply = self._json("GET", f"/maps/{self.id}/keys", params=params)
            if reply["keys"]:
                yield reply["keys"], reply.get("values") if values else None
            cursor = reply.get("cursor")
            if cursor is None:
                return

    def __iter__(self) -> Iterator[Any]:
        for keys, _ in self.pages():
            yield from keys

    def keys(self) -> Iterator[Any]:
        return iter(self)

    def items(self) -> Iterator[tuple[Any, Any]]:
        for keys, values in self.pages(values=True):
            assert values is not None
            yield from zip(keys, values)

    def values(self) -> Iterator[Any]:
        for _, values in self.pages(values=True):
            assert values is not None
            yield from values

    def delete(self) -> None:
        """Delete the map object (and its pairs)."""
        self._check_writable()
        self._request("DELETE", f"/maps/{self.id}")

    def close(self) -> None:
        self._session.close()

    def __repr__(self) -> str:
        return f"<h5lake Map {self.id} ({self.key_dtype} -> {self.value_dtype})>"


def _opening_maps(getitem: Callable[..., Any]) -> Callable[..., Any]:
    """h5pyd's ``Group.__getitem__``, and a link to a map opened as a `Map` where h5pyd fails
    on it (a dangling soft link to it: ``KeyError``; a path through it: ``OSError``)."""

    @functools.wraps(getitem)
    def __getitem__(self: Any, name: Any, *args: Any, **kw: Any) -> Any:
        try:
            return getitem(self, name, *args, **kw)
        except (KeyError, OSError):
            if not isinstance(name, (str, bytes)):
                raise
            text = name.decode("utf-8") if isinstance(name, bytes) else name
            if text.startswith("m-") and "/" not in text:  # a map's id, as h5pyd opens other objects by id
                try:
                    return Map(self, map_id=text)
                except MapError:
                    pass  # no such map: perhaps a link of that name
            finder = Map.__new__(Map)
            finder._connect(_connection(self))
            try:
                map_id = finder._map_at(self, text)
            except (KeyError, OSError):
                map_id = None
            finally:
                finder.close()
            if map_id is None:
                raise
            return Map(self, map_id=map_id)

    __getitem__.opens_maps = True  # type: ignore[attr-defined]
    return __getitem__


def _classing_maps(get: Callable[..., Any]) -> Callable[..., Any]:
    """h5pyd's ``Group.get``, answering `Map` for ``getclass=True`` on a link to a map, where
    h5pyd raises ``TypeError`` for an object class it does not know."""

    @functools.wraps(get)
    def get_(self: Any, name: Any, default: Any = None, getclass: bool = False, getlink: bool = False,
             **kw: Any) -> Any:
        try:
            return get(self, name, default, getclass, getlink, **kw)
        except TypeError:
            if not getclass or getlink or not isinstance(self[name], Map):
                raise
            return Map

    get_.opens_maps = True  # type: ignore[attr-defined]
    return get_


def install() -> None:
    """Let h5pyd's groups open links to maps (``group["name"]`` -> `Map`, ``group.get(name,
    getclass=True)`` -> the class `Map`). Done on import; calling it again changes nothing."""
    if not getattr(h5pyd.Group.__getitem__, "opens_maps", False):
        h5pyd.Group.__getitem__ = _opening_maps(h5pyd.Group.__getitem__)
    if not getattr(h5pyd.Group.get, "opens_maps", False):
        h5pyd.Group.get = _classing_maps(h5pyd.Group.get)


install()


def _shown(item: Any) -> str:
    if isinstance(item, np.generic):
        item = item.item()
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(item: Any) -> Any:
    if isinstance(item, np.ndarray):
        return [_jsonable(x) for x in item.tolist()]
    if isinstance(item, np.generic):
        return _jsonable(item.item())
    if isinstance(item, bytes):
        return item.decode("utf-8", "replace")
    if isinstance(item, tuple | list):
        return [_jsonable(x) for x in item]
    if isinstance(item, float) and math.isnan(item):
        return "NaN"
    return item


def _from_json(value: Any, dt: np.dtype[Any]) -> Any:
    if dt.names and isinstance(value, list):
        return tuple(value)
    return value
