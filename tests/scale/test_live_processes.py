"""Live data across server processes on one store (local and S3): a waiter on one server is
answered when another server changes the dataset (the watch's store poller, service/datasets/watch.py),
and h5pyd's ``refresh()`` through one server sees appends made through another."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from tests.api.test_h5pyd_metadata import open_file
from tests.api.test_live import append_in_another_process, dims, extend, fresh_client, make_dataset
from tests.conftest import Client
from tests.support.server import Server


def test_a_change_through_one_server_wakes_a_waiter_on_another(pair: tuple[Server, Server]) -> None:
    one, two = pair
    c1 = fresh_client(one)
    c2 = Client(two.endpoint, "test_user1", c1.domain)
    dset = make_dataset(c1)
    for part in ("/shape", ""):
        etag = c1.get(f"/datasets/{dset}{part}").headers["ETag"]
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(c1.get, f"/datasets/{dset}{part}", params={"wait": 30}, headers={"If-None-Match": etag})
            before = dims(c2.get(f"/datasets/{dset}/shape"))
            assert not waiting.done()
            extend(c2, dset, 2)
            answer = waiting.result(timeout=60)
        assert answer.status_code == 200, answer.text
        assert dims(answer) == [before[0] + 2]


def test_h5pyd_refresh_through_one_server_sees_appends_through_another(pair: tuple[Server, Server]) -> None:
    one, two = pair
    domain = fresh_client(one).domain
    with open_file(one.endpoint, domain, "a") as f:
        f.create_dataset("data", shape=(0,), dtype="f4", chunks=(2,), maxshape=(None,))
    with open_file(one.endpoint, domain, "r") as reader:
        d = reader["data"]
        for stop in (4, 8):
            append_in_another_process(two.endpoint, domain, stop - 4, stop)
            d.refresh()
            assert d.shape == (stop,)
            np.testing.assert_array_equal(d[...], np.arange(stop, dtype="f4"))
