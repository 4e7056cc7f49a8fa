"""Writing through the Zarr bridge: zarr-python makes and fills arrays that h5pyd reads and the
other way round, two server processes on one store, and bad input refused with a JSON 4xx that
stores nothing (docs/zarr.md, "Writes")."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import h5pyd
import numcodecs.zarr3 as nz
import numpy as np
import pytest
import requests

import zarr
from tests.conftest import Backing, auth
from tests.support.server import Server
from tests.zarr.conftest import USER, Zarr, basic, new_domain


def h5pyd_file(z: Zarr, mode: str = "r") -> Any:
    user, password = auth(USER)
    return h5pyd.File(z.domain, mode, endpoint=z.endpoint, username=user, password=password)


def test_zarr_python_writes_what_h5pyd_reads(zserver: Server) -> None:
    z = new_domain(zserver)
    group = zarr.open_group(z.fsspec(read_only=False), mode="a", zarr_format=3)
    plain = group.create_array("a/plain", shape=(20, 30), chunks=(8, 10), dtype="f4", fill_value=np.nan,
                               compressors=None, attributes={"units": "m", "scale": [1, 2.5]})
    values = np.arange(600, dtype="f4").reshape(20, 30)
    plain[:] = values
    zl = group.create_array("a/zl", shape=(100,), chunks=(16,), dtype="i8", filters=None,
                            compressors=[nz.Shuffle(elementsize=8), nz.Zlib(level=5)], fill_value=-1)
    zl[:50] = np.arange(50)
    big = group.create_array("big_endian", shape=(100,), chunks=(16,), dtype=">i4")  # zarr-python's default: zstd
    big[:] = np.arange(100)
    text = group.create_array("text", shape=(4,), chunks=(2,), dtype=str)
    text[:] = ["a", "bé", "", "long string"]
    zl.resize((120,))
    zl.attrs["note"] = "resized"
    with h5pyd_file(z) as f:
        assert np.array_equal(f["a/plain"][...], values)
        assert dict(f["a/plain"].attrs) == {"units": "m", "scale": pytest.approx([1.0, 2.5])}
        assert f["a/zl"].shape == (120,) and f["a/zl"].compression == "gzip" and f["a/zl"].shuffle
        assert list(f["a/zl"][45:55]) == [45, 46, 47, 48, 49, -1, -1, -1, -1, -1]
        assert f["a/zl"].attrs["note"] == "resized"
        assert np.array_equal(f["big_endian"][...], np.arange(100))
        assert [v.decode() if isinstance(v, bytes) else v for v in f["text"][...]] == ["a", "bé", "", "long string"]
    # and read back by zarr-python through the consolidated root
    again = zarr.open_group(z.fsspec(), mode="r", zarr_format=3, use_consolidated=True)
    assert list(again["text"][...]) == ["a", "bé", "", "long string"]
    assert again["a/zl"].shape == (120,) and again["a/zl"].attrs["note"] == "resized"


def test_obstore_writes_what_h5pyd_reads(zserver: Server) -> None:
    z = new_domain(zserver)
    # obstore's HTTPStore puts only in overwrite mode, and zarr-python writes parent groups
    # create-only: the array is made from a store rooted at its own path (the server makes the
    # groups on the way)
    array = zarr.create_array(z.obstore("/g/h/arr"), shape=(10, 10), chunks=(5, 5), dtype="u2", fill_value=7, zarr_format=3)
    array[2:8, 2:8] = np.arange(36, dtype="u2").reshape(6, 6)
    with h5pyd_file(z) as f:
        expect = np.full((10, 10), 7, dtype="u2")
        expect[2:8, 2:8] = np.arange(36).reshape(6, 6)
        assert np.array_equal(f["g/h/arr"][...], expect)
        assert f["g/h/arr"].fillvalue == 7
    # a chunk set to the fill value is deleted by zarr-python (fsspec's HTTP file system cannot
    # delete; obstore's can): 404 afterwards, read as the fill value
    assert z.get("g/h/arr/c/0/0").status_code == 200
    array[0:5, 0:5] = 7
    assert z.get("g/h/arr/c/0/0").status_code == 404
    with h5pyd_file(z) as f:
        assert np.array_equal(f["g/h/arr"][0:5, 0:5], np.full((5, 5), 7))


def test_h5pyd_writes_what_zarr_python_reads(zserver: Server) -> None:
    z = new_domain(zserver)
    with h5pyd_file(z, "a") as f:
        d = f.create_dataset("made/by/h5pyd", shape=(40, 50), chunks=(10, 25), dtype="f8", compression="gzip", shuffle=True)
        d[...] = np.linspace(0, 1, 2000).reshape(40, 50)
        f["made"].attrs["who"] = "h5pyd"
        f.create_dataset("strings", data=np.array(["one", "two"], dtype=object), dtype=h5pyd.special_dtype(vlen=str))
        f.create_dataset("at@sign", data=np.array([1, 2, 3], dtype="i2"))  # '@' after the domain is a name
    group = zarr.open_group(z.fsspec(), mode="r", zarr_format=3, use_consolidated=True)
    assert np.array_equal(group["made/by/h5pyd"][...], np.linspace(0, 1, 2000).reshape(40, 50))
    assert group["made"].attrs["who"] == "h5pyd"
    assert list(group["strings"][...]) == ["one", "two"]
    assert list(zarr.open_array(z.fsspec("/at@sign"), mode="r", zarr_format=3)[...]) == [1, 2, 3]
    # zarr-python writes into the dataset h5pyd made: a chunk as its codecs encode it
    writable = zarr.open_array(z.fsspec("/made/by/h5pyd", read_only=False), mode="r+", zarr_format=3)
    writable[0:10, 0:25] = 5.0
    with h5pyd_file(z) as f:
        assert float(f["made/by/h5pyd"][0, 0]) == 5.0 and float(f["made/by/h5pyd"][10, 0]) == float(np.linspace(0, 1, 2000)[500])


def test_two_server_processes_share_the_store(zbacking: Backing, zserver: Server, tmp_path: Path) -> None:
    other = zbacking.start(tmp_path / "second")
    try:
        z = new_domain(zserver)
        there = Zarr(other.endpoint, z.domain)
        array = zarr.create_array(z.fsspec("/x", read_only=False), shape=(6,), chunks=(3,), dtype="i4", fill_value=0, zarr_format=3)
        array[:] = [1, 2, 3, 4, 5, 6]
        assert list(zarr.open_array(there.fsspec("/x"), mode="r", zarr_format=3)[...]) == [1, 2, 3, 4, 5, 6]
        zarr.open_array(there.fsspec("/x", read_only=False), mode="r+", zarr_format=3)[0:3] = [9, 9, 9]
        assert list(zarr.open_array(z.fsspec("/x"), mode="r", zarr_format=3)[...]) == [9, 9, 9, 4, 5, 6]
    finally:
        other.stop()


ARRAY = {"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "int16", "fill_value": 0,
         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
         "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
         "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}


def _with(**changes: Any) -> dict[str, Any]:
    return {**ARRAY, **changes}


@pytest.mark.parametrize(("key", "body", "status", "words"), [
    ("bad/zarr.json", b"[1", 400, "JSON"),
    ("bad/zarr.json", b"x" * (2 << 20), 413, "limit"),
    ("bad/zarr.json", _with(zarr_format=2), 400, "zarr_format"),
    ("bad/zarr.json", _with(codecs=[{"name": "bytes"}, {"name": "lzma9"}]), 400, "lzma9"),
    ("bad/zarr.json", _with(codecs=[{"name": "bytes"}, {"name": "gzip"}]), 400, "numcodecs.zlib"),
    ("bad/zarr.json", _with(data_type="float8"), 400, "float8"),
    ("bad/zarr.json", _with(shape=[8, 8]), 400, "chunk_shape"),
    ("bad/zarr.json", _with(chunk_grid={"name": "rectilinear"}), 400, "regular"),
    ("bad/zarr.json", _with(fill_value="zz"), 400, "fill_value"),
    ("arr/zarr.json", _with(data_type="int32"), 409, "data type"),
    ("arr/zarr.json", _with(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2]}}), 409, "chunk grid"),
    ("arr/zarr.json", _with(codecs=[{"name": "bytes"}, {"name": "zstd"}]), 409, "codecs"),
    ("arr/inside/zarr.json", {"zarr_format": 3, "node_type": "group"}, 400, "array"),
    ("arr/c/0", b"\0" * 7, 400, "bytes"),
    ("arr/c/2", b"\0" * 8, 400, "outside"),
    ("arr/c/0/0", b"\0" * 8, 400, "indexes"),
    ("arr/c/-1", b"\0" * 8, 400, "non-negative"),
])
def test_bad_input_is_a_clear_4xx_and_stores_nothing(zserver: Server, key: str, body: Any, status: int, words: str) -> None:
    z = new_domain(zserver)
    assert z.put("arr/zarr.json", json=ARRAY).status_code == 201
    assert z.put("arr/c/0", data=np.arange(4, dtype="<i2").tobytes()).status_code == 200
    before = (z.get("zarr.json").json(), z.get("arr/c/0").content)
    r = z.put(key, data=body) if isinstance(body, bytes) else z.put(key, json=body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json") and words in r.json()["error"]["message"]
    assert (z.get("zarr.json").json(), z.get("arr/c/0").content) == before
    assert z.get("bad/zarr.json").status_code == 404


def test_zarr_json_put_updates_attributes_and_shape(zserver: Server) -> None:
    z = new_domain(zserver)
    assert z.put("arr/zarr.json", json=_with(attributes={"a": 1, "b": "x"})).status_code == 201
    assert z.put("arr/zarr.json", json=_with(shape=[10], attributes={"b": "y", "c": {"k": [1]}})).status_code == 200
    meta = z.get("arr/zarr.json").json()
    assert meta["shape"] == [10] and meta["attributes"] == {"b": "y", "c": '{"k":[1]}'}
    assert z.put("zarr.json", json={"zarr_format": 3, "node_type": "group", "attributes": {"t": 1.5}}).status_code == 200
    assert z.get("zarr.json").json()["attributes"]["t"] == 1.5
    assert z.put("arr/zarr.json", json={"zarr_format": 3, "node_type": "group"}).status_code == 409
    assert z.delete("arr/zarr.json").status_code == 400


@pytest.mark.parametrize("length", [8, 40_000], ids=["compact", "chunk-objects"])
def test_conditional_puts_of_chunks_and_zarr_json(zserver: Server, length: int) -> None:
    """``If-None-Match: *`` and ``If-Match`` as HTTP conditional writers send them: 412 and
    nothing stored when they do not hold (a compact dataset keeps its chunks in its document;
    a larger one has a chunk object each, put conditionally)."""
    z = new_domain(zserver)
    meta = _with(shape=[length], attributes={"v": 1})
    assert z.put("arr/zarr.json", json=meta, headers={"If-None-Match": "*"}).status_code == 201
    r = z.put("arr/zarr.json", json=_with(shape=[length], attributes={"v": 2}), headers={"If-None-Match": "*"})
    assert r.status_code == 412 and "exists" in r.json()["error"]["message"]
    got = z.get("arr/zarr.json")
    assert got.json()["attributes"] == {"v": 1}
    assert z.get("arr/zarr.json", headers={"If-None-Match": got.headers["ETag"]}).status_code == 304
    assert z.put("arr/zarr.json", json=_with(shape=[length], attributes={"v": 3}), headers={"If-Match": '"stale"'}).status_code == 412
    assert z.put("arr/zarr.json", json=_with(shape=[length], attributes={"v": 3}), headers={"If-Match": got.headers["ETag"]}).status_code == 200
    assert z.get("arr/zarr.json").json()["attributes"] == {"v": 3}
    assert z.put("grp/zarr.json", json={"zarr_format": 3, "node_type": "group"}, headers={"If-Match": "*"}).status_code == 412
    assert z.get("grp/zarr.json").status_code == 404

    one, two = np.arange(4, dtype="<i2").tobytes(), np.arange(4, 8, dtype="<i2").tobytes()
    assert z.put("arr/c/0", data=one, headers={"If-Match": "*"}).status_code == 412  # never written
    assert z.get("arr/c/0").status_code == 404
    assert z.put("arr/c/0", data=one, headers={"If-None-Match": "*"}).status_code == 200
    assert z.put("arr/c/0", data=two, headers={"If-None-Match": "*"}).status_code == 412
    first = z.get("arr/c/0")
    assert first.content == one
    assert z.put("arr/c/0", data=two, headers={"If-Match": '"other"'}).status_code == 412
    assert z.get("arr/c/0").content == one
    assert z.put("arr/c/0", data=two, headers={"If-Match": first.headers["ETag"]}).status_code == 200
    second = z.get("arr/c/0")
    assert second.content == two and second.headers["ETag"] != first.headers["ETag"]
    assert z.put("arr/c/0", data=one, headers={"If-Match": first.headers["ETag"]}).status_code == 412  # stale now
    assert z.get("arr/c/0").content == two
    assert z.get("arr/c/0", headers={"If-None-Match": second.headers["ETag"]}).status_code == 304


def test_a_domain_nested_in_another_domains_path(zserver: Server) -> None:
    """``/a.h5/b.h5`` beside ``/a.h5``: a key under the nested domain reaches it (written,
    read, listed), while the outer domain's own links keep their keys."""
    outer = new_domain(zserver)
    inner = Zarr(zserver.endpoint, outer.domain + "/b.h5")
    r = requests.put(zserver.endpoint + "/", params={"domain": inner.domain}, auth=auth(USER), timeout=30)
    assert r.status_code == 201, r.text
    assert outer.put("g/zarr.json", json={"zarr_format": 3, "node_type": "group"}).status_code == 201
    assert inner.put("arr/zarr.json", json=ARRAY).status_code == 201
    assert inner.put("arr/c/1", data=np.arange(4, dtype="<i2").tobytes()).status_code == 200
    assert list(zarr.open_array(inner.fsspec("/arr"), mode="r", zarr_format=3)[...]) == [0] * 4 + [0, 1, 2, 3]
    assert set(inner.get("zarr.json").json()["consolidated_metadata"]["metadata"]) == {"arr"}
    assert set(outer.get("zarr.json").json()["consolidated_metadata"]["metadata"]) == {"g"}  # nothing made in the outer one
    assert inner.delete("arr/c/1").status_code == 204
    assert inner.get("arr/c/1").status_code == 404
    assert outer.get("g/zarr.json").status_code == 200 and outer.get("b.h5x/zarr.json").status_code == 404
    with h5pyd_file(inner) as f:
        assert f["arr"].shape == (8,)


def test_chunk_puts_whole_or_in_pieces_and_the_root_etag(zserver: Server) -> None:
    """A chunk object's body, sent with a Content-Length (read into one buffer) or chunked
    (read in pieces), is stored as sent; one of the wrong size is 400 and stores nothing. Chunk
    writes leave the root ``zarr.json`` (the consolidated metadata) and its ETag as they were;
    a metadata change gives it another."""
    z = new_domain(zserver)
    meta = _with(shape=[40_000], chunk_grid={"name": "regular", "configuration": {"chunk_shape": [10_000]}})
    assert z.put("arr/zarr.json", json=meta).status_code == 201
    root = z.get("zarr.json")
    whole, pieces = np.arange(10_000, dtype="<i2").tobytes(), np.arange(10_000, 20_000, dtype="<i2").tobytes()
    assert z.put("arr/c/0", data=whole).status_code == 200
    assert z.put("arr/c/1", data=iter([pieces[:7], pieces[7:12_345], pieces[12_345:]])).status_code == 200
    for body in (whole[:-1], iter([whole, b"\0\0"])):
        r = z.put("arr/c/2", data=body)
        assert r.status_code == 400 and "bytes" in r.json()["error"]["message"], r.text
    assert (z.get("arr/c/0").content, z.get("arr/c/1").content, z.get("arr/c/2").status_code) == (whole, pieces, 404)
    assert z.get("zarr.json", headers={"If-None-Match": root.headers["ETag"]}).status_code == 304
    assert z.put("arr/zarr.json", json={**meta, "attributes": {"a": 1}}).status_code == 200
    assert z.get("zarr.json", headers={"If-None-Match": root.headers["ETag"]}).status_code == 200


def test_large_chunk_puts_store_whole_bodies_and_a_cut_short_one_stores_nothing(zserver: Server) -> None:
    """Chunks of more than 1 MiB (their bodies read past the HTTP parser into kept, page-aligned
    buffers and written past the page cache on the local store): each PUT stores its own body
    whole, buffers used again do not mix bodies, and a body that ends before its
    ``Content-Length`` (the client went away) leaves the chunk as it was."""
    z = new_domain(zserver)
    shape = 300_000  # 1.2 MB of int32 a chunk: whole pages and a partial last one
    assert z.put("arr/zarr.json", json=_with(shape=[shape * 3], data_type="int32",
                                             chunk_grid={"name": "regular", "configuration": {"chunk_shape": [shape]}})).status_code == 201
    bodies = [(np.arange(shape, dtype="<i4") * (i + 2)).tobytes() for i in range(3)]
    for i, body in enumerate(bodies):
        assert z.put(f"arr/c/{i}", data=body).status_code == 200
    for i, body in enumerate(bodies):
        got = z.get(f"arr/c/{i}")
        assert got.content == body and got.headers["ETag"].strip('"') == hashlib.md5(body).hexdigest()
    host, port = urlsplit(z.url).hostname, urlsplit(z.url).port
    path = urlsplit(z.url).path
    cut = (np.full(shape, -1, dtype="<i4")).tobytes()
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(f"PUT {path}/arr/c/1 HTTP/1.1\r\nHost: {host}\r\nAuthorization: {basic()}\r\n"
                  f"Content-Length: {len(cut)}\r\n\r\n".encode() + cut[: len(cut) // 2])
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):  # until the server closes the connection (no reply can go to it)
            pass
    assert z.put("arr/c/2", data=bodies[0]).status_code == 200  # the server went on
    assert z.get("arr/c/1").content == bodies[1]
    with h5pyd_file(z) as f:
        assert np.array_equal(f["arr"][...], np.concatenate([np.frombuffer(b, "<i4") for b in (bodies[0], bodies[1], bodies[0])]))
