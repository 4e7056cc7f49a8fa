"""``h5lake load --link`` of External File List datasets (issue 15): each segment is a byte
range of its own raw file, read in place under the allowed roots."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import h5py
import numpy as np

from tests.conftest import Client
from tests.linked.test_load_link import _h5pyd, _load


def _striped(folder: Path, raw: Path) -> Path:
    stem = f"efl-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    raw.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.h5"
    with h5py.File(path, "w") as f:
        ext = [(f"{stem}_a.raw", 0, 40), (f"{stem}_b.raw", 16, 24), (f"{stem}_c.raw", 0, 16)]
        d = f.create_dataset("striped", shape=(10,), dtype="<i8", external=ext, efile_prefix=str(raw))
        d[...] = np.arange(10) * 7
        g = f.create_dataset("grid", shape=(300, 400), dtype=">f4", external=[(f"{stem}_grid.raw", 8, 480_000)], efile_prefix=str(raw))
        g[...] = np.arange(120_000, dtype=">f4").reshape(300, 400) / 4
    return path


def _fresh(lc: Client) -> Client:
    return Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")


def test_external_segments_are_read_in_place(lc: Client, sources: Path) -> None:
    path = _striped(sources / "efl", sources / "efl")
    c = _fresh(lc)
    result = _load(c, "--link", str(path))
    assert result.exit_code == 0, result.output
    assert "external file(s) linked in place" in result.output
    expected = {"striped": np.arange(10) * 7, "grid": np.arange(120_000, dtype=">f4").reshape(300, 400) / 4}
    with _h5pyd(c) as out:
        for name, values in expected.items():
            np.testing.assert_array_equal(out[name][...], values)
        np.testing.assert_array_equal(out["grid"][7:290:3, 5:9], expected["grid"][7:290:3, 5:9])
        doc = c.get(f"/datasets/{out['striped'].id.id}").json()
    layout = doc["creationProperties"]["layout"] if "segments" not in doc["layout"] else doc["layout"]
    assert layout["class"] == "H5D_CONTIGUOUS_REF"
    assert [(Path(s["file_uri"]).name, s["offset"], s["size"]) for s in layout["segments"]] == [
        (f"{path.stem}_a.raw", 0, 40), (f"{path.stem}_b.raw", 16, 24), (f"{path.stem}_c.raw", 0, 16)
    ]
    # a raw file that changes afterwards is refused, not read
    raw_b = path.parent / f"{path.stem}_b.raw"
    raw_b.write_bytes(raw_b.read_bytes() + b"more")
    os.utime(raw_b, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    r = c.get(f"/datasets/{doc['id']}/value")
    assert r.status_code == 409 and "changed" in r.text, r.text


def test_raw_files_outside_the_roots_are_refused(lc: Client, sources: Path, outside: Path) -> None:
    path = _striped(sources / "efl-out", outside / "raw")
    c = _fresh(lc)
    result = _load(c, "--link", str(path), "--external-prefix", str(outside / "raw"))
    assert result.exit_code != 0
    assert "_grid.raw is not inside an allowed source root" in result.output, result.output
