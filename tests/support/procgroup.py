"""What a server's whole process group costs the machine, read from /proc: its processes, their
CPU seconds, and their memory as resident set (RSS) and as proportional set (PSS), once or as a
peak sampled on a thread. Used by the memory test (tests/api/test_streaming.py) and the
benchmarks (bench/server_cost.py); ``h5lake serve`` leads its own process group when started
with ``start_new_session`` (tests/support/server.py), so its pid is the group's id.

RSS counts every page a process maps, so a page shared by several processes (the Python
interpreter, numpy's and OpenSSL's libraries...) counts once per process in a sum of RSS. PSS
divides each shared page among the processes that map it, so the PSS of a group's processes,
summed, is what the group holds in memory (``/proc/PID/smaps_rollup``, Linux 4.14+).
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


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of the group."""
    total = 0
    for pid in group_pids(pgid):
        fields = _stat_fields(str(pid))
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / TICK


def rss(pid: int) -> int:
    fields = _stat_fields(str(pid))
    return int(fields[21]) * PAGE if fields is not None else 0


def pss(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass(frozen=True)
class Memory:
    """Bytes held by a group: RSS summed over its processes, PSS summed, and how many processes."""

    rss: int
    pss: int
    processes: int

    def __str__(self) -> str:
        return f"RSS {self.rss / 2**20:.0f} MiB, PSS {self.pss / 2**20:.0f} MiB ({self.processes} processes)"


def group_memory(pgid: int) -> Memory:
    pids = group_pids(pgid)
    return Memory(sum(rss(p) for p in pids), sum(pss(p) for p in pids), len(pids))


class GroupPeak:
    """The largest RSS and PSS sums of a group (each its own maximum), sampled every ``every``
    seconds on a thread from creation until ``stop``."""

    def __init__(self, pgid: int, every: float = 0.02) -> None:
        self.pgid = pgid
        self.every = every
        first = group_memory(pgid)
        self.rss, self.pss = first.rss, first.pss
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self.every):
            now = group_memory(self.pgid)
            self.rss, self.pss = max(self.rss, now.rss), max(self.pss, now.pss)

    def stop(self) -> Memory:
        self._done.set()
        self._thread.join()
        return Memory(self.rss, self.pss, len(group_pids(self.pgid)))
