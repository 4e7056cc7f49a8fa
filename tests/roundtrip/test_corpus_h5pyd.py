"""Files as other projects write them, loaded and read back through h5pyd 1.0, compared with h5py.

The files are tests/support/corpus_extra.py's (chunk indexes of both file formats, SWMR, paging,
10 000 links, long and non-ASCII names, PyTables arrays with blosc2, netCDF-4 user types, h5py
odds and ends); the comparison is tests/support/remote_compare.py (every object, link,
attribute, type and value; h5pyd's own limits are listed apart and documented in
docs/fidelity.md). dev/corpus_check.py runs the same over any list of files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5pyd
import numpy as np
import pytest

from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings
from tests.support.corpus_extra import EXTRA
from tests.support.remote_compare import compare


def _options(settings: Settings) -> dict[str, str | None]:
    return {"endpoint": settings.endpoint, "username": settings.username, "password": settings.password}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_loaded_file_reads_back_through_h5pyd(name: str, settings: Settings, new_domain: Callable[[str], str], tmp_path: Path) -> None:
    path = tmp_path / f"{name}.h5"
    EXTRA[name](path)
    domain = new_domain(name)
    load_file(path, RestClient(settings, domain), workers=4)
    result = compare(str(path), domain, **_options(settings))
    assert result.diffs == [], "\n".join(result.diffs)
    assert result.objects > 1


def test_scalar_variable_length_dataset(settings: Settings, new_domain: Callable[[str], str]) -> None:
    """A scalar dataset of a vlen type: reading it was a 500 (numpy gave the element, a
    sequence, for the chunk's only position), and so was writing it in part of a chunk."""
    domain = new_domain("scalar-vlen")
    with h5pyd.File(domain, "w", **_options(settings)) as f:
        d = f.create_dataset("seq", shape=(), dtype=h5pyd.vlen_dtype("i2"))
        d[()] = np.array([4, 5, 6, 7], "i2")
        s = f.create_dataset("text", shape=(), dtype=h5pyd.string_dtype())
        s[()] = "scalar"
    with h5pyd.File(domain, "r", **_options(settings)) as f:
        np.testing.assert_array_equal(f["seq"][()], np.array([4, 5, 6, 7], "i2"))
        assert f["text"][()] in (b"scalar", "scalar")
