"""Growth at the front is refused for linked datasets, with a message saying why; values unchanged."""

from __future__ import annotations

import uuid
from pathlib import Path

import h5py
import numpy as np
from click.testing import CliRunner

from h5lake.cli.command import main
from tests.conftest import Client
from tests.support.server import USERS


def test_prepend_refused_on_linked_dataset(lc: Client, sources: Path) -> None:
    path = sources / f"front-{uuid.uuid4().hex[:8]}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(20.0), chunks=(5,), maxshape=(None,))
    fresh = Client(lc.endpoint, "test_user1", f"/home/test_user1/{uuid.uuid4().hex[:12]}.h5")
    creds = ["-e", fresh.endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    result = CliRunner().invoke(main, ["load", "--link", str(path), fresh.domain, *creds])
    assert result.exit_code == 0, result.output
    did = fresh.post("/", json={"h5paths": ["/d"]}).json()["h5paths"]["/d"]["id"]
    r = fresh.put(f"/datasets/{did}/shape", json={"prepend": 3})
    assert r.status_code in (400, 405, 409), r.text
    assert "linked" in r.json()["error"]["message"] and "front" in r.json()["error"]["message"]
    got = fresh.get(f"/datasets/{did}/value").json()["value"]
    assert got == list(np.arange(20.0))
