"""Run h5pyd's own test suite (test/hl and test/apps of the h5pyd repository) against h5lake.

Not part of our suite: it needs a copy of the h5pyd repository. It starts ``h5lake serve`` from
this tree on a free loopback port (``tests/support/server.py``, users ``test_user1`` and
``test_user2``), makes the folders the tests expect (``/home/test_user1/h5pyd_test/``), writes the
HDF5 files ``test/apps`` would download from S3 (made here with h5py, to the shape the app tests
check), runs every ``test/hl/test_*.py`` with pytest and then ``test/apps`` as h5pyd's
``testall.py`` does (``load_files.py``: hsload and hsget of each file, then the inspect tests),
and prints passed/failed/skipped counts per file::

    export PYTHONPATH=$PWD/src:$PWD
    python dev/h5pyd_suite.py --repo /path/to/h5pyd          # a checkout or a bare git dir
    python dev/h5pyd_suite.py --repo ... --client /tmp/h5pyd-src   # another h5pyd on sys.path
    python dev/h5pyd_suite.py --repo ... -k test_attribute --keep
    python dev/h5pyd_suite.py --repo ... --workers 2              # two server processes

The client is the installed h5pyd unless ``--client DIR`` puts another one first on the tests'
``PYTHONPATH``; the app tests run the client's ``_apps/*.py`` scripts. Logs of each file land in
``--work`` (default a temporary folder, printed). docs/fidelity.md lists the results and why each
remaining failure is left.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import h5py
import numpy as np
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.server import USERS, start_server

FOLDER = "/home/test_user1/h5pyd_test/"
APP_TESTS = ("test_hsinfo", "test_tall_inspect", "test_diamond_inspect", "test_shuffle_inspect")
APP_FILES = ("tall.h5", "shuffle_compress.h5", "d_objref.h5", "a_objref.h5", "d_link_hard.h5",
             "d_link_soft.h5", "scale_offset.h5", "fletcher32.h5", "diamond.h5", "small1dchunk.h5",
             "small2dchunk.h5")


def extract(repo: Path, dest: Path) -> Path:
    """The repository's test/ and testall.py, from a work tree or with git archive from a git dir."""
    if (repo / "test" / "hl").is_dir():
        shutil.copytree(repo / "test", dest / "test")
    else:
        tar = subprocess.run(["git", "--git-dir", str(repo), "archive", "HEAD", "test"],
                             check=True, capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(tar)) as t:
            t.extractall(dest, filter="data")
    return dest / "test"


def make_app_files(data: Path) -> None:
    """The files test/apps/load_files.py downloads, made locally (no network here)."""
    data.mkdir(parents=True, exist_ok=True)
    with h5py.File(data / "tall.h5", "w") as f:
        f.attrs["attr1"] = np.array([(97 + i) % 106 for i in range(10)], dtype=np.int8)
        f.attrs["attr2"] = np.arange(4, dtype=">i4").reshape(2, 2)
        g11 = f.create_group("g1/g1.1")
        d = g11.create_dataset("dset1.1.1", data=np.arange(100, dtype=">i4").reshape(10, 10))
        d.attrs["attr1"] = np.array([(97 + i) % 106 for i in range(27)], dtype=np.int8)
        d.attrs["attr2"] = np.arange(20, dtype=">i4").reshape(2, 10)
        g11.create_dataset("dset1.1.2", data=np.arange(20, dtype=">i4"))
        g12 = f.create_group("g1/g1.2")
        g12["extlink"] = h5py.ExternalLink("somefile", "somepath")
        g12.create_group("g1.2.1")["slink"] = h5py.SoftLink("somevalue")
        g2 = f.create_group("g2")
        g2.create_dataset("dset2.1", data=np.arange(10, dtype=">f4") + 1)
        g2.create_dataset("dset2.2", data=np.arange(15, dtype=">f4").reshape(3, 5) / 10)
    with h5py.File(data / "diamond.h5", "w") as f:
        f.create_group("g1").create_dataset("dset", data=np.int32(42))
        f["g2/dset"] = f["g1/dset"]
    with h5py.File(data / "shuffle_compress.h5", "w") as f:
        f.create_dataset("dset", data=np.arange(100, dtype="i4"), chunks=(10,), compression="gzip", shuffle=True)
    with h5py.File(data / "d_objref.h5", "w") as f:
        g = f.create_group("G1")
        d = f.create_dataset("DS2", data=np.arange(4, dtype="i4"))
        f.create_dataset("DS1", data=[g.ref, d.ref], dtype=h5py.ref_dtype)
    with h5py.File(data / "a_objref.h5", "w") as f:
        g = f.create_group("G1")
        d = f.create_dataset("DS2", data=np.arange(4, dtype="i4"))
        f.create_dataset("DS1", shape=(), dtype="i4").attrs.create("A1", [g.ref, d.ref], dtype=h5py.ref_dtype)
    with h5py.File(data / "d_link_hard.h5", "w") as f:
        f.create_dataset("DS1", data=np.arange(4, dtype="i4"))
        f["DS2"] = f["DS1"]
    with h5py.File(data / "d_link_soft.h5", "w") as f:
        f.create_dataset("DS1", data=np.arange(4, dtype="i4"))
        f["DS2"] = h5py.SoftLink("/DS1")
    with h5py.File(data / "scale_offset.h5", "w") as f:
        f.create_dataset("dset", data=np.arange(320, dtype="i4").reshape(32, 10), chunks=(4, 8), scaleoffset=0)
    with h5py.File(data / "fletcher32.h5", "w") as f:
        f.create_dataset("dset", data=np.arange(320, dtype="i4").reshape(32, 10), chunks=(4, 8), fletcher32=True)
    with h5py.File(data / "small1dchunk.h5", "w") as f:
        f.create_dataset("dset", data=np.arange(100, dtype="f8"), chunks=(5,))
    with h5py.File(data / "small2dchunk.h5", "w") as f:
        f.create_dataset("dset", data=np.arange(400, dtype="i2").reshape(20, 20), chunks=(3, 4))


def counts(log: str) -> dict[str, int]:
    """pytest's summary line, as numbers per outcome."""
    tail = log.strip().splitlines()[-1] if log.strip() else ""
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)", tail)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, required=True, help="h5pyd repository (work tree or git dir)")
    ap.add_argument("--client", type=Path, help="folder holding another h5pyd package to test with")
    ap.add_argument("--work", type=Path, help="where to put the tests, data and logs")
    ap.add_argument("-k", dest="only", help="run only test files whose name contains this")
    ap.add_argument("--keep", action="store_true", help="keep the server's data folder")
    ap.add_argument("--workers", type=int, default=1, help="server processes sharing the port (default 1)")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="h5pyd-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    tests = extract(args.repo, work / "src")
    client_dir = args.client or Path(__import__("h5pyd").__file__).parents[1]
    # the app tests run "python ../../h5pyd/_apps/X.py" from test/apps
    (tests.parent / "h5pyd").symlink_to(client_dir / "h5pyd")
    server = start_server(work / "server", workers=args.workers)
    password = dict(USERS)
    try:
        for user, path in (("test_user1", "/home/test_user1"), ("test_user1", FOLDER.rstrip("/")),
                           ("test_user2", "/home/test_user2")):
            r = requests.put(server.endpoint + "/", params={"domain": path}, json={"folder": True},
                             auth=(user, password[user]), timeout=30)
            r.raise_for_status()
        env = dict(os.environ)
        env.update(HS_ENDPOINT=server.endpoint, HS_USERNAME="test_user1", HS_PASSWORD=password["test_user1"],
                   TEST2_USERNAME="test_user2", TEST2_PASSWORD=password["test_user2"], H5PYD_TEST_FOLDER=FOLDER)
        env["PYTHONPATH"] = os.pathsep.join([str(client_dir)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.pop("HS_API_KEY", None)
        logs = work / "logs"
        logs.mkdir(exist_ok=True)
        rows: list[tuple[str, dict[str, int]]] = []
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
        for path in sorted((tests / "hl").glob("test_*.py")):
            if args.only and args.only not in path.name:
                continue
            run = subprocess.run([*pytest, path.name], cwd=path.parent, env=env, capture_output=True, text=True, check=False)
            (logs / f"{path.stem}.log").write_text(run.stdout + run.stderr)
            rows.append((f"hl/{path.name}", counts(run.stdout)))
        apps = tests / "apps"
        if not args.only or "apps" in args.only or any(args.only in t for t in APP_TESTS):
            make_app_files(apps / "data")
            load = subprocess.run([sys.executable, "load_files.py"], cwd=apps, env=env, capture_output=True, text=True, check=False)
            (logs / "load_files.log").write_text(load.stdout + load.stderr)
            rows.append(("apps/load_files.py", {"passed" if load.returncode == 0 else "failed": 1}))
            for name in APP_TESTS:
                run = subprocess.run([*pytest, f"{name}.py"], cwd=apps, env=env, capture_output=True, text=True, check=False)
                (logs / f"{name}.log").write_text(run.stdout + run.stderr)
                rows.append((f"apps/{name}.py", counts(run.stdout)))
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(server.data, ignore_errors=True)
    total: dict[str, int] = {}
    print(f"{'file':40} passed failed skipped xfailed")
    for name, c in rows:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
        print(f"{name:40} {c.get('passed', 0):6} {c.get('failed', 0) + c.get('error', 0) + c.get('errors', 0):6} "
              f"{c.get('skipped', 0):7} {c.get('xfailed', 0):7}")
    print(f"{'total':40} {total.get('passed', 0):6} "
          f"{total.get('failed', 0) + total.get('error', 0) + total.get('errors', 0):6} "
          f"{total.get('skipped', 0):7} {total.get('xfailed', 0):7}")
    print(f"logs: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
