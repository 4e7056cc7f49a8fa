"""The optional ``CopyObject`` capability (storage/base.py): one contract for every backend that
has it (memory: shared bytes; local directory: a hard link, storage/hardlinks.py). S3 has not got it
(docs/storage.md says why); the versions code then puts the bytes, as before."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.storage.conftest import MakeStore

from h5lake.storage import hardlinks as links
from h5lake.storage.base import CopyObject, PreconditionFailed, Store
from h5lake.storage.local import LocalStore
from h5lake.storage.posix import ETAG_XATTR, valid_etag
from h5lake.storage.s3 import S3Store

COPYING = ("memory", "local")


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture(params=COPYING)
async def store(request: pytest.FixtureRequest, make_store: MakeStore) -> AsyncIterator[Store]:
    backend = make_store(request.param)
    assert isinstance(backend, CopyObject)
    yield backend
    await backend.close()


def copier(store: Store) -> CopyObject:
    assert isinstance(store, CopyObject)
    return store


async def test_copy_makes_an_equal_object(store: Store) -> None:
    etag = await store.put("src", b"chunk bytes")
    assert await copier(store).copy("src", "a/dst", source_etag=etag, if_none_match=True) == etag
    got = await store.get("a/dst")
    assert got is not None and got.data == b"chunk bytes" and got.etag == etag
    info = await store.head("a/dst")
    assert info is not None and (info.size, info.etag) == (11, etag)
    assert [k async for k in store.list("")] == ["a/dst", "src"]


async def test_copies_are_independent(store: Store) -> None:
    etag = await store.put("src", b"version one")
    await copier(store).copy("src", "blob", source_etag=etag)
    await store.put("src", b"version two, longer")  # the head chunk rewritten after a commit
    assert (await store.get("blob")).data == b"version one"  # type: ignore[union-attr]
    await store.put("blob", b"other")
    assert (await store.get("src")).data == b"version two, longer"  # type: ignore[union-attr]
    etag = await store.put("src", b"three")
    await copier(store).copy("src", "blob2", source_etag=etag)
    await store.delete("blob2")  # gc collects the blob: the head keeps its chunk
    assert (await store.get("src")).data == b"three"  # type: ignore[union-attr]
    await copier(store).copy("src", "blob2", source_etag=etag)
    await store.delete("src")  # the head's chunk deleted: the version keeps its blob
    assert (await store.get("blob2")).data == b"three"  # type: ignore[union-attr]


async def test_copy_create_only_keeps_an_existing_key(store: Store) -> None:
    etag = await store.put("src", b"new")
    await store.put("dst", b"old")
    with pytest.raises(PreconditionFailed) as refused:
        await copier(store).copy("src", "dst", source_etag=etag, if_none_match=True)
    assert refused.value.key == "dst"
    assert (await store.get("dst")).data == b"old"  # type: ignore[union-attr]


async def test_copy_replaces_without_condition(store: Store) -> None:
    etag = await store.put("src", b"new")
    await store.put("dst", b"old")
    assert await copier(store).copy("src", "dst", source_etag=etag) == etag
    assert (await store.get("dst")).data == b"new"  # type: ignore[union-attr]
    assert await copier(store).copy("src", "dst", source_etag=etag) == etag  # again: same object
    assert (await store.get("dst")).data == b"new"  # type: ignore[union-attr]
    assert [k async for k in store.list("")] == ["dst", "src"]


async def test_copy_needs_the_source_as_it_was(store: Store) -> None:
    with pytest.raises(PreconditionFailed) as missing:
        await copier(store).copy("nothing", "dst", source_etag=md5(b"x"), if_none_match=True)
    assert missing.value.key == "nothing"
    read = await store.put("src", b"what the commit read")
    await store.put("src", b"what a writer put since")
    for create_only in (True, False):
        with pytest.raises(PreconditionFailed) as changed:
            await copier(store).copy("src", "dst", source_etag=read, if_none_match=create_only)
        assert changed.value.key == "src"
    assert await store.get("dst") is None
    assert [k async for k in store.list("")] == ["src"]


async def test_copy_refuses_bad_keys(store: Store) -> None:
    etag = await store.put("src", b"x")
    with pytest.raises(ValueError):
        await copier(store).copy("src", "../out", source_etag=etag)
    with pytest.raises(ValueError):
        await copier(store).copy("../src", "dst", source_etag=etag)


async def test_concurrent_create_only_copies_have_one_winner(store: Store) -> None:
    etags = [await store.put(f"src{i}", f"bytes {i}".encode()) for i in range(8)]

    async def one(i: int) -> int | None:
        try:
            await copier(store).copy(f"src{i}", "dst", source_etag=etags[i], if_none_match=True)
            return i
        except PreconditionFailed as e:
            assert e.key == "dst"
            return None

    won = [i for i in await asyncio.gather(*(one(i) for i in range(8))) if i is not None]
    assert len(won) == 1
    assert (await store.get("dst")).data == f"bytes {won[0]}".encode()  # type: ignore[union-attr]


async def test_a_copy_is_as_new_as_the_copy(store: Store, tmp_path: Path) -> None:
    """gc's grace period counts from ``last_modified``: a copy of old bytes is a new object."""
    etag = await store.put("src", b"old bytes")
    if isinstance(store, LocalStore):
        past = time.time() - 7200
        os.utime(store.root / "src", (past, past))
    before = time.time() - 60
    await copier(store).copy("src", "dst", source_etag=etag, if_none_match=True)
    info = await store.head("dst")
    got = await store.get("dst")
    assert info is not None and got is not None
    assert info.last_modified > before and got.last_modified > before


# --- the local directory: a hard link --------------------------------------------------------


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalStore]:
    store = LocalStore(tmp_path / "root")
    yield store
    await store.close()


def names(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "locks" not in str(p))


async def test_local_copy_is_a_hard_link(local: LocalStore) -> None:
    etag = await local.put("d/src", b"x" * 100_000)
    await local.copy("d/src", "blob", source_etag=etag, if_none_match=True)
    src, dst = os.stat(local.root / "d" / "src"), os.stat(local.root / "blob")
    assert (src.st_dev, src.st_ino) == (dst.st_dev, dst.st_ino) and dst.st_nlink == 2
    assert names(local.root) == ["blob", "d/src"]  # no temporary link left behind
    await local.put("d/src", b"y" * 100_000)  # a put gives the key a new file
    assert os.stat(local.root / "d" / "src").st_ino != dst.st_ino
    assert os.stat(local.root / "blob").st_nlink == 1
    assert (await local.get("blob")).data == b"x" * 100_000  # type: ignore[union-attr]


async def test_local_copy_keeps_the_etag_attribute(local: LocalStore) -> None:
    """The linked file's ETag attribute still describes it: no hashing on read."""
    etag = await local.put("src", b"payload")
    await local.copy("src", "dst", source_etag=etag)
    path = local.root / "dst"
    assert valid_etag(os.getxattr(path, ETAG_XATTR), os.stat(path)) == etag


async def test_local_copy_checks_the_linked_file(local: LocalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The source replaced between the caller's read and the link: the link holds other bytes,
    so nothing is created."""
    read = await local.put("src", b"read by the commit")
    real_link = os.link

    def link_after_a_write(src: str, dst: str, **kw: bool) -> None:
        if "tmp-" in dst and "tmp-" not in src:  # the link to check: a writer replaces src first
            other = local.root / "other"
            other.write_bytes(b"written meanwhile")
            os.replace(other, local.root / "src")
        return real_link(src, dst, **kw)

    monkeypatch.setattr(links.os, "link", link_after_a_write)
    with pytest.raises(PreconditionFailed) as changed:
        await local.copy("src", "blob", source_etag=read, if_none_match=True)
    assert changed.value.key == "src"
    assert await local.get("blob") is None and names(local.root) == ["src"]


@pytest.mark.parametrize("code", [errno.EXDEV, errno.EMLINK, errno.EPERM])
async def test_local_copy_without_hard_links_copies_the_bytes(
    local: LocalStore, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    etag = await local.put("src", b"bytes to copy")
    real_link = os.link

    def no_link(src: str, dst: str, **kw: bool) -> None:
        if "tmp-" in dst and "tmp-" not in src:  # the copy's link, not a create-only put's
            raise OSError(code, os.strerror(code))
        return real_link(src, dst, **kw)

    monkeypatch.setattr(links.os, "link", no_link)
    assert await local.copy("src", "dst", source_etag=etag, if_none_match=True) == etag
    assert (await local.get("dst")).data == b"bytes to copy"  # type: ignore[union-attr]
    assert os.stat(local.root / "dst").st_ino != os.stat(local.root / "src").st_ino
    with pytest.raises(PreconditionFailed) as changed:
        await local.copy("src", "dst2", source_etag=md5(b"other"), if_none_match=True)
    assert changed.value.key == "src"
    with pytest.raises(PreconditionFailed) as exists:
        await local.copy("src", "dst", source_etag=etag, if_none_match=True)
    assert exists.value.key == "dst"


async def test_local_copy_of_a_folder_is_refused(local: LocalStore) -> None:
    await local.put("a/b", b"x")
    with pytest.raises(PreconditionFailed):
        await local.copy("a", "dst", source_etag=md5(b""), if_none_match=True)
    assert await local.get("dst") is None


def test_s3_has_no_copy_capability() -> None:
    """What the versions code relies on when it checks: S3 puts the bytes (docs/storage.md)."""
    assert not hasattr(S3Store, "copy")


async def test_local_copy_survives_a_sweep_of_its_temporary_link(
    local: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing removes temporary files whose file is an hour old: a link to an old file is one."""
    etag = await local.put("src", b"old file")
    real = links.HardLinkCopies._etag_of_link
    swept: list[str] = []

    def swept_once(self: LocalStore, source: str, temp: str) -> str:
        if not swept:
            swept.append(temp)
            os.unlink(temp)
        return real(self, source, temp)

    monkeypatch.setattr(links.HardLinkCopies, "_etag_of_link", swept_once)
    assert await local.copy("src", "dst", source_etag=etag, if_none_match=True) == etag
    assert swept and os.stat(local.root / "dst").st_ino == os.stat(local.root / "src").st_ino
    assert names(local.root) == ["dst", "src"]
