"""A ``zarr.json`` a client PUTs, checked and turned into HDF5 terms (docs/zarr.md, "Writes"). Pure.

The reverse of `h5lake.model.zarrtypes`: a Zarr data type becomes the HDF5 type that is served
as it again, the codecs become the HDF5 filters whose byte format they read, so a chunk a Zarr
client writes is stored as it is sent. Anything else is `InvalidInput` naming what.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput
from h5lake.model.types import BOOL_MEMBERS
from h5lake.model.zarrtypes import ATTR_PREFIX

MAX_RANK = 32
MAX_EXTENT = 1 << 62
MAX_ATTRIBUTES = 4096

_INT = {f"{k}{b}": (k, b) for k in ("int", "uint") for b in (8, 16, 32, 64)}
_FLOAT = {"float16": 16, "float32": 32, "float64": 64}
_COMPLEX = {"complex64": 32, "complex128": 64}
_UTF8_VLEN = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}
_ASCII_VLEN = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """A new dataset as the REST API's ``POST /datasets`` body asks for one."""

    type_json: dict[str, Any]
    shape: list[int]
    chunks: list[int]
    filters: list[dict[str, Any]]
    fill: dict[str, Any]  # fillValue / fillValue_base64 creation properties
    attributes: dict[str, Any]
    dimension_names: list[str | None] | None

    def post_body(self, h5path: str) -> dict[str, Any]:
        props: dict[str, Any] = {"layout": {"class": "H5D_CHUNKED", "dims": self.chunks}, **self.fill}
        if self.filters:
            props["filters"] = self.filters
        maxdims = ["H5S_UNLIMITED"] * len(self.shape)  # a Zarr array may be resized any way
        body: dict[str, Any] = {"type": self.type_json, "creationProperties": props, "h5path": h5path}
        if self.shape or self.chunks:
            body["shape"] = self.shape
            body["maxdims"] = maxdims
        return body


def _order(endian: str | None) -> str:
    return "BE" if endian == "big" else "LE"


def _element(dt: Any, endian: str | None) -> tuple[dict[str, Any], np.dtype[Any]]:
    """An element type's HDF5 type JSON and the numpy dtype of its served bytes."""
    if isinstance(dt, str):
        o = _order(endian)
        bo = ">" if o == "BE" else "<"
        if dt in _INT:
            kind, bits = _INT[dt]
            base = f"H5T_STD_{'I' if kind == 'int' else 'U'}{bits}{o}"
            return {"class": "H5T_INTEGER", "base": base}, np.dtype(f"{bo}{'i' if kind == 'int' else 'u'}{bits // 8}")
        if dt in _FLOAT:
            return {"class": "H5T_FLOAT", "base": f"H5T_IEEE_F{_FLOAT[dt]}{o}"}, np.dtype(f"{bo}f{_FLOAT[dt] // 8}")
        if dt in _COMPLEX:
            part = {"class": "H5T_FLOAT", "base": f"H5T_IEEE_F{_COMPLEX[dt]}{o}"}
            return ({"class": "H5T_COMPOUND", "fields": [{"name": "r", "type": part}, {"name": "i", "type": part}]},
                    np.dtype(f"{bo}c{_COMPLEX[dt] // 4}"))
        if dt == "bool":
            return ({"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
                     "members": list(BOOL_MEMBERS)}, np.dtype("?"))
        if dt == "string":
            return dict(_UTF8_VLEN), np.dtype("O")
        if dt == "variable_length_bytes":
            return dict(_ASCII_VLEN), np.dtype("O")
        raise InvalidInput(f"Zarr data type {dt[:40]!r} has no HDF5 form here")
    if not isinstance(dt, dict) or not isinstance(dt.get("name"), str):
        raise InvalidInput("data_type must be a name or an object with a name")
    name, conf = dt["name"], dt.get("configuration") or {}
    if not isinstance(conf, dict):
        raise InvalidInput("a data_type's configuration must be an object")
    if name in ("null_terminated_bytes", "raw_bytes"):
        n = conf.get("length_bytes")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= 1 << 20:
            raise InvalidInput(f"{name} needs length_bytes, 1 to {1 << 20}")
        if name == "raw_bytes":
            return {"class": "H5T_OPAQUE", "size": n}, np.dtype(f"V{n}")
        return ({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": n, "strPad": "H5T_STR_NULLPAD"},
                np.dtype(f"S{n}"))
    if name == "structured":
        fields = conf.get("fields")
        if not isinstance(fields, list) or not fields or len(fields) > 1024:
            raise InvalidInput("a structured data type needs 1 to 1024 fields")
        out, formats = [], []
        for f in fields:
            if not isinstance(f, list) or len(f) != 2 or not isinstance(f[0], str):
                raise InvalidInput("a structured field is [name, data_type]")
            t, d = _element(f[1], "little")
            if d.kind == "O":
                raise InvalidInput("structured fields have fixed-size types")
            out.append({"name": f[0], "type": t})
            formats.append((f[0], d))
        try:
            dtype = np.dtype(formats)
        except (ValueError, TypeError) as exc:
            raise InvalidInput(f"structured fields: {exc}") from None
        return {"class": "H5T_COMPOUND", "fields": out}, dtype
    raise InvalidInput(f"Zarr data type {name[:40]!r} has no HDF5 form here")


def _filters(codecs: Any, served: np.dtype[Any], type_json: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The ``bytes`` codec's endian and the HDF5 filters the other codecs are."""
    if not isinstance(codecs, list) or not codecs or len(codecs) > 16:
        raise InvalidInput("codecs must be a list of 1 to 16 codecs")
    names = [c.get("name") if isinstance(c, dict) else None for c in codecs]
    if any(not isinstance(n, str) for n in names):
        raise InvalidInput("each codec is an object with a name")
    head = codecs[0]
    conf = head.get("configuration") or {}
    if served.kind == "O":
        want = "vlen-utf8" if type_json.get("charSet") == "H5T_CSET_UTF8" else "vlen-bytes"
        if head["name"] != want:
            raise InvalidInput(f"this data type takes the {want} codec first")
        endian = None
    elif head["name"] != "bytes":
        raise InvalidInput(f"the first codec must be bytes, not {str(head['name'])[:40]!r} (transpose and sharding are not supported)")
    else:
        endian = conf.get("endian", "little")
        if endian not in ("little", "big"):
            raise InvalidInput("the bytes codec's endian is little or big")
    out: list[dict[str, Any]] = []
    for c in codecs[1:]:
        out.append(_filter(c, served))
    return endian, out


def _int_conf(conf: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    v = conf.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
        raise InvalidInput(f"codec configuration {key} must be an integer from {low} to {high}")
    return v


def _filter(c: dict[str, Any], served: np.dtype[Any]) -> dict[str, Any]:
    name, conf = c["name"], c.get("configuration") or {}
    if not isinstance(conf, dict):
        raise InvalidInput(f"codec {name[:40]!r}: configuration must be an object")
    if name == "numcodecs.zlib":
        return {"id": 1, "level": _int_conf(conf, "level", 1, 0, 9)}
    if name == "numcodecs.shuffle":
        size = _int_conf(conf, "elementsize", served.itemsize, 1, 1 << 16)
        if size != served.itemsize:
            raise InvalidInput(f"numcodecs.shuffle's elementsize must be the element size {served.itemsize}")
        return {"id": 2}
    if name == "numcodecs.fletcher32":
        return {"id": 3}
    if name == "zstd":
        level = _int_conf(conf, "level", 0, -131072, 22)
        return {"id": 32015, "level": 3 if level == 0 else max(1, level)}  # zstd's level 0 is its default, 3
    if name == "blosc":
        cname = conf.get("cname", "zstd")
        if cname not in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
            raise InvalidInput(f"blosc cname {str(cname)[:20]!r} is not one HDF5's blosc filter has")
        shuffle = conf.get("shuffle", "noshuffle")
        if shuffle not in ("noshuffle", "shuffle", "bitshuffle"):
            raise InvalidInput("blosc shuffle is noshuffle, shuffle or bitshuffle")
        return {"id": 32001, "compressor": cname,
                "level": _int_conf(conf, "clevel", 5, 0, 9), "shuffle": shuffle}
    if name == "gzip":
        raise InvalidInput("codec gzip: HDF5's deflate stores zlib streams; use numcodecs.zlib")
    raise InvalidInput(f"codec {name[:40]!r} has no HDF5 filter here (see docs/zarr.md)")


def _float_from_json(v: Any, dt: np.dtype[Any]) -> Any:
    if isinstance(v, str):
        if v in ("NaN", "Infinity", "-Infinity"):
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
        if v.startswith("0x"):
            try:
                raw = int(v, 16).to_bytes(dt.itemsize, "big")
            except (ValueError, OverflowError):
                raise InvalidInput(f"fill_value {v[:40]!r} is not {dt.itemsize} bytes of hex") from None
            return np.frombuffer(raw, dtype=dt.newbyteorder(">"))[0]
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v
    raise InvalidInput(f"fill_value {str(v)[:40]!r} is not a number")


def _fill(v: Any, served: np.dtype[Any], type_json: dict[str, Any]) -> dict[str, Any]:
    """The creation properties holding the fill value (packed bytes in base64 where fixed-size)."""
    if v is None:
        return {}
    if served.kind == "O":
        if type_json.get("charSet") == "H5T_CSET_UTF8":
            if not isinstance(v, str):
                raise InvalidInput("a string array's fill_value is a string")
            return {"fillValue": v} if v else {}
        return {}
    try:
        if served.names is not None or served.kind in "SV":
            if not isinstance(v, str):
                raise InvalidInput("this data type's fill_value is base64 text")
            raw = base64.b64decode(v, validate=True)
            arr = np.zeros((), dtype=served)
            if len(raw) > served.itemsize:
                raise InvalidInput(f"fill_value holds {len(raw)} bytes, more than {served.itemsize}")
            arr_bytes = raw + bytes(served.itemsize - len(raw))
            arr = np.frombuffer(arr_bytes, dtype=served).reshape(())
        elif served.kind == "c":
            if not isinstance(v, list) or len(v) != 2:
                raise InvalidInput("a complex fill_value is [real, imaginary]")
            part = np.dtype(f"{served.byteorder}f{served.itemsize // 2}")
            arr = np.array(complex(float(_float_from_json(v[0], part)), float(_float_from_json(v[1], part))), dtype=served)
        elif served.kind == "f":
            arr = np.array(_float_from_json(v, served), dtype=served)
        elif served.kind == "b":
            if not isinstance(v, bool):
                raise InvalidInput("a bool fill_value is true or false")
            arr = np.array(v, dtype=served)
        else:
            if not isinstance(v, int) or isinstance(v, bool):
                raise InvalidInput("an integer fill_value is an integer")
            info = np.iinfo(served)
            if not info.min <= v <= info.max:
                raise InvalidInput(f"fill_value {v} is outside {served}")
            arr = np.array(v, dtype=served)
    except (binascii.Error, ValueError, OverflowError) as exc:
        raise InvalidInput(f"fill_value: {exc}") from None
    if not arr.tobytes().strip(b"\0"):
        return {}
    if served.kind == "c":  # stored as h5py's compound of two floats
        part = np.dtype(f"{served.byteorder}f{served.itemsize // 2}")
        raw = np.array([arr.real, arr.imag], dtype=part).tobytes()
    elif served.kind == "b":
        raw = struct.pack("b", int(bool(arr)))
    else:
        raw = arr.tobytes()
    return {"fillValue_base64": base64.b64encode(raw).decode()}


def _ints(v: Any, what: str, low: int) -> list[int]:
    if not isinstance(v, list) or len(v) > MAX_RANK or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise InvalidInput(f"{what} must be a list of at most {MAX_RANK} integers")
    if any(not low <= i <= MAX_EXTENT for i in v):
        raise InvalidInput(f"{what} must hold integers from {low} to {MAX_EXTENT}")
    return list(v)


def check_header(body: Any) -> str:
    """The node type of a ``zarr.json`` body (``group`` or ``array``), checked to be Zarr v3."""
    if not isinstance(body, dict):
        raise InvalidInput("zarr.json must be a JSON object")
    if body.get("zarr_format") != 3:
        raise InvalidInput("zarr.json must have zarr_format 3")
    kind = body.get("node_type")
    if kind not in ("group", "array"):
        raise InvalidInput("zarr.json node_type must be group or array")
    attrs = body.get("attributes", {})
    if not isinstance(attrs, dict) or len(attrs) > MAX_ATTRIBUTES:
        raise InvalidInput(f"zarr.json attributes must be an object of at most {MAX_ATTRIBUTES} entries")
    return str(kind)


def user_attributes(body: dict[str, Any]) -> dict[str, Any]:
    """The attributes a client sets: those h5lake adds (``_h5lake_*``) are not the client's."""
    return {k: v for k, v in (body.get("attributes") or {}).items() if not k.startswith(ATTR_PREFIX)}


def array_spec(body: dict[str, Any]) -> ArraySpec:
    """A new array's ``zarr.json`` as HDF5 terms; `InvalidInput` for anything not supported."""
    shape = _ints(body.get("shape"), "shape", 0)
    grid = body.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        raise InvalidInput("chunk_grid must be the regular grid")
    chunks = _ints((grid.get("configuration") or {}).get("chunk_shape"), "chunk_shape", 1)
    if len(chunks) != len(shape):
        raise InvalidInput("chunk_shape must have one extent per dimension of shape")
    cke = body.get("chunk_key_encoding", {"name": "default"})
    sep = (cke.get("configuration") or {}).get("separator", "/") if isinstance(cke, dict) else None
    if not isinstance(cke, dict) or cke.get("name") != "default" or sep != "/":
        raise InvalidInput("chunk_key_encoding must be the default one with separator '/'")
    if body.get("storage_transformers"):
        raise InvalidInput("storage transformers are not supported")
    codecs = body.get("codecs")
    head = codecs[0] if isinstance(codecs, list) and codecs and isinstance(codecs[0], dict) else {}
    endian = (head.get("configuration") or {}).get("endian") if head.get("name") == "bytes" else None
    type_json, served = _element(body.get("data_type"), endian if isinstance(endian, str) else None)
    endian, filters = _filters(codecs, served, type_json)
    names = body.get("dimension_names")
    if names is not None and (not isinstance(names, list) or len(names) != len(shape)
                              or not all(n is None or isinstance(n, str) for n in names)):
        raise InvalidInput("dimension_names must be a list of names (or nulls), one per dimension")
    fill = _fill(body.get("fill_value"), served, type_json)
    return ArraySpec(type_json, shape, chunks, filters, fill, user_attributes(body), names)


def same_array(current: dict[str, Any], body: dict[str, Any]) -> str | None:
    """What a PUT of an existing array's ``zarr.json`` changes that cannot change (its type, chunk
    grid or codecs), or None."""
    if current.get("data_type") != body.get("data_type"):
        return "its data type"
    grid = body.get("chunk_grid")
    if not isinstance(grid, dict) or current["chunk_grid"] != {"name": grid.get("name"), "configuration": {
            "chunk_shape": (grid.get("configuration") or {}).get("chunk_shape")}}:
        return "its chunk grid"
    codecs = body.get("codecs")
    if not isinstance(codecs, list) or [c.get("name") if isinstance(c, dict) else None for c in codecs] != [
            c["name"] for c in current["codecs"]]:
        return "its codecs"
    mine = (current["codecs"][0].get("configuration") or {}).get("endian")
    theirs = ((codecs[0].get("configuration") or {}) if isinstance(codecs[0], dict) else {}).get("endian")
    if mine is not None and theirs is not None and mine != theirs:
        return "its byte order"
    return None


def attribute_spec(value: Any) -> dict[str, Any]:
    """A Zarr attribute's JSON value as an HDF5 attribute: strings, numbers, booleans and lists
    of one kind of them keep their type; anything else is kept as its JSON text (a string)."""
    import orjson

    if isinstance(value, str):
        return {"type": dict(_UTF8_VLEN), "shape": "H5S_SCALAR", "value": value}
    if isinstance(value, bool):
        return {"type": {"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
                         "members": list(BOOL_MEMBERS)}, "shape": "H5S_SCALAR", "value": int(value)}
    if isinstance(value, int) and -(1 << 63) <= value < 1 << 63:
        return {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": "H5S_SCALAR", "value": value}
    if isinstance(value, float):
        return {"type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}, "shape": "H5S_SCALAR", "value": value}
    if isinstance(value, list) and value and len(value) <= 1 << 20:
        kinds = {type(v) for v in value}
        if kinds == {str}:
            return {"type": dict(_UTF8_VLEN), "shape": [len(value)], "value": value}
        if kinds <= {int} and all(-(1 << 63) <= v < 1 << 63 for v in value):
            return {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": [len(value)], "value": value}
        if kinds <= {int, float}:
            return {"type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}, "shape": [len(value)], "value": value}
    return {"type": dict(_UTF8_VLEN), "shape": "H5S_SCALAR", "value": orjson.dumps(value).decode()}
