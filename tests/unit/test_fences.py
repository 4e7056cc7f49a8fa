"""The per-domain commit fence (`service.fences`): a commit waits for the changes that began
before it, changes arriving during a commit wait for its end, and a change that meets no
commit enters without waiting."""

from __future__ import annotations

import asyncio
from pathlib import Path

from h5lake.service.fences import DomainFences


async def test_a_change_with_no_commit_enters_at_once() -> None:
    fences = DomainFences()
    entering = fences.enter_change("/home/a.h5")
    try:
        entering.send(None)
    except StopIteration:
        pass  # finished without suspending once
    else:
        raise AssertionError("a change with no commit about waited")


async def test_commits_wait_for_changes_and_changes_for_commits() -> None:
    fences = DomainFences()
    events: list[str] = []
    first_in, let_first_go = asyncio.Event(), asyncio.Event()

    async def change(name: str, hold: asyncio.Event | None = None) -> None:
        await fences.enter_change("/home/a.h5")  # held until this task ends
        events.append(f"{name} in")
        if hold is not None:
            first_in.set()
            await hold.wait()
        events.append(f"{name} out")

    async def commit() -> None:
        async with fences.committing("/home/a.h5"):
            events.append("commit in")
            await asyncio.sleep(0.01)
            events.append("commit out")

    first = asyncio.create_task(change("first", let_first_go))
    await first_in.wait()
    committing = asyncio.create_task(commit())
    await asyncio.sleep(0.01)
    assert "commit in" not in events  # the change that began before it is still running
    later = asyncio.create_task(change("later"))
    other = asyncio.create_task(change_elsewhere(fences, events))
    await asyncio.sleep(0.01)
    assert "later in" not in events  # a change arriving during the commit waits
    assert "elsewhere in" in events  # another domain does not
    let_first_go.set()
    await asyncio.gather(first, committing, later, other)
    mine = [e for e in events if not e.startswith("elsewhere")]
    assert mine == ["first in", "first out", "commit in", "commit out", "later in", "later out"]


async def change_elsewhere(fences: DomainFences, events: list[str]) -> None:
    await fences.enter_change("/home/b.h5")
    events.append("elsewhere in")


async def test_a_commit_waits_for_every_change_to_leave() -> None:
    fences = DomainFences()
    release = asyncio.Event()
    inside = 0
    seen_by_commit: list[int] = []

    async def change() -> None:
        nonlocal inside
        await fences.enter_change("/d")
        inside += 1
        await release.wait()
        await asyncio.sleep(0)
        inside -= 1

    async def commit() -> None:
        async with fences.committing("/d"):
            seen_by_commit.append(inside)

    changes = [asyncio.create_task(change()) for _ in range(20)]
    await asyncio.sleep(0)
    committing = asyncio.create_task(commit())
    await asyncio.sleep(0.01)
    assert not seen_by_commit
    release.set()
    await asyncio.gather(*changes, committing)
    assert seen_by_commit == [0]


def test_a_use_case_called_without_http_waits_for_a_commit_of_its_domain(tmp_path: Path) -> None:
    """The fence is the service's: a write use case called directly (as the command line or a
    route outside the middleware stack would) waits while the domain is committed."""
    from h5lake.api.app import build_service
    from h5lake.config import Settings
    from h5lake.service.context import Caller
    from h5lake.service.domains.core import create_domain
    from h5lake.service.objects.attributes import get_attribute, put_attribute
    from h5lake.storage.memory import MemoryStore

    async def run() -> tuple[bool, object]:
        svc = build_service(Settings(data=tmp_path / "data"), MemoryStore())
        admin = Caller("admin", is_admin=True)
        root = (await create_domain(svc, admin, "/fenced.h5", {})).require_root()
        attr = {"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": 7}
        async with svc.fences.committing("/fenced.h5"):
            write = asyncio.create_task(put_attribute(svc, admin, "/fenced.h5", root, "a", attr))
            await asyncio.wait({write}, timeout=0.5)  # unfenced, the write ends well before
            during = write.done()
        await write
        return during, (await get_attribute(svc, admin, "/fenced.h5", root, "a"))["value"]

    written_during_commit, value = asyncio.run(run())
    assert not written_during_commit
    assert value == 7


async def test_two_commits_that_opened_their_domain_for_a_change_both_end() -> None:
    """A commit request opens its domain as a change does (holding it), then commits: the commit
    drops its own hold while it waits for another commit, which would otherwise wait for that
    hold to leave while it waits for the first commit (two tasks waiting on each other)."""
    fences = DomainFences()
    order: list[str] = []

    async def commit_request(name: str) -> None:
        await fences.enter_change("/home/a.h5")
        await asyncio.sleep(0)  # both hold the domain before either commits
        async with fences.committing("/home/a.h5"):
            order.append(f"{name} in")
            await asyncio.sleep(0.01)
            order.append(f"{name} out")
        await fences.enter_change("/home/a.h5")  # still its own after the commit: enters at once
        order.append(f"{name} after")

    await asyncio.wait_for(asyncio.gather(commit_request("a"), commit_request("b")), 5)
    assert sorted(order) == sorted(["a in", "a out", "a after", "b in", "b out", "b after"])
    assert order.index("a out") == order.index("a in") + 1 or order.index("b out") == order.index("b in") + 1
