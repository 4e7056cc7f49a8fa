"""Cherry-pick conflicts, refused and resolved each way; merging a fork more than once; a link
renamed on one side and pointed elsewhere on the other. Over plain HTTP, read back through
unchanged h5pyd with ``D@REF`` (docs/versions.md, "Merge and cherry-pick")."""

from __future__ import annotations

import numpy as np
from tests.conftest import Client
from tests.versions.test_versions_http import _h5
from tests.versions.test_versions_merge import _merge, _setup


def _pick(client: Client, source: str, **extra: object) -> dict[str, object]:
    r = client.post("/versions/cherry-pick", json={"from": source, **extra})
    assert r.status_code in (201, 409), r.text
    return {"status": r.status_code, **r.json()}


def test_cherry_pick_conflicts_are_refused_listing_each_then_resolved_each_way(client: Client) -> None:
    """The fork's v1 and the target's head both change g.a and x[1] (chunk 0), and x's chunk 2 in
    different elements (merged element-wise); the fork's v2 changes something else (not picked)."""
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:
        f["x"][1] = 1000
        f["x"][25] = -25
        f["g"].attrs["a"] = 20
    assert fork.post("/versions", json={"message": "the change"}).status_code == 201  # fork v1
    with _h5(ep, fork.domain, "a") as f:
        f["x"][90] = -90
    assert fork.post("/versions", json={"message": "later"}).status_code == 201  # fork v2
    with _h5(ep, d, "a") as f:
        f["x"][1] = 2000
        f["x"][26] = -26
        f["g"].attrs["a"] = 30
    picked = fork.domain + "@v1"

    refused = _pick(client, picked)
    assert refused["status"] == 409
    found = {(c["path"], c["kind"], c.get("name")): c for c in refused["conflicts"]}  # type: ignore[attr-defined]
    assert set(found) == {("/g", "attribute", "a"), ("/x", "chunk", None)}, found
    assert found[("/x", "chunk", None)]["chunks"] == ["0"]
    assert found[("/g", "attribute", "a")]["ours"]["value"] == 30
    assert found[("/g", "attribute", "a")]["theirs"]["value"] == 20
    assert refused["count"] == 2 and refused["cherryPicked"] == picked
    page = client.post("/versions/cherry-pick", json={"from": picked}, params={"Limit": 1})
    assert page.status_code == 409 and len(page.json()["conflicts"]) == 1 and page.json()["nextMarker"] == 1
    with _h5(ep, d) as f:  # nothing changed
        assert f["x"][1] == 2000 and f["x"][25] == 25 and f["g"].attrs["a"] == 30
    assert all("cherryPicked" not in v for v in client.get("/versions").json()["versions"])

    mixed = _pick(client, picked, resolve={"/g": "theirs", "*": "ours"})
    assert mixed["status"] == 201, mixed
    assert mixed["resolved"] == {"ours": 1, "theirs": 1} and mixed["elementwise"] == 1
    assert mixed["cherryPicked"] == picked and mixed["parents"] == [mixed["parent"]]
    theirs = _pick(client, picked, resolve="theirs")  # again, against the same parent: theirs for all
    assert theirs["status"] == 201, theirs
    assert theirs["resolved"] == {"ours": 0, "theirs": 1}  # g.a agrees since the last pick

    expect = np.arange(100, dtype="i4")
    expect[25:27] = [-25, -26]
    for ref, x1, a in ((mixed["id"], 2000, 20), (theirs["id"], 1000, 20), (mixed["parent"], 2000, 30)):
        with _h5(ep, f"{d}@{ref}") as f:  # each version as h5pyd reads it
            expect[1] = x1
            want = expect if ref != mixed["parent"] else np.where(np.arange(100) == 25, 25, expect)
            assert np.array_equal(f["x"][:], want), ref
            assert f["g"].attrs["a"] == a
    with _h5(ep, d) as f:  # the head is the last pick; the fork's v2 was not picked
        assert f["x"][1] == 1000 and f["x"][90] == 90 and f["g"].attrs["a"] == 20


def test_cherry_pick_within_a_domain_conflicting_with_the_head(client: Client) -> None:
    """Picking an old version's change of the domain itself back onto a head that changed the
    same attribute since: refused, then resolved."""
    ep, d = client.endpoint, client.domain
    _setup(client)  # v1
    with _h5(ep, d, "a") as f:
        f["g"].attrs["a"] = 5
    made = client.post("/versions", json={"message": "a=5"}).json()["id"]  # v2
    with _h5(ep, d, "a") as f:
        f["g"].attrs["a"] = 6
    r = client.post("/versions/cherry-pick", json={"from": f"{d}@{made}"})
    assert r.status_code == 409 and [c["name"] for c in r.json()["conflicts"]] == ["a"], r.text
    r = client.post("/versions/cherry-pick", json={"from": f"{d}@{made}", "resolve": "theirs"})
    assert r.status_code == 201, r.text
    with _h5(ep, f"{d}@{r.json()['id']}") as f:
        assert f["g"].attrs["a"] == 5


def test_merging_a_fork_again_keeps_the_objects_it_brought(client: Client) -> None:
    """An object the fork made gets the same id in the target at every merge: merging again (or
    retrying a merge) adds no second one and raises no conflict; a later change to it on the
    fork alone differs from the target's copy, with no base to compare: a conflict, resolved."""
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    with _h5(ep, fork.domain, "a") as f:
        f.create_group("made").attrs["k"] = 1
    first = _merge(client, fork)
    assert first.status_code == 201, first.text
    made = client.get("/", params={"h5path": "/made"}).json()["id"]
    with _h5(ep, d, "a") as f:
        f["x"][0] = -1
    again = _merge(client, fork)
    assert again.status_code == 201, again.text
    assert client.get("/", params={"h5path": "/made"}).json()["id"] == made
    with _h5(ep, fork.domain, "a") as f:
        f["made"].attrs["k"] = 2
    clash = _merge(client, fork)
    assert clash.status_code == 409 and clash.json()["conflicts"][0]["path"] == "/made", clash.text
    assert _merge(client, fork, resolve="theirs").status_code == 201
    with _h5(ep, d) as f:
        assert f["made"].attrs["k"] == 2 and f["x"][0] == -1 and list(f) == ["g", "made", "x"]


def _relink(c: Client, name: str, target: str, drop: str | None = None) -> None:
    root = c.get("/").json()["root"]
    if drop is not None:
        assert c.delete(f"/groups/{root}/links/{drop}").status_code == 200
    assert c.put(f"/groups/{root}/links/{name}", json={"id": target}).status_code == 201


def test_a_link_renamed_on_one_side_and_pointed_elsewhere_on_the_other(client: Client) -> None:
    """Ours renames g to g2; theirs points g at a new group (and x at a new dataset, while ours
    renames x to x2 too, the other way round): the change follows the rename, no conflict."""
    ep, d = client.endpoint, client.domain
    fork = _setup(client)
    g, x = (client.get("/", params={"h5path": p}).json()["id"] for p in ("/g", "/x"))
    _relink(client, "g2", g, drop="g")  # ours: renames
    fg = fork.get("/", params={"h5path": "/g"}).json()["id"]
    made = fork.post("/groups").json()["id"]
    fork.put(f"/groups/{made}/attributes/new", json={"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 1})
    _relink(fork, "g", made, drop="g")  # theirs: g points elsewhere; the old g stays linked as old
    _relink(fork, "old", fg)
    # theirs renames x to x2; ours points x at a new dataset
    _relink(fork, "x2", fork.get("/", params={"h5path": "/x"}).json()["id"], drop="x")
    nine = client.post("/datasets", json={"type": "H5T_STD_I32LE", "shape": [3]}).json()["id"]
    assert client.put(f"/datasets/{nine}/value", json={"value": [9, 9, 9]}).status_code == 200
    _relink(client, "x", nine, drop="x")
    r = _merge(client, fork)
    assert r.status_code == 201, r.text
    with _h5(ep, d) as f:
        assert sorted(f) == ["g2", "old", "x2"]
        assert f["g2"].attrs["new"] == 1 and f["old"].id.id == g  # g2 is theirs' new group
        assert list(f["x2"][:]) == [9, 9, 9]  # ours' new dataset, under theirs' new name
        assert f["old"].attrs["a"] == 1
    assert x != client.get("/", params={"h5path": "/x2"}).json()["id"]
