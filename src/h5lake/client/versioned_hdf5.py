"""versioned-hdf5 files in and out (docs/versions.md, "versioned-hdf5").

* `load_versions`: every version of a file written by versioned-hdf5 (PyPI ``versioned-hdf5``),
  oldest first along the current version's chain, becomes a version of a new domain: the head is
  made equal to that version (only the chunks that differ from the previous one are written),
  then committed with the version's timestamp (``created``) and name (message and tag).
* `export_versions`: every version of a domain, oldest first, becomes a version of a new file,
  named by its tag (else its id) and stamped with its ``created`` time.

Groups, datasets of fixed-size types (shape, chunks, fill value, maximum shape) and attributes
are carried; what versioned-hdf5 itself does not keep (compression, links other than hard) is not.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from itertools import product
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from h5lake.client.common import ToolError
from h5lake.client.rest import RestClient
from h5lake.extras import need

DATA_GROUP = "_version_data"
INTERNAL_ATTRS = frozenset({"chunks", "raw_data"})  # versioned-hdf5's own attributes of a dataset
VERSION_ATTRS = frozenset({"committed", "prev_version", "timestamp"})  # ... and of a version's group
TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
VERSION_ID = re.compile(r"^v[1-9][0-9]*$")


def is_versioned(path: Path) -> bool:
    try:
        with h5py.File(path, "r") as f:
            return f"{DATA_GROUP}/versions" in f
    except OSError:
        return False


def _chain(f: h5py.File) -> list[tuple[str, float]]:
    """(name, timestamp) of the current version and its ancestors, oldest first."""
    versions = f[f"{DATA_GROUP}/versions"]
    name = versions.attrs.get("current_version")
    name = name.decode() if isinstance(name, bytes) else name
    out = []
    while name and name != "__first_version__":
        attrs = versions[name].attrs
        stamp = attrs["timestamp"]
        stamp = stamp.decode() if isinstance(stamp, bytes) else str(stamp)
        out.append((name, datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f%z").timestamp()))
        prev = attrs.get("prev_version")
        name = prev.decode() if isinstance(prev, bytes) else prev
    return out[::-1]


def _chunk_slices(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    counts = [-(-n // c) for n, c in zip(shape, chunks)]
    for index in product(*map(range, counts)):
        yield tuple(slice(i * c, min(n, (i + 1) * c)) for i, c, n in zip(index, chunks, shape))


def _attrs(obj: Any, skip: frozenset[str]) -> dict[str, Any]:
    return {k: obj.attrs[k] for k in obj.attrs if k not in skip}


def _chunks_of(src: Any) -> tuple[int, ...] | None:
    chunks = src.chunks
    if chunks is None and "chunks" in src.attrs:  # a versioned-hdf5 dataset (virtual) keeps them here
        chunks = tuple(int(c) for c in src.attrs["chunks"])
    return tuple(chunks) if chunks else None


class Sync:
    """Make a destination group (h5pyd or versioned-hdf5's staged group) equal to a source group,
    writing only the chunks that differ from what the destination held before."""

    def __init__(self, unlink: Callable[[Any, str], None]) -> None:
        self.unlink = unlink
        self.before: dict[str, np.ndarray] = {}  # dataset path -> values the destination holds

    def group(self, src: Any, dst: Any, path: str = "") -> None:
        wanted = {k for k in src if not (path == "" and k == DATA_GROUP)}
        for name in sorted(set(dst) - wanted):
            self.unlink(dst, name)
            self.before.pop(f"{path}/{name}", None)
        for name in sorted(wanted):
            item, where = src[name], f"{path}/{name}"
            if not hasattr(item, "dtype"):  # a group
                if name in dst and hasattr(dst[name], "dtype"):
                    self.unlink(dst, name)
                self.group(item, dst[name] if name in dst else dst.create_group(name), where)
            else:
                self.dataset(item, dst, name, where)
        self._attrs(src, dst, VERSION_ATTRS if path == "" else frozenset())

    def dataset(self, src: Any, dst_group: Any, name: str, where: str) -> None:
        values = np.asarray(src[()])
        chunks = _chunks_of(src)
        old = self.before.get(where)
        dst = dst_group[name] if name in dst_group else None  # noqa: SIM401 (h5pyd: get() misses objects)
        if dst is not None and (dst.dtype != values.dtype or (dst.shape != values.shape and not _resizable(dst, values))):
            self.unlink(dst_group, name)
            dst, old = None, None
        if dst is None:
            kw: dict[str, Any] = {"data": values, "fillvalue": src.fillvalue}
            if chunks and values.ndim:
                kw["chunks"] = chunks
                kw["maxshape"] = (None,) * values.ndim  # versioned-hdf5's datasets may always be resized
            dst = dst_group.create_dataset(name, **kw)
            old = values  # written whole by the creation
        elif dst.shape != values.shape:
            dst.resize(values.shape)
            old = None
        if values.ndim == 0:
            if old is None or not np.array_equal(old, values):
                dst[()] = values
        else:
            for region in _chunk_slices(values.shape, chunks or values.shape):
                if old is None or old.shape != values.shape or not np.array_equal(old[region], values[region]):
                    dst[region] = values[region]
        self._attrs(src, dst, INTERNAL_ATTRS)
        self.before[where] = values

    @staticmethod
    def _attrs(src: Any, dst: Any, skip: frozenset[str]) -> None:
        want = _attrs(src, skip)
        have = _attrs(dst, skip)
        for key in set(have) - set(want):
            del dst.attrs[key]
        for key, value in want.items():
            if key not in have or not np.array_equal(np.asarray(have[key]), np.asarray(value)):
                dst.attrs[key] = value


def _resizable(dst: Any, values: np.ndarray) -> bool:
    maxshape = dst.maxshape or dst.shape
    return len(maxshape) == values.ndim and all(m is None or m >= n for m, n in zip(maxshape, values.shape))


def h5pyd_options(client: RestClient) -> dict[str, Any]:
    s = client.settings
    return {"endpoint": s.endpoint, "username": s.username, "password": s.password}


def load_versions(source: Path, client: RestClient) -> list[dict[str, Any]]:
    """Make ``client.domain`` (which must not exist) hold every version of ``source``."""
    # imported here: versioned-hdf5 and h5pyd are optional (the client extra; a server never
    # needs them), needed only for such files
    h5pyd = need("h5pyd", f"loading {source} (a versioned-hdf5 file)")
    VersionedHDF5File = need("versioned_hdf5", f"loading {source} (a versioned-hdf5 file)").VersionedHDF5File

    if client.domain_exists():
        raise ToolError(f"{client.domain} exists: a versioned-hdf5 file is loaded into a new domain")
    client.put_json("/", {})
    made = []
    opts = h5pyd_options(client)

    def unlink(group: Any, name: str) -> None:
        client.delete(f"/groups/{group.id.id}/links/{name}")
        with contextlib.suppress(KeyError, OSError):
            del group[name]  # h5pyd's own view of the group (it keeps links it has seen)

    sync = Sync(unlink)
    with h5py.File(source, "r") as f:
        vf = VersionedHDF5File(f)
        for name, stamp in _chain(f):
            with h5pyd.File(client.domain, "a", **opts) as head:
                sync.group(vf[name], head)
            body = {"message": name, "created": stamp,
                    "metadata": {"versioned_hdf5": {"name": name, "timestamp": stamp}}}
            version = client.post_json("/versions", body)
            if TAG.match(name) and not VERSION_ID.match(name):
                client.put_json(f"/versions/tags/{name}", {"version": version["id"]})
            made.append(version)
    return made


def export_versions(client: RestClient, target: Path) -> list[str]:
    """Write every version of ``client.domain`` into a new versioned-hdf5 file ``target``."""
    # imported here (see load_versions)
    h5pyd = need("h5pyd", "export --all-versions")
    VersionedHDF5File = need("versioned_hdf5", "export --all-versions").VersionedHDF5File

    history = client.get_json("/versions")["versions"][::-1]
    if not history:
        raise ToolError(f"{client.domain} has no versions to export")
    names: dict[str, str] = {}
    for tag in client.get_json("/versions/tags")["tags"]:
        names.setdefault(tag["version"], tag["name"])
    opts = h5pyd_options(client)
    written = []

    def unlink(group: Any, name: str) -> None:
        del group[name]

    sync = Sync(unlink)
    with h5py.File(target, "w") as f:
        vf = VersionedHDF5File(f)
        prev = None
        for version in history:
            name = names.get(version["id"], version["id"])
            when = datetime.fromtimestamp(version["created"], UTC)
            with (
                h5pyd.File(f"{client.domain}@{version['id']}", "r", **opts) as src,
                vf.stage_version(name, prev_version=prev, timestamp=when) as g,
            ):
                sync.group(src, g)
            prev = name
            written.append(name)
    return written
