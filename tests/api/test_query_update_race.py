"""A query update (``PUT value?query=...``) never loses a concurrent write of other fields.

Real HTTP clients in threads against a real server: one client keeps updating field ``b`` of
every element matching a query while another writes field ``c`` of each element once. A query
update that read the records, changed ``b`` and wrote whole records back would put back a
stale ``c`` written in between, and that element's ``c`` would stay 0 for good.
"""

from __future__ import annotations

import threading

import numpy as np

from tests.conftest import Client

PUT_OCTET = {"Content-Type": "application/octet-stream"}
ROWS = 64
I4 = "H5T_STD_I32LE"


def make_records(client: Client) -> str:
    root = client.get("/").json()["root"]
    ctype = {"class": "H5T_COMPOUND", "fields": [{"name": n, "type": I4} for n in ("a", "b", "c")]}
    body = {
        "type": ctype,
        "shape": [ROWS],
        "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [16]}},
        "link": {"id": root, "name": "records"},
    }
    r = client.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    did = str(r.json()["id"])
    r = client.put(f"/datasets/{did}/value", json={"value": [[i, 0, 0] for i in range(ROWS)]})
    assert r.status_code == 200, r.text
    return did


def test_query_update_keeps_concurrent_writes_of_other_fields(endpoint: str, client: Client) -> None:
    did = make_records(client)
    writer_done = threading.Event()
    failures: list[str] = []
    last_b = [0]

    def update_b() -> None:
        c = Client(endpoint, "test_user1", client.domain)
        k = 0
        while not writer_done.is_set() or k < 5:
            k += 1
            r = c.put(f"/datasets/{did}/value", params={"query": "a >= 0"}, json={"value": {"b": k}})
            if r.status_code != 200 or r.json()["index"] != list(range(ROWS)):
                failures.append(f"query update {k}: {r.status_code} {r.text[:200]}")
                return
            last_b[0] = k

    def write_c() -> None:
        c = Client(endpoint, "test_user1", client.domain)
        try:
            for i in range(ROWS):
                r = c.put(
                    f"/datasets/{did}/value",
                    params={"select": f"[{i}:{i + 1}]", "fields": "c"},
                    data=np.array([1], "<i4").tobytes(),
                    headers=PUT_OCTET,
                )
                if r.status_code != 200:
                    failures.append(f"write of c[{i}]: {r.status_code} {r.text[:200]}")
                    return
        finally:
            writer_done.set()

    threads = [threading.Thread(target=update_b), threading.Thread(target=write_c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures, failures
    values = client.get(f"/datasets/{did}/value").json()["value"]
    assert [row[0] for row in values] == list(range(ROWS))
    lost = [i for i, row in enumerate(values) if row[2] != 1]
    assert not lost, f"writes of c lost by a concurrent query update at rows {lost}"
    assert {row[1] for row in values} == {last_b[0]}


def test_concurrent_query_updates_of_different_fields_both_land(endpoint: str, client: Client) -> None:
    """Two clients updating different fields of the same matching elements, many times over:
    each element ends with both clients' last values."""
    did = make_records(client)
    rounds = 15
    failures: list[str] = []

    def update(field: str) -> None:
        c = Client(endpoint, "test_user1", client.domain)
        for k in range(1, rounds + 1):
            r = c.put(f"/datasets/{did}/value", params={"query": "a >= 0"}, json={"value": {field: k}})
            if r.status_code != 200:
                failures.append(f"{field} {k}: {r.status_code} {r.text[:200]}")
                return

    threads = [threading.Thread(target=update, args=(f,)) for f in ("b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures, failures
    values = client.get(f"/datasets/{did}/value").json()["value"]
    assert [row[1:] for row in values] == [[rounds, rounds]] * ROWS
