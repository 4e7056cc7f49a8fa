"""A server killed with SIGKILL in the middle of a batch ``POST /groups`` or ``POST /datasets``
(the list form h5pyd's flush and ``h5lake load`` send): after a restart each object of the batch
is whole (its attributes, its compact values) or absent, and sending the same batch again
completes it, links included (docs/api.md, "Batches").

The kill comes from the local store's test-only fault point ``H5LAKE_TEST_KILL_BEFORE_CREATE``
(storage/batches.py): the process kills itself just before linking the N-th object of a batch
into place, the batch's bytes written, N-1 objects made, nothing acknowledged.
"""

from __future__ import annotations

import pytest
import requests
from tests.scale.test_many_processes import new_domain, on
from tests.support.server import start_server

from h5lake.model.ids import Collection, new_object_id

pytestmark = pytest.mark.slow  # two server processes, one killed

COUNT = 40
KILL_BEFORE = 21


def _items(kind: str, root: str) -> list[dict]:
    items = []
    for i in range(COUNT):
        item: dict = {
            "id": new_object_id(Collection.GROUPS if kind == "groups" else Collection.DATASETS, root),
            "link": {"id": root, "name": f"o{i:02d}"},
            "attributes": {"a": {"type": "H5T_STD_I32LE", "shape": [3], "value": [i, i + 1, i + 2]}},
        }
        if kind == "datasets":
            item.update(type="H5T_STD_I64LE", shape=[5], value=[i * 10 + k for k in range(5)])
        items.append(item)
    return items


@pytest.mark.parametrize("kind", ["groups", "datasets"])
def test_a_batch_cut_by_sigkill_leaves_each_object_whole_or_absent_and_a_resend_completes_it(kind: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    first = start_server(tmp_path / "first", data=data, env={"H5LAKE_TEST_KILL_BEFORE_CREATE": str(KILL_BEFORE)})
    try:
        c = new_domain(first.endpoint)  # single creates: no batch, no kill
        root = c.get("/").json()["root"]
        items = _items(kind, root)
        with pytest.raises(requests.ConnectionError):  # no reply: the process died
            c.post(f"/{kind}", json=items)
        assert first.process.wait(timeout=30) == -9
    finally:
        first.stop()
    second = start_server(tmp_path / "second", data=data)
    try:
        c2 = on(c, second.endpoint)
        found = [c2.get(f"/{kind}/{item['id']}").status_code for item in items]
        assert set(found) <= {200, 404}
        assert found == [200] * (KILL_BEFORE - 1) + [404] * (COUNT - KILL_BEFORE + 1)  # made in order up to the kill
        for i, item in enumerate(items[: KILL_BEFORE - 1]):  # whole: with their attributes and values
            attr = c2.get(f"/{kind}/{item['id']}/attributes/a").json()
            assert attr["value"] == [i, i + 1, i + 2]
            if kind == "datasets":
                assert c2.get(f"/datasets/{item['id']}/value").json()["value"] == item["value"]
        assert c2.get(f"/groups/{root}/links").json()["links"] == []  # placed after the objects: none yet

        r = c2.post(f"/{kind}", json=items)  # the same batch again
        assert r.status_code == 201, r.text
        for i, item in enumerate(items):
            assert c2.get(f"/{kind}/{item['id']}/attributes/a").json()["value"] == [i, i + 1, i + 2]
            if kind == "datasets":
                assert c2.get(f"/datasets/{item['id']}/value").json()["value"] == item["value"]
        links = c2.get(f"/groups/{root}/links").json()["links"]
        assert sorted((link["title"], link["id"]) for link in links) == [(f"o{i:02d}", item["id"]) for i, item in enumerate(items)]
    finally:
        second.stop()
