"""Storage forms found by a fresh pass over files from the wild (docs/fidelity.md), each loaded
(``h5lake load``) and linked (``load --link``), read back through h5pyd 1.0 and compared with
h5py (tests/support/remote_compare.py), then exported and compared with the source object by
object (tests/roundtrip/compare.py):

* a filter kept with its cd_values (N-bit) lost its flags when linked: a mandatory filter was
  exported optional;
* a virtual dataset whose source files are named printf-style (``src_%b.h5``, one file per
  block of an unlimited mapping) was refused, its sources "missing";
* an extendible dataset that is not chunked in h5lake (external storage written as an
  ordinary dataset, a virtual dataset loaded as one) could not be exported: "extendible
  contiguous non-external dataset not allowed";
* linking a huge, sparse chunked dataset built and sent a chunk table of its whole grid;
* a file whose metadata HDF5 cannot read (a damaged global heap holding a fill value or an
  attribute's string) stopped the load with "unexpected RuntimeError ... a bug in h5lake"
  instead of naming the object.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import h5py
import h5pyd
import numpy as np
import pytest
from h5py import h5d, h5p, h5s, h5t

from h5lake.client import h5native
from h5lake.client import load_link as linking
from h5lake.client.common import ToolError
from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings
from tests.conftest import Client
from tests.roundtrip.compare import compare_files
from tests.roundtrip.corpus import raw_dataset
from tests.support.remote_compare import compare
from tests.support.server import USERS

MODES = ["load", "link"]


def _settings(lc: Client) -> Settings:
    user, password = lc.session.auth  # type: ignore[misc]
    return Settings(lc.endpoint, user, password)


def _folder(sources: Path) -> Path:
    folder = sources / uuid.uuid4().hex[:10]
    folder.mkdir()
    return folder


def _load(path: Path, mode: str, lc: Client) -> tuple[RestClient, str, linking.Linker | None]:
    settings = _settings(lc)
    domain = f"/home/test_user1/{uuid.uuid4().hex[:10]}-{path.stem}.h5"
    client = RestClient(settings, domain)
    step = linking.Linker(str(path.resolve())) if mode == "link" else None
    load_file(path, client, link_step=step, workers=4)
    result = compare(str(path), domain, endpoint=settings.endpoint, username=settings.username, password=settings.password)
    assert result.diffs == [], "\n".join(result.diffs)
    return client, domain, step


def _h5pyd(lc: Client, domain: str) -> h5pyd.File:
    s = _settings(lc)
    return h5pyd.File(domain, "r", endpoint=s.endpoint, username=s.username, password=s.password)


@pytest.mark.parametrize("mode", MODES)
def test_mandatory_nbit_filter_keeps_its_flags(mode: str, lc: Client, sources: Path, tmp_path: Path) -> None:
    path = _folder(sources) / "nbit.h5"
    with h5py.File(path, "w") as f:
        for name, flags in (("mandatory", 0), ("optional", h5py.h5z.FLAG_OPTIONAL)):
            dcpl = h5p.create(h5p.DATASET_CREATE)
            dcpl.set_chunk((10,))
            dcpl.set_filter(h5py.h5z.FILTER_NBIT, flags, ())
            tid = h5t.STD_I32LE.copy()
            tid.set_precision(16)
            tid.set_offset(8)
            raw_dataset(f, name, tid, (25,), (np.arange(25, dtype="<i4") << 8).tobytes(), dcpl)
    client, _, _ = _load(path, mode, lc)
    target = tmp_path / "export.h5"
    export_domain(client, target, workers=2)
    assert compare_files(str(path), str(target)) == []
    with h5py.File(target) as f:
        assert f["mandatory"].id.get_create_plist().get_filter(0)[1] == 0
        assert f["optional"].id.get_create_plist().get_filter(0)[1] == h5py.h5z.FLAG_OPTIONAL


def _printf_vds(folder: Path) -> Path:
    """Three source files ``src_0.h5``..``src_2.h5`` mapped printf-style into an unlimited
    virtual dataset, plus an unlimited mapping of one file and a strided one of the same file."""
    for i in range(3):
        with h5py.File(folder / f"src_{i}.h5", "w") as f:
            f.create_dataset("data", data=np.arange(6, dtype="<f4") + 10 * i, maxshape=(None,))
    path = folder / "vds.h5"
    with h5py.File(path, "w", libver="latest") as f:
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-1, "<f4"))
        vspace = h5s.create_simple((18,), (h5s.UNLIMITED,))
        vspace.select_hyperslab((0,), (h5s.UNLIMITED,), (6,), (6,))
        sspace = h5s.create_simple((6,), (h5s.UNLIMITED,))
        sspace.select_hyperslab((0,), (1,), (6,), (6,))
        dcpl.set_virtual(vspace, b"src_%b.h5", b"data", sspace)
        h5d.create(f.id, b"printf", h5t.IEEE_F32LE, vspace, dcpl=dcpl)
        one = h5py.VirtualLayout(shape=(6,), dtype="<f4", maxshape=(None,))
        one[0:] = h5py.VirtualSource("src_1.h5", "data", shape=(6,), maxshape=(None,))[0:]
        f.create_virtual_dataset("unlimited_one", one, fillvalue=-2)
        f.create_dataset("local", data=np.arange(20, dtype="<i2"))
        strided = h5py.VirtualLayout(shape=(10,), dtype="<i2")
        strided[::2] = h5py.VirtualSource(".", "local", shape=(20,))[0:5]
        f.create_virtual_dataset("strided", strided, fillvalue=7)
    return path


@pytest.mark.parametrize("mode", MODES)
def test_virtual_dataset_with_printf_source_names(mode: str, lc: Client, sources: Path, tmp_path: Path) -> None:
    path = _printf_vds(_folder(sources))
    client, domain, _ = _load(path, mode, lc)
    with h5pyd.File(domain, "r", endpoint=client.settings.endpoint, username=client.settings.username, password=client.settings.password) as f:
        np.testing.assert_array_equal(f["printf"][:], np.concatenate([np.arange(6) + 10 * i for i in range(3)]).astype("<f4"))
        assert f["printf"].maxshape == (None,)
    target = tmp_path / "export.h5"
    export_domain(client, target, workers=2)
    # a virtual dataset is written as an ordinary one (documented); nothing else differs
    diffs = compare_files(str(path), str(target))
    assert sorted(d.split(":")[0] for d in diffs) == ["/printf", "/strided", "/unlimited_one"], diffs
    assert all("layout differs" in d for d in diffs), diffs
    with h5py.File(target) as f:
        assert f["printf"].chunks is not None and f["printf"].maxshape == (None,)
        np.testing.assert_array_equal(f["unlimited_one"][:], np.arange(6, dtype="<f4") + 10)


def test_missing_printf_source_is_still_refused(lc: Client, sources: Path) -> None:
    folder = _folder(sources)
    path = _printf_vds(folder)
    (folder / "src_0.h5").unlink()
    with pytest.raises(Exception, match=r"source files are missing: src_%b\.h5"):
        load_file(path, RestClient(_settings(lc), f"/home/test_user1/{uuid.uuid4().hex[:10]}.h5"), workers=2)


@pytest.mark.parametrize("mode", MODES)
def test_extendible_external_dataset_exports(mode: str, lc: Client, sources: Path, tmp_path: Path) -> None:
    folder = _folder(sources)
    path = folder / "ext.h5"
    values = np.arange(40, dtype=">i4").reshape(10, 4)
    with h5py.File(path, "w") as f:
        ext = [("e1.raw", 100, 40), ("e1.raw", 0, 40), ("e2.raw", 7, h5py.h5f.UNLIMITED)]
        f.create_dataset("grows", shape=(10, 4), maxshape=(None, 4), dtype=">i4", external=ext, efile_prefix=str(folder))[...] = values
    client, _, _ = _load(path, mode, lc)
    target = tmp_path / "export.h5"
    export_domain(client, target, workers=2)
    with h5py.File(target) as f:
        d = f["grows"]
        assert d.chunks is not None and d.maxshape == (None, 4) and d.dtype == np.dtype(">i4")
        np.testing.assert_array_equal(d[...], values)
    kept = tmp_path / "kept" / "export.h5"
    kept.parent.mkdir()
    export_domain(client, kept, workers=2, external_files=True)
    assert compare_files(str(path), str(kept)) == []


def test_huge_sparse_grid_is_copied_not_tabled(lc: Client, sources: Path) -> None:
    path = _folder(sources) / "sparse.h5"
    grid = linking.MAX_TABLE_ENTRIES * 2
    with h5py.File(path, "w") as f:
        d = f.create_dataset("sparse", shape=(grid * 4,), chunks=(4,), dtype="u1", fillvalue=9)
        d[grid * 2 : grid * 2 + 6] = np.arange(6, dtype="u1")
        f.create_dataset("small", data=np.arange(5000, dtype="<i2"), chunks=(3,))
    settings = _settings(lc)
    domain = f"/home/test_user1/{uuid.uuid4().hex[:10]}-sparse.h5"
    step = linking.Linker(str(path.resolve()))
    load_file(path, RestClient(settings, domain), link_step=step, workers=4)
    assert [name for name, _ in step.copied] == ["/sparse"]
    assert "chunks in its grid" in step.copied[0][1]
    with _h5pyd(lc, domain) as f:
        np.testing.assert_array_equal(f["sparse"][grid * 2 - 2 : grid * 2 + 8], [9, 9, 0, 1, 2, 3, 4, 5, 9, 9])
        assert f["small"].id.cpl_json["layout"]["class"] == "H5D_CHUNKED_REF_INDIRECT"
        np.testing.assert_array_equal(f["small"][:], np.arange(5000, dtype="<i2"))


def test_extendible_compact_and_contiguous_datasets_export(client: Client, endpoint: str, domain: str, tmp_path: Path) -> None:
    """A client may create an extendible dataset asking for a compact or contiguous layout
    (h5lake stores it chunked); HDF5 has neither extendible, so the export writes it chunked
    instead of failing ("extendible compact dataset not allowed")."""
    root = client.get("/").json()["root"]
    for name, cls in (("compact", "H5D_COMPACT"), ("contiguous", "H5D_CONTIGUOUS")):
        made = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [4], "maxdims": [10],
                                               "creationProperties": {"layout": {"class": cls}},
                                               "link": {"id": root, "name": name}})
        assert made.status_code == 201, made.text
        assert client.put(f"/datasets/{made.json()['id']}/value", json={"value": [1, 2, 3, 4]}).status_code == 200
    target = tmp_path / "export.h5"
    export_domain(RestClient(Settings(endpoint, "test_user1", USERS["test_user1"]), domain), target, workers=2)
    with h5py.File(target) as f:
        for name in ("compact", "contiguous"):
            assert f[name].chunks is not None and f[name].maxshape == (10,)
            assert f[name][...].tolist() == [1, 2, 3, 4]


def _damaged_heap(path: Path, where: str) -> None:
    """A file with one variable-length string in its global heap (a dataset's fill value or an
    attribute's value), whose heap object is then renumbered: HDF5 opens the file but cannot
    read that string ("bad heap pointer")."""
    with h5py.File(path, "w") as f:
        f.create_dataset("fine", data=[1, 2])
        d = f.create_dataset("s", shape=(4,), dtype=h5py.string_dtype(), chunks=(2,), fillvalue="fill value text" if where == "fill" else None)
        if where == "attribute":
            d.attrs.create("note", "attribute text", dtype=h5py.string_dtype())
    data = bytearray(path.read_bytes())
    heap = data.find(b"GCOL")
    assert heap > 0 and data.count(b"GCOL") == 1
    data[heap + 16 : heap + 18] = b"\x77\x77"  # the first object's index
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["fill", "attribute"])
@pytest.mark.parametrize("mode", MODES)
def test_metadata_hdf5_cannot_read_is_named(where: str, mode: str, lc: Client, sources: Path) -> None:
    path = _folder(sources) / "damaged.h5"
    _damaged_heap(path, where)
    client = RestClient(_settings(lc), f"/home/test_user1/{uuid.uuid4().hex[:10]}-damaged.h5")
    step = linking.Linker(str(path.resolve())) if mode == "link" else None
    named = r"dataset /s: HDF5 cannot read it \(.*heap.*\); nothing was loaded" if where == "fill" else r"attribute 'note' of dataset /s: cannot read its value: .*heap"
    with pytest.raises(ToolError, match=named):
        load_file(path, client, link_step=step, workers=2)
    assert not client.domain_exists()  # deleted when the upload stopped


@pytest.mark.parametrize("what", ["link", "attribute"])
def test_name_longer_than_kept_is_refused_before_sending(what: str, lc: Client, sources: Path) -> None:
    """HDF5 holds names of any length (h5py writes a 5000-byte one); the server keeps at most
    4096 bytes. The load stopped at the server's 400 halfway through its upload, naming three
    objects and no attribute; it now refuses before sending anything, naming the name."""
    path = _folder(sources) / "long_names.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("before", data=np.arange(3))
        g = f.create_group("g")
        if what == "link":
            g.create_group("n" * 5000)
        else:
            g.attrs["n" * 5000] = 1
        g.attrs["fine"] = 2
    client = RestClient(_settings(lc), f"/home/test_user1/{uuid.uuid4().hex[:10]}-long.h5")
    with pytest.raises(ToolError, match=rf"group /g: {what} 'n{{40}}'\.\.\. has a name of 5000 bytes \(h5lake keeps names of at most 4096\); nothing was loaded"):
        load_file(path, client, workers=2)
    assert not client.domain_exists()


@pytest.mark.parametrize("size", [1, 16])
def test_fill_value_string_bytes_not_utf8_are_kept(size: int, lc: Client, sources: Path, tmp_path: Path) -> None:
    """A fixed-length string fill value holding bytes that are not UTF-8 (Latin-1 text, a
    sentinel byte), also in a compound: its JSON form has U+FFFD in their place, so it was
    refused (before anything was sent). It is now sent as its bytes too (``fillValue_base64``)
    and kept byte for byte: unwritten elements read as them, and export writes them back."""
    fill = b"\xff" if size == 1 else b"a\xe9b\xffcd"
    row = np.dtype([("n", "<i4"), ("s", "S3")])
    path = _folder(sources) / "fill_bytes.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("fine", shape=(3,), dtype="S4", fillvalue=b"ok", chunks=(2,))
        f.create_dataset("latin1", shape=(5,), dtype=f"S{size}", fillvalue=fill, chunks=(2,))
        f["latin1"][0] = b"z"
        f.create_dataset("rows", shape=(3,), dtype=row, fillvalue=np.array((5, b"\xe9\xe9"), row), chunks=(2,))
    with h5py.File(path, "r") as f:
        assert f["latin1"].fillvalue == fill
    client = RestClient(_settings(lc), f"/home/test_user1/{uuid.uuid4().hex[:10]}-fill.h5")
    load_file(path, client, workers=2)
    with _h5pyd(lc, client.domain) as f:
        assert f["latin1"][...].tolist() == [b"z"] + [fill] * 4
        assert [(int(r["n"]), bytes(r["s"])) for r in f["rows"][...]] == [(5, b"\xe9\xe9")] * 3
        assert f["fine"].fillvalue == b"ok"
    target = tmp_path / "out.h5"
    export_domain(client, target, workers=2)
    with h5py.File(target, "r") as f:
        assert f["latin1"].fillvalue == fill and f["latin1"][...].tolist() == [b"z"] + [fill] * 4
        assert f["rows"].fillvalue.tobytes() == np.array((5, b"\xe9\xe9"), row).tobytes()


def test_fill_value_nullterm_string_ends_at_its_nul(lc: Client, sources: Path) -> None:
    """A null-terminated fixed-length string fill value ends at its first NUL, as HDF5 reads it:
    bytes after it (a C buffer's leftovers, not UTF-8) are no part of the value. Such a file
    loaded before the UTF-8 check of fill values, which refused it."""
    path = _folder(sources) / "fill_nullterm.h5"
    with h5py.File(path, "w") as f:
        tid = h5t.C_S1.copy()
        tid.set_size(6)
        tid.set_strpad(h5t.STR_NULLTERM)
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((2,))
        # with the dataset's own type: h5py's set_fill_value converts from its NULLPAD S6
        lib = h5native._lib()
        assert lib.H5Pset_fill_value(h5native.hid_t(dcpl.id), h5native.hid_t(tid.id), b"ab\x00\xff\xfe\x00") >= 0
        h5d.create(f.id, b"leftovers", tid, h5s.create_simple((4,)), dcpl=dcpl)
    with h5py.File(path, "r") as f:
        assert f["leftovers"][...].tolist() == [b"ab"] * 4  # HDF5 reads the string up to its NUL
    client = RestClient(_settings(lc), f"/home/test_user1/{uuid.uuid4().hex[:10]}-fill.h5")
    load_file(path, client, workers=2)
    with _h5pyd(lc, client.domain) as f:
        dset = f["leftovers"]
        assert dset.fillvalue == b"ab"
        assert dset[...].tolist() == [b"ab"] * 4


def test_fill_value_nullterm_string_members_end_at_their_nul(lc: Client, sources: Path) -> None:
    """As above for the string members of a compound fill value (and the strings of an array
    member): each ends at its first NUL. The file was refused ("its fill value holds string bytes
    that are not UTF-8") for the leftovers after the NULs."""
    path = _folder(sources) / "fill_nullterm_compound.h5"
    with h5py.File(path, "w") as f:
        name = h5t.C_S1.copy()
        name.set_size(6)
        name.set_strpad(h5t.STR_NULLTERM)
        codes = h5t.array_create(name, (2,))
        tid = h5t.create(h5t.COMPOUND, 4 + 6 + 12)
        tid.insert(b"n", 0, h5t.STD_I32LE)
        tid.insert(b"name", 4, name)
        tid.insert(b"codes", 10, codes)
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((2,))
        fill = (7).to_bytes(4, "little") + b"ab\x00\xff\xfe\x00" + b"x\x00\xe9\xe9\xe9\x00" + b"yz\x00\xff\x00\x00"
        lib = h5native._lib()
        assert lib.H5Pset_fill_value(h5native.hid_t(dcpl.id), h5native.hid_t(tid.id), fill) >= 0
        h5d.create(f.id, b"rows", tid, h5s.create_simple((3,)), dcpl=dcpl)
    with h5py.File(path, "r") as f:
        row = f["rows"][0]
        assert (row["n"], row["name"], row["codes"].tolist()) == (7, b"ab", [b"x", b"yz"])  # HDF5 stops at the NULs
    client = RestClient(_settings(lc), f"/home/test_user1/{uuid.uuid4().hex[:10]}-fill.h5")
    load_file(path, client, workers=2)
    with _h5pyd(lc, client.domain) as f:
        rows = f["rows"][...]
        assert [(int(r["n"]), bytes(r["name"]), [bytes(c) for c in r["codes"]]) for r in rows] == [(7, b"ab", [b"x", b"yz"])] * 3
        fill = f["rows"].fillvalue
        assert (int(fill["n"]), bytes(fill["name"])) == (7, b"ab")
