"""A property test of merge: random element edits on both sides of a fork (the source's head and
the fork's), merged with no resolution or with one for all, compared with a model of the rules
(docs/versions.md, "Merge and cherry-pick")."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.conftest import Client

CHUNK = 4096  # int32 elements per chunk: 16 KiB, so 5 chunks are chunk objects, not held compact
N = 5 * CHUNK
OCTET = {"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"}

SPOTS = [0, 1, 7, CHUNK - 1, CHUNK, 2 * CHUNK + 3, N - 1]  # few places, so both sides often meet
edits = st.lists(st.tuples(st.one_of(st.sampled_from(SPOTS), st.integers(0, N - 1)), st.integers(-3, 3)), max_size=6)


def model(base: np.ndarray, ours: np.ndarray, theirs: np.ndarray, resolve: str | None) -> np.ndarray | None:
    """The merge rules per chunk: one side changed, that side; both, element-wise when no element
    changed differently on both sides, else a conflict (None), or the chosen side's chunk."""
    out = base.copy()
    for c in range(0, N, CHUNK):
        b, o, t = base[c:c + CHUNK], ours[c:c + CHUNK], theirs[c:c + CHUNK]
        both = (o != b) & (t != b)
        if (o[both] != t[both]).any():
            if resolve is None:
                return None
            out[c:c + CHUNK] = o if resolve == "ours" else t
            continue
        merged = b.copy()
        merged[o != b] = o[o != b]
        merged[t != b] = t[t != b]
        out[c:c + CHUNK] = merged
    return out


def _values(c: Client, did: str) -> np.ndarray:
    r = c.get(f"/datasets/{did}/value", headers={"Accept": "application/octet-stream"})
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, "<i4").copy()


def _write(c: Client, did: str, values: np.ndarray) -> None:
    r = c.put(f"/datasets/{did}/value", data=values.astype("<i4").tobytes(), headers=OCTET)
    assert r.status_code == 200, r.text


def _apply(values: np.ndarray, changes: list[tuple[int, int]]) -> np.ndarray:
    out = values.copy()
    for i, v in changes:
        out[i] = v
    return out


@pytest.mark.slow
def test_random_edits_on_both_sides_merge_as_the_model_says(endpoint: str, home_folder: str) -> None:
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(ours_edits=edits, theirs_edits=edits, resolve=st.sampled_from([None, "ours", "theirs"]))
    @example(ours_edits=[(1, 2), (CHUNK, 1)], theirs_edits=[(1, 3), (2, 1)], resolve=None)  # a conflict
    @example(ours_edits=[(1, 2), (CHUNK, 1)], theirs_edits=[(1, 3), (2, 1)], resolve="theirs")
    @example(ours_edits=[(1, 2), (7, -1)], theirs_edits=[(2, 3), (7, -1)], resolve=None)  # element-wise
    def check(ours_edits: list[tuple[int, int]], theirs_edits: list[tuple[int, int]], resolve: str | None) -> None:
        name = f"{home_folder}/m-{uuid.uuid4().hex[:12]}"
        src, fork = Client(endpoint, "test_user1", name + ".h5"), Client(endpoint, "test_user1", name + "-f.h5")
        root = src.put("/").json()["root"]
        body = {"type": "H5T_STD_I32LE", "shape": [N], "creationProperties": {"layoutClass": "H5D_CHUNKED",
                "layout": {"class": "H5D_CHUNKED", "dims": [CHUNK]}}, "link": {"id": root, "name": "x"}}
        r = src.post("/datasets", json=body)
        assert r.status_code == 201, r.text
        did = r.json()["id"]
        base = np.zeros(N, "i4")
        base[::7] = 9
        _write(src, did, base)
        assert src.post("/versions", json={}).status_code == 201
        assert fork.put("/", json={"from": src.domain + "@v1"}).status_code == 201
        fdid = fork.get("/", params={"h5path": "/x"}).json()["id"]
        ours, theirs = _apply(base, ours_edits), _apply(base, theirs_edits)
        _write(src, did, ours)
        _write(fork, fdid, theirs)
        expect = model(base, ours, theirs, resolve)
        r = src.post("/versions/merge", json={"from": fork.domain, **({"resolve": resolve} if resolve else {})})
        if expect is None:
            assert r.status_code == 409, r.text
            assert np.array_equal(_values(src, did), ours)  # nothing changed
        else:
            assert r.status_code == 201, r.text
            assert np.array_equal(_values(src, did), expect)
            assert np.array_equal(_values(Client(endpoint, "test_user1", f"{src.domain}@{r.json()['id']}"), did), expect)
        assert np.array_equal(_values(fork, fdid), theirs)  # the fork is untouched

    check()
