"""What a server's whole process group costs the machine, read from /proc: its processes, their
CPU seconds and their memory, once or as a peak sampled on a thread. Used by the memory test (tests/api/test_streaming.py) and the
benchmarks (bench/server_cost.py); ``h5lake serve`` leads its own process group when started
with ``start_new_session`` (tests/support/server.py), so its pid is the group's id.

Memory is read from ``/proc/PID/smaps_rollup`` (Linux 4.14+) and given three ways, see
:class:`Memory`: summed RSS counts a page shared by several processes (the interpreter, numpy's
and OpenSSL's libraries) once per process; summed PSS divides it among them; the footprint counts
it once. The memory test bounds the footprint (docs/performance.md, "Memory").
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # ended meanwhile


def group_pids(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None and int(fields[2]) == pgid:  # after the name: state ppid pgrp ...
                pids.append(int(entry))
    return pids


def worker_pids(pid: int) -> list[int]:
    """The worker processes of a supervisor ``pid`` (``h5lake serve`` with several workers): its
    children spawned by multiprocessing, not counting multiprocessing's resource tracker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if fields is not None and int(fields[1]) == pid and b"spawn_main" in cmdline:
            found.append(int(entry))
    return found


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of one process; 0 once it has ended."""
    fields = _stat_fields(str(pid))
    return (int(fields[11]) + int(fields[12])) / TICK if fields is not None else 0.0


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of the group."""
    total = 0
    for pid in group_pids(pgid):
        fields = _stat_fields(str(pid))
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / TICK


def group_cpu_precise(pgid: int) -> float:
    """CPU seconds of the live threads of the group's live processes, in nanoseconds from
    ``/proc/PID/task/TID/schedstat`` (`group_cpu` counts clock ticks, 10 ms each, but also
    threads that have ended). Falls back to `group_cpu` where schedstat is missing."""
    if not _SCHEDSTAT:
        return group_cpu(pgid)
    total = 0
    for pid in group_pids(pgid):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                continue  # ended meanwhile
    return total / 1e9


_SCHEDSTAT = Path("/proc/self/schedstat").exists()


def rss(pid: int) -> int:
    fields = _stat_fields(str(pid))
    return int(fields[21]) * PAGE if fields is not None else 0


@dataclass(frozen=True)
class Rollup:
    """One process's memory from ``/proc/PID/smaps_rollup``, in bytes."""

    rss: int = 0
    pss: int = 0
    private: int = 0  # pages no other process maps (USS)

    @property
    def shared(self) -> int:
        return self.rss - self.private


def rollup(pid: int) -> Rollup:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return Rollup()  # ended meanwhile
    kib = {}
    for line in text.splitlines()[1:]:
        name, _, value = line.partition(":")
        kib[name] = int(value.split()[0]) * 1024
    return Rollup(kib.get("Rss", 0), kib.get("Pss", 0), kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0))


@dataclass(frozen=True)
class Memory:
    """What a group holds, in bytes, three ways: ``rss``, its processes' RSS summed (a shared
    page counts once per process mapping it); ``pss``, their PSS summed (a shared page divided
    among all processes mapping it, also ones outside the group, so other Python processes on
    the machine lower it); ``footprint``, the pages private to each process summed plus the
    largest shared part of one process (the group's processes share the same interpreter and
    libraries, so the shared parts mostly overlap): counts what the group needs once, whatever
    else runs. Always pss <= rss and footprint <= rss."""

    rss: int
    pss: int
    footprint: int
    processes: int

    def __str__(self) -> str:
        return (f"footprint {self.footprint / 2**20:.0f} MiB, PSS {self.pss / 2**20:.0f} MiB, "
                f"RSS {self.rss / 2**20:.0f} MiB ({self.processes} processes)")


def group_memory(pgid: int) -> Memory:
    """The memory the live processes of the group hold now."""
    found = [rollup(p) for p in group_pids(pgid)]
    footprint = sum(r.private for r in found) + max((r.shared for r in found), default=0)
    return Memory(sum(r.rss for r in found), sum(r.pss for r in found), footprint, len(found))


class GroupPeak:
    """The largest ``group_memory`` of a group (each measure its own maximum), sampled every
    ``every`` seconds on a thread from creation until ``stop``."""

    def __init__(self, pgid: int, every: float = 0.02) -> None:
        self.pgid = pgid
        self.every = every
        self.peak = group_memory(pgid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self.every):
            now, old = group_memory(self.pgid), self.peak
            self.peak = Memory(max(old.rss, now.rss), max(old.pss, now.pss), max(old.footprint, now.footprint),
                               max(old.processes, now.processes))

    def stop(self) -> Memory:
        self._done.set()
        self._thread.join()
        return self.peak
