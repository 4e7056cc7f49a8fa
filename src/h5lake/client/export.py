"""``h5lake export DOMAIN TARGET.h5``: write a domain back into an HDF5 file, exactly.

:class:`Fetcher` reads the objects reachable from the root: from h5lake by pages of
``GET /?getobjs=1&Limit=2000`` (docs/api.md; small datasets' values inline), the next page read
while this one is written; from another server one GET per object, concurrently. :class:`Writer`
builds the file with h5py's low-level API as the pages come, so that types, property lists and
creation order come out as recorded: each group's links in creation order once the listing has
brought their targets (a link's target is created, anonymously, just before its first link, so
link creation order is exact), each object's attributes and listed value as it is made (those
holding references once every object is), and after each page the other values of its datasets,
from a thread pool: chunks the server stores as the file would (exportvalues.direct_chunks)
copied as stored with ``write_direct_chunk``, the others read as binary, one target chunk or
block per GET. What the client holds is
bounded by a page, the groups listed and not yet entered, and each made object's id and path
(exportwriter's docstring). The file is written under a temporary name and renamed when
complete.

Any HDF REST server works: what h5lake's model adds (docs/fidelity.md) is used when present,
and h5pyd's forms (``CreateOrder``, filters by name) otherwise.
"""


from __future__ import annotations

import base64
import contextlib
import gc
import itertools
import math
import os
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import orjson
from h5py import h5f, h5o, h5p

from h5lake.chunks.filters import KNOWN_FILTER_IDS
from h5lake.client import h5native, mapfiles
from h5lake.client import versioned_hdf5 as versioned
from h5lake.client.common import (
    ToolError,
    connect,
    connection_options,
    explain,
    report_notes,
)
from h5lake.client.exportfetch import Fetcher
from h5lake.client.exportwriter import Doc, ExportStats, Writer
from h5lake.client.h5props import CRT_ORDER, OPTIONAL, register_codec_filters
from h5lake.client.h5source import working_directory
from h5lake.client.h5types import Unrepresentable
from h5lake.client.rest import RestClient, RestError
from h5lake.model.types import item_size

# -- filters h5lake does not run -----------------------------------------------------------------

# Plugin filters export runs again on the values: lossless, and their set_local keeps the cd_values
# they record (bzip2's is its block size).
RERUN_PLUGINS = frozenset({307})


def not_rerun_filters(docs: Iterable[Doc]) -> dict[int, str]:
    """The plugin filters (id: name) of the datasets in ``docs`` that export keeps but does not
    run: filters h5lake has no codec for (recorded with their ``parameters``), optional, and not
    in `RERUN_PLUGINS`. h5lake holds their datasets' decoded values; running such a filter again
    would compress lossy values a second time (zfp in fixed-rate mode, sz) and its set_local
    would rewrite or refuse the cd_values it recorded in the file (sz, fcidecomp). Export writes
    their chunks with the filter skipped (docs/fidelity.md)."""
    out: dict[int, str] = {}
    for doc in docs:
        for spec in (doc.get("creationProperties") or {}).get("filters") or ():
            fid = spec.get("id") if isinstance(spec, dict) else None
            if not isinstance(fid, int) or "parameters" not in spec or fid in RERUN_PLUGINS or fid in KNOWN_FILTER_IDS:
                continue
            if int(spec.get("flags", OPTIONAL)) & OPTIONAL:
                out[fid] = str(spec.get("name") or f"filter {fid}")
    return out


def user_block(props: Doc) -> tuple[int, bytes]:
    """The root group's ``userBlock`` (docs/fidelity.md): its size and its content, which
    :func:`export_domain` writes at the start of the file once HDF5 has closed it."""
    block = props.get("userBlock")
    if not isinstance(block, dict):
        return 0, b""
    try:
        size = int(block["size"])
        content = base64.b64decode(block.get("value_base64", ""), validate=True)
    except (KeyError, TypeError, ValueError):
        raise ToolError(f"the root group's userBlock {block!r} is not a size and base64 bytes") from None
    if size < 512 or size & (size - 1) or len(content) > size:
        raise ToolError(f"the root group's userBlock of {size} bytes holding {len(content)} is not a valid HDF5 user block")
    return size, content


COMPACT_ATTRIBUTE_BYTES = 60_000  # HDF5 keeps an attribute in the object header up to 64 KiB


def _has_large_attribute(doc: Doc) -> bool:
    """Whether an attribute's value passes what HDF5's original file format can hold in an
    object header: such a file needs dense attribute storage (format 1.8 and later)."""
    for attr in (doc.get("attributes") or {}).values():
        shape, t = attr.get("shape") or {}, attr.get("type")
        if "dims" not in shape and isinstance(t, dict) and t.get("class") in ("H5T_INTEGER", "H5T_FLOAT"):
            continue  # (one number)
        dims = shape.get("dims") or ()
        count = math.prod(dims) if isinstance(dims, list) else 1
        size = item_size(attr["type"]) if isinstance(attr.get("type"), dict) else None
        total = count * size if size is not None else len(orjson.dumps(attr.get("value")))
        if total > COMPACT_ATTRIBUTE_BYTES:
            return True
    return False


def _create_file(path: Path, root: Doc, dense_attributes: bool = False) -> Any:
    props = root.get("creationProperties") or {}
    fcpl = h5p.create(h5p.FILE_CREATE)
    order = props.get("linkCreationOrder") or ("H5P_CRT_ORDER_INDEXED" if props.get("CreateOrder") else None)
    if order:
        fcpl.set_link_creation_order({v: k for k, v in CRT_ORDER.items()}[order])
    attr_order = props.get("attributeCreationOrder") or (order if props.get("CreateOrder") and "linkCreationOrder" not in props else None)
    if attr_order:
        fcpl.set_attr_creation_order({v: k for k, v in CRT_ORDER.items()}[attr_order])
    phase = props.get("attributePhaseChange")
    if phase:
        fcpl.set_attr_phase_change(phase["maxCompact"], phase["minDense"])
    if "trackTimes" in props:
        fcpl.set_obj_track_times(bool(props["trackTimes"]))
    if props.get("linkPhaseChange"):
        h5native.set_link_phase_change(fcpl, props["linkPhaseChange"]["maxCompact"], props["linkPhaseChange"]["minDense"])
    size, _ = user_block(props)
    if size:
        fcpl.set_userblock(size)
    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_fclose_degree(h5f.CLOSE_STRONG)
    if dense_attributes:  # else "object header message is too large"
        fapl.set_libver_bounds(h5f.LIBVER_V18, h5f.LIBVER_LATEST)
    return h5f.create(str(path).encode(), h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)


class _Arrivals:
    """What export does on each object read, before it is made: a large attribute turns dense
    attribute storage on (the file's format bounds raised to 1.8, as HDF5 needs), a plugin
    filter h5lake does not run is registered as skipped (`not_rerun_filters`), a map's link is
    remembered (maps are written after the file)."""

    def __init__(self, fid: Any, dense: bool, native: bool) -> None:
        self.fid = fid
        self.dense = dense
        self.native = native
        self.skipped: dict[int, str] = {}
        self.maps = False

    def __call__(self, doc: Doc) -> None:
        if not self.dense and _has_large_attribute(doc):
            h5native.set_libver_bounds(self.fid, h5f.LIBVER_V18, h5f.LIBVER_LATEST)
            self.dense = True
        if self.native and str(doc.get("id", "")).startswith("d-"):
            for filter_id, name in not_rerun_filters([doc]).items():
                if filter_id not in self.skipped:
                    h5native.register_skipped_filter(filter_id, name.encode())
                    self.skipped[filter_id] = name
        if not self.maps and doc.get("links") and mapfiles.links_maps([doc]):
            self.maps = True


def _restore_filters(skipped: dict[int, str], hdf5plugin: Any) -> None:
    """Give HDF5 back the plugins `not_rerun_filters` stood in for: HDF5 loads a plugin of its
    plugin path again when next needed; hdf5plugin's own are registered again."""
    if not skipped:
        return
    for filter_id in skipped:
        h5native.unregister_filter(filter_id)
    ours = [i for i in skipped if i in hdf5plugin.FILTERS.values()]
    if ours:
        hdf5plugin.register(ours, force=True)


YOUNG_OBJECTS = 50_000
"""Allocations between two collections of Python's youngest generation while export runs (700
by default): the pages' parsed JSON, alive until written, was traversed again at every
collection, ~0.1-0.2 s of the 8,041-object bench file's 1.2-1.6 s of client CPU. Cycles are
still collected, after at most 50,000 allocations; the threshold is restored at the end."""


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], YOUNG_OBJECTS), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def export_domain(client: RestClient, target: Path, *, overwrite: bool = False, workers: int = 8, quiet: bool = True, external_files: bool = False) -> tuple[ExportStats, list[str]]:
    with _fewer_collections():
        return _export_domain(client, target, overwrite=overwrite, workers=workers, quiet=quiet, external_files=external_files)


def _export_domain(client: RestClient, target: Path, *, overwrite: bool, workers: int, quiet: bool, external_files: bool) -> tuple[ExportStats, list[str]]:
    import hdf5plugin  # (registers the plugin filters h5py writes with)

    register_codec_filters()
    started = time.monotonic()
    if target.exists() and not overwrite:
        raise ToolError(f"{target} exists (use --overwrite to replace it)")
    try:
        domain = client.get_json("/")
    except RestError as exc:
        raise ToolError(explain(exc, client)) from None
    root = domain.get("root")
    if not root:
        raise ToolError(f"{client.domain} is a folder, not a domain")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    with ThreadPoolExecutor(workers, thread_name_prefix="h5lake-export") as pool:
        fetcher = Fetcher(client, pool)
        pages = fetcher.pages(root)
        arrivals: _Arrivals | None = None
        fid = None
        try:
            first = next(pages, {})
            root_doc = first.get(root) or fetcher.fetch(root)
            props = root_doc.get("creationProperties") or {}
            fid = _create_file(partial, root_doc, _has_large_attribute(root_doc))
            if props.get("comment"):
                h5o.set_comment(fid, props["comment"].encode("utf-8", "surrogateescape"))
            arrivals = _Arrivals(fid, _has_large_attribute(root_doc), h5native.available())
            writer = Writer(client, fetcher, fid, target.resolve().parent, workers=workers, quiet=quiet,
                            external_files=external_files, prepare=arrivals)
            writer.skipped = arrivals.skipped
            fetcher.docs[root] = root_doc
            arrivals(root_doc)
            # HDF5 makes and writes external raw files in the working directory (from the
            # dataset's creation on, its values going with it): so the whole file is built there
            with working_directory(str(writer.target_dir) if external_files else None):
                writer.write_all(root, itertools.chain([first], pages), pool)
                writer.stats.metadata_seconds = time.monotonic() - started - writer.value_seconds
            writer.check_readable()
            writer.refs.release()
            fid.close()
            if arrivals.maps:
                writer.stats.maps = mapfiles.export_maps(client, str(partial))
            _, content = user_block(props)
            if content:
                with open(partial, "r+b") as out:  # HDF5 leaves the user block zeroed
                    out.write(content)
            os.replace(partial, target)
        except Unrepresentable as exc:
            raise ToolError(f"{client.domain}: {exc.feature} cannot be written to HDF5") from None
        except RestError as exc:
            raise ToolError(explain(exc, client)) from None
        finally:
            pages.close()
            if fid is not None and fid.valid:
                fid.close()
            partial.unlink(missing_ok=True)
            if arrivals is not None:
                _restore_filters(arrivals.skipped, hdf5plugin)
    writer.stats.groups += 1  # the root
    writer.stats.seconds = time.monotonic() - started
    return writer.stats, writer.notes


def register(group: click.Group) -> None:
    @group.command("export", short_help="Write a domain into an HDF5 file.")
    @click.argument("domain")
    @click.argument("target", type=click.Path(path_type=Path, dir_okay=False))
    @connection_options
    @click.option("--overwrite", is_flag=True, help="Replace TARGET if it exists.")
    @click.option("--keep-external", "--external-files", "external_files", is_flag=True, help="Keep External File List datasets external: re-create their raw files next to TARGET (default: write their values as ordinary datasets).")
    @click.option("--workers", type=click.IntRange(1, 64), default=8, show_default=True, help="Concurrent requests.")
    @click.option("--all-versions", is_flag=True, help="Write every version of DOMAIN as a versioned-hdf5 file (docs/versions.md).")
    @click.option("-q", "--quiet", is_flag=True, help="No progress bar, notes or summary.")
    def export(
        domain: str, target: Path, overwrite: bool, external_files: bool, workers: int, all_versions: bool, quiet: bool,
        **options: Any,
    ) -> None:
        """Write DOMAIN into the HDF5 file TARGET, as it was loaded; see docs/fidelity.md."""
        folder = target.absolute().parent
        if not folder.is_dir():
            raise ToolError(f"cannot write {target}: folder {folder} does not exist (create it first)")
        if target.exists() and not overwrite:
            raise ToolError(f"{target} exists (use --overwrite to replace it)")
        client = connect(options, domain, workers)
        if all_versions:
            try:
                names = versioned.export_versions(client, target)
            except RestError as exc:
                raise ToolError(explain(exc, client)) from None
            if not quiet:
                click.echo(f"{domain} -> {target}: {len(names)} version(s) as a versioned-hdf5 file")
            return
        try:
            stats, notes = export_domain(client, target, overwrite=overwrite, workers=workers, quiet=quiet, external_files=external_files)
        except OSError as exc:  # creating or writing the file itself: h5py names the partial file
            reason = os.strerror(exc.errno) if exc.errno else str(exc).splitlines()[0]
            raise ToolError(f"cannot write {target}: {reason}") from None
        report_notes(notes, quiet)
        if not quiet:
            click.echo(stats.summary(domain, str(target)))
