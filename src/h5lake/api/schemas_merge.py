"""Schemas of ``GET /versions/diff``, ``POST /versions/merge`` and ``/versions/cherry-pick``
(docs/versions.md), beside the other version schemas of `schemas`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from h5lake.api import patterns
from h5lake.api.schemas import Open, Version


class MergeBody(Open):
    """``POST /versions/merge`` and ``/versions/cherry-pick``."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"from": "/home/u/f-fork.h5", "message": "bring back", "resolve": {"/g": "theirs", "*": "ours"}}]})
    from_: str = Field(alias="from", description="merge: FORK or FORK@REF; cherry-pick: D@REF (D the domain or a fork of it)",
                       json_schema_extra={"pattern": patterns.DOMAIN_VERSION})
    message: str | None = None
    resolve: Literal["ours", "theirs"] | dict[str, Literal["ours", "theirs"]] | None = Field(
        None, description='"ours" or "theirs" for every conflict, or per object path ("*": the rest)',
        json_schema_extra={"propertyNames": {"pattern": r"^(?:\*|/.*)(?![\s\S])"}})


class Merged(Version):
    objects: int
    chunks: int
    elementwise: int = Field(description="chunks changed on both sides in disjoint elements, merged element by element")
    resolved: dict[str, int] = Field(description="conflicts resolved as ours and as theirs")


class MergeConflict(Open):
    path: str
    id: str
    kind: str = Field(description="attribute, link, shape, object, chunk or deleted")
    name: str | None = None
    chunks: list[str] | None = None
    ours: Any = None
    theirs: Any = None


class MergeConflicts(Open):
    conflicts: list[MergeConflict]
    count: int
    nextMarker: int | None = None


class DiffObject(Open):
    id: str
    path: str | None


class ChunkDiff(Open):
    count: int
    indices: list[str]


class DiffChanged(DiffObject):
    attributes: dict[str, list[str]] | None = None
    links: dict[str, list[str]] | None = None
    shape: dict[str, Any] | None = None
    chunks: ChunkDiff | None = None


class VersionDiff(Open):
    from_: str = Field(alias="from")
    to: str
    added: list[DiffObject]
    removed: list[DiffObject]
    changed: list[DiffChanged]
