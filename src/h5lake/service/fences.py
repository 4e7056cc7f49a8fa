"""The per-domain commit fence of one process: a change holds the domain shared, a commit holds
it alone. A commit so waits for the changes that began before it, and changes that arrive during
a commit wait for it to end: each is wholly in or wholly out.

The service decides it, whatever calls the use case (HTTP, the Zarr bridge, the command line, a
test): `domains.core.open_domain`, which every change passes to open its domain, calls
`DomainFences.enter_change` before the domain is read. The hold belongs to the task running the
change and lasts until that task ends; in the server each request runs in a task of its own, so
a change holds its domain for the whole request, and a task that opens the domain again (a use
case calling another) enters at once. A commit waits for the holds of every task but its own,
so a task may commit a domain it changed before, and drops its own hold while it waits for
another commit of the domain (two commit requests, each holding the domain it opened, would
otherwise wait for each other); a task that changed a domain and then waits for another task's
commit of it other than by committing would wait forever (no request does).

(Changes made by other processes sharing the store are fenced through their write intents:
see `service.versions.commit`.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial


class _Gate:
    __slots__ = ("committer", "cond", "holders", "left")

    def __init__(self) -> None:
        self.holders: set[asyncio.Task[object]] = set()  # tasks holding the domain for a change
        self.committer: asyncio.Task[object] | None = None
        self.cond = asyncio.Condition()
        self.left = asyncio.Event()  # set when a holder leaves while a commit waits


class DomainFences:
    def __init__(self) -> None:
        self._gates: dict[str, _Gate] = {}

    def _gate(self, domain: str) -> _Gate:
        # one small gate per domain this process has changed or committed, kept for its lifetime
        gate = self._gates.get(domain)
        if gate is None:
            gate = self._gates[domain] = _Gate()
        return gate

    async def enter_change(self, domain: str) -> None:
        """The current task holds ``domain`` shared for a change until it ends. It enters at once
        when it holds it already or commits it, or when no commit holds or waits for the gate and
        nobody holds its lock (the event loop runs one task at a time, so the test and the entry
        are one step); otherwise it waits for the commit to end. Most changes so never await
        here."""
        task = asyncio.current_task()
        gate = self._gate(domain)
        if task is None or task in gate.holders or gate.committer is task:
            return
        if gate.committer is not None or gate.cond.locked():
            async with gate.cond:
                await gate.cond.wait_for(lambda: gate.committer is None)
        gate.holders.add(task)
        task.add_done_callback(partial(_leave, gate))

    @asynccontextmanager
    async def committing(self, domain: str) -> AsyncIterator[None]:
        """The current task commits ``domain`` alone. A hold of its own (a commit request opens
        its domain as a change does) is dropped while it waits, since another commit waits for
        every hold to leave, and taken again when the commit ends, in the same step."""
        task = asyncio.current_task()
        gate = self._gate(domain)
        held = task in gate.holders
        if held:
            assert task is not None
            gate.holders.discard(task)
            gate.left.set()  # a commit waiting for holds to leave may go on
        async with gate.cond:
            await gate.cond.wait_for(lambda: gate.committer is None)
            gate.committer = task  # from here no new change starts
        try:
            while True:
                gate.left.clear()
                if not gate.holders - {task}:
                    break
                await gate.left.wait()
            yield
        finally:
            async with gate.cond:
                gate.committer = None
                if held and task is not None and not task.done():
                    gate.holders.add(task)  # its done callback (enter_change's) still removes it
                gate.cond.notify_all()


def _leave(gate: _Gate, task: asyncio.Task[object]) -> None:
    gate.holders.discard(task)
    if gate.committer is not None:
        gate.left.set()  # a commit may wait for the last change to leave
