"""Load and link a list of HDF5 files into a fresh h5lake and read everything back through h5pyd.

    python dev/corpus_check.py FILE... [@LIST] [--modes load,link] [--round-trip-corpus DIR] [--export]

Not part of the suite: a harness for files nobody made for h5lake (site-packages test data,
other projects' files). It starts ``h5lake serve`` from this tree on a loopback port with
``--allow-source`` for every file's folder, then for each file and mode runs ``h5lake load``
(``--link`` for ``link``) through ``client.load.load_file`` and compares the domain, read with
h5pyd 1.0, against the file read with h5py (``tests/support/remote_compare.py``). One line per
file and mode: ``OK``, ``REFUSED`` (the load named what it cannot take), ``FAIL`` (the first
differences) or ``ERROR`` (the load failed otherwise: a server 500, a client exception).
``--export`` also exports each loaded domain (``h5lake export``) and compares the file with the
source object by object (``tests/roundtrip/compare.py``) and with ``h5diff``; a difference there
is an ``EXPORT`` line.
``--round-trip-corpus DIR`` first writes the round-trip corpus (tests/roundtrip/corpus.py), the
extra features of tests/support/corpus_extra.py and the other libraries' files of
tests/support/corpus_wild.py (anndata's too where it imports) into DIR and checks those too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import traceback
import uuid
from pathlib import Path

import requests
from tests.roundtrip.compare import compare_files
from tests.support.remote_compare import compare
from tests.support.server import USERS, start_server

from h5lake.client import load_link as linking
from h5lake.client.common import ToolError
from h5lake.client.export import export_domain
from h5lake.client.h5props import register_codec_filters
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, RestError, Settings

HOME = "/home/test_user1/corpus"


def _files(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for arg in args:
        if arg.startswith("@"):
            out += [Path(line) for line in Path(arg[1:]).read_text().splitlines() if line.strip()]
        else:
            out.append(Path(arg))
    return out


def exported(path: Path, client: RestClient, verbose: bool) -> list[str]:
    """Differences between the source and the domain's export (compare.py's, then h5diff's)."""
    target = Path(tempfile.mkdtemp(prefix="corpus-export-")) / path.name
    try:
        export_domain(client, target, workers=4)
        diffs = compare_files(str(path), str(target))
        run = subprocess.run(["h5diff", "-c", str(path), str(target)], capture_output=True, text=True, timeout=600, cwd=path.parent)
        if run.returncode == 1:  # 2: HDF5 1.10's tools cannot open a newer format, or an unwritten dataset
            diffs += [f"h5diff {run.returncode}: " + " | ".join((run.stdout + run.stderr).strip().splitlines()[:6])]
        return diffs
    except Exception as exc:  # noqa: BLE001 - reported per file, the run goes on
        return [f"export: {type(exc).__name__}: {str(exc)[:600]}"] + ([traceback.format_exc()] if verbose else [])
    finally:
        shutil.rmtree(target.parent, ignore_errors=True)


def check(path: Path, mode: str, endpoint: str, verbose: bool, export: bool = False) -> tuple[str, list[str]]:
    domain = f"{HOME}/{uuid.uuid4().hex[:10]}-{path.stem[:40]}.h5"
    client = RestClient(Settings(endpoint, "test_user1", USERS["test_user1"]), domain)
    step = linking.Linker(str(path.resolve())) if mode == "link" else None
    try:
        load_file(path, client, link_step=step, workers=4)
    except ToolError as exc:
        text = str(exc)
        status = "ERROR" if " 500" in text or "Internal" in text else "REFUSED"
        return status, [text[:600]]
    except RestError as exc:
        return "ERROR", [f"RestError: {str(exc)[:600]}"]
    except Exception as exc:  # noqa: BLE001 - reported per file, the run goes on
        return "ERROR", [f"{type(exc).__name__}: {str(exc)[:600]}"] + ([traceback.format_exc()] if verbose else [])
    try:
        result = compare(str(path), domain, endpoint=endpoint, username="test_user1", password=USERS["test_user1"])
        export_diffs = exported(path, client, verbose) if export and not result.diffs else []
    except Exception as exc:  # noqa: BLE001
        return "ERROR", [f"compare: {type(exc).__name__}: {str(exc)[:600]}"] + ([traceback.format_exc()] if verbose else [])
    finally:
        requests.delete(endpoint + "/", params={"domain": domain}, auth=("test_user1", USERS["test_user1"]), timeout=60)
    if result.diffs:
        return "FAIL", result.diffs
    if export_diffs:
        return "EXPORT", export_diffs
    return "OK", [f"{result.objects} objects"] + [f"limit: {text}" for text in result.limits[:3]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="HDF5 files, or @FILE listing one path a line")
    ap.add_argument("--modes", default="load,link", help="load, link or both (default)")
    ap.add_argument("--round-trip-corpus", type=Path, metavar="DIR", help="write and check the generated corpus too")
    ap.add_argument("--max-diffs", type=int, default=3)
    ap.add_argument("--export", action="store_true", help="export each domain and compare it with the source")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of client errors")
    args = ap.parse_args()
    files = _files(args.files)
    register_codec_filters()  # h5py then reads PyTables' LZO datasets, as h5lake load does
    if args.round_trip_corpus:
        # imported only when asked: they need hdf5plugin, PyTables, netCDF4...
        from tests.roundtrip.corpus import build_all
        from tests.support.corpus_extra import build_extra
        from tests.support.corpus_wild import build_wild

        args.round_trip_corpus.mkdir(parents=True, exist_ok=True)
        files += sorted(build_all(args.round_trip_corpus).values()) + sorted(build_extra(args.round_trip_corpus).values())
        files += sorted(build_wild(args.round_trip_corpus, optional=True).values())
    folders = sorted({str(p.resolve().parent) for p in files})
    work = Path(tempfile.mkdtemp(prefix="corpus-check-"))
    server = start_server(work, extra=[a for f in folders for a in ("--allow-source", f)])
    counts: dict[str, int] = {}
    try:
        for folder in ("/home/test_user1", HOME):
            r = requests.put(server.endpoint + "/", params={"domain": folder}, json={"folder": True}, auth=("test_user1", USERS["test_user1"]), timeout=30)
            assert r.status_code in (201, 409), r.text
        for path in files:
            for mode in args.modes.split(","):
                status, lines = check(path, mode, server.endpoint, args.verbose, args.export)
                counts[status] = counts.get(status, 0) + 1
                print(f"{status:8} {mode:4} {path}", flush=True)
                for line in lines[: args.max_diffs if status != "OK" else 4]:
                    print(f"         {line}", flush=True)
    finally:
        server.stop()
        log = server.log.read_text()
        if "Traceback" in log or " 500 " in log:  # (not the port number)
            print(f"server log with tracebacks kept: {server.log}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0 if set(counts) <= {"OK", "REFUSED"} else 1


if __name__ == "__main__":
    sys.exit(main())
