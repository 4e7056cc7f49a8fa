"""Typed settings, read once at start-up and passed in.

Every setting has a type, a default and an environment variable (``H5LAKE_<NAME>``); the command
line overrides the environment. An unknown or malformed value stops start-up with one line.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
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


# What one worker process may need: ~90 MiB resident when idle, and ~150 MiB more while it
# streams a large request (docs/performance.md, "Server processes" and "Memory").
WORKER_MEMORY_BYTES = 256 * 1024 * 1024
MAX_WORKERS = 256
CGROUP = Path("/sys/fs/cgroup")


def _numbers(path: Path) -> list[float] | None:
    """The numbers of a one-line cgroup file; None if absent, unreadable or unlimited (``max``)."""
    try:
        return [float(word) for word in path.read_text().split()]
    except (OSError, ValueError):
        return None


def cpu_quota(root: Path = CGROUP) -> int | None:
    """Cores a container's CPU quota allows, rounded up (cgroup v2 ``cpu.max``, v1
    ``cpu/cpu.cfs_quota_us``); None without a quota."""
    v2 = _numbers(root / "cpu.max")
    if v2 is not None and len(v2) == 2:
        quota, period = v2
    else:
        v1, v1_period = _numbers(root / "cpu" / "cpu.cfs_quota_us"), _numbers(root / "cpu" / "cpu.cfs_period_us")
        if not v1 or not v1_period:
            return None
        quota, period = v1[0], v1_period[0]
    if quota <= 0 or period <= 0:  # v1 writes no quota as -1
        return None
    return max(1, math.ceil(quota / period))


def memory_limit(root: Path = CGROUP) -> int | None:
    """A container's memory limit in bytes (cgroup v2 ``memory.max``, v1
    ``memory/memory.limit_in_bytes``); None without one."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        found = _numbers(path)
        if found:
            return int(found[0]) if 0 < found[0] < 2**60 else None  # v1 writes no limit as ~2**63
    return None


def usable_cores(root: Path = CGROUP) -> int:
    """Cores this process may run on: its CPU affinity, lowered by a container's CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = cpu_quota(root)
    return max(1, min(cores, quota) if quota else cores)


def auto_workers(root: Path = CGROUP) -> int:
    """``--workers auto``: one server process per usable core (measured best on concurrent
    requests, docs/performance.md), but no more than a container's memory limit holds at
    ``WORKER_MEMORY_BYTES`` each, and at least one."""
    workers = usable_cores(root)
    limit = memory_limit(root)
    if limit is not None:
        workers = min(workers, limit // WORKER_MEMORY_BYTES)
    return max(1, min(workers, MAX_WORKERS))


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="H5LAKE_", extra="forbid", frozen=True)

    data: Path = Field(Path("./h5lake-data"), description="local storage root")
    storage: str | None = Field(None, description="s3://BUCKET[/PREFIX]; default: --data")
    s3_endpoint: str | None = None
    s3_region: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(5101, ge=0, le=65535)
    workers: int = Field(
        default_factory=auto_workers, ge=1, le=MAX_WORKERS,
        description="server processes sharing the port; auto: one per usable core (within a memory limit)",
    )
    passwd: Path | None = Field(None, description="file of user:password or user:<hash> lines")
    admin: Annotated[tuple[str, ...], NoDecode] = ()
    allow_source: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="roots of linkable HDF5 files: folders or s3://BUCKET[/PREFIX]"
    )
    cors_origin: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="origins a browser app may call from ('*': any); none: no CORS headers"
    )
    max_request_bytes: int = Field(512 * 1024 * 1024, ge=1024)
    max_json_bytes: int = Field(
        100 * 1024 * 1024, ge=1024, le=200 * 1024 * 1024, description="largest JSON request or value reply (text)"
    )
    reply_memory_bytes: int | None = Field(
        None, ge=1024 * 1024,
        description="memory per process for replies made whole (h5grove data, downloads, JSON values; "
        "default: twice --max-request-bytes); more wait their turn",
    )
    max_reply_bytes: int = Field(
        4 * 1024**3, ge=1024 * 1024,
        description="largest binary value reply (streamed); a larger selection is read in parts (select=...)",
    )
    max_query_elements: int = Field(
        10**9, ge=1000, description="most elements one value query may examine (chunks never written cost none)"
    )
    max_chunk_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="largest chunk a dataset may have (a client's choice or a linked file's)"
    )
    max_attribute_bytes: int = Field(
        1024 * 1024, ge=1024, le=64 * 1024 * 1024,
        description="largest attribute kept in its object's document (JSON text; larger ones: an object of "
        "their own); those kept there together: 4 times this; also the largest fill value",
    )
    min_chunk_bytes: int = Field(1024 * 1024, ge=1)
    compact_max_bytes: int = Field(
        64 * 1024, ge=0, le=1024 * 1024, description="largest stored values a dataset keeps in its document (0: none)"
    )
    chunk_concurrency: int = Field(16, ge=1, le=1024)
    domain_objects_limit: int = Field(
        2000,
        ge=0,
        le=1_000_000,
        description="GET / with getobjs lists the domain's objects only when it has at most this many (HSDS: 500; docs/performance.md)",
    )
    watch_interval: float = Field(
        0.5, ge=0.05, le=10,
        description="seconds between looks (one store HEAD) at each dataset watched with ?wait= (docs/api.md, \"The watch\")",
    )
    watch_max_datasets: int = Field(
        256, ge=1, le=100_000, description="datasets watched at once per process; a wait on one more gets 503"
    )
    public_read: bool = Field(False, description="domains and folders created while it is on are readable by everyone, without credentials")
    catalog_stale_after: float = Field(
        30.0, gt=0, description="seconds before another process's unfinished write intent is recovered"
    )
    catalog_recover_every: float = Field(30.0, gt=0, description="seconds between recoveries of stale intents")
    commit_lease: float = Field(
        10.0, ge=0.2, le=600,
        description="seconds a commit's, restore's or merge's mark on a domain lasts unrenewed: how long one whose process died holds the domain back",
    )
    log_level: str = "warning"
    max_connections: int = Field(
        1000, ge=1, le=1_000_000, description="connections and requests in flight per process; more get 503"
    )
    header_timeout: float = Field(10.0, gt=0, le=3600, description="seconds a client has to send a request's headers")
    body_timeout: float = Field(60.0, gt=0, le=3600, description="seconds a request body may pause between pieces")
    keep_alive_timeout: int = Field(5, ge=1, le=3600, description="seconds an idle keep-alive connection stays open")
    insecure_no_auth: bool = Field(
        False, description="allow running without authentication off loopback, or with admins and no passwords"
    )
    oidc_issuer: str | None = Field(None, description="OpenID Connect issuer whose bearer tokens are accepted")
    oidc_audience: str | None = Field(None, description="the audience (client id) tokens must name")
    oidc_jwks_url: str | None = Field(None, description="the issuer's JWKS; default: from its discovery document")
    oidc_user_claim: str = Field("preferred_username", description="claim holding the user name (else sub)")
    oidc_admin_claim: str | None = Field(None, description="claim (string or list) that may grant admin")
    oidc_admin_value: str | None = Field(None, description="value of --oidc-admin-claim that makes an admin")
    apikey_cache_seconds: float = Field(30.0, ge=0, le=3600, description="how long a key lookup is remembered")
    access_log: Literal["json", "text", "off"] = Field("off", description="one line per request on stderr: json, text or off")
    metrics: bool = Field(True, description="count requests and storage operations for GET /metrics")
    metrics_token: str | None = Field(
        None, description="bearer token that may read GET /metrics besides admins (Authorization: Bearer TOKEN)"
    )
    drain_seconds: float = Field(
        0.0, ge=0, le=3600,
        description="on SIGTERM: seconds /readyz answers 503 while requests are still served, before the listener closes",
    )
    shutdown_timeout: float = Field(
        10.0, gt=0, le=3600, description="on shutdown: seconds requests in flight may take to finish once the listener closed"
    )

    @property
    def authenticates(self) -> bool:
        """Whether callers must prove who they are (a passwd file or an OpenID issuer)."""
        return self.passwd is not None or self.oidc_issuer is not None

    @model_validator(mode="after")
    def _auth_policy(self) -> Settings:
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError("--oidc-issuer needs --oidc-audience (the client id tokens are issued for)")
        if self.insecure_no_auth or self.authenticates:
            return self
        if self.admin:
            raise ValueError(
                "--admin needs --passwd or --oidc-issuer: without them anyone could claim the admin's name "
                "(add --insecure-no-auth to allow that anyway)"
            )
        if self.host not in _LOOPBACK:
            raise ValueError(
                f"--host {self.host} without --passwd or --oidc-issuer would let anyone on the network act as "
                "any user (add --insecure-no-auth to allow that anyway)"
            )
        return self

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, v: Any) -> Any:
        if isinstance(v, str):
            text = v.strip().lower()
            if text == "auto":
                return auto_workers()
            if not text.isdigit():
                raise ValueError("must be a number of processes or 'auto' (one per usable core)")
        return v

    @field_validator("access_log", mode="before")
    @classmethod
    def _access_log(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().lower() not in {"json", "text", "off"}:
            raise ValueError("must be json, text or off")
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("metrics_token")
    @classmethod
    def _token(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("is empty; give a long random token (e.g. `openssl rand -hex 32`) or leave it out")
        if v is not None and (v != v.strip() or any(ord(c) < 33 or ord(c) > 126 for c in v)):
            raise ValueError("must be printable ASCII without spaces (it is sent in an Authorization header)")
        return v

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

    @field_validator("cors_origin", mode="before")
    @classmethod
    def _origins(cls, v: Any) -> Any:
        items = _names(v)
        if isinstance(items, list | tuple):
            for item in items:
                text = str(item)
                if text != "*" and (not text.startswith(("http://", "https://")) or text.rstrip("/") != text):
                    raise ValueError(f"{text}: an origin is '*' or scheme://host[:port] with no path")
        return items

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
