"""Typed settings, read once at start-up and passed in.

Every setting has a type, a default and an environment variable (``H5LAKE_<NAME>``); the command
line overrides the environment. An unknown or malformed value stops start-up with one line.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def _names(v: Any) -> Any:
    """A list setting from the environment: a JSON list, or names separated by commas (one name
    is the common case: ``H5LAKE_ADMIN=alice``)."""
    if isinstance(v, PurePath):
        return (str(v),)
    if not isinstance(v, str):
        return v
    text = v.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError("expected a JSON list of strings or comma-separated names") from None
    return tuple(part.strip() for part in text.split(",") if part.strip())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="H5LAKE_", extra="forbid", frozen=True)

    data: Path = Field(Path("./h5lake-data"), description="local storage root")
    storage: str | None = Field(None, description="s3://BUCKET[/PREFIX]; default: --data")
    s3_endpoint: str | None = None
    s3_region: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(5101, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=256)
    passwd: Path | None = Field(None, description="file of user:password or user:<hash> lines")
    admin: Annotated[tuple[str, ...], NoDecode] = ()
    allow_source: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="roots of linkable HDF5 files: folders or s3://BUCKET[/PREFIX]"
    )
    max_request_bytes: int = Field(512 * 1024 * 1024, ge=1024)
    max_chunk_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    min_chunk_bytes: int = Field(1024 * 1024, ge=1)
    chunk_concurrency: int = Field(16, ge=1, le=1024)
    public_read: bool = Field(False, description="new domains readable by everyone")
    catalog_stale_after: float = Field(
        30.0, gt=0, description="seconds before another process's unfinished write intent is recovered"
    )
    catalog_recover_every: float = Field(30.0, gt=0, description="seconds between recoveries of stale intents")
    log_level: str = "warning"

    @field_validator("log_level")
    @classmethod
    def _level(cls, v: str) -> str:
        v = v.lower()
        if v not in {"critical", "error", "warning", "info", "debug"}:
            raise ValueError("must be one of critical, error, warning, info, debug")
        return v

    @field_validator("passwd")
    @classmethod
    def _passwd_exists(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"no such file: {v}")
        return v

    @field_validator("admin", mode="before")
    @classmethod
    def _admins(cls, v: Any) -> Any:
        return _names(v)

    @field_validator("allow_source", mode="before")
    @classmethod
    def _source_roots(cls, v: Any) -> Any:
        items = _names(v)
        if not isinstance(items, list | tuple):
            return items
        roots = []
        for item in items:
            text = str(item)
            if text.startswith("s3://"):
                if not text[len("s3://") :].split("/", 1)[0]:
                    raise ValueError(f"{text}: an S3 source root must look like s3://BUCKET[/PREFIX]")
            elif not Path(text).is_dir():
                raise ValueError(f"{text} is not a folder; give an existing folder of HDF5 files or s3://BUCKET[/PREFIX]")
            roots.append(text)
        return tuple(roots)

    @field_validator("storage")
    @classmethod
    def _storage_uri(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith("s3://"):
            raise ValueError("must look like s3://BUCKET[/PREFIX]")
        return v
