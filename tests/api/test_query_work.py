"""The work of one value query is bounded, and chunks never written cost nothing (docs/api.md,
"Queries"; docs/security.md, the limits table): a query over a huge dataset of which little was
written reads only the written chunks; one that would examine more than ``--max-query-elements``
elements is refused with 413 naming the setting; a streamed binary reply larger than
``--max-reply-bytes`` is refused with 413 naming the setting and ``select``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from tests.conftest import Client
from tests.support.server import Server, start_server

COMPOUND = {
    "class": "H5T_COMPOUND",
    "fields": [{"name": "a", "type": "H5T_STD_I32LE"}, {"name": "b", "type": "H5T_IEEE_F64LE"}],
}
DTYPE = np.dtype([("a", "<i4"), ("b", "<f8")])
OCTET = {"Content-Type": "application/octet-stream"}
BINARY = {"Accept": "application/octet-stream"}


def new_dataset(c: Client, shape: list[int], chunks: list[int] | None = None, name: str = "d") -> str:
    root = c.get("/").json()["root"]
    body: dict[str, object] = {"type": COMPOUND, "shape": shape, "link": {"id": root, "name": name}}
    if chunks is not None:
        body["creationProperties"] = {"layout": {"class": "H5D_CHUNKED", "dims": chunks}}
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def write(c: Client, did: str, select: str, values: np.ndarray) -> None:
    r = c.put(f"/datasets/{did}/value", params={"select": select}, data=values.astype(DTYPE).tobytes(), headers=OCTET)
    assert r.status_code == 200, r.text


def query(c: Client, did: str, expression: str, **params: object) -> requests.Response:
    return c.get(f"/datasets/{did}/value", params={"query": expression, **params})


def rows(n: int, a: int) -> np.ndarray:
    out = np.zeros(n, DTYPE)
    out["a"], out["b"] = a, np.arange(n) + 0.5
    return out


def test_query_over_a_huge_never_written_dataset_reads_only_written_chunks(client: Client) -> None:
    """Before: ``a>1`` over [10**9, 2**26] never written scanned 6.7e16 elements of fill (no
    answer within minutes). Now the fill is tested once and only the written chunks are read."""
    did = new_dataset(client, [10**9, 2**26])
    r = query(client, did, "a>1", Limit=1)
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [] and r.json()["value"] == []
    inner = 2**26
    write(client, did, "[500000000:500000001,7:10]", rows(3, 5))  # rows 5e8, columns 7..9
    write(client, did, "[3:4,2:4]", rows(2, 9))
    r = query(client, did, "a>1")
    assert r.status_code == 200, r.text
    got = r.json()
    want = [3 * inner + 2, 3 * inner + 3, 500000000 * inner + 7, 500000000 * inner + 8, 500000000 * inner + 9]
    assert got["index"] == want
    assert [v[0] for v in got["value"]] == [9, 9, 5, 5, 5]
    assert query(client, did, "a>1", Limit=1).json()["index"] == want[:1]
    assert query(client, did, "a==5", Limit=2).json()["index"] == want[2:4]
    # the fill matches: the first elements, found without reading the whole dataset
    r = query(client, did, "a==0", Limit=3)
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [0, 1, 2]


SELECTIONS = ["[0:200,0:300]", "[3:197:4,5:290:3]", "[17:18,0:300]", "[0:200,[299,0,150,150,42]]", "[[150,2,77],10:300:7]"]


def test_query_of_written_chunks_agrees_with_a_whole_read(client: Client) -> None:
    """The written-chunks path (more than 256 chunks touched) gives what the whole read gives,
    in the same order, for strided and coordinate selections, with and without a Limit."""
    did = new_dataset(client, [200, 300], [10, 10])  # 600 chunks
    rng = np.random.default_rng(35)
    blocks = [(15, 100, 5, 60), (0, 140, 200, 20)]  # a band and a column every selection crosses
    for _ in range(12):
        blocks.append((int(rng.integers(0, 190)), int(rng.integers(0, 280)), int(rng.integers(1, 11)), int(rng.integers(1, 21))))
    for r0, c0, h, w in blocks:
        block = np.zeros((h, w), DTYPE)
        block["a"] = rng.integers(-3, 4, (h, w))
        block["b"] = rng.random((h, w))
        write(client, did, f"[{r0}:{r0 + h},{c0}:{c0 + w}]", block)
    r = client.get(f"/datasets/{did}/value", headers=BINARY)
    assert r.status_code == 200, r.text
    whole = np.frombuffer(r.content, DTYPE).reshape(200, 300)
    for select in SELECTIONS:
        r = client.get(f"/datasets/{did}/value", params={"select": select}, headers=BINARY)
        assert r.status_code == 200, r.text
        part = np.frombuffer(r.content, DTYPE)
        positions = selection_positions(select)
        for expression, test in (("a>1", part["a"] > 1), ("(a<0)|(b>0.9)", (part["a"] < 0) | (part["b"] > 0.9))):
            want = positions[test]
            assert want.size, (select, expression)  # the data has matches here: the check means something
            for limit in (None, 1, 7):
                params = {"select": select} if limit is None else {"select": select, "Limit": limit}
                r = query(client, did, expression, **params)
                assert r.status_code == 200, r.text
                expect = want if limit is None else want[:limit]
                assert r.json()["index"] == expect.tolist(), (select, expression, limit)
                values = np.array([tuple(v) for v in r.json()["value"]], DTYPE)
                np.testing.assert_array_equal(values["a"], whole.reshape(-1)[expect]["a"])


def selection_positions(select: str) -> np.ndarray:
    """C-order flat positions in [200, 300] of a select's elements, in the order of the reply."""
    grid = np.arange(200 * 300).reshape(200, 300)
    index = []
    for part, n in zip(_split(select[1:-1]), (200, 300)):
        if part.startswith("["):
            index.append(np.array([int(x) for x in part[1:-1].split(",")]))
        else:
            bounds = [int(x) for x in part.split(":")]
            index.append(np.arange(*bounds))
    return grid[np.ix_(*index)].reshape(-1)


def _split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


@pytest.fixture(scope="module")
def small_limits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(
        tmp_path_factory.mktemp("query-work"),
        extra=["--max-query-elements", "100000", "--max-reply-bytes", str(2 * 1024 * 1024)],
    )
    yield srv
    srv.stop()


@pytest.fixture
def limited(small_limits: Server, tmp_path: Path) -> Client:
    home = "/home/test_user1"
    r = requests.put(small_limits.endpoint + "/", params={"domain": home}, json={"folder": True}, auth=("test_user1", "test1-pw"))
    assert r.status_code in (201, 409), r.text
    c = Client(small_limits.endpoint, "test_user1", f"{home}/{tmp_path.name}.h5")
    assert c.put("/").status_code == 201
    return c


def test_query_work_is_bounded_by_a_setting(limited: Client) -> None:
    did = new_dataset(limited, [300_000], [10_000])
    write(limited, did, "[0:300000]", rows(300_000, 1))
    r = query(limited, did, "a>0")
    assert r.status_code == 413, r.text
    assert "--max-query-elements" in r.json()["error"]["message"]
    r = query(limited, did, "a>0", select="[1000:1003]")
    assert r.status_code == 200 and r.json()["index"] == [1000, 1001, 1002], r.text
    r = query(limited, did, "a>0", Limit=2)  # stops long before the bound
    assert r.status_code == 200 and r.json()["index"] == [0, 1], r.text
    # a never-written dataset of 10**12 elements examines nothing
    huge = new_dataset(limited, [10**12], [10_000], name="huge")
    assert query(limited, huge, "a>0").json()["index"] == []
    write(limited, huge, "[123456789:123456790]", rows(1, 4))
    assert query(limited, huge, "a>0").json()["index"] == [123456789]


def test_a_streamed_binary_reply_is_bounded_by_a_setting(limited: Client, client: Client) -> None:
    did = new_dataset(limited, [1000, 1000])  # 12 MB of fill, over --max-reply-bytes of 2 MiB
    r = limited.get(f"/datasets/{did}/value", headers=BINARY)
    assert r.status_code == 413, r.text[:300]
    message = r.json()["error"]["message"]
    assert "--max-reply-bytes" in message and "select" in message
    r = limited.get(f"/datasets/{did}/value", params={"select": "[0:100,0:1000]"}, headers=BINARY)
    assert r.status_code == 200 and len(r.content) == 100 * 1000 * DTYPE.itemsize
    # the default server: a never-written dataset of 800 PB streams nothing and says why
    huge = new_dataset(client, [10**9, 2**26])
    r = client.get(f"/datasets/{huge}/value", headers=BINARY)
    assert r.status_code == 413, r.text[:300]
    assert "--max-reply-bytes" in r.json()["error"]["message"]


def test_query_update_skips_chunks_never_written(limited: Client) -> None:
    """Before: an update where ``a>0`` over 10**8 chunks never written read every chunk (minutes);
    now only the written ones, and the work past --max-query-elements is refused before any change."""
    huge = new_dataset(limited, [10**12], [10_000], name="table")
    write(limited, huge, "[500000000005:500000000008]", rows(3, 4))
    r = limited.put(f"/datasets/{huge}/value", params={"query": "a>0", "Limit": 2}, json={"b": -1.0})
    assert r.status_code == 200, r.text
    assert r.json()["index"] == [500000000005, 500000000006]
    r = limited.get(f"/datasets/{huge}/value", params={"select": "[500000000005:500000000008]"})
    assert [v[1] for v in r.json()["value"]] == [-1.0, -1.0, 2.5]
    r = limited.put(f"/datasets/{huge}/value", params={"query": "a==0", "Limit": 1}, json={"b": 1.0})  # the fill matches
    assert r.status_code == 413 and "--max-query-elements" in r.json()["error"]["message"], r.text
