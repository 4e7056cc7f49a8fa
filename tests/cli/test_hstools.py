"""The h5pyd 1.0 command-line tools, run as real subprocesses against a real h5lake server.

Each tool gets the endpoint and credentials through HS_ENDPOINT, HS_USERNAME and HS_PASSWORD and
runs in a temporary working directory (so no stray ``.hscfg`` is read). Results are checked
through h5pyd, h5py and the tools' own output. Where h5pyd 1.0 itself misbehaves (hsmv, hsinfo
with a domain), the test pins down what happens, as described in shared/API-NOTES.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import h5pyd
import numpy as np
import pytest
import requests
from tests.support.forkrun import ForkRunner
from tests.support.server import USERS

pytestmark = pytest.mark.one_backend  # h5pyd's command-line tools' behaviour; stored values on every store are tests/roundtrip's

Run = Callable[..., subprocess.CompletedProcess[str]]

# --- running the tools ------------------------------------------------------------------------


def _tool(name: str) -> str:
    """The console script installed beside this interpreter (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    assert found is not None, f"h5pyd command-line tool {name} is not installed"
    return found


@pytest.fixture(scope="module")
def tool_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hstools")


@pytest.fixture(scope="module")
def hs(endpoint: str, tool_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """``hs("hsls", "-r", domain)`` runs a tool as test_user1 (``user=`` for another) and returns
    the finished process; output is text.

    Each run is a process of its own, forked from one that imported numpy, h5py and h5pyd once
    (``tests/support/forkrun.py``): the tool's script and modules run in the fork, as in a fresh
    interpreter, without its ~0.5 CPU-s of imports (this module runs sixty tools)."""
    runner = ForkRunner(["numpy", "h5py", "h5pyd", "requests"], tmp_path_factory.mktemp("hstools-runs"))

    def run(
        name: str, *args: str, user: str = "test_user1", password: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HS_")}
        env.update(HS_ENDPOINT=endpoint, HS_USERNAME=user, HS_PASSWORD=password or USERS[user])
        return runner.run([_tool(name), *args], cwd=tool_dir, env=env, timeout=300)

    yield run
    runner.close()


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a tool that must have succeeded."""
    assert proc.returncode == 0, f"{proc.args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def squash(text: str) -> list[str]:
    """Output lines with runs of blanks made single (the tools pad columns)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def open_file(endpoint: str, domain: str, mode: str = "r", user: str = "test_user1") -> h5pyd.File:
    return h5pyd.File(domain, mode, endpoint=endpoint, username=user, password=USERS[user])


def exists(endpoint: str, domain: str) -> bool:
    r = requests.get(
        endpoint + "/", params={"domain": domain}, auth=("test_user1", USERS["test_user1"]), timeout=30
    )
    assert r.status_code in (200, 404, 410), r.text
    return r.status_code == 200


@dataclass(frozen=True)
class Listing:
    """One entry line of ``hsls folder/``: owner [size] class date time path."""

    owner: str
    size: int | None
    kind: str
    path: str


def folder_listing(out: str) -> tuple[list[Listing], str]:
    entries: list[Listing] = []
    trailer = []
    for line in squash(out):
        parts = line.split(" ")
        if len(parts) >= 5 and parts[-4] in ("domain", "folder"):
            size = int(parts[1]) if len(parts) == 6 else None
            entries.append(Listing(parts[0], size, parts[-4], parts[-1]))
        else:
            trailer.append(line)
    return entries, "\n".join(trailer)


# --- the source file and the loaded domain ---------------------------------------------------

DATA = np.arange(100 * 60, dtype="f4").reshape(100, 60) / 7
STRINGS = ["alpha", "βeta", "", "dddd ü"]


def make_source(path: Path) -> Path:
    """A small HDF5 file with groups, attributes of several types, a chunked gzip+shuffle dataset,
    a vlen string dataset, a scalar, a contiguous dataset, and soft and external links."""
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "hsload test"
        f.attrs["version"] = np.int32(3)
        f.attrs["ratio"] = np.array([[1.0, 2.0], [3.0, 4.5]])
        f.attrs["fixed"] = np.bytes_(b"abc")
        g1 = f.create_group("g1")
        g2 = g1.create_group("g2")
        g2.attrs["scale"] = np.array([1.5, 2.5], dtype="f4")
        d = g1.create_dataset(
            "data", data=DATA, chunks=(25, 20), compression="gzip", compression_opts=6, shuffle=True
        )
        d.attrs["units"] = "m/s"
        d.attrs["valid_range"] = np.array([0, 1000], dtype="i2")
        f.create_dataset("strs", data=STRINGS, dtype=h5py.string_dtype())
        f.create_dataset("ints", data=np.arange(10, dtype="i8") * -3)
        f["scalar"] = 42.5
        f["soft"] = h5py.SoftLink("/g1/data")
        g1["ext"] = h5py.ExternalLink("other.h5", "/x")
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_source(tmp_path_factory.mktemp("src") / "source.h5")


def _new_folder(endpoint: str, home: str) -> str:
    folder = f"{home}/cli-{uuid.uuid4().hex[:10]}"
    r = requests.put(
        endpoint + "/",
        params={"domain": folder},
        json={"folder": True},
        auth=("test_user1", USERS["test_user1"]),
        timeout=30,
    )
    assert r.status_code == 201, r.text
    return folder + "/"


@pytest.fixture
def workspace(endpoint: str, home_folder: str) -> str:
    """A fresh folder (path ending in /) owned by test_user1, for one test."""
    return _new_folder(endpoint, home_folder)


@pytest.fixture(scope="module")
def loaded(hs: Run, endpoint: str, home_folder: str, source: Path) -> str:
    """The source file loaded with ``hsload`` into a folder of its own; returns the domain.

    Tests that change a domain work on an ``hscp`` copy of this one."""
    folder = _new_folder(endpoint, home_folder)
    proc = hs("hsload", str(source), folder)
    ok(proc)
    domain = folder + source.name
    assert exists(endpoint, domain)
    return domain


# --- comparing trees -------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Bytes become str, so that h5py's and h5pyd's string conventions compare equal."""
    arr = np.asarray(value)
    if arr.dtype.kind in ("O", "S", "U"):
        flat = [v.decode() if isinstance(v, bytes) else str(v) for v in arr.reshape(-1)]
        return np.array(flat, dtype=object).reshape(arr.shape)
    return arr


def assert_same_value(expected: Any, actual: Any, where: str) -> None:
    e, a = _plain(expected), _plain(actual)
    assert e.shape == a.shape, f"{where}: shape {a.shape} != {e.shape}"
    if e.dtype != object:
        assert e.dtype == a.dtype, f"{where}: dtype {a.dtype} != {e.dtype}"
    assert np.array_equal(e, a), f"{where}: {a!r} != {e!r}"


def assert_same_attrs(src: Any, tgt: Any, where: str) -> None:
    assert sorted(src.attrs) == sorted(tgt.attrs), where
    for name in src.attrs:
        assert_same_value(src.attrs[name], tgt.attrs[name], f"{where} attribute {name}")


def assert_same_tree(src: h5py.File, tgt: Any, *, same_chunks: bool = True) -> None:
    """Every group, dataset, link, attribute and value of ``src`` is in ``tgt`` (h5py or h5pyd)."""
    groups: list[str] = ["/"]
    datasets: list[str] = []
    src.visititems(lambda name, obj: (groups if isinstance(obj, h5py.Group) else datasets).append(name))
    assert set(datasets) == {"g1/data", "strs", "ints", "scalar"}

    for name in groups:
        s, t = src[name], tgt[name]
        assert_same_attrs(s, t, name)
        assert sorted(s.keys()) == sorted(t.keys()), name
        for title in s:
            sl, tl = s.get(title, getlink=True), t.get(title, getlink=True)
            kind = type(sl).__name__
            assert type(tl).__name__ == kind, f"{name}/{title}: {type(tl).__name__} != {kind}"
            if kind == "SoftLink":
                assert tl.path == sl.path
            elif kind == "ExternalLink":
                assert (tl.filename, tl.path) == (sl.filename, sl.path)

    for name in datasets:
        s, t = src[name], tgt[name]
        assert s.shape == t.shape, name
        assert_same_value(s[()], t[()], name)
        assert_same_attrs(s, t, name)
        if s.dtype.kind != "O":
            assert s.dtype == t.dtype, name
        if s.compression:
            assert (t.compression, t.shuffle) == (s.compression, s.shuffle), name
            if same_chunks:
                assert t.chunks == s.chunks, name


# --- hstouch ---------------------------------------------------------------------------------


def test_hstouch_domain_and_folder(hs: Run, endpoint: str, home_folder: str, workspace: str) -> None:
    domain = workspace + "touched.h5"
    ok(hs("hstouch", domain))
    with open_file(endpoint, domain) as f:
        assert len(f) == 0
        root = f.id.id
        assert f.owner == "test_user1"
    # Touching an existing domain opens it in mode a: it stays the same domain.
    ok(hs("hstouch", domain))
    with open_file(endpoint, domain) as f:
        assert f.id.id == root

    folder = f"{home_folder}/x/"
    requests.delete(
        endpoint + "/", params={"domain": folder[:-1]}, auth=("test_user1", USERS["test_user1"]), timeout=30
    )
    try:
        ok(hs("hstouch", folder))
        with h5pyd.Folder(
            folder, endpoint=endpoint, username="test_user1", password=USERS["test_user1"]
        ) as d:
            assert d.is_folder
            assert d.owner == "test_user1"
            assert len(d) == 0
        ok(hs("hstouch", folder + "inside.h5"))
        with h5pyd.Folder(
            folder, endpoint=endpoint, username="test_user1", password=USERS["test_user1"]
        ) as d:
            assert list(d) == ["inside.h5"]
    finally:
        ok(hs("hsrm", folder + "inside.h5"))
        ok(hs("hsrm", folder))

    # A domain whose folder does not exist is refused.
    proc = hs("hstouch", workspace + "missing/d.h5")
    assert proc.returncode != 0
    assert "not found" in proc.stdout + proc.stderr
    assert not exists(endpoint, workspace + "missing/d.h5")


# --- hsls ------------------------------------------------------------------------------------


def test_hsls_folder(hs: Run, endpoint: str, workspace: str) -> None:
    ok(hs("hstouch", workspace + "b.h5"))
    ok(hs("hstouch", workspace + "a.h5"))
    ok(hs("hstouch", workspace + "sub/"))
    with open_file(endpoint, workspace + "a.h5", "r+") as f:
        f.create_dataset("v", data=np.arange(1000, dtype="f8"))

    entries, trailer = folder_listing(ok(hs("hsls", workspace)))
    assert [(e.kind, e.path) for e in entries] == [
        ("folder", workspace),
        ("domain", workspace + "a.h5"),
        ("domain", workspace + "b.h5"),
        ("folder", workspace + "sub/"),
    ]
    assert {e.owner for e in entries} == {"test_user1"}
    assert {e.size for e in entries} == {None}
    assert trailer == "4 items"

    # -v asks the server for sizes (GET /domains?verbose=1): domains get their total size, and the
    # tool sums them up. Sizes come from the catalogs, which may lag a write by a moment.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with open_file(endpoint, workspace + "a.h5") as f:
            if f.total_size > 8000:
                break
        time.sleep(0.2)
    entries, trailer = folder_listing(ok(hs("hsls", "-v", workspace)))
    sizes = {e.path: e.size for e in entries}
    assert sizes[workspace] is None and sizes[workspace + "sub/"] is None
    size_a, size_b = sizes[workspace + "a.h5"], sizes[workspace + "b.h5"]
    assert size_a is not None and size_b is not None
    with open_file(endpoint, workspace + "a.h5") as f:
        assert size_a == f.total_size
        assert size_a > 8000  # the 1000 float64 values
    with open_file(endpoint, workspace + "b.h5") as f:
        assert 0 < size_b == f.total_size
    total = size_a + size_b
    assert trailer.splitlines() == ["4 items", f"{total} bytes"]

    # A missing folder lists nothing.
    assert squash(ok(hs("hsls", workspace + "nothing/"))) == ["0 items"]


def test_hsls_recursive_domain(hs: Run, endpoint: str, loaded: str) -> None:
    lines = squash(ok(hs("hsls", "-r", loaded)))
    assert sorted(lines) == sorted(
        [
            "/g1 Group",
            "/g1/data Dataset {100, 60}",
            "/g1/ext ExternalLink {/x//other.h5}",
            "/g1/g2 Group",
            "/ints Dataset {10}",
            "/scalar Dataset {{SCALAR}}",
            "/soft SoftLink {/g1/data}",
            "/strs Dataset {4}",
        ]
    )

    # Without -r only the root group's links are shown (the external link is in g1).
    lines = squash(ok(hs("hsls", loaded)))
    assert [line.split(" ")[0] for line in lines] == ["g1", "ints", "scalar", "soft", "strs"]

    out = ok(hs("hsls", "-r", "-v", "--showattrs", loaded))
    with open_file(endpoint, loaded) as f:
        ids = {name: f[name].id.id for name in ("g1", "g1/g2", "g1/data", "strs", "ints")}
    lines = squash(out)
    for name, obj_id in ids.items():
        header = next(i for i, line in enumerate(lines) if line.split(" ")[0] == "/" + name)
        assert lines[header + 1] == f"UUID: {obj_id}", name
    assert "/g1/data Dataset {100/100, 60/60}" in lines
    assert "Chunks: [25, 20] 2000 bytes, 0/12 allocated chunks" in lines  # h5pyd 1.0 never asks for the count
    assert "Filter-0: shuffle OPT {6}" in lines
    assert "Filter-1: gzip OPT {6}" in lines
    assert "Type: float32" in lines
    assert "attr: units m/s" in lines
    assert "attr: title hsload test" in lines
    assert "attr: scale [1.5,...]" in lines


def test_hsls_reports_bad_credentials_and_missing_domain(hs: Run, workspace: str) -> None:
    proc = hs("hsls", workspace, password="wrong")
    assert proc.returncode != 0
    assert "401" in proc.stdout + proc.stderr
    proc = hs("hsls", workspace + "missing.h5")
    assert proc.returncode == 0  # hsls reports and goes on
    assert f"Domain {workspace}missing.h5 not found" in proc.stdout


# --- hsinfo ----------------------------------------------------------------------------------


def test_hsinfo_server(hs: Run, endpoint: str, home_folder: str) -> None:
    lines = squash(ok(hs("hsinfo")))
    assert "server name: h5lake" in lines
    assert "server state: READY" in lines
    assert f"endpoint: {endpoint}" in lines
    assert "username: test_user1" in lines
    assert f"home: {home_folder}/" in lines
    assert "node count: 1" in lines
    assert any(re.fullmatch(r"server version: \d+\.\d+\.\d+", line) for line in lines)
    assert any(re.fullmatch(r"up: \d+ (sec|min|hour|day).*", line) for line in lines), lines

    # A wrong password (401 on /about) is reported, though hsinfo still exits 0.
    proc = hs("hsinfo", password="wrong")
    assert proc.stdout.strip() == "username/password not valid for username: test_user1"


def test_hsinfo_domain_points_to_hsstat(hs: Run, loaded: str) -> None:
    """h5pyd 1.0's hsinfo no longer describes domains: it exits 1 and names hsstat."""
    proc = hs("hsinfo", loaded)
    assert proc.returncode == 1
    assert "Use the hsstat command" in proc.stderr


# --- hsacl -----------------------------------------------------------------------------------

FLAGS = ["create", "read", "update", "delete", "readACL", "updateACL"]


def acl_rows(out: str) -> dict[str, list[bool]]:
    rows: dict[str, list[bool]] = {}
    for line in squash(out):
        parts = line.split(" ")
        if len(parts) == 7 and set(parts[1:]) <= {"True", "False"}:
            rows[parts[0]] = [p == "True" for p in parts[1:]]
    return rows


def test_hsacl_list_grant_and_revoke(hs: Run, endpoint: str, workspace: str) -> None:
    domain = workspace + "shared.h5"
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("v", data=np.arange(6, dtype="i4"))

    out = ok(hs("hsacl", domain))
    assert squash(out)[0] == "username " + " ".join(FLAGS)
    rows = acl_rows(out)
    assert rows["test_user1"] == [True] * 6
    assert "default" not in rows  # as HSDS: a domain that is not public lists no default entry
    assert "test_user2" not in rows
    with pytest.raises(OSError) as denied:
        open_file(endpoint, domain, user="test_user2")
    assert denied.value.errno == 403

    # test_user2 may not grant itself access.
    proc = hs("hsacl", domain, "+r", "test_user2", user="test_user2")
    assert proc.returncode != 0
    assert "test_user2" not in acl_rows(ok(hs("hsacl", domain)))

    rows = acl_rows(ok(hs("hsacl", domain, "+r", "test_user2")))
    assert rows == {"test_user2": [False, True, False, False, False, False]}
    assert acl_rows(ok(hs("hsacl", domain)))["test_user2"] == [False, True, False, False, False, False]
    with open_file(endpoint, domain, user="test_user2") as f:
        assert f["v"][...].tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(OSError):  # read only: test_user2 may not write
        open_file(endpoint, domain, "r+", user="test_user2")

    rows = acl_rows(ok(hs("hsacl", domain, "-r", "test_user2")))
    assert rows == {"test_user2": [False] * 6}
    with pytest.raises(OSError) as denied:
        open_file(endpoint, domain, user="test_user2")
    assert denied.value.errno == 403


# --- hsrm ------------------------------------------------------------------------------------


def test_hsrm_domain_and_empty_folder(hs: Run, endpoint: str, workspace: str) -> None:
    domain = workspace + "gone.h5"
    ok(hs("hstouch", domain))
    ok(hs("hstouch", workspace + "kept.h5"))
    ok(hs("hstouch", workspace + "empty/"))
    ok(hs("hstouch", workspace + "full/"))
    ok(hs("hstouch", workspace + "full/inner.h5"))

    ok(hs("hsrm", domain))
    with pytest.raises(FileNotFoundError):
        open_file(endpoint, domain)
    ok(hs("hsrm", workspace + "empty/"))
    assert not exists(endpoint, workspace + "empty")

    # A folder that still holds something, and a domain that is not there, are refused.
    proc = hs("hsrm", workspace + "full/")
    assert proc.returncode != 0
    assert "sub-items" in proc.stdout + proc.stderr
    proc = hs("hsrm", workspace + "never.h5")
    assert proc.returncode != 0
    assert "not found" in proc.stdout + proc.stderr

    entries, _ = folder_listing(ok(hs("hsls", workspace)))
    assert [e.path for e in entries] == [workspace, workspace + "full/", workspace + "kept.h5"]


def test_hsrm_folder_right_after_its_domain(hs: Run, endpoint: str, workspace: str) -> None:
    """A folder may be removed as soon as its last domain is: what a deleted domain leaves
    for background clean-up (chunk catalogs) does not count as a sub-domain."""
    for name in ("a", "b"):
        ok(hs("hstouch", f"{workspace}{name}/"))
        with open_file(endpoint, f"{workspace}{name}/data.h5", "w") as f:
            d = f.create_dataset("many", shape=(300,), dtype="i4", chunks=(1,))
            d[...] = np.arange(300)  # 300 chunks: their clean-up takes a while
    ok(hs("hsrm", workspace + "a/data.h5"))
    r = requests.delete(
        endpoint + "/",
        params={"domain": workspace + "a"},
        auth=("test_user1", USERS["test_user1"]),
        timeout=30,
    )
    assert r.status_code == 200, r.text

    ok(hs("hsrm", workspace + "b/data.h5"))
    ok(hs("hsrm", workspace + "b/"))
    entries, _ = folder_listing(ok(hs("hsls", workspace)))
    assert [e.path for e in entries] == [workspace]


# --- hsload ----------------------------------------------------------------------------------


def test_hsload_values_and_attributes(endpoint: str, loaded: str, source: Path) -> None:
    with h5py.File(source, "r") as src, open_file(endpoint, loaded) as tgt:
        assert_same_tree(src, tgt)
        data = tgt["g1/data"]
        assert data.chunks == (25, 20)
        assert (data.compression, data.compression_opts, data.shuffle) == ("gzip", 6, True)
        np.testing.assert_array_equal(data[...], DATA)
        np.testing.assert_array_equal(data[17:83:3, 5:55:7], DATA[17:83:3, 5:55:7])
        np.testing.assert_array_equal(tgt["soft"][10:12, :4], DATA[10:12, :4])
        # h5pyd 1.0 returns vlen strings read from datasets as bytes (API-NOTES §7.9).
        assert [s.decode() for s in tgt["strs"][...]] == STRINGS
        assert tgt["scalar"][()] == 42.5
        assert tgt["scalar"].shape == ()
        assert tgt.attrs["title"] == "hsload test"
        assert tgt.attrs["version"].dtype == np.int32
        ext = tgt["g1"].get("ext", getlink=True)
        assert (ext.filename, ext.path) == ("other.h5", "/x")


# --- hsget -----------------------------------------------------------------------------------


def test_hsget_exports_the_domain(hs: Run, loaded: str, source: Path, tmp_path: Path) -> None:
    out = tmp_path / "exported.h5"
    ok(hs("hsget", loaded, str(out)))
    with h5py.File(source, "r") as src, h5py.File(out, "r") as exported:
        # hsget picks its own chunk shapes; everything else must be the same.
        assert_same_tree(src, exported, same_chunks=False)
        np.testing.assert_array_equal(exported["g1/data"][...], DATA)
        assert h5py.check_string_dtype(exported["strs"].dtype) is not None
        assert [s.decode() for s in exported["strs"][...]] == STRINGS

    proc = hs("hsget", loaded + ".missing", str(tmp_path / "nothing.h5"))
    assert proc.returncode != 0
    assert "not found" in proc.stdout + proc.stderr


# --- hsstat ----------------------------------------------------------------------------------


def stat_fields(out: str) -> dict[str, str]:
    fields = {}
    for line in out.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def test_hsstat(hs: Run, endpoint: str, loaded: str) -> None:
    fields = stat_fields(ok(hs("hsstat", loaded)))
    with open_file(endpoint, loaded) as f:
        root = f.id.id
    assert fields["domain"] == loaded
    assert fields["owner"] == "test_user1"
    assert fields["id"] == root
    assert fields["num objects"] == "7"  # root, g1, g2, data, strs, ints, scalar
    # 12 chunks of g1/data (100x60 in 25x20) and at least one each for strs, ints and scalar
    assert int(fields["num chunks"]) >= 15
    allocated, metadata = int(fields["allocated_bytes"]), int(fields["metadata_bytes"])
    assert 0 < allocated < DATA.nbytes  # gzip + shuffle shrank the float data
    assert metadata > 0
    assert int(fields["total_size"]) == allocated + metadata

    folder = loaded.rsplit("/", 1)[0] + "/"
    fields = stat_fields(ok(hs("hsstat", folder)))
    assert fields["folder"] == folder
    assert fields["owner"] == "test_user1"

    proc = hs("hsstat", loaded + ".missing")
    assert proc.returncode != 0
    assert "not found" in proc.stdout + proc.stderr


# --- hscp and hsdiff -------------------------------------------------------------------------


def test_hscp_copies_everything(hs: Run, endpoint: str, loaded: str, source: Path, workspace: str) -> None:
    copy = workspace + "copy.h5"
    ok(hs("hscp", loaded, copy))
    with h5py.File(source, "r") as src, open_file(endpoint, copy) as tgt, open_file(endpoint, loaded) as orig:
        assert tgt.id.id != orig.id.id
        assert_same_tree(src, tgt)
    ok(hs("hsdiff", str(source), copy))

    # --no-clobber refuses an existing target, and leaves it alone.
    proc = hs("hscp", "--no-clobber", loaded, copy)
    assert proc.returncode != 0
    with h5py.File(source, "r") as src, open_file(endpoint, copy) as tgt:
        assert_same_tree(src, tgt)


def test_hscopy_copies_compresses_or_leaves_out_the_data(
    hs: Run, endpoint: str, loaded: str, source: Path, workspace: str
) -> None:
    plain, squeezed, bare = workspace + "plain.h5", workspace + "gzip.h5", workspace + "bare.h5"
    ok(hs("hscopy", loaded, plain))
    ok(hs("hscopy", "-z", "5", loaded, squeezed))
    ok(hs("hscopy", "--nodata", loaded, bare))
    with h5py.File(source, "r") as src:
        for copy in (plain, squeezed):
            with open_file(endpoint, copy) as tgt:
                assert_same_tree(src, tgt)
        with open_file(endpoint, squeezed) as tgt:
            assert tgt["ints"].compression == "gzip" and tgt["ints"].compression_opts == 5
        with open_file(endpoint, bare) as tgt:  # the tree and attributes, the values left at their fill
            assert sorted(tgt) == sorted(src)
            assert_same_attrs(src["g1/data"], tgt["g1/data"], "/g1/data")
            assert tgt["g1/data"].shape == DATA.shape and not tgt["g1/data"][...].any()
    proc = hs("hscopy", "--no-clobber", loaded, plain)
    assert proc.returncode != 0


def test_hsdel_deletes_several_domains(hs: Run, endpoint: str, workspace: str) -> None:
    for name in ("one.h5", "two.h5", "kept.h5"):
        ok(hs("hstouch", workspace + name))
    ok(hs("hsdel", workspace + "one.h5", workspace + "two.h5"))
    entries, _ = folder_listing(ok(hs("hsls", workspace)))
    assert [e.path for e in entries] == [workspace, workspace + "kept.h5"]


def test_hsdiff_finds_no_difference(hs: Run, loaded: str, source: Path) -> None:
    proc = hs("hsdiff", str(source), loaded)
    assert ok(proc).strip() == ""
    out = ok(hs("hsdiff", "-v", str(source), loaded))
    assert "differences found" not in out
    assert f"diff done for {source}" in out
    for checked in (
        "checking dataset </g1/data>",
        "checking dataset </strs>",
        "checking attribute units of /g1/data",
    ):
        assert checked in out


def test_hsdiff_reports_a_changed_value(
    hs: Run, endpoint: str, loaded: str, source: Path, workspace: str
) -> None:
    copy = workspace + "changed.h5"
    ok(hs("hscp", loaded, copy))
    with open_file(endpoint, copy, "r+") as f:
        f["g1/data"][99, 59] = -1.0
        f["g1/g2"].attrs["note"] = "extra"
    proc = hs("hsdiff", str(source), copy)
    assert proc.returncode == 2  # the exit status is the number of differences
    assert "values for dataset /g1/data differ" in proc.stdout
    assert "2 differences found" in proc.stdout


# --- hsmv ------------------------------------------------------------------------------------


def test_hsmv_loses_the_data(hs: Run, endpoint: str, loaded: str, workspace: str) -> None:
    """hsmv in h5pyd 1.0.0 loses the domain's contents (a client bug, API-NOTES §3 CLI tools).

    It is meant to create the target with the source's root group (``linked_domain``), but
    h5pyd drops that argument: the target is created **empty** (``PUT /`` with ``{}``), and the
    source is then deleted with ``keep_root=1``. The tool reports success. This test pins down
    exactly that, so a fixed client (or a server-side workaround) shows up here."""
    src = workspace + "before.h5"
    dst = workspace + "after.h5"
    ok(hs("hscp", loaded, src))
    with open_file(endpoint, src) as f:
        src_root = f.id.id
        assert sorted(f) == ["g1", "ints", "scalar", "soft", "strs"]

    proc = hs("hsmv", src, dst)
    assert proc.returncode == 0, proc.stderr

    with pytest.raises(FileNotFoundError):
        open_file(endpoint, src)
    with open_file(endpoint, dst) as f:
        assert f.id.id != src_root  # a new root group, not the source's
        assert len(f) == 0  # every group, dataset and attribute is gone
        assert len(f.attrs) == 0
    assert squash(ok(hs("hsls", "-r", dst))) == []
    entries, _ = folder_listing(ok(hs("hsls", workspace)))
    assert [e.path for e in entries] == [workspace, dst]
