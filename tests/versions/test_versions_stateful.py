"""A stateful property test: random writes, commits, forks, forgotten versions and gc runs; every
live version (and every fork) always reads back exactly what it held when committed (made)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from tests.conftest import Backing, Client
from tests.support.cli import clean_env, run_h5lake
from tests.support.server import Server

N, CHUNK = 32, 4
OCTET = {"Content-Type": "application/octet-stream"}


def values(c: Client, path: str = "/x") -> np.ndarray:
    r = c.get("/datasets/", params={"h5path": path})
    assert r.status_code == 200, r.text
    did = r.json()["id"]
    r = c.get(f"/datasets/{did}/value", headers={"Accept": "application/octet-stream"})
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, "<i4").copy()


@pytest.mark.slow
def test_versions_always_read_back_what_was_committed(
    server: Server, backing: Backing, home_folder: str, tmp_path: Path
) -> None:
    endpoint = server.endpoint
    store_args = server.args[server.args.index("--storage") :][:6] if "--storage" in server.args else ["--data", str(server.data)]
    env = clean_env(tmp_path, backing.env)

    class Versions(RuleBasedStateMachine):
        @initialize()
        def make(self) -> None:
            self.domain = f"{home_folder}/{uuid.uuid4().hex[:12]}.h5"
            self.c = Client(endpoint, "test_user1", self.domain)
            assert self.c.put("/").status_code == 201
            root = self.c.get("/").json()["root"]
            body = {"type": "H5T_STD_I32LE", "shape": [N], "link": {"id": root, "name": "x"},
                    "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [CHUNK]}}}
            r = self.c.post("/datasets", json=body)
            assert r.status_code == 201, r.text
            self.did = r.json()["id"]
            self.head = np.zeros(N, "<i4")
            self.versions: dict[str, np.ndarray] = {}
            self.forks: dict[str, np.ndarray] = {}

        @rule(lo=st.integers(0, N - 1), length=st.integers(1, 9), value=st.integers(-5, 5))
        def write(self, lo: int, length: int, value: int) -> None:
            hi = min(N, lo + length)
            data = np.full(hi - lo, value, "<i4").tobytes()
            r = self.c.put(f"/datasets/{self.did}/value", params={"select": f"[{lo}:{hi}]"}, data=data, headers=OCTET)
            assert r.status_code == 200, r.text
            self.head[lo:hi] = value

        @rule()
        def commit(self) -> None:
            r = self.c.post("/versions", json={})
            assert r.status_code == 201, r.text
            self.versions[r.json()["id"]] = self.head.copy()

        @precondition(lambda self: len(self.versions) > 0)
        @rule(data=st.data())
        def forget(self, data: st.DataObject) -> None:
            vid = data.draw(st.sampled_from(sorted(self.versions)))
            assert self.c.delete(f"/versions/{vid}").status_code == 200
            del self.versions[vid]

        @precondition(lambda self: len(self.versions) > 0)
        @rule(data=st.data(), value=st.integers(6, 9))
        def fork(self, data: st.DataObject, value: int) -> None:
            vid = data.draw(st.sampled_from(sorted(self.versions)))
            name = self.domain.replace(".h5", f"-{uuid.uuid4().hex[:6]}.h5")
            f = Client(endpoint, "test_user1", name)
            assert f.put("/", json={"from": f"{self.domain}@{vid}"}).status_code == 201
            expect = self.versions[vid].copy()
            did = f.get("/datasets/", params={"h5path": "/x"}).json()["id"]
            r = f.put(f"/datasets/{did}/value", params={"select": "[1:2]"}, data=np.full(1, value, "<i4").tobytes(),
                      headers=OCTET)
            assert r.status_code == 200
            expect[1] = value
            self.forks[name] = expect

        @rule()
        def gc(self) -> None:
            done = run_h5lake("gc", *store_args, "--grace", "0", cwd=tmp_path, env=env)
            assert done.returncode == 0, done.stderr

        @invariant()
        def every_version_reads_back(self) -> None:
            if not hasattr(self, "c"):
                return
            for vid, expect in self.versions.items():
                got = values(Client(endpoint, "test_user1", f"{self.domain}@{vid}"))
                assert np.array_equal(got, expect), vid
            for name, expect in self.forks.items():
                assert np.array_equal(values(Client(endpoint, "test_user1", name)), expect), name
            assert np.array_equal(values(self.c), self.head)

    Versions.TestCase.settings = settings(
        max_examples=4, stateful_step_count=12, deadline=None, suppress_health_check=list(HealthCheck)
    )
    Versions.TestCase().runTest()
