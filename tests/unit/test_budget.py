"""The reply budget (`service.budget`): large reservations take turns in arrival order, small
ones never wait, one above the whole budget runs alone, and a waiter that gives up (timeout:
503, or cancelled) hands its place on."""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import orjson
import pytest

from h5lake.errors import Busy
from h5lake.model.values import array_to_json
from h5lake.service.budget import ByteBudget, reply_bytes

MiB = 2**20


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_large_reservations_wait_their_turn_small_ones_do_not() -> None:
    async def scenario() -> list[str]:
        budget = ByteBudget(100 * MiB, small=16 * MiB)
        order: list[str] = []
        first = await budget.reserve(60 * MiB)

        async def large(name: str, n: int) -> None:
            held = await budget.reserve(n * MiB)
            order.append(name)
            await asyncio.sleep(0)
            held.release()

        waiting = [asyncio.create_task(large("second", 60)), asyncio.create_task(large("third", 30))]
        await asyncio.sleep(0)
        assert order == [] and budget.used == 60 * MiB  # the third would fit, but waits behind the second
        small = await budget.reserve(10 * MiB)  # granted at once, over the others' queue
        assert budget.used == 70 * MiB
        small.release()
        first.release()
        await asyncio.gather(*waiting)
        assert budget.used == 0 and budget.peak <= 100 * MiB
        return order

    assert run(scenario()) == ["second", "third"]


def test_a_reservation_over_the_budget_runs_alone() -> None:
    async def scenario() -> None:
        budget = ByteBudget(100 * MiB)
        with await budget.reserve(500 * MiB) as held:
            assert held.nbytes == 100 * MiB
            later = asyncio.create_task(budget.reserve(20 * MiB))
            await asyncio.sleep(0)
            assert not later.done()
        (await later).release()
        assert budget.used == 0

    run(scenario())


def test_a_waiter_that_gives_up_gets_busy_and_hands_on() -> None:
    async def scenario() -> None:
        budget = ByteBudget(100 * MiB, wait=0.05)
        held = await budget.reserve(80 * MiB)
        with pytest.raises(Busy, match="busy"):
            await budget.reserve(50 * MiB)
        cancelled = asyncio.create_task(budget.reserve(50 * MiB))
        behind = asyncio.create_task(budget.reserve(20 * MiB))
        await asyncio.sleep(0)
        cancelled.cancel()
        # the one behind fits (80 + 20) once the cancelled one has left the queue ahead of it
        (await asyncio.wait_for(behind, 10)).release()
        assert cancelled.cancelled()
        held.release()
        assert budget.used == 0

    run(scenario())


def test_steady_small_reads_do_not_starve_a_large_one() -> None:
    """Small reservations never wait and overlap under load, so the budget may never be wholly
    free: a large read waiting for that too was answered 503 after ``wait`` although no other
    large reply held anything."""

    async def scenario() -> None:
        budget = ByteBudget(100 * MiB, small=16 * MiB, wait=0.2)
        smalls = [await budget.reserve(10 * MiB), await budget.reserve(10 * MiB)]
        over = asyncio.create_task(budget.reserve(500 * MiB))  # above the budget: runs alone among large ones
        for _ in range(5):  # one small read ends as another starts: 20 MiB always held
            await asyncio.sleep(0)
            smalls.append(await budget.reserve(10 * MiB))
            smalls.pop(0).release()
        held = await over  # was Busy: the small reads never all ended at once
        assert held.nbytes == 100 * MiB and budget.large == 100 * MiB
        # another large one waits behind it, small ones still do not
        later = asyncio.create_task(budget.reserve(20 * MiB))
        await asyncio.sleep(0)
        assert not later.done()
        held.release()
        (await later).release()
        for s in smalls:
            s.release()
        assert budget.used == 0 and budget.large == 0

    run(scenario())


def _object_bytes(value: object) -> int:
    """The bytes of the Python objects of a JSON value (lists, numbers), slots included."""
    if isinstance(value, list | tuple):
        return sys.getsizeof(value) + sum(_object_bytes(v) for v in value)
    return sys.getsizeof(value)


F8 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
I8 = {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}


@pytest.mark.parametrize(("type_json", "dtype"), [
    (F8, np.dtype("<f8")),
    (I8, np.dtype("<i8")),
    ({"class": "H5T_COMPOUND", "fields": [{"name": f"f{i}", "type": F8} for i in range(10)]},
     np.dtype([(f"f{i}", "<f8") for i in range(10)])),
    ({"class": "H5T_COMPOUND", "fields": [{"name": f"f{i}", "type": I8} for i in range(3)]},
     np.dtype([(f"f{i}", "<i8") for i in range(3)])),
    ({"class": "H5T_ARRAY", "dims": [100], "base": F8}, np.dtype(("<f8", (100,)))),
])
def test_a_json_reply_holds_no_more_than_reserved(type_json: dict[str, object], dtype: np.dtype) -> None:
    """The estimate a REST JSON read reserves (`reply_bytes`) covers the values, the Python
    objects of their JSON value and its text, for numbers at full precision and the widest
    integers. It counted ~40 bytes of objects an element: a compound of ten float64 or an
    array type of a hundred holds about twice what it reserved."""
    count = 2000
    rng = np.random.default_rng(5)
    if type_json is I8 or "I64" in str(type_json):
        raw = rng.integers(-(2**63), 2**63 - 1, count * dtype.itemsize // 8, dtype="<i8", endpoint=True)
    else:
        raw = rng.random(count * dtype.itemsize // 8) / 7  # 17 significant digits
    arr = np.frombuffer(raw.tobytes(), dtype)
    value = array_to_json(arr, type_json)
    held = arr.nbytes + _object_bytes(value) + len(orjson.dumps({"value": value}))
    assert held <= reply_bytes(count, dtype, binary=False)


def test_a_budget_below_the_small_size_still_bounds() -> None:
    """With a budget under 16 MiB (``--reply-memory-bytes``, or twice a small
    ``--max-request-bytes``) every reservation was below ``small``: none ever waited, and the
    budget bounded nothing."""

    async def scenario() -> None:
        budget = ByteBudget(8 * MiB, wait=0.05)
        held = await budget.reserve(6 * MiB)
        with pytest.raises(Busy):
            await budget.reserve(6 * MiB)
        held.release()
        (await budget.reserve(6 * MiB)).release()
        (await budget.reserve(MiB)).release()  # small still: a quarter of the budget at most
        assert budget.used == 0

    run(scenario())
