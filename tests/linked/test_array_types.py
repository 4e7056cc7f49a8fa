"""Datasets of an H5T_ARRAY type served in place (issue 17, case 4).

The chunk engine holds an array type as its base type with the array's dims appended to the
shape; reads of raw byte ranges (linked chunks, parts of large chunks, points) once reshaped
them to the dataset's shape alone and failed with a 500.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import h5py
import numpy as np
from click.testing import CliRunner

from h5lake.cli.command import main
from tests.conftest import Client
from tests.linked.helpers import OCTET
from tests.support.server import USERS

RNG = np.random.default_rng(17)


def _array_dataset(f: h5py.File, name: str, values: np.ndarray, dims: int, **kw: object) -> None:
    """A dataset of an array type whose dims are the last ``dims`` axes of ``values``."""
    shape, inner = values.shape[: values.ndim - dims], values.shape[values.ndim - dims :]
    dset = f.create_dataset(name, shape=shape, dtype=np.dtype((values.dtype, inner)), **kw)
    dset.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(values), mtype=dset.id.get_type())


def _arrays(folder: Path) -> Path:
    path = folder / f"arrays-{uuid.uuid4().hex[:8]}.h5"
    with h5py.File(path, "w") as f:
        _array_dataset(f, "contig", RNG.standard_normal((6, 5, 5, 5)).astype("<f4"), 3)
        _array_dataset(f, "chunked", RNG.standard_normal((40, 5, 5, 5)).astype("<f4"), 3, chunks=(8,))
        _array_dataset(f, "gz", RNG.integers(0, 9, (12, 3, 2)).astype(">i2"), 2, chunks=(4,), compression="gzip")
        _array_dataset(f, "grid", RNG.integers(0, 9, (30, 20, 4)).astype("<u1"), 1, chunks=(30, 20))
    return path


def test_array_typed_datasets_read_in_place(lc: Client, sources: Path) -> None:
    path = _arrays(sources)
    fresh = Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    creds = ["-e", fresh.endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    result = CliRunner().invoke(main, ["load", "--link", str(path), fresh.domain, *creds])
    assert result.exit_code == 0, result.output
    found = fresh.post("/", json={"h5paths": ["/contig", "/chunked", "/gz", "/grid"]}).json()["h5paths"]
    with h5py.File(path) as f:
        for name, obj in found.items():
            dset = f[name]
            doc = fresh.get(f"/datasets/{obj['id']}").json()
            assert "_REF" in doc["creationProperties"]["layout"]["class"], name
            base, dims = dset.dtype.base, dset.dtype.shape
            for select, expected in (
                (None, dset[...]),
                ("[1:3]" if dset.ndim == 1 else "[1:3,:]", dset[1:3]),
                ("[2]" if dset.ndim == 1 else "[2,3:5]", dset[2] if dset.ndim == 1 else dset[2, 3:5]),
            ):
                params = {"select": select} if select else {}
                r = fresh.get(f"/datasets/{obj['id']}/value", params=params, headers=OCTET)
                assert r.status_code == 200, (name, select, r.text)
                got = np.frombuffer(r.content, dtype=base).reshape(expected.shape)
                assert np.array_equal(got, expected), (name, select)
            if dset.ndim == 1:
                r = fresh.post(f"/datasets/{obj['id']}/value", json={"points": [0, 5, 3]}, headers=OCTET)
                assert r.status_code == 200, (name, r.text)
                got = np.frombuffer(r.content, dtype=base).reshape((3, *dims))
                assert np.array_equal(got, dset[[0, 3, 5]][[0, 2, 1]]), name
