"""What the differential driver (dev/diffdrive.py: the same random operations on an h5py file
and through h5pyd on h5lake) found the server answering otherwise than HSDS, each through h5pyd."""

from __future__ import annotations

from pathlib import Path

import h5pyd
import numpy as np
import pytest
from tests.api.test_h5pyd_metadata import open_file
from tests.support import differential


def test_deleted_names_sent_again_by_a_later_flush(endpoint: str, domain: str) -> None:
    """h5pyd 1.0 keeps a deleted attribute or link marked after the flush that deleted it, and
    deletes it again with every later flush that touches the object; HSDS answers that 200 (its
    data node skips a name it deleted), so the flush, and closing the file, must succeed."""
    with open_file(endpoint, domain, "w") as f:
        g = f.create_group("g")
        g.attrs["a"] = 1
        g.attrs["x y|ü"] = 2  # a name with the separator goes alone, by its path
        g.create_group("old")
        f.flush()
        del g.attrs["a"]
        del g.attrs["x y|ü"]
        del g["old"]
        f.flush()
        g.attrs["b"] = np.arange(3)
        g.create_group("new")
        f.flush()
        g.attrs["c"] = "text"
    with open_file(endpoint, domain, "r") as f:
        g = f["g"]
        assert sorted(g.attrs) == ["b", "c"]
        assert list(g) == ["new"]
        np.testing.assert_array_equal(g.attrs["b"], np.arange(3))


def test_lzf_variable_length_values_that_compress_well(endpoint: str, domain: str) -> None:
    """A chunk of a variable-length type has no fixed decoded size, and liblzf's stream does not
    say it: values that compress more than a few times could not be read back (500)."""
    words = np.array(["xyz" * 400, "hello" * 300, "", "ü" * 1000], dtype=object)
    seqs = np.empty(3, dtype=object)
    seqs[:] = [np.zeros(5000, "i4"), np.arange(3, dtype="i4"), np.ones(7000, "i4")]
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("s", data=words, dtype=h5pyd_str(), compression="lzf")
        f.create_dataset("v", (3,), dtype=h5pyd_vlen(), compression="lzf", chunks=(2,))
        f["v"][...] = seqs
    with open_file(endpoint, domain, "r+") as f:  # (not "r": h5pyd retries a 500 ten times there)
        assert [w.decode() for w in f["s"][...]] == list(words)
        for got, want in zip(f["v"][...], seqs, strict=True):
            np.testing.assert_array_equal(got, want)


def h5pyd_str() -> np.dtype:
    return h5pyd.string_dtype()


def h5pyd_vlen() -> np.dtype:
    return h5pyd.vlen_dtype(np.dtype("i4"))


def test_a_seeded_differential_run(endpoint: str, domain: str, tmp_path: Path) -> None:
    """One seed of the driver (150 random operations on both sides and the files walked
    whole at the end): every difference must be one of h5pyd's own."""
    reached: list[int] = [0]
    diffs = differential.run(
        240, 150, str(tmp_path / "local.h5"), lambda mode: open_file(endpoint, domain, mode),
        differential.known_difference, reached=reached,
    )
    assert reached == [150]
    assert [d.show() for d in diffs if not d.known] == []


@pytest.mark.parametrize("seed", [28, 29, 42])
def test_seeded_runs_of_scales_references_and_types(endpoint: str, domain: str, tmp_path: Path, seed: int) -> None:
    """Seeds drawn mostly from ``differential.op_more`` (dimension scales, object and region
    references, committed types, null and scalar spaces, lookups, long and non-ASCII names),
    60 operations each: every difference must be one of h5pyd's own."""
    reached: list[int] = [0]
    diffs = differential.run(
        seed, 60, str(tmp_path / "local.h5"), lambda mode: open_file(endpoint, domain, mode),
        differential.known_difference, reached=reached, more=0.6,
    )
    assert reached == [60]
    assert [d.show() for d in diffs if not d.known] == []


def test_a_field_written_at_listed_points(endpoint: str, domain: str) -> None:
    """``d[[0, 3, 4], "b"] = ...`` (h5py-valid): h5pyd sends a point write with ``fields``, which
    was refused (400); only the named field of the listed elements changes."""
    dt = np.dtype([("a", "<i4"), ("b", "u1"), ("c", [("s", "S3")])])
    data = np.zeros(13, dtype=dt)
    data["a"] = np.arange(13)
    data["c"]["s"] = b"x"
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("d", data=data, chunks=(4,))
        f.create_dataset("m", data=data.reshape(13, 1))
    with open_file(endpoint, domain, "r+") as f:
        f["d"][[0, 3, 4, 11], "b"] = np.array([1, 7, 9, 2], "u1")
        f["m"][[2, 5], 0, "c"] = np.array([((b"yz",),), ((b"q",),)], dtype=dt[["c"]])["c"]
    data["b"][[0, 3, 4, 11]] = [1, 7, 9, 2]
    data["c"]["s"][[2, 5]] = [b"yz", b"q"]
    with open_file(endpoint, domain, "r") as f:
        got = f["d"][...]
        np.testing.assert_array_equal(got["a"], data["a"])
        np.testing.assert_array_equal(got["b"], data["b"])
        np.testing.assert_array_equal(got["c"]["s"], np.full(13, b"x"))
        np.testing.assert_array_equal(f["m"][:, 0]["c"]["s"], data["c"]["s"])


def test_negative_slice_starts_beside_an_index_list(endpoint: str, domain: str) -> None:
    """h5pyd sends ``d[[3, 5], -2:]`` on an extent of 1 as ``[[3,5],-2:1]``: numpy (and h5py)
    clamp the start to 0; it was refused (400)."""
    data = np.arange(7 * 3, dtype="i4").reshape(7, 1, 3)
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("d", data=data)
    with open_file(endpoint, domain, "r+") as f:
        d = f["d"]
        np.testing.assert_array_equal(d[[3, 5], -2:, -9:], data[[3, 5], -2:, -9:])
        d[np.array([3, 5, 6]), -2:, :] = -np.ones((3, 1, 3), "i4")
        data[[3, 5, 6], -2:, :] = -1
    with open_file(endpoint, domain, "r") as f:
        np.testing.assert_array_equal(f["d"][...], data)


def test_a_null_object_reference_in_an_attribute(endpoint: str, domain: str) -> None:
    """h5pyd 1.0 sends a null element of an object-reference attribute as the text ``"None"``
    (HSDS stores it): it was refused (400), so the flush, and every later one, failed."""
    dt = h5pyd.special_dtype(ref=h5pyd.Reference)
    with open_file(endpoint, domain, "w") as f:
        g = f.create_group("g")
        v = np.empty(3, dtype=dt)
        v[0], v[1], v[2] = g.ref, None, f.ref
        f.attrs["refs"] = v
        f.flush()
        g.attrs["one"] = 5
    with open_file(endpoint, domain, "r") as f:
        got = f.attrs["refs"]
        assert f[got[0]].name == "/g" and f[got[2]].name == "/"
        assert not got[1]  # the null reference (h5pyd reads it as b"")
        assert f["g"].attrs["one"] == 5


def test_known_differences_stay_narrow() -> None:
    """The classifier names h5pyd's own differences, and only those: the same reading with a
    value changed, or a name that is not the client's slip, stays a difference to look at."""
    known, outcome = differential.known_difference, differential.Outcome
    # h5pyd's create_group("a/b/c") with a missing parent names the group "/c"
    assert known("create_group('n7/n18/n39', track_order=True)", outcome("/n7/n18/n39"), outcome("/n39"))
    assert not known("create_group('n7/n18/n39', track_order=True)", outcome("/n7/n18/n39"), outcome("/n7/x39"))
    # a region's dataset named by another of its hard links, with the same values
    region = ("nd", ("ref", "RegionReference"), (1,), [("ref", ("/hard2", ("nd", "<i4", (1,), [0])))])
    assert known("r = region references of n1", outcome(region),
                 outcome(("nd", ("ref", "RegionReference"), (1,), [("ref", ("/n1", ("nd", "<i4", (1,), [0])))])))
    assert not known("r = region references of n1", outcome(region),
                     outcome(("nd", ("ref", "RegionReference"), (1,), [("ref", ("/n1", ("nd", "<i4", (1,), [5])))])))
    # an empty region of a vlen dataset is an empty array, not the 0 of an empty element
    empty = ("nd", ("vlen", "|u1"), (0,), [])
    assert differential._emptied(empty) == empty
    assert differential._emptied(("nd", ("vlen", "|u1"), (1,), [("nd", "|u1", (0,), [])])) == (
        "nd", ("vlen", "|u1"), (1,), [0])
    # h5json misreads a compound attribute holding a vlen string; any other attribute still counts
    vstr = ("nd", ("compound", (("f0", ("vstr", "bytes")),)), (1,), [("void", None, (b"x",))])
    misread = ("nd", ("compound", (("f0", ("vstr", "bytes")),)), (1,), [("void", None, (b"y",))])
    assert known("tree attrs", outcome({"b": vstr, "a": 1}), outcome({"b": misread, "a": 1}))
    assert not known("tree attrs", outcome({"b": vstr, "a": 1}), outcome({"b": misread, "a": 2}))
    # a region reference to a deleted dataset reads it (unlinked: no name) where HDF5 reused its address
    assert known("dereference r6[0] and read its region", outcome(["/n11", ("nd", "<i4", (0,), []), [3]]),
                 outcome([None, ("nd", ">f2", (2, 0), []), [2, 0]]))
