"""h5pyd's own ``hsload`` and ``hsget`` against h5lake: h5lake loses nothing they send or read.

For every corpus file two round trips run with PyPI h5pyd 1.0's tools:

- ``hsload`` into h5lake, then ``h5lake export``: whatever differs from the source was lost by
  hsload before it reached h5lake (h5lake's own load and export round-trip the file exactly,
  test_roundtrip.py);
- ``h5lake load``, then ``hsget``: whatever differs was lost by hsget reading or writing.

Every difference must be explained by an entry below, saying what h5pyd changes and why, and
every file-specific entry must still be needed (so the list stays true as h5pyd changes). Where
the tool fails outright, the entry says so with the error it gives.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import io
import logging
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from h5lake.client.export import export_domain
from h5lake.client.rest import RestClient, Settings
from tests.roundtrip.compare import compare_files
from tests.roundtrip.conftest import CORPUS_NAMES, RoundTrip
from tests.roundtrip.test_roundtrip import KNOWN_FAILURES
from tests.support.server import Server

pytestmark = pytest.mark.one_backend  # h5pyd's tools over the corpus; the corpus on every store is test_roundtrip.py's


@dataclass(frozen=True)
class Loss:
    """Differences ``what`` (as compare.py names them) at paths matching ``paths``."""

    what: str
    paths: str
    why: str

    def explains(self, line: str) -> bool:
        path, _, rest = line.partition(": ")
        what = rest.split(" differs", 1)[0]
        return fnmatch.fnmatchcase(what, self.what) and fnmatch.fnmatchcase(path, self.paths)


@dataclass(frozen=True)
class Fails:
    """The tool fails on this file with ``error`` in its output."""

    error: str
    why: str


Expected = list[Loss] | Fails

# What hsload changes in (almost) every file.
HSLOAD_ALWAYS = [
    Loss("layout", "*", "hsload creates every dataset chunked: compact and contiguous layouts are lost"),
    Loss("allocation time", "*", "follows from the layout hsload chose (chunked datasets allocate incrementally)"),
]
# What hsget changes in (almost) every file.
HSGET_ALWAYS = HSLOAD_ALWAYS[:1] + [
    Loss("fill value defined", "*", "hsget sets an explicit fill value on every dataset it writes"),
    Loss("allocation time", "*", "follows from the layout hsget chose"),
    Loss("chunk shape", "*", "hsget picks its own chunk shape instead of the one the domain records"),
]
_REFS_TEXT = "hsload stores every object reference as the text '<HDF5 object reference>'"

HSLOAD: dict[str, Expected] = {
    "anonymous_datatype": [Loss("type committed", "*", "hsload does not keep a committed datatype that has no name")],
    "comments": [Loss("comment", "*", "hsload does not copy object comments")],
    "array_types": Fails("The truth value of an array", "hsload cannot copy H5T_ARRAY datasets"),
    "bitfield": Fails("no appropriate function for conversion path", "hsload cannot read bitfield values"),
    "committed_types": [
        Loss("type committed", "*", "hsload writes attributes and datasets with a copy of a committed type, not the shared one"),
        Loss("type", "/a@label", "hsload turns a fixed UTF-8 string attribute of a committed type into ASCII"),
    ],
    "compound": [Loss("type", "*", "hsload packs compounds: member offsets and padding are lost, members reordered")],
    "creation_order": [
        Loss("link creation order flags", "*", "hsload does not keep link creation order tracking"),
        Loss("attribute creation order flags", "*", "hsload does not keep attribute creation order tracking"),
        Loss("link order", "*", "links come back in name order"),
        Loss("attribute order", "*", "attributes come back in name order"),
        Loss("time tracking", "*", "hsload's groups do not record times as the source's do"),
    ],
    "dataspaces": [
        Loss("maxdims", "/empty_*", "hsload makes empty datasets extensible"),
        Loss("dataspace class", "*", "hsload writes a null-space dataset as scalar (h5pyd's null-to-scalar bug)"),
    ],
    "dimension_scales": [Loss("type", "*@*", "hsload rewrites CLASS, NAME and REFERENCE_LIST with its own types (string lengths, compound layout)")],
    "enums": [Loss("type", "/@color", "hsload stores an enum attribute as its base integer")],
    "external_storage": Fails("unable to open external raw data file", "hsload opens external files relative to the working directory"),
    "fill_alloc": Fails("createObjects POST to datasets failed with status: 400", "hsload sends fill values h5lake rejects as invalid for the type"),
    "filters": Fails("filter unknown is unknown", "hsload sends filters it does not know (nbit, scaleoffset) as 'unknown'"),
    "nan_values": [Loss("chunk shape", "/fill_nan", "hsload picks its own chunk shape for a chunked dataset with a fill value")],
    "object_refs": Fails("not an object id", _REFS_TEXT),
    "opaque": Fails("no appropriate function for conversion path", "hsload cannot read opaque values"),
    "plugin_filters": Fails("filter unknown is unknown", "hsload sends plugin filters it does not know as 'unknown'"),
    "plugin_filters_not_rerun": Fails("filter unknown is unknown", "hsload sends plugin filters it does not know as 'unknown'"),
    "region_refs": Fails("Unexpected metadata type", "hsload cannot copy region references"),
    "strings_fixed": [Loss("type", "*", "hsload turns every fixed string into NULLPAD (and scalar attributes into the length of their value)")],
    "unicode_names": [Loss("link", "/grüße/данные", "hsload does not keep a link name's character set")],
    "user_defined_links": Fails("Unknown link type", "hsload cannot read user-defined links"),
    "vlen_sequences": Fails("The truth value of an array", "hsload cannot copy vlen arrays"),
    # -- storage kinds and types (issue 17 items 5-6)
    "bitfield_pytables": [Loss("type", "*", "hsload writes bitfields as unsigned integers (as h5py reads them)")],
    "int128_time": Fails("data type '<i16' not understood", "hsload cannot read 16-byte integers (no numpy type)"),
    "long_double": Fails("Insufficient precision in available types", "hsload cannot read IEEE binary128 values (no numpy type)"),
    "lzo_pytables": Fails("filter unknown is unknown", "hsload sends the LZO filter, which it does not know, as 'unknown'"),
    "user_block": [
        Loss("user block", "/", "hsload does not copy the user block"),
        Loss("chunk shape", "/chunked", "hsload picks its own chunk shape for a compressed dataset"),
    ],
    "user_block_large": [Loss("user block", "/", "hsload does not copy the user block")],
    "matlab_cells": [
        Loss("user block", "/", "hsload does not copy the user block"),
        Loss("link order", "/", "hsload does not keep link creation order"),
        Loss("link creation order flags", "/", "hsload does not keep link creation order"),
        Loss("attribute creation order flags", "/", "hsload does not keep attribute creation order"),
        Loss("time tracking", "/", "hsload leaves the root group's time tracking at HDF5's default"),
        Loss("fill value defined", "/*cell", "hsload drops a fill value holding a reference"),
    ],
    # files as other projects write them (issue 17)
    "h5netcdf": [
        Loss("type", "*@*", "hsload turns NULLTERM attribute strings into NULLPAD (and shortens netCDF's by their terminator)"),
        Loss("link order", "*", "hsload does not keep link creation order"),
        Loss("link creation order flags", "*", "hsload does not keep link creation order"),
        Loss("attribute order", "*", "hsload does not keep attribute creation order"),
        Loss("attribute creation order flags", "*", "hsload does not keep attribute creation order"),
        Loss("time tracking", "*", "hsload does not keep the time-tracking flag"),
    ],
    "netcdf4": [
        Loss("type", "*@*", "hsload turns NULLTERM attribute strings into NULLPAD (and shortens netCDF's by their terminator)"),
        Loss("link order", "*", "hsload does not keep link creation order"),
        Loss("link creation order flags", "*", "hsload does not keep link creation order"),
        Loss("attribute order", "*", "hsload does not keep attribute creation order"),
        Loss("attribute creation order flags", "*", "hsload does not keep attribute creation order"),
        Loss("time tracking", "*", "hsload does not keep the time-tracking flag"),
        Loss("fill *", "/station", "hsload sets the fill value of a string variable its own way"),
    ],
    "pytables": [
        Loss("type", "*", "hsload turns NULLTERM strings into NULLPAD and bitfields (bool columns) into unsigned integers"),
        Loss("fill time", "*", "hsload does not keep the fill time"),
    ],
    "hickle_attrs": Fails("surrogates not allowed", "hsload cannot read attributes whose bytes are not UTF-8"),
    "nested_variable": Fails("Array Type base type must be", "hsload cannot create arrays of vlens"),
    # -- issue 15
    "dangling_refs": Fails("Unexpected metadata type", "hsload cannot copy region references"),
    "region_refs_undefined_fill": Fails("Unexpected metadata type", "hsload cannot copy region references"),
    "nbit_precision": Fails("filter unknown is unknown", "hsload sends the nbit filter, which it does not know, as 'unknown'"),
    "scaleoffset_kinds": [
        Loss("filters", "*", "hsload drops the scaleoffset filter (h5py reports it by a name h5pyd does not send)"),
        Loss("chunk shape", "*", "hsload picks its own chunk shape"),
    ],
}

HSGET: dict[str, Expected] = {
    # -- issue 15
    "dangling_refs": Fails("no appropriate function for conversion path", "hsget cannot write region references"),
    "region_refs_undefined_fill": Fails("no appropriate function for conversion path", "hsget cannot write region references"),
    "nbit_precision": Fails("no appropriate function for conversion path", "hsget cannot create H5T_ARRAY datasets (/nbit_array)"),
    "scaleoffset_kinds": Fails("compression 'scaleoffset' not in filters", "hsget cannot re-create the scaleoffset filter"),
    "array_types": Fails("no appropriate function for conversion path", "hsget cannot create H5T_ARRAY datasets in its output file"),
    "anonymous_datatype": [Loss("type committed", "*", "hsget writes datasets with a copy of a committed datatype that has no name")],
    "comments": [Loss("comment", "*", "hsget does not write object comments")],
    "bitfield": [Loss("type", "*", "hsget writes bitfields as the unsigned integers h5lake shows h5pyd (which cannot open bitfields)")],
    "committed_types": [
        Loss("type committed", "*", "hsget writes attributes and datasets with a copy of a committed type, not the shared one"),
        Loss("type", "/a@label", "hsget turns a fixed UTF-8 string attribute of a committed type into ASCII"),
    ],
    "compound": [Loss("type", "*", "hsget packs compounds: member offsets and padding are lost, members reordered")],
    "creation_order": [
        Loss("link creation order flags", "*", "hsget does not keep link creation order tracking"),
        Loss("attribute creation order flags", "*", "hsget does not keep attribute creation order tracking"),
        Loss("link order", "*", "links come back in name order"),
        Loss("attribute order", "*", "attributes come back in name order"),
        Loss("time tracking", "*", "hsget's groups do not record times as the source's do"),
    ],
    "dataspaces": [Loss("maxdims", "/empty_*", "hsget makes empty datasets extensible")],
    "dimension_scales": [Loss("type", "*@*", "hsget rewrites CLASS, NAME and REFERENCE_LIST with its own types")],
    "enums": [Loss("type", "/@color", "hsget stores an enum attribute as its base integer")],
    "external_storage": [Loss("external files", "/external", "hsget writes external data inline")],
    "fill_alloc": Fails("a bytes-like object is required", "hsget cannot write string fill values"),
    "filters": Fails("SZIP options must be a 2-tuple", "hsget cannot re-create szip filters"),
    "object_refs": Fails("Can't convert incompatible object to HDF5 object reference", "hsget cannot write object references"),
    "opaque": [Loss("type", "*", "hsget loses opaque tags")],
    "plugin_filters": Fails("is unavailable", "hsget cannot re-create plugin filters"),
    "plugin_filters_not_rerun": [Loss("filters", "*", "hsget drops the plugin filters it does not know")],
    "region_refs": Fails("no appropriate function for conversion path", "hsget cannot write region references"),
    "strings_fixed": Fails("'ascii' codec can't encode", "hsget cannot read fixed UTF-8 string attributes"),
    "user_defined_links": Fails("link with no id or h5path", "hsget cannot read user-defined links"),
    "vlen_sequences": Fails("Array Type base type must be", "hsget cannot create arrays of vlens"),
    # -- storage kinds and types (issue 17 items 5-6)
    "bitfield_pytables": [Loss("type", "*", "hsget writes bitfields as the unsigned integers h5lake shows h5pyd")],
    "int128_time": [Loss("type", "*", "hsget writes carried types (16-byte integers, time) as plain opaque bytes: h5pyd ignores hdf5Type")],
    "long_double": Fails("a bytes-like object is required, not 'str'", "hsget cannot write the opaque (long double) attribute"),
    "lzo_pytables": [Loss("filters", "*", "hsget drops the LZO filter (a user filter to h5pyd) it cannot re-create")],
    "user_block": [Loss("user block", "/", "hsget does not write a user block")],
    "user_block_large": [Loss("user block", "/", "hsget does not write a user block")],
    "matlab_cells": [
        Loss("user block", "/", "hsget does not write a user block"),
        Loss("link order", "/", "hsget does not keep link creation order"),
        Loss("link creation order flags", "/", "hsget does not keep link creation order"),
        Loss("attribute creation order flags", "/", "hsget does not keep attribute creation order"),
        Loss("time tracking", "/", "hsget leaves the root group's time tracking at HDF5's default"),
        Loss("values", "/unwritten_cell", "hsget writes null references where the fill value (a reference) stood"),
    ],
    # files as other projects write them (issue 17)
    "h5netcdf": [
        Loss("type", "*@*", "hsget turns NULLTERM attribute strings into NULLPAD (and shortens netCDF's by their terminator)"),
        Loss("link order", "*", "hsget does not keep link creation order"),
        Loss("link creation order flags", "*", "hsget does not keep link creation order"),
        Loss("attribute order", "*", "hsget does not keep attribute creation order"),
        Loss("attribute creation order flags", "*", "hsget does not keep attribute creation order"),
        Loss("time tracking", "*", "hsget does not keep the time-tracking flag"),
    ],
    "netcdf4": [
        Loss("type", "*@*", "hsget turns NULLTERM attribute strings into NULLPAD (and shortens netCDF's by their terminator)"),
        Loss("link order", "*", "hsget does not keep link creation order"),
        Loss("link creation order flags", "*", "hsget does not keep link creation order"),
        Loss("attribute order", "*", "hsget does not keep attribute creation order"),
        Loss("attribute creation order flags", "*", "hsget does not keep attribute creation order"),
        Loss("time tracking", "*", "hsget does not keep the time-tracking flag"),
        Loss("fill time", "/station", "hsget does not keep the fill time"),
    ],
    "pytables": Fails("killed by signal 11", "h5py crashes (SIGSEGV) writing the VLArray of 2-byte strings hsget read"),
    "hickle_attrs": Fails("'ascii' codec can't encode", "hsget cannot write attributes whose bytes are not UTF-8 (h5pyd reads U+FFFD)"),
    "nested_variable": Fails("Array Type base type must be", "hsget cannot create arrays of vlens"),
}


HSGET_NAMES = [n for n in CORPUS_NAMES if n not in KNOWN_FAILURES]  # h5lake must load them first


@dataclass
class ToolRun:
    error: str | None
    diffs: list[str]


# Runs that crash the interpreter (a segfault inside h5py while the tool writes its output) go
# to a subprocess, so the crash is recorded as the tool's failure instead of ending the session.
CRASHES = {("hsget", "pytables")}


def _tool_in_subprocess(name: str, args: list[str], settings: Settings) -> str | None:
    credentials = ["-e", settings.endpoint, "-u", settings.username or "", "-p", settings.password or ""]
    code = f"import sys; from h5pyd._apps.{name} import main; sys.argv = ['{name}', *sys.argv[1:]]; main()"
    done = subprocess.run([sys.executable, "-c", code, *credentials, *args], capture_output=True, text=True,
                          check=False, timeout=600)
    if done.returncode == 0:
        return None
    if done.returncode < 0:
        return f"killed by signal {-done.returncode}: {done.stderr[-500:]}"
    return (done.stdout + done.stderr).strip() or f"exit status {done.returncode}"


def _tool(name: str, args: list[str], settings: Settings, file: str = "") -> str | None:
    if (name, file) in CRASHES:
        return _tool_in_subprocess(name, args, settings)
    """Run h5pyd's command-line tool ``name`` (its real ``main``, with these arguments) in this
    process, which saves a second of start-up per run. Returns its error text, None on success."""
    module = importlib.import_module(f"h5pyd._apps.{name}")
    credentials = ["-e", settings.endpoint, "-u", settings.username or "", "-p", settings.password or ""]
    output = io.StringIO()
    records: list[str] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    saved = sys.argv
    sys.argv = [name, *credentials, *args]
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            module.main()
    except SystemExit as stop:
        if stop.code:
            return "\n".join([output.getvalue(), *records]).strip() or f"exit status {stop.code}"
    except Exception as exc:  # noqa: BLE001 - the tool's failure is what is checked
        return f"{type(exc).__name__}: {exc}"
    finally:
        sys.argv = saved
        logging.getLogger().removeHandler(handler)
    return None


@pytest.fixture(scope="session")
def h5pyd_runs(
    corpus: dict[str, Path], round_trip: Callable[[str], RoundTrip], settings: Settings, new_domain: Callable[[str], str], tmp_path_factory: pytest.TempPathFactory, server: Server
) -> dict[tuple[str, str], ToolRun]:
    trips = {name: round_trip(name) for name in HSGET_NAMES}
    out = tmp_path_factory.mktemp("h5pyd")

    def hsload(name: str) -> ToolRun:
        source = corpus[name]
        domain = new_domain(f"hsload-{name}")
        error = _tool("hsload", [str(source), domain], settings, name)
        if error is not None:
            return ToolRun(error, [])
        target = out / f"hsload-{name}.h5"
        try:
            export_domain(RestClient(settings, domain), target, workers=4)
        except Exception as exc:  # noqa: BLE001 - recorded, then checked against the table
            return ToolRun(str(exc), [])
        return ToolRun(None, compare_files(str(source), str(target)))

    def hsget(name: str) -> ToolRun:
        target = out / f"hsget-{name}.h5"
        error = _tool("hsget", [trips[name].domain, str(target)], settings, name)
        if error is not None:
            return ToolRun(error, [])
        return ToolRun(None, compare_files(str(trips[name].source), str(target)))

    # one at a time: the tools keep their settings in module globals and read sys.argv
    runs = {("hsload", n): hsload(n) for n in CORPUS_NAMES}
    runs.update({("hsget", n): hsget(n) for n in trips})
    return runs


def _check(run: ToolRun, expected: Expected | None, always: list[Loss], tool: str) -> None:
    if isinstance(expected, Fails):
        assert run.error is not None, f"{tool} now works on this file: update the table ({expected.why})"
        assert expected.error in run.error, run.error[-2000:]
        return
    assert run.error is None, f"{tool} failed unexpectedly:\n{run.error[-2000:]}"
    specific = expected or []
    unexplained = [d for d in run.diffs if not any(loss.explains(d) for loss in [*always, *specific])]
    assert unexplained == [], "differences nobody explains (h5lake's, or a new h5pyd change):\n" + "\n".join(unexplained)
    stale = [loss for loss in specific if not any(loss.explains(d) for d in run.diffs)]
    assert stale == [], f"{tool} no longer changes these: update the table: {stale}"


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_hsload_into_h5lake(name: str, h5pyd_runs: dict[tuple[str, str], ToolRun]) -> None:
    _check(h5pyd_runs[("hsload", name)], HSLOAD.get(name), HSLOAD_ALWAYS, "hsload")


@pytest.mark.parametrize("name", HSGET_NAMES)
def test_hsget_from_h5lake(name: str, h5pyd_runs: dict[tuple[str, str], ToolRun]) -> None:
    _check(h5pyd_runs[("hsget", name)], HSGET.get(name), HSGET_ALWAYS, "hsget")
