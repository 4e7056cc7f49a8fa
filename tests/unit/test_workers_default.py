"""``--workers auto``: one worker per usable core, within a container's CPU quota and memory
limit, read from cgroup files as the kernel writes them (v2 and v1 layouts, in a folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from h5lake.config import Settings, auto_workers, cpu_quota, memory_limit, usable_cores

MIB = 1024 * 1024
CORES = len(os.sched_getaffinity(0))


def cgroup(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    return root


@pytest.mark.parametrize(
    ("files", "quota", "limit"),
    [
        ({}, None, None),  # no cgroup files: no limits
        ({"cpu.max": "max 100000", "memory.max": "max"}, None, None),  # v2, unlimited
        ({"cpu.max": "150000 100000", "memory.max": str(600 * MIB)}, 2, 600 * MIB),  # 1.5 CPUs round up
        ({"cpu.max": "50000 100000"}, 1, None),
        ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000",
          "memory/memory.limit_in_bytes": "9223372036854771712"}, None, None),  # v1, unlimited
        ({"cpu/cpu.cfs_quota_us": "300000", "cpu/cpu.cfs_period_us": "100000",
          "memory/memory.limit_in_bytes": str(2048 * MIB)}, 3, 2048 * MIB),
    ],
)
def test_cgroup_limits_are_read(tmp_path: Path, files: dict[str, str], quota: int | None, limit: int | None) -> None:
    root = cgroup(tmp_path, files)
    assert cpu_quota(root) == quota
    assert memory_limit(root) == limit
    assert usable_cores(root) == min(CORES, quota or CORES)


def test_a_memory_limit_lowers_the_count_but_never_below_one(tmp_path: Path) -> None:
    assert auto_workers(cgroup(tmp_path / "big", {"memory.max": str(64 * 1024 * MIB)})) == CORES
    assert auto_workers(cgroup(tmp_path / "small", {"memory.max": str(300 * MIB)})) == 1
    assert auto_workers(cgroup(tmp_path / "tiny", {"memory.max": str(100 * MIB)})) == 1
    assert auto_workers(cgroup(tmp_path / "cpu", {"cpu.max": "100000 100000"})) == 1


def test_the_setting_takes_auto_or_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("H5LAKE_")]:
        monkeypatch.delenv(name)
    assert Settings().workers == auto_workers() == Settings(workers="auto").workers
    assert Settings(workers="3").workers == 3
    monkeypatch.setenv("H5LAKE_WORKERS", "AUTO")
    assert Settings().workers == auto_workers()
    with pytest.raises(ValueError, match="number of processes or 'auto'"):
        Settings(workers="many")
    with pytest.raises(ValueError):
        Settings(workers=0)
