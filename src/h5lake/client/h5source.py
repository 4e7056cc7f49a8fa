"""Opening a load's source: a local HDF5 file or an ``s3://`` object read with ranged GETs,
and the folder its relative external raw data files are resolved in."""


from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import h5py

from h5lake.client import s3files
from h5lake.client.common import (
    ToolError,
)
from h5lake.client.h5props import (
    register_codec_filters,
)


class ExternalFilesMissing(Exception):
    """External raw data files a dataset needs are not where HDF5 would look for them."""


class Unreadable(Exception):
    """HDF5 cannot read an object's metadata (a damaged object header, heap or B-tree)."""


ORIGIN = "${ORIGIN}"


Source = Path | str  # a local file, or an ``s3://BUCKET/KEY`` URI


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Where ``s3://`` sources are read: the server's settings (credentials: AWS environment)."""

    endpoint: str | None = None
    region: str | None = None


def external_folder(source: Source, prefix: str | None) -> Path:
    """The folder HDF5 resolves relative external file names in: the ``HDF5_EXTFILE_PREFIX``
    environment variable (which HDF5 itself applies), else ``prefix`` (``--external-prefix``),
    else the source file's folder (for an S3 source, the working directory); ``${ORIGIN}``
    stands for the source file's folder."""
    chosen = os.environ.get("HDF5_EXTFILE_PREFIX") or prefix
    origin = os.getcwd() if s3files.is_s3(source) else str(Path(source).resolve().parent)
    if not chosen:
        return Path(origin)
    return Path(chosen.replace(ORIGIN, origin)).resolve()


_CWD = threading.RLock()


@contextmanager
def working_directory(folder: str | None) -> Iterator[None]:
    """Run in ``folder`` (if given): HDF5 resolves relative external file names against the
    working directory, and a per-dataset prefix conflicts with HDF5's own reopening of the
    dataset (attribute iteration, dereferencing), so this is the one reliable way. The working
    directory is the process's: loads in several threads of one process take turns here, else
    their changes would interleave and leave the process in one of their folders."""
    if folder is None:
        yield
        return
    with _CWD:
        old = os.getcwd()
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(old)


def open_source(source: Source, s3: S3Settings | None = None) -> h5py.File:
    import hdf5plugin  # noqa: F401  (registers the plugin filters h5py can then decode)

    register_codec_filters()
    if s3files.is_s3(source):
        return _open_s3(str(source), s3 or S3Settings())
    source = Path(source)
    if not source.exists():
        raise ToolError(f"{source}: no such file")
    try:
        if not h5py.is_hdf5(str(source)):
            raise ToolError(f"{source} is not an HDF5 file")
        return h5py.File(source, "r")
    except OSError as exc:
        raise ToolError(f"{source} cannot be opened as an HDF5 file: {exc}") from None


def _open_s3(uri: str, s3: S3Settings) -> h5py.File:
    """An HDF5 file on S3, read with ranged GETs (:mod:`h5lake.client.s3files`)."""
    try:
        raw = s3files.S3File(uri, endpoint=s3.endpoint, region=s3.region)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    except FileNotFoundError:
        raise ToolError(f"{uri}: no such object") from None
    except Exception as exc:  # noqa: BLE001 - obstore's errors (credentials, network) name the cause
        raise ToolError(f"{uri} cannot be read: {str(exc).splitlines()[0]}") from None
    if raw.size < 8 or not _has_signature(raw):
        raise ToolError(f"{uri} is not an HDF5 file")
    try:
        f = h5py.File(raw, "r")
    except OSError as exc:
        raise ToolError(f"{uri} cannot be opened as an HDF5 file: {exc}") from None
    S3_FILES[f.id.id] = raw
    return f


S3_FILES: dict[int, s3files.S3File] = {}  # open S3 sources by file id, for their user blocks
_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _has_signature(raw: s3files.S3File) -> bool:
    """HDF5's signature at offset 0, 512, 1024, 2048... (after a user block)."""
    at = 0
    while at + 8 <= raw.size:
        raw.seek(at)
        if raw.read(8) == _SIGNATURE:
            raw.seek(0)
            return True
        at = 512 if at == 0 else 2 * at
    return False


def source_uri(source: Source) -> str:
    """The ``file_uri`` the server reads ``source`` by: its absolute path, symlinks resolved,
    or the ``s3://`` URI itself."""
    return str(source) if s3files.is_s3(source) else str(Path(source).resolve())
