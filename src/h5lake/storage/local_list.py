"""Listing the local-directory store's folders (storage/local.py): the entries of one folder
in key order, whether a folder holds any object, and the removal of stale temporary files."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence

from h5lake.storage.base import RESERVED_SEGMENT_PREFIX, check_key
from h5lake.storage.posix import TEMP_PREFIX

log = logging.getLogger(__name__)

STALE_TEMP_SECONDS = 3600.0

FolderEntries = list[tuple[str, bool]]  # (name, is_folder)


def scan_folder(root: str, base: str, partial: str) -> FolderEntries:
    """(name, is_folder) of one folder, sorted as keys sort: a folder ``a`` as ``a/``."""
    entries: FolderEntries = []
    try:
        it = os.scandir(os.path.join(root, base))
    except (FileNotFoundError, NotADirectoryError):
        return entries
    with it:
        for entry in it:
            name = entry.name
            if not name.startswith(partial):
                continue
            if name.startswith(RESERVED_SEGMENT_PREFIX):
                if name.startswith(TEMP_PREFIX):
                    _remove_if_stale(entry)
                continue
            if not _listable(name):
                continue  # not a name this store writes
            if entry.is_dir(follow_symlinks=False):
                entries.append((name, True))
            elif entry.is_file(follow_symlinks=False):
                entries.append((name, False))
    entries.sort(key=lambda e: e[0] + "/" if e[1] else e[0])
    return entries


def holding_keys(root: str, bases: Sequence[str]) -> set[str]:
    return {base for base in bases if _holds_a_key(root, base)}


def _holds_a_key(root: str, base: str) -> bool:
    """Whether folder ``base`` holds any object (not only temporary files or folders)."""
    folders = [os.path.join(root, base)]
    while folders:
        try:
            it = os.scandir(folders.pop())
        except (FileNotFoundError, NotADirectoryError):
            continue
        with it:
            for entry in it:
                if not _listable(entry.name):
                    continue
                if entry.is_file(follow_symlinks=False):
                    return True
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return False


def _remove_if_stale(entry: os.DirEntry[str]) -> None:
    with contextlib.suppress(OSError):
        if entry.stat(follow_symlinks=False).st_mtime < time.time() - STALE_TEMP_SECONDS:
            os.unlink(entry.path)
            log.info("removed stale temporary file %s", entry.path)


def _listable(name: str) -> bool:
    try:
        check_key(name)
    except ValueError:
        return False  # reserved (temporary or lock files), or a name no key can have
    return True
