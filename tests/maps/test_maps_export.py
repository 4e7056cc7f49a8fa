"""``h5lake export`` writes maps as marked compound datasets; ``h5lake load`` makes them maps
again, with the same types, creation properties, pairs and attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from click.testing import CliRunner

from h5lake.cli.command import main
from tests.conftest import USERS, Client
from tests.maps.test_maps_http import VSTR, everything, new_map


def test_export_and_load_round_trip(client: Client, endpoint: str, tmp_path: Path) -> None:
    root = client.get("/").json()["root"]
    client.post("/groups", json={"link": {"id": root, "name": "g"}})
    gid = client.get(f"/groups/{root}/links/g").json()["link"]["id"]
    numbers = client.post("/maps", json={"key_type": "H5T_STD_I64LE", "value_type": "H5T_IEEE_F64LE",
                                         "link": {"id": gid, "name": "numbers"},
                                         "creationProperties": {"bucketBytes": 4096}}).json()["id"]
    keys = list(range(-500, 1500, 3))
    client.put(f"/maps/{numbers}/keys", json={"keys": keys, "values": [k / 7 for k in keys]})
    client.put(f"/maps/{numbers}/attributes/units", json={"type": "H5T_STD_I32LE", "shape": [2], "value": [3, 4]})
    words = new_map(client, VSTR, {"class": "H5T_VLEN", "base": "H5T_STD_U8LE"}, name="words")
    client.put(f"/maps/{words}/keys", json={"keys": ["é", "", "b c"], "values": [[1, 2], [], [255]]})
    client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [2], "link": {"id": root, "name": "d"}})

    creds = ["-e", endpoint, "-u", "test_user1", "-p", USERS["test_user1"]]
    runner = CliRunner()
    target = tmp_path / "maps.h5"
    out = runner.invoke(main, ["export", client.domain, str(target), *creds])
    assert out.exit_code == 0, out.output
    assert "2 maps (as compound datasets of (key, value) marked H5LAKE_MAP)" in out.output
    with h5py.File(target, "r") as f:
        dset = f["g/numbers"]
        mark = json.loads(dset.attrs["H5LAKE_MAP"])
        assert mark["key_type"]["base"] == "H5T_STD_I64LE" and mark["creationProperties"]["bucketBytes"] == 4096
        assert sorted(dset["key"].tolist()) == keys and dset.attrs["units"].tolist() == [3, 4]
        assert sorted(dset.dtype.names) == ["key", "value"] and len(f["words"]) == 3
        assert "d" in f

    again = client.domain + ".again.h5"
    out = runner.invoke(main, ["load", str(target), again, *creds])
    assert out.exit_code == 0, out.output
    assert "2 maps (from compound datasets marked H5LAKE_MAP)" in out.output
    copy = Client(endpoint, "test_user1", again)
    croot = copy.get("/").json()["root"]
    cg = copy.get(f"/groups/{croot}/links/g").json()["link"]["id"]
    link = copy.get(f"/groups/{cg}/links/numbers").json()["link"]
    assert link.get("map_id"), link
    new_numbers = link["map_id"]
    info: dict[str, Any] = copy.get(f"/maps/{new_numbers}").json()
    assert info["creationProperties"]["bucketBytes"] == 4096
    assert sorted(everything(copy, new_numbers)) == sorted(everything(client, numbers))
    assert copy.get(f"/maps/{new_numbers}/attributes/units").json()["value"] == [3, 4]
    assert [a["name"] for a in copy.get(f"/maps/{new_numbers}/attributes").json()["attributes"]] == ["units"]
    new_words = copy.get(f"/groups/{croot}/links/words").json()["link"]["map_id"]
    assert sorted(everything(copy, new_words)) == sorted(everything(client, words))
    assert copy.get("/", params={"h5path": "/d"}).status_code == 200
    assert np.array_equal(sorted(copy.get("/maps").json()["maps"]), sorted([new_numbers, new_words]))
