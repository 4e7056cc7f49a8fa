"""``h5lake load SOURCE.h5 DOMAIN``: copy an HDF5 file into a domain, keeping everything.

One streaming walk. :class:`Planner` walks the file with h5py, breadth first, and yields each
object as it is read, refusing anything the service cannot represent with
:class:`~h5lake.client.h5types.Unrepresentable`; :class:`Uploader` creates the domain and sends
the objects as they come: batched POSTs of up to 300 objects (ids chosen here, from file
addresses), each carrying its links, attributes and a small value; then what needs the object
(a wide group's links, large attributes, values as binary PUTs of one source chunk or block),
with at most two requests per worker in flight. If anything fails, or the walk meets something
refused, the domain is deleted, unless ``--keep-partial``. With ``--overwrite`` of an existing
domain the file is walked once first without sending, so a refused file leaves it as it was.

What is kept and how is in docs/fidelity.md. Linking datasets in place instead of copying them
(``--link``) is one pluggable step, :class:`LinkStep`: given an h5py dataset it returns a
:class:`~h5lake.client.load_link.LinkPlan` (a reference layout, and maybe a chunk table to create
first), or None to copy the values. ``--append --extend AXIS`` then grows those datasets by
further files (:func:`~h5lake.client.append.append_file`): a chunk table slab and a resize for each linked dataset, a
resize and the new values for each copied one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

from h5lake.client import append as appending
from h5lake.client import load_link as linking
from h5lake.client import mapfiles, s3files
from h5lake.client import versioned_hdf5 as versioned
from h5lake.client.common import (
    ToolError,
    connect,
    connection_options,
    explain,
    report_notes,
)
from h5lake.client.h5source import (
    ExternalFilesMissing,
    S3Settings,
    Source,
    Unreadable,
    external_folder,
    open_source,
    source_uri,
    working_directory,
)
from h5lake.client.h5types import Unrepresentable
from h5lake.client.loadplan import LinkStep, Planner
from h5lake.client.rest import RestClient, RestError
from h5lake.client.upload import LoadStats, Uploader
from h5lake.errors import InvalidInput
from h5lake.versions.names import split_domain

log = logging.getLogger(__name__)


def load_file(
    source: Source,
    client: RestClient,
    *,
    link_step: LinkStep | None = None,
    keep_partial: bool = False,
    overwrite: bool = False,
    workers: int = 8,
    quiet: bool = True,
    external_prefix: str | None = None,
    s3: S3Settings | None = None,
) -> tuple[LoadStats, list[str]]:
    """Copy ``source`` into ``client.domain`` (linking what ``link_step`` links); returns the
    counts and the notes to report. External raw data files are looked for as
    :func:`external_folder` says; missing ones are all named once the walk has met them."""
    folder = external_folder(source, external_prefix)
    with open_source(source, s3) as f:
        planner = Planner(f, link_step, folder)
        try:
            if client.domain_exists():
                if not overwrite:
                    raise ToolError(f"domain {client.domain} already exists (use --overwrite to replace it)")
                _check_first(f, link_step, folder, source)  # the old domain stays if the file is refused
                client.delete("/")
        except RestError as exc:
            raise ToolError(explain(exc, client)) from None
        uploader = Uploader(client, f, planner, workers=workers, quiet=quiet)
        try:
            # HDF5 reads external raw data files relative to the working directory
            with working_directory(str(folder) if folder.is_dir() else None):
                stats = uploader.run()
            stats.maps = mapfiles.load_maps(client, f, planner.marked)
        except BaseException as exc:
            if uploader.started and not keep_partial:
                _delete_quietly(client)
            refused = _refusal(exc, source)
            if refused is not None:
                raise refused from None
            if isinstance(exc, ToolError | KeyboardInterrupt):
                raise
            if isinstance(exc, RestError):
                raise ToolError(explain(exc, client)) from None
            raise
    return stats, planner.notes + planner.link_step.notes


def _refusal(exc: BaseException, source: Source) -> ToolError | None:
    """What to say when the walk refused the file (the partial domain was deleted)."""
    if isinstance(exc, ExternalFilesMissing | Unreadable | linking.LinkError):
        return ToolError(f"{source}: {exc}; nothing was loaded")
    if isinstance(exc, Unrepresentable):
        return ToolError(f"{source}: cannot be represented in h5lake: {exc.feature}; nothing was loaded")
    return None


def _check_first(f: Any, link_step: LinkStep | None, folder: Path, source: Source) -> None:
    """Walk the whole file once without sending anything: before an existing domain is
    replaced, so that a file h5lake refuses leaves it as it was."""
    planner = Planner(f, link_step, folder)
    planner.root_id = "g-00000000-00000000-0000-000000-000000"
    try:
        for node in planner.walk():
            node.handle = None
    except BaseException as exc:
        refused = _refusal(exc, source)
        if refused is not None:
            raise refused from None
        raise


def _delete_quietly(client: RestClient) -> None:
    try:
        client.delete("/")
    except RestError as exc:
        log.warning("could not delete the partial domain %s: %s", client.domain, exc.message)


def register(group: click.Group) -> None:
    @group.command("load", short_help="Copy HDF5 files into a domain, or link them where they are.")
    @click.argument("sources", nargs=-1, required=True)
    @click.argument("domain")
    @connection_options
    @click.option("--link", "link_files", is_flag=True, help="Link datasets where they are (the server reads the file) instead of copying values; copies what cannot be linked.")
    @click.option("--append", is_flag=True, help="Link so that more files can be appended; if DOMAIN exists, append SOURCES to it (needs --extend).")
    @click.option("--extend", metavar="AXIS", help="With --append: the axis to append along, a number or a dimension scale's name.")
    @click.option("--s3-endpoint", envvar="H5LAKE_S3_ENDPOINT", help="S3 endpoint for s3:// SOURCES (the server's setting; credentials from the AWS environment).")
    @click.option("--s3-region", envvar="H5LAKE_S3_REGION", help="S3 region for s3:// SOURCES.")
    @click.option("--external-prefix", metavar="DIR", help="Where relative external raw data files are (default: the source's folder; ${ORIGIN} is that folder). HDF5_EXTFILE_PREFIX, if set, wins.")
    @click.option("--keep-partial", is_flag=True, help="On failure, keep what was loaded instead of deleting the domain.")
    @click.option("--overwrite", is_flag=True, help="Replace the domain if it exists.")
    @click.option("--workers", type=click.IntRange(1, 64), default=8, show_default=True, help="Concurrent requests.")
    @click.option("-q", "--quiet", is_flag=True, help="No progress bar, notes or summary.")
    def load(
        sources: tuple[str, ...],
        domain: str,
        link_files: bool,
        append: bool,
        extend: str | None,
        s3_endpoint: str | None,
        s3_region: str | None,
        external_prefix: str | None,
        keep_partial: bool,
        overwrite: bool,
        workers: int,
        quiet: bool,
        **options: Any,
    ) -> None:
        """Copy the HDF5 file SOURCE into DOMAIN (e.g. /home/me/file.h5), keeping every object,
        type, property and value exactly; see docs/fidelity.md. With --link, datasets are
        linked instead (the server must be started with --allow-source covering the files).
        With --append --extend AXIS, several daily files become one domain whose datasets
        grow along AXIS, each chunk read from its own file."""
        if append != (extend is not None):
            raise click.UsageError("--append and --extend AXIS go together")
        if append and overwrite:
            raise click.UsageError("--append adds to a domain; it cannot be combined with --overwrite")
        if len(sources) > 1 and not append:
            raise click.UsageError("several SOURCES can only be appended (--append --extend AXIS)")
        try:
            head, version = split_domain(domain)
        except InvalidInput as exc:
            raise ToolError(exc.message) from None
        if version is not None:
            raise ToolError(
                f"{domain} is a version of {head}, and versions are read-only: load into {head} "
                f"(h5lake version commit {head} then makes a new version) or into a new domain"
            )
        s3 = S3Settings(s3_endpoint, s3_region)
        paths: list[Source] = [text if s3files.is_s3(text) else Path(text) for text in sources]
        for source in paths:
            if isinstance(source, Path) and not source.is_file():
                raise ToolError(f"{source}: no such file")
        client = connect(options, domain, workers)
        if len(paths) == 1 and isinstance(paths[0], Path) and not (link_files or append) and versioned.is_versioned(paths[0]):
            try:
                made = versioned.load_versions(paths[0], client)
            except RestError as exc:
                raise ToolError(explain(exc, client)) from None
            if not quiet:
                click.echo(f"{paths[0]} -> {domain}: {len(made)} version(s) of a versioned-hdf5 file (docs/versions.md)")
            return
        first: appending.Datasets | None = None  # with --append: the first file's axis per dataset
        exists = False
        if append and extend is not None:
            first, exists = _check_append(paths, client, extend, s3)
            note = appending.kept_note(first, extend)
            if note and (exists or len(paths) > 1):
                report_notes([note], quiet)
        for i, source in enumerate(paths):
            counter = f" [{i + 1}/{len(sources)}]" if len(sources) > 1 else ""
            if first is not None and extend is not None and (i > 0 or exists):
                grown = appending.append_file(source, client, extend, first, workers=workers, quiet=quiet, s3=s3)
                if not quiet:
                    click.echo(grown.summary(str(source), domain, extend) + counter)
                continue
            step = linking.Linker(source_uri(source), extend, external_folder(source, external_prefix)) if link_files or append else None
            stats, notes = load_file(
                source, client, link_step=step, keep_partial=keep_partial, overwrite=overwrite, workers=workers, quiet=quiet,
                external_prefix=external_prefix, s3=s3,
            )
            report_notes(notes, quiet)
            if not quiet:
                click.echo(stats.summary(str(source), domain) + counter)


def _check_append(paths: list[Source], client: RestClient, extend: str, s3: S3Settings) -> tuple[appending.Datasets, bool]:
    """Before anything changes: the first file's axis per dataset (the domain's, when it
    exists), and every file to append checked against it; whether the domain exists."""
    exists = _exists(client)
    if exists:
        first, first_name = appending.domain_axes(client, extend), client.domain
    else:
        with open_source(paths[0], s3) as f:
            first, first_name = appending.file_axes(f, extend), str(paths[0])
    appending.check_axes(first, extend, first_name)
    for source in paths if exists else paths[1:]:
        with open_source(source, s3) as f:
            appending.check_file(f, str(source), first, extend)
    return first, exists


def _exists(client: RestClient) -> bool:
    try:
        return client.domain_exists()
    except RestError as exc:
        raise ToolError(explain(exc, client)) from None
