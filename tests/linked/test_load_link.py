"""``h5lake load --link`` and ``--append --extend AXIS`` against a server with an allowed root."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import h5py
import h5pyd
import numpy as np
import pytest
from click.testing import CliRunner, Result

from h5lake.cli.command import main
from tests.conftest import Client
from tests.support.server import USERS

RNG = np.random.default_rng(5)
REF_CLASSES = {"H5D_CONTIGUOUS_REF", "H5D_CHUNKED_REF", "H5D_CHUNKED_REF_INDIRECT"}


@pytest.fixture
def fresh(lc: Client) -> Client:
    """A client on a domain that does not exist yet (``lc`` made the home folder)."""
    return Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")


def _load(c: Client, *args: str) -> Result:
    creds = ["-e", c.endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    return CliRunner().invoke(main, ["load", *args, c.domain, *creds])


def _h5pyd(c: Client) -> Any:
    return h5pyd.File(c.domain, "r", endpoint=c.endpoint, username="test_user1", password=USERS["test_user1"])


def _mixed(folder: Path) -> Path:
    path = folder / f"mixed-{uuid.uuid4().hex[:8]}.h5"
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "mixed"
        g = f.create_group("grid")
        g.attrs["units"] = np.array([1.5, 2.5])
        g.create_dataset("gz", data=RNG.standard_normal((90, 70)).astype("<f4"), chunks=(30, 35), compression="gzip", shuffle=True)
        g.create_dataset("many", data=RNG.integers(0, 99, (300, 40), dtype="<i2"), chunks=(2, 4))  # 1500 chunks: a chunk table
        f.create_dataset("contig", data=np.arange(500, dtype=">i8"))
        f.create_dataset("names", data=["a", "bb", "ccc"], dtype=h5py.string_dtype())
        f.create_dataset("scalar", data=3.25)
        f.create_dataset("small", data=np.arange(4), chunks=(2,), compression="gzip")
    return path


def _same(src: h5py.File, out: Any) -> None:
    seen: list[str] = []

    def visit(name: str, obj: Any) -> None:
        seen.append(name)
        theirs = out[name]
        assert dict(theirs.attrs).keys() == dict(obj.attrs).keys(), name
        for key, value in obj.attrs.items():
            assert np.array_equal(theirs.attrs[key], value), (name, key)
        if isinstance(obj, h5py.Dataset):
            assert theirs.shape == obj.shape and theirs.dtype == obj.dtype, name
            assert np.array_equal(theirs[()], obj[()]), name

    src.visititems(visit)
    assert len(seen) == 7
    assert out.attrs["title"] == src.attrs["title"]


def _layouts(c: Client) -> dict[str, str]:
    found = c.post("/", json={"h5paths": ["/grid/gz", "/grid/many", "/contig", "/names", "/scalar", "/small"]}).json()["h5paths"]
    return {path: c.get(f"/datasets/{obj['id']}").json()["creationProperties"]["layout"]["class"] for path, obj in found.items()}


def test_link_reads_back_as_the_file_and_says_what_it_copied(fresh: Client, sources: Path) -> None:
    path = _mixed(sources)
    result = _load(fresh, "--link", str(path))
    assert result.exit_code == 0, result.output
    assert "note: dataset /names copied: variable-length or reference type" in result.output
    assert "note: dataset /scalar copied: scalar" in result.output
    assert "(4 linked:" in result.output and "chunks)" in result.output
    with h5py.File(path) as src, _h5pyd(fresh) as out:
        _same(src, out)
    layouts = _layouts(fresh)
    assert layouts["/grid/gz"] == "H5D_CHUNKED_REF"
    assert layouts["/grid/many"] == "H5D_CHUNKED_REF_INDIRECT"
    assert layouts["/contig"] == "H5D_CONTIGUOUS_REF"
    assert layouts["/small"] in REF_CLASSES
    assert layouts["/names"] not in REF_CLASSES and layouts["/scalar"] not in REF_CLASSES


def _day(folder: Path, tag: str, day: int) -> Path:
    path = folder / f"{tag}-day{day:03d}.h5"
    with h5py.File(path, "w") as f:
        t = f.create_dataset("time", data=np.arange(day * 24, day * 24 + 24, dtype="<f8"))  # contiguous: copied
        t.make_scale("time")
        temp = f.create_dataset("temp", data=(RNG.standard_normal((24, 20, 30)) + day).astype("<f4"), chunks=(6, 10, 15), compression="gzip")
        temp.dims[0].attach_scale(t)
        f.create_dataset("lat", data=np.linspace(-10, 10, 20), chunks=(10,))  # no time axis: kept
        f.attrs["source"] = "model"
    return path


def test_daily_files_append_to_their_concatenation(fresh: Client, sources: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    days = [_day(sources, tag, d) for d in range(3)]
    first = _load(fresh, "--append", "--extend", "time", str(days[0]))
    assert first.exit_code == 0, first.output
    rest = _load(fresh, "--append", "--extend", "time", *map(str, days[1:]))
    assert rest.exit_code == 0, rest.output
    assert "chunks linked" in rest.output and "[2/2]" in rest.output
    assert rest.output.count("note: dataset /lat has no axis time in the first file: the first file's values are kept") == 1
    parts: dict[str, list[np.ndarray]] = {"temp": [], "time": []}
    for path in days:
        with h5py.File(path) as f:
            for name, arrays in parts.items():
                arrays.append(f[name][...])
            lat = f["lat"][...]
    with _h5pyd(fresh) as out:
        for name, arrays in parts.items():
            expect = np.concatenate(arrays, axis=0)
            assert out[name].shape == expect.shape
            assert np.array_equal(out[name][...], expect), name
        assert np.array_equal(out["temp"][23:49, 3, ::7], np.concatenate(parts["temp"])[23:49, 3, ::7])
        assert np.array_equal(out["lat"][...], lat)
    found = fresh.post("/", json={"h5paths": ["/temp"]}).json()["h5paths"]
    layout = fresh.get(f"/datasets/{found['/temp']['id']}").json()["creationProperties"]["layout"]
    assert layout["class"] == "H5D_CHUNKED_REF_INDIRECT"
    # its statistics (HSDS's keys, which h5pyd 0.x reads) count every file's chunks, from the chunk table
    sizes = []
    for path in days:
        with h5py.File(path) as f:
            f["temp"].id.chunk_iter(lambda info: sizes.append(info.size))
    shown = fresh.get(f"/datasets/{found['/temp']['id']}", params={"verbose": 1}).json()
    assert (shown["num_chunks"], shown["allocated_size"]) == (len(sizes), sum(sizes)) == (48, shown["stats"]["allocatedSize"])


def _shapes(c: Client) -> dict[str, list[int]]:
    found = c.post("/", json={"h5paths": ["/time", "/temp", "/lat"]}).json()["h5paths"]
    return {path: obj["shape"]["dims"] for path, obj in found.items()}


def test_append_refuses_a_file_without_the_axis_before_changing_anything(fresh: Client, sources: Path) -> None:
    """A dataset that grows along the axis in the first file must have it in every file: one
    line names the file and the dataset, and no file of the command was appended (issue 34)."""
    tag = uuid.uuid4().hex[:8]
    days = [_day(sources, tag, d) for d in range(3)]
    with h5py.File(days[2], "a") as f:
        f["temp"].dims[0].detach_scale(f["time"])
    assert _load(fresh, "--append", "--extend", "time", str(days[0])).exit_code == 0
    before = _shapes(fresh)
    result = _load(fresh, "--append", "--extend", "time", str(days[1]), str(days[2]))
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(days[2]) in lines[0] and "dataset /temp has no axis time" in lines[0], result.output
    assert "nothing was appended" in lines[0]
    assert _shapes(fresh) == before == {"/time": [24], "/temp": [24, 20, 30], "/lat": [20]}
    # so is a later file whose dataset does not continue the first along the axis
    odd = _day(sources, tag + "odd", 3)
    with h5py.File(odd, "a") as f:
        del f["temp"]
        f.create_dataset("temp", data=np.zeros((24, 19, 30), "<f4"), chunks=(6, 10, 15)).dims[0].attach_scale(f["time"])
    result = _load(fresh, "--append", "--extend", "time", str(days[1]), str(odd))
    assert result.exit_code == 1 and f"{odd}: dataset /temp has shape [24, 19, 30], which does not continue" in result.output, result.output
    assert _shapes(fresh) == before
    # a dataset missing from a later file is refused the same way, on a new domain too
    other = Client(fresh.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    with h5py.File(days[1], "a") as f:
        del f["temp"]
    result = _load(other, "--append", "--extend", "time", str(days[0]), str(days[1]))
    assert result.exit_code == 1 and f"{days[1]}: dataset /temp is missing" in result.output, result.output
    assert other.get("/").status_code in (404, 410)  # the first file was not loaded either


def _redo_temp(path: Path, dtype: str = "<f4", chunks: tuple[int, ...] = (6, 10, 15), compression: str | None = "gzip") -> None:
    with h5py.File(path, "a") as f:
        values = f["temp"][...]
        del f["temp"]
        f.create_dataset("temp", data=values.astype(dtype), chunks=chunks, compression=compression).dims[0].attach_scale(f["time"])


@pytest.mark.parametrize("change, says", [
    ({"dtype": "<f8"}, "its type float64 differs from the first file's float32"),
    ({"chunks": (12, 10, 15)}, "its chunks [12, 10, 15] differ from the first file's [6, 10, 15]"),
    ({"compression": None}, "its filters differ from the first file's"),
])
def test_append_refuses_a_file_whose_chunks_would_be_read_otherwise(
    fresh: Client, sources: Path, change: dict[str, Any], says: str
) -> None:
    """A linked chunk's bytes are read with the first file's type, chunk shape and filters: a
    later file that differs in any is refused before anything changes, naming the file and the
    dataset, whether the domain exists (its datasets are compared) or not (the first file's).
    A float64 day was appended to a float32 dataset and read back as garbage before (issue 34)."""
    tag = uuid.uuid4().hex[:8]
    days = [_day(sources, tag, d) for d in range(3)]
    _redo_temp(days[2], **change)
    assert _load(fresh, "--append", "--extend", "time", str(days[0])).exit_code == 0
    before = _shapes(fresh)
    result = _load(fresh, "--append", "--extend", "time", str(days[1]), str(days[2]))
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Error: {days[2]}: dataset /temp: {says}; nothing was appended", result.output
    assert _shapes(fresh) == before
    other = Client(fresh.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    result = _load(other, "--append", "--extend", "time", *map(str, days))
    assert result.exit_code == 1 and f"{days[2]}: dataset /temp: {says}" in result.output, result.output
    assert other.get("/").status_code in (404, 410)


def test_append_copies_a_dataset_of_another_chunk_shape_when_values_are_copied(fresh: Client, sources: Path) -> None:
    """Only linked chunks must line up: a dataset whose values are copied (``time`` here,
    contiguous) may be stored differently in a later file, as long as its type is the same."""
    tag = uuid.uuid4().hex[:8]
    days = [_day(sources, tag, d) for d in range(2)]
    with h5py.File(days[1], "a") as f:
        values = f["time"][...]
        f["temp"].dims[0].detach_scale(f["time"])
        del f["time"]
        t = f.create_dataset("time", data=values, chunks=(5,))
        t.make_scale("time")
        f["temp"].dims[0].attach_scale(t)
    assert _load(fresh, "--append", "--extend", "time", str(days[0])).exit_code == 0
    result = _load(fresh, "--append", "--extend", "time", str(days[1]))
    assert result.exit_code == 0, result.output
    with _h5pyd(fresh) as out:
        assert np.array_equal(out["time"][...], np.arange(48.0))


def test_append_refuses_an_axis_no_dataset_has(fresh: Client, sources: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    days = [_day(sources, tag, d) for d in range(2)]
    result = _load(fresh, "--append", "--extend", "tim", str(days[0]))
    assert result.exit_code == 1 and "has an axis tim" in result.output, result.output
    assert fresh.get("/").status_code in (404, 410)
    assert _load(fresh, "--append", "--extend", "time", str(days[0])).exit_code == 0
    result = _load(fresh, "--append", "--extend", "tim", str(days[1]))
    assert result.exit_code == 1 and f"no dataset of {fresh.domain} has an axis tim" in result.output, result.output
    assert "note:" not in result.output
    assert _shapes(fresh)["/time"] == [24]


def test_append_refuses_a_domain_not_loaded_for_appends(fresh: Client, sources: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    assert _load(fresh, "--link", str(_day(sources, tag, 0))).exit_code == 0
    result = _load(fresh, "--append", "--extend", "0", str(_day(sources, tag, 1)))
    assert result.exit_code == 1
    assert "load the first file with --append" in result.output and "nothing was appended" in result.output


def test_a_file_outside_the_allowed_root_is_refused(fresh: Client, outside: Path) -> None:
    path = _mixed(outside)
    result = _load(fresh, "--link", str(path))
    assert result.exit_code == 1
    assert "not inside an allowed source root" in result.output
    assert fresh.get("/").status_code in (404, 410)  # the partial domain was removed


def test_usage_errors(fresh: Client, sources: Path) -> None:
    path = _mixed(sources)
    assert "--append and --extend AXIS go together" in _load(fresh, "--append", str(path)).output
    assert "can only be appended" in _load(fresh, "--link", str(path), str(path)).output


def test_allow_source_keeps_uri_roots(tmp_path: Path) -> None:
    """``--allow-source`` takes folders and s3:// roots; only folders are resolved."""
    from h5lake.api.app import open_sources
    from h5lake.config import Settings

    settings = Settings(data=tmp_path, allow_source=("s3://bucket/some/prefix", str(tmp_path / ".")), s3_endpoint="http://127.0.0.1:1")
    assert settings.allow_source[0] == "s3://bucket/some/prefix"
    policy = open_sources(settings).policy
    assert policy.s3_roots == (("bucket", "some/prefix"),) and policy.local_roots == (str(tmp_path.resolve()),)
    with pytest.raises(ValueError, match="s3://BUCKET"):
        Settings(data=tmp_path, allow_source=("s3:///nobucket",))


# -- storage kinds and types (issue 17 items 5-6) ------------------------------------------------


def test_link_a_file_with_a_user_block_reads_the_right_bytes(fresh: Client, sources: Path) -> None:
    """HDF5 addresses start after the user block; chunk and contiguous byte ranges must not."""
    from tests.roundtrip.corpus import build

    path = build("user_block", sources)
    with h5py.File(path, "a") as f:  # more chunks than fit inline, so a chunk table too
        f.create_dataset("many", data=RNG.integers(0, 999, (1200, 3), dtype="<i4"), chunks=(1, 3))
    result = _load(fresh, "--link", str(path))
    assert result.exit_code == 0, result.output
    layouts = {p: o["id"] for p, o in fresh.post("/", json={"h5paths": ["/x", "/chunked", "/many"]}).json()["h5paths"].items()}
    classes = {p: fresh.get(f"/datasets/{i}").json()["creationProperties"]["layout"]["class"] for p, i in layouts.items()}
    assert classes == {"/x": "H5D_CONTIGUOUS_REF", "/chunked": "H5D_CHUNKED_REF", "/many": "H5D_CHUNKED_REF_INDIRECT"}
    with h5py.File(path, "r") as src, _h5pyd(fresh) as out:
        for name in ("x", "chunked", "many"):
            np.testing.assert_array_equal(out[name][...], src[name][...])
        np.testing.assert_array_equal(out["chunked"][100:300], src["chunked"][100:300])


def test_link_reads_pytables_lzo_chunks(fresh: Client, sources: Path) -> None:
    """The server decodes PyTables' LZO chunks in place (framed and bare)."""
    from tests.roundtrip.corpus import build

    path = build("lzo_pytables", sources)
    result = _load(fresh, "--link", str(path))
    assert result.exit_code == 0, result.output
    assert "note: dataset" not in result.output  # nothing copied
    found = fresh.post("/", json={"h5paths": ["/table", "/carray", "/old_table", "/legacy_array"]}).json()["h5paths"]
    for obj in found.values():
        props = fresh.get(f"/datasets/{obj['id']}").json()["creationProperties"]
        assert props["layout"]["class"] == "H5D_CHUNKED_REF"
        assert props["filters"][-1]["id"] == 305 and props["filters"][-1]["name"] == "lzo"
    with h5py.File(path, "r") as src, _h5pyd(fresh) as out:
        for name in ("table", "carray", "old_table", "legacy_array"):
            np.testing.assert_array_equal(out[name][...], src[name][...])


@pytest.mark.parametrize("feature", ["long_double", "int128_time"])
def test_link_copies_types_numpy_cannot_hold(fresh: Client, sources: Path, feature: str) -> None:
    """IEEE binary128, 16-byte integers and H5T_TIME have no numpy dtype in h5py: ``--link``
    copies those datasets as HDF5's bytes instead of stopping with h5py's TypeError/ValueError."""
    from tests.roundtrip.corpus import build

    path = build(feature, sources)
    result = _load(fresh, "--link", str(path))
    assert result.exit_code == 0, result.output
    assert "a type numpy cannot hold" in result.output
    with h5py.File(path, "r") as src:
        names = [n for n in src if isinstance(src[n], h5py.Dataset)]
        found = fresh.post("/", json={"h5paths": [f"/{n}" for n in names]}).json()["h5paths"]
        for name in names:
            dset = src[name]
            tid = dset.id.get_type()
            raw = np.zeros(tid.get_size() * dset.size, dtype="u1")
            dset.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=tid)
            r = fresh.get(f"/datasets/{found['/' + name]['id']}/value", headers={"Accept": "application/octet-stream"})
            assert r.status_code == 200, r.text
            assert r.content == raw.tobytes(), name


def _chunked_day(folder: Path, tag: str, day: int) -> Path:
    """A day whose datasets along time are all chunked, so ``--link`` links every one."""
    path = folder / f"{tag}-cday{day:03d}.h5"
    with h5py.File(path, "w") as f:
        t = f.create_dataset("time", data=np.arange(day * 24, day * 24 + 24, dtype="<f8"), chunks=(12,))
        t.make_scale("time")
        temp = f.create_dataset("temp", data=(RNG.standard_normal((24, 20, 30)) + day).astype("<f4"), chunks=(6, 10, 15), compression="gzip")
        temp.dims[0].attach_scale(t)
        many = f.create_dataset("many", data=RNG.integers(0, 9, (24, 400), dtype="<i2"), chunks=(2, 4))  # a chunk table with one file_uri
        many.dims[0].attach_scale(t)
    return path


def test_append_to_a_dataset_loaded_with_link_alone(fresh: Client, sources: Path) -> None:
    """``load --link day0`` then ``load --link --append --extend time day1 day2``: the first
    append turns each linked dataset into the per-chunk-file form (issue 15)."""
    tag = uuid.uuid4().hex[:8]
    days = [_chunked_day(sources, tag, d) for d in range(3)]
    first = _load(fresh, "--link", str(days[0]))
    assert first.exit_code == 0, first.output
    found = fresh.post("/", json={"h5paths": ["/temp", "/many"]}).json()["h5paths"]
    before = {p: fresh.get(f"/datasets/{o['id']}").json()["creationProperties"]["layout"] for p, o in found.items()}
    assert before["/temp"]["class"] == "H5D_CHUNKED_REF"
    assert before["/many"]["class"] == "H5D_CHUNKED_REF_INDIRECT" and before["/many"]["file_uri"]
    rest = _load(fresh, "--link", "--append", "--extend", "time", *map(str, days[1:]))
    assert rest.exit_code == 0, rest.output
    with _h5pyd(fresh) as out:
        for name in ("temp", "time", "many"):
            parts = []
            for path in days:
                with h5py.File(path) as f:
                    parts.append(f[name][...])
            expect = np.concatenate(parts, axis=0)
            assert out[name].shape == expect.shape, name
            assert np.array_equal(out[name][...], expect), name
    for name in ("/temp", "/many", "/time"):
        found = fresh.post("/", json={"h5paths": [name]}).json()["h5paths"]
        doc = fresh.get(f"/datasets/{found[name]['id']}").json()
        layout = doc["creationProperties"]["layout"]
        assert layout["class"] == "H5D_CHUNKED_REF_INDIRECT" and not layout.get("file_uri"), name
        assert doc["shape"]["maxdims"][0] in ("H5S_UNLIMITED", 0), doc["shape"]


def test_layout_change_is_refused_for_other_datasets(fresh: Client, sources: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    assert _load(fresh, "--link", str(_day(sources, tag, 0))).exit_code == 0
    found = fresh.post("/", json={"h5paths": ["/time", "/temp"]}).json()["h5paths"]
    r = fresh.put(f"/datasets/{found['/time']['id']}/layout", json={"chunk_table": "d-00000000-00000000-0000-000000-000000", "extend_dim": 0})
    assert r.status_code == 400 and "chunked linked dataset" in r.text, r.text
    r = fresh.put(f"/datasets/{found['/temp']['id']}/layout", json={"extend_dim": 0})
    assert r.status_code == 400 and "chunk_table" in r.text, r.text
