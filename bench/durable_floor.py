"""The kernel's floor under a durable small write: CPU of the system calls the local store makes
to replace one document durably, with no Python of h5lake around them.

    python bench/durable_floor.py                     # 1 KiB and 33 KiB documents
    python bench/durable_floor.py --sizes 900,33789 --puts 1000 --folder /var/tmp/x

Each put does what ``LocalStore._put`` does for a document (storage/local.py): create a
temporary file in the document's folder, write, ``fstat``, ``fsetxattr`` the ETag stamp,
``fsync``, close, take the slot lock (``flock``), ``stat`` + ``getxattr`` the current object (the
conditional write's check), ``rename`` over it, unlock, then open, ``fsync`` and close the folder.
It prints this process's CPU (user + system, from ``getrusage``) and wall time per put, then the
CPU of each step. The figure is what an attribute PUT cannot go below on this file system while
every 2xx means stored (docs/performance.md); run it on the file system the store is on: a new
file system's first minutes cost more (ext4 initializes inode tables in the background).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import resource
import secrets
import tempfile
import time


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(folder: str, size: int, puts: int) -> None:
    data = os.urandom(size)
    lock = os.open(os.path.join(folder, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
    target = os.path.join(folder, "doc")
    with open(target, "wb") as f:
        f.write(data)
    os.setxattr(target, "user.bench.etag", b"0" * 32)
    steps: dict[str, float] = {}

    def step(name: str, fn, *args):  # type: ignore[no-untyped-def]
        c0 = cpu()
        out = fn(*args)
        steps[name] = steps.get(name, 0.0) + cpu() - c0
        return out

    def folder_fsync() -> None:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)

    c0, w0 = cpu(), time.perf_counter()
    for _ in range(puts):
        temp = os.path.join(folder, ".tmp-" + secrets.token_hex(8))
        stamp = f"{hashlib.md5(data).hexdigest()}:{size}:0".encode()
        fd = step("create", os.open, temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        step("write", os.write, fd, data)
        step("fstat", os.fstat, fd)
        step("fsetxattr", os.setxattr, fd, "user.bench.etag", stamp)
        step("fsync file", os.fsync, fd)
        step("close", os.close, fd)
        step("flock", fcntl.flock, lock, fcntl.LOCK_EX)
        step("stat+getxattr", lambda: (os.stat(target), os.getxattr(target, "user.bench.etag")))
        step("rename", os.replace, temp, target)
        step("unlock", fcntl.flock, lock, fcntl.LOCK_UN)
        step("fsync folder", folder_fsync)
    total, wall = cpu() - c0, time.perf_counter() - w0
    os.close(lock)
    print(f"  {size:>7} B  CPU {total * 1000 / puts:.3f} ms/put  wall {wall * 1000 / puts:.3f} ms/put")
    print("           " + ", ".join(f"{k} {v * 1000 / puts:.3f}" for k, v in steps.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1024,33789", help="document sizes in bytes [1024,33789]")
    parser.add_argument("--puts", type=int, default=500, help="puts per size [500]")
    parser.add_argument("--folder", default=None, help="a folder on the store's file system [a temporary one]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="h5lake-floor-", dir=args.folder) as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            run(folder, size, args.puts)


if __name__ == "__main__":
    main()
