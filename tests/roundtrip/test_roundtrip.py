"""Every corpus file goes through ``h5lake load`` and ``h5lake export`` and comes back the same.

Compared object by object with tests/roundtrip/compare.py (types with padding and character
set, dataspaces, attributes, links, creation properties, values) and, where Debian's
``hdf5-tools`` is installed, with ``h5diff`` as a second opinion. In CI (``CI`` set) a missing
h5diff fails the test instead of skipping it.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import lzokay
import numpy as np
import pytest
import requests

from h5lake.client.common import ToolError
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings
from tests.roundtrip.conftest import CORPUS_NAMES, RoundTrip
from tests.roundtrip.corpus import REFUSED, build
from tests.support.server import USERS

# Datasets h5diff cannot read, and why (it is then told to skip them; ours compares them).
H5DIFF_UNREADABLE = {
    "filters": ["/lzf"],  # lzf is h5py's built-in filter, not a plugin h5diff can load
    "lzo_pytables": ["/table", "/carray", "/old_table", "/legacy_array"],  # no LZO plugin for h5diff (see below)
    "int128_time": ["/time32", "/time64be"],  # h5diff: "Not comparable ... of class H5T_TIME"
}

# Files h5diff 1.10 itself reports an error for (exit status 2) even against an identical copy:
# it cannot dereference a reference to an object that no longer exists.
H5DIFF_FAILS_ON_SOURCE = {"dangling_refs"}

# Round trips that do not work yet, with the reason. strict: a fix makes the test fail until
# the entry is removed.
KNOWN_FAILURES: dict[str, str] = {}


def _known(name: str) -> list[pytest.MarkDecorator]:
    if name in KNOWN_FAILURES:
        return [pytest.mark.xfail(reason=KNOWN_FAILURES[name], strict=True)]
    return []


CASES = [pytest.param(name, marks=_known(name), id=name) for name in CORPUS_NAMES]


@pytest.mark.parametrize("name", CASES)
def test_round_trip_is_exact(name: str, round_trip: Callable[[str], RoundTrip]) -> None:
    result = round_trip(name)
    assert result.diffs == [], "\n".join(result.diffs)


def _h5diff() -> str | None:
    found = shutil.which("h5diff")
    if found is None and os.environ.get("CI"):
        pytest.fail("h5diff is missing: install Debian's hdf5-tools (apt-get install -y hdf5-tools)")
    if found is None:
        pytest.skip("h5diff not installed (apt-get install -y hdf5-tools); it is required in CI")
    return found


@pytest.mark.parametrize("name", CASES)
def test_h5diff_finds_no_difference(name: str, round_trip: Callable[[str], RoundTrip]) -> None:
    h5diff = _h5diff()
    result = round_trip(name)
    excludes = [arg for path in H5DIFF_UNREADABLE.get(name, []) for arg in ("--exclude-path", path)]
    env = dict(os.environ, HDF5_PLUGIN_PATH=hdf5plugin.PLUGIN_PATH, HDF5_EXTFILE_PREFIX="${ORIGIN}")
    run = subprocess.run(
        [str(h5diff), "-c", *excludes, str(result.source), str(result.exported)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if name in H5DIFF_FAILS_ON_SOURCE:
        # h5diff cannot follow such references even between the file and its own copy: the
        # export must then give exactly what the copy gives
        copy = result.exported.with_name("source-copy.h5")
        shutil.copyfile(result.source, copy)
        same = subprocess.run([str(h5diff), "-r", *excludes, str(result.source), str(copy)], capture_output=True, text=True, env=env, timeout=120, check=False)
        ours = subprocess.run([str(h5diff), "-r", *excludes, str(result.source), str(result.exported)], capture_output=True, text=True, env=env, timeout=120, check=False)
        copy.unlink()
        assert (ours.returncode, ours.stdout) == (same.returncode, same.stdout), ours.stdout + ours.stderr
        assert "differences found" in ours.stdout and not any(
            line.split()[0] != "0" for line in ours.stdout.splitlines() if line.endswith("differences found")
        ), ours.stdout
        return
    assert run.returncode == 0, run.stdout + run.stderr


def test_external_storage_is_reported(round_trip: Callable[[str], RoundTrip]) -> None:
    result = round_trip("external_storage")
    assert any("external file(s) copied in" in note for note in result.load_notes)


def test_user_defined_links_are_reported(round_trip: Callable[[str], RoundTrip]) -> None:
    result = round_trip("user_defined_links")
    assert any("user-defined link /ud_link (class 187" in note for note in result.load_notes)


# -- storage kinds and types (issue 17 items 5-6) ------------------------------------------------


def test_user_block_is_written_back(round_trip: Callable[[str], RoundTrip]) -> None:
    for name, size in (("user_block", 512), ("user_block_large", 4096)):
        result = round_trip(name)
        with h5py.File(result.exported, "r") as f:
            assert f.userblock_size == size
        assert result.exported.read_bytes()[:size] == result.source.read_bytes()[:size]
    assert round_trip("user_block").exported.read_bytes()[:10] == b"MATLAB 7.3"


def test_lzo_chunks_are_pytables_format(round_trip: Callable[[str], RoundTrip]) -> None:
    """h5diff has no LZO plugin: decode the exported chunks here, as PyTables would: bare LZO1X
    streams (PyTables compiled its trailer out in 0.8), also where the source had the trailer."""
    result = round_trip("lzo_pytables")
    with h5py.File(result.source, "r") as src, h5py.File(result.exported, "r") as out:
        for name, framed in (("table", False), ("carray", False), ("old_table", False), ("legacy_array", True)):
            dset = out[name]
            assert dset.id.get_create_plist().get_filter(dset.id.get_create_plist().get_nfilters() - 1)[0] == 305
            nbytes = dset.chunks[0] * dset.dtype.itemsize
            assert dset.id.get_num_chunks() == src[name].id.get_num_chunks()
            for i in range(dset.id.get_num_chunks()):
                offset = dset.id.get_chunk_info(i).chunk_offset
                mask, stored = dset.id.read_direct_chunk(offset)
                assert mask == 0
                assert _pytables_lzo(stored, False, nbytes) == _pytables_lzo(src[name].id.read_direct_chunk(offset)[1], framed, nbytes)
            np.testing.assert_array_equal(dset[...], src[name][...])


def _pytables_lzo(stored: bytes, framed: bool, nbytes: int) -> bytes:
    if not framed:
        return bytes(lzokay.decompress(stored, nbytes))
    checksum, size = struct.unpack("<II", stored[-8:])
    raw = bytes(lzokay.decompress(stored[:-8], size))
    assert zlib.adler32(raw) == checksum and size == nbytes
    return raw


def test_long_double_values_are_exact(round_trip: Callable[[str], RoundTrip]) -> None:
    result = round_trip("long_double")
    with h5py.File(result.source, "r") as src, h5py.File(result.exported, "r") as out:
        assert out["ld"].dtype == np.longdouble
        assert out["ld"][...].tobytes() == src["ld"][...].tobytes()
        assert out["ld"].id.get_type().equal(src["ld"].id.get_type())
        assert out["binary128"].id.get_type().equal(src["binary128"].id.get_type())


# -- refusals ------------------------------------------------------------------------------------


def _exists(settings: Settings, domain: str) -> bool:
    return RestClient(settings, domain).domain_exists()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_clear_error(name: str, tmp_path: Path, settings: Settings, new_domain: Callable[[str], str]) -> None:
    source = build(name, tmp_path)
    domain = new_domain(name)
    with pytest.raises(ToolError) as caught:
        load_file(source, RestClient(settings, domain))
    message = caught.value.message
    for word in REFUSED[name][1]:
        assert word in message, message
    assert not _exists(settings, domain)


def test_failure_deletes_the_partial_domain(
    corpus: dict[str, Path], settings: Settings, new_domain: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from h5lake.client import load

    def broken(*args: object, **kwargs: object) -> int:
        raise ToolError("linking /x failed: simulated")

    # after the objects are made (small values go with them): the links
    monkeypatch.setattr(load.Uploader, "_put_links", broken)
    domain = new_domain("partial")
    with pytest.raises(ToolError, match="simulated"):
        load_file(corpus["dataspaces"], RestClient(settings, domain))
    assert not _exists(settings, domain)

    kept = new_domain("kept")
    with pytest.raises(ToolError, match="simulated"):
        load_file(corpus["dataspaces"], RestClient(settings, kept), keep_partial=True)
    assert _exists(settings, kept)


def test_existing_domain_needs_overwrite(corpus: dict[str, Path], settings: Settings, new_domain: Callable[[str], str]) -> None:
    domain = new_domain("twice")
    load_file(corpus["empty"], RestClient(settings, domain))
    with pytest.raises(ToolError, match="already exists"):
        load_file(corpus["empty"], RestClient(settings, domain))
    load_file(corpus["groups_links"], RestClient(settings, domain), overwrite=True)
    assert _exists(settings, domain)


def test_wrong_password_is_a_clear_error(corpus: dict[str, Path], server: object, new_domain: Callable[[str], str]) -> None:
    bad = Settings(server.endpoint, "test_user1", "not-the-password")
    with pytest.raises(ToolError, match="401"):
        load_file(corpus["empty"], RestClient(bad, new_domain("auth")))


def test_export_of_a_missing_domain_fails_clearly(settings: Settings, tmp_path: Path) -> None:
    from h5lake.client.export import export_domain

    with pytest.raises(ToolError, match="not found"):
        export_domain(RestClient(settings, "/home/test_user1/never-made.h5"), tmp_path / "x.h5")
    assert not (tmp_path / "x.h5").exists()


def test_domain_json_survives(round_trip: Callable[[str], RoundTrip], settings: Settings) -> None:
    """The model extensions are visible to any client, e.g. a group's creation order flags."""
    result = round_trip("creation_order")
    auth = ("test_user1", USERS["test_user1"])
    root = requests.get(settings.endpoint + "/", params={"domain": result.domain}, auth=auth, timeout=30).json()["root"]
    group = requests.get(settings.endpoint + f"/groups/{root}", params={"domain": result.domain}, auth=auth, timeout=30).json()
    assert group["creationProperties"]["CreateOrder"] == 1
    assert group["creationProperties"]["linkCreationOrder"] == "H5P_CRT_ORDER_INDEXED"


def _h5pyd_file(domain: str, settings: Settings) -> Any:
    import h5pyd

    return h5pyd.File(domain, "r", endpoint=settings.endpoint, username=settings.username, password=settings.password)


def test_h5pyd_reads_bitfields_as_unsigned_integers(round_trip: Callable[[str], RoundTrip], settings: Settings) -> None:
    """h5pyd 1.0 cannot open H5T_BITFIELD ("Invalid type class"); clients see the unsigned
    integer of the same size, marked, and export still writes a bitfield."""
    result = round_trip("bitfield_pytables")
    with h5py.File(result.source, "r") as src, _h5pyd_file(result.domain, settings) as f:
        assert f["bools"].dtype == np.dtype("u1")
        assert f["bools"][...].tobytes() == src["bools"][...].tobytes()
        assert f["table"][...].tobytes() == src["table"][...].tobytes()
        assert f.attrs.get("missing") is None
    with h5py.File(result.exported, "r") as out:
        assert out["bools"].id.get_type().get_class() == h5py.h5t.BITFIELD
        assert out["table"].id.get_type().get_member_type(1).get_class() == h5py.h5t.BITFIELD
    full = round_trip("bitfield")
    with h5py.File(full.source, "r") as src, _h5pyd_file(full.domain, settings) as f:
        for name in src:
            tid = src[name].id.get_type()
            raw = np.empty(src[name].size * tid.get_size(), dtype="u1")
            src[name].id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=tid)
            assert f[name].dtype.kind == "u" and f[name][...].tobytes() == raw.tobytes(), name
            assert f.attrs[name].tobytes() == raw.tobytes(), name


def test_h5pyd_reads_carried_types_as_bytes(round_trip: Callable[[str], RoundTrip], settings: Settings) -> None:
    """Long double, 16-byte integers and time types reach h5pyd as opaque bytes of their size
    (the file's own bytes), which a client can view as, e.g., numpy.longdouble."""
    result = round_trip("long_double")
    with h5py.File(result.source, "r") as src, _h5pyd_file(result.domain, settings) as f:
        ld = f["ld"][...]
        assert ld.dtype.itemsize == 16
        np.testing.assert_array_equal(ld.view(np.longdouble), src["ld"][...])
    ints = round_trip("int128_time")
    with h5py.File(ints.source, "r") as src, _h5pyd_file(ints.domain, settings) as f:
        assert f["i128"][...].tobytes()[:16] == (2**127 - 1).to_bytes(16, "little")
        assert f["time64be"][...].tobytes() == np.array([-1, 1700000000123], ">i8").tobytes()
