"""``h5lake load --link`` of integers with reduced precision, with and without the N-bit filter
(issue 15): the server decodes the file's own chunks in place and serves the integers."""

from __future__ import annotations

import uuid
from pathlib import Path

import h5py
import numpy as np

from tests.conftest import Client
from tests.linked.test_load_link import REF_CLASSES, _h5pyd, _load
from tests.roundtrip.corpus import nbit_precision, scaleoffset_kinds


def test_nbit_and_reduced_precision_are_served_in_place(lc: Client, sources: Path) -> None:
    path = sources / f"nbit-{uuid.uuid4().hex[:8]}.h5"
    nbit_precision(path)
    c = Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    result = _load(c, "--link", str(path))
    assert result.exit_code == 0, result.output
    with h5py.File(path, "r") as src, _h5pyd(c) as out:
        for name in ("nbit_i32", "nbit_u16be_gzip", "twelve_bits", "u8_three_bits", "i64_40_bits", "nbit_full_precision", "nbit_fill", "nbit_compound"):
            dset = out[name]
            np.testing.assert_array_equal(dset[...], src[name][...], err_msg=name)
            np.testing.assert_array_equal(dset[3:5], src[name][3:5], err_msg=name)
        doc = c.get(f"/datasets/{out['nbit_i32'].id.id}").json()
        assert doc["layout"]["class"] in REF_CLASSES
        assert doc["type"] == {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE", "precision": 16, "offset": 5}
        points = c.get(f"/datasets/{out['twelve_bits'].id.id}/value", params={"select": "[1:3]"}).json()["value"]
        assert points == [-2, 2047]


def test_scaleoffset_is_served_in_place(lc: Client, sources: Path) -> None:
    path = sources / f"so-{uuid.uuid4().hex[:8]}.h5"
    scaleoffset_kinds(path)
    c = Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    result = _load(c, "--link", str(path))
    assert result.exit_code == 0, result.output
    with h5py.File(path, "r") as src, _h5pyd(c) as out:
        for name in src:
            np.testing.assert_array_equal(out[name][...], src[name][...], err_msg=name)
            doc = c.get(f"/datasets/{out[name].id.id}").json()
            assert doc["layout"]["class"] in REF_CLASSES, name
            assert doc["creationProperties"]["filters"][0]["name"] == "scaleoffset"
