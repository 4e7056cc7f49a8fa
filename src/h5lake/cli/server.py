"""The server-side commands, ``h5lake serve`` and ``h5lake apikey``. The ``h5lake`` command
(:mod:`h5lake.cli.command`) loads this module only when one of them is asked for, so the client tools
start without the server's libraries (pydantic, uvicorn, the app)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import uvicorn
from pydantic import ValidationError
from pydantic_settings import SettingsError
from uvicorn.config import STARTUP_FAILURE

import h5lake
from h5lake import __version__
from h5lake.api.connections import PROTOCOL_PATH
from h5lake.auth import ApiKeys, load_passwd
from h5lake.cli.supervise import AnnouncingServer
from h5lake.config import Settings
from h5lake.errors import H5LakeError
from h5lake.extras import MissingExtra, need
from h5lake.storage.configured import open_store
from h5lake.versions.gc import GRACE, Collected, collect, record_run


def _settings(options: dict[str, Any]) -> Any:
    given = {k: v for k, v in options.items() if v not in (None, ())}
    try:
        return Settings(**given)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        message = err["msg"].removeprefix("Value error, ")
        if not name:  # a rule about several settings together
            raise click.ClickException(message) from None
        raise click.ClickException(f"invalid setting {_setting_names(name)}: {message}") from None
    except SettingsError as exc:  # a value the environment source could not even parse
        name = str(exc).split('"')[1] if str(exc).count('"') >= 2 else ""
        raise click.ClickException(f"invalid setting {_setting_names(name)}: {exc}") from None


def _setting_names(name: str) -> str:
    """How a user spells a setting: the option and the environment variable."""
    if not name:
        return "settings"
    return f"{name} (--{name.replace('_', '-')} / H5LAKE_{name.upper()})"


def _check_passwd(settings: Any) -> None:
    """Read the password file once here, so a malformed line stops start-up in one line (the
    server's own start-up would end in uvicorn's traceback)."""
    if settings.passwd is None:
        return
    try:
        load_passwd(settings.passwd)
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"invalid setting {_setting_names('passwd')}: {exc}; `h5lake passwd USER` prints a valid line") from None


def _check_store(settings: Any) -> None:
    """One request to an S3 store before announcing it: wrong endpoint, bucket or credentials
    show as one line instead of a traceback from the server's start-up."""
    if not settings.storage:
        return
    async def probe() -> None:
        store = open_store(settings)
        try:
            await store.head("h5lake-start-up-check")
        finally:
            await store.close()

    try:
        asyncio.run(probe())
    except H5LakeError as exc:
        at = f" at {settings.s3_endpoint}" if settings.s3_endpoint else ""
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise click.ClickException(
            f"cannot use the store {settings.storage}{at}: {reason}; check --s3-endpoint / H5LAKE_S3_ENDPOINT, "
            "--s3-region / H5LAKE_S3_REGION and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables"
        ) from None


def _check_port(host: str, port: int) -> None:
    """Bind the address once before announcing it, so an occupied port is reported before
    "serving", in one line (uvicorn would log its own error after our start-up message)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}; check --host / H5LAKE_HOST") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise click.ClickException(
                    f"port {port} on {host} is already in use (another h5lake serve?): stop that "
                    "process or choose another port with --port / H5LAKE_PORT"
                ) from None
            raise click.ClickException(
                f"cannot listen on {host}:{port}: {exc.strerror}; check --host / H5LAKE_HOST and --port / H5LAKE_PORT"
            ) from None


def _export(settings: Any) -> None:
    """Hand the validated settings to worker processes through the environment."""
    for name, value in settings.model_dump(mode="json").items():
        key = f"H5LAKE_{name.upper()}"
        if value is None:
            os.environ.pop(key, None)
        elif isinstance(value, (list, dict)):
            os.environ[key] = json.dumps(value)
        else:
            os.environ[key] = str(value)


@click.command()
@click.option("--data", type=click.Path(path_type=Path), help="Local storage root [H5LAKE_DATA, ./h5lake-data].")
@click.option("--storage", help="s3://BUCKET[/PREFIX] instead of --data [H5LAKE_STORAGE].")
@click.option("--s3-endpoint", help="S3 endpoint URL [H5LAKE_S3_ENDPOINT].")
@click.option("--s3-region", help="S3 region [H5LAKE_S3_REGION].")
@click.option("--host", help="Address to listen on [H5LAKE_HOST, 127.0.0.1].")
@click.option("--port", type=int, help="Port [H5LAKE_PORT, 5101].")
@click.option("--workers", metavar="N|auto", help="Server processes sharing the port, or auto: one per usable core [H5LAKE_WORKERS, auto].")
@click.option("--passwd", type=click.Path(path_type=Path), help="user:password lines [H5LAKE_PASSWD].")
@click.option("--admin", multiple=True, help="Admin user (repeatable) [H5LAKE_ADMIN: names separated by commas, or a JSON list].")
@click.option("--allow-source", multiple=True, help="Folder or s3://BUCKET[/PREFIX] of HDF5 files that may be linked (repeatable) [H5LAKE_ALLOW_SOURCE: as --admin].")
@click.option("--cors-origin", multiple=True, help="Origin a browser app may call from, or '*' (repeatable; default none: no CORS) [H5LAKE_CORS_ORIGIN: as --admin].")
@click.option("--max-request-bytes", type=int, help="Largest request body accepted.")
@click.option(
    "--reply-memory-bytes", type=int,
    help="Memory per process for replies made whole (h5grove data, downloads, JSON values); more wait [2x --max-request-bytes].",
)
@click.option(
    "--max-reply-bytes", type=int,
    help="Largest binary value reply (streamed); larger selections are read in parts [4 GiB].",
)
@click.option("--max-query-elements", type=int, help="Most elements one value query may examine [10**9].")
@click.option("--max-chunk-bytes", type=int, help="Largest chunk a dataset may have [64 MiB].")
@click.option("--max-json-bytes", type=int, help="Largest JSON request body or value reply [100 MiB].")
@click.option("--max-attribute-bytes", type=int, help="Largest attribute kept in its object's document (JSON; larger ones are objects of their own); those kept there together: 4x [1 MiB].")
@click.option("--compact-max-bytes", type=int, help="Largest stored values a dataset keeps in its document; 0: none [64 KiB].")
@click.option("--domain-objects-limit", type=int, help="Most objects a domain may have for GET /?getobjs=1 to list them all [2000].")
@click.option("--watch-interval", type=float, help="Seconds between store HEADs of each dataset watched with ?wait= [0.5].")
@click.option("--watch-max-datasets", type=int, help="Datasets watched at once per process; more get 503 [256].")
@click.option(
    "--public-read", is_flag=True, default=None,
    help="Domains and folders created while it is on are readable by everyone, without credentials "
    "(a default ACL entry; existing ones keep theirs); the web view opens without a login [H5LAKE_PUBLIC_READ].",
)
@click.option("--log-level", help="critical, error, warning, info or debug.")
@click.option("--oidc-issuer", help="Accept OpenID Connect bearer tokens of this issuer [H5LAKE_OIDC_ISSUER].")
@click.option("--oidc-audience", help="Audience (client id) the tokens must name.")
@click.option("--oidc-jwks-url", help="The issuer's JWKS URL (default: from its discovery document).")
@click.option("--oidc-user-claim", help="Token claim holding the user name [preferred_username, else sub].")
@click.option("--oidc-admin-claim", help="Token claim (string or list) that may grant admin, e.g. groups.")
@click.option("--oidc-admin-value", help="Value of that claim that makes a user an admin.")
@click.option("--max-connections", type=int, help="Connections in flight per process; more get 503 [1000].")
@click.option("--header-timeout", type=float, help="Seconds a client has to send its request headers [10].")
@click.option("--body-timeout", type=float, help="Seconds a request body may stall [60].")
@click.option("--keep-alive-timeout", type=int, help="Seconds an idle keep-alive connection stays open [5].")
@click.option("--access-log", metavar="json|text|off", help="One line per request on stderr [H5LAKE_ACCESS_LOG, off].")
@click.option("--metrics/--no-metrics", default=None, help="Count requests for GET /metrics [H5LAKE_METRICS, on].")
@click.option("--tracing/--no-tracing", default=None, help="OpenTelemetry spans of requests and storage operations [H5LAKE_TRACING, off].")
@click.option("--metrics-token", help="Bearer token that may read GET /metrics besides admins [H5LAKE_METRICS_TOKEN].")
@click.option("--drain-seconds", type=float, help="On SIGTERM, seconds /readyz answers 503 before the listener closes [0].")
@click.option("--shutdown-timeout", type=float, help="Seconds requests in flight may take to finish at shutdown [10].")
@click.option(
    "--insecure-no-auth", is_flag=True, default=None,
    help="Allow no authentication off loopback or with --admin (anyone may act as anyone).",
)
def serve(**options: Any) -> None:
    """Run the service."""
    settings = _settings(options)
    if settings.storage is None:
        try:
            settings.data.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise click.ClickException(f"cannot use {settings.data} for storage: {exc.strerror}; choose another with --data / H5LAKE_DATA") from None
    _check_passwd(settings)
    _check_port(settings.host, settings.port)
    _check_store(settings)
    _check_tracing(settings)
    _export(settings)
    scheme_host = f"http://{settings.host}:{settings.port}"
    where = settings.storage or str(settings.data.resolve())
    line = f"h5lake {__version__} serving {where} at {scheme_host}"  # printed once it accepts connections
    _warn_about_auth(settings)
    sys.stdout.flush()
    server: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "access_log": False,
        "http": PROTOCOL_PATH,
        "ws": "none",  # no WebSocket routes: an upgrade request is an ordinary request (JSON errors)
        "limit_concurrency": settings.max_connections,
        "timeout_keep_alive": settings.keep_alive_timeout,
        "timeout_graceful_shutdown": settings.shutdown_timeout,
    }
    metrics_dir = _metrics_dir() if settings.metrics else None
    if settings.workers == 1:
        try:
            _serve_one(server, line)
        finally:
            if metrics_dir:
                shutil.rmtree(metrics_dir, ignore_errors=True)
        return
    _supervise({**server, "workers": settings.workers, "announce": line, "metrics_dir": metrics_dir})


def _check_tracing(settings: Any) -> None:
    """``--tracing`` without the packages of the tracing extra stops start-up in one line."""
    if not settings.tracing:
        return
    try:
        for module in ("opentelemetry.sdk.trace", "opentelemetry.instrumentation.asgi"):
            need(module, "--tracing")
    except MissingExtra as exc:
        raise click.ClickException(str(exc)) from None


def _metrics_dir() -> str:
    """A new, empty folder for this server's Prometheus values (prometheus-client's multiprocess
    mode, `api/metrics.py`), named to its processes by ``PROMETHEUS_MULTIPROC_DIR``. It is named
    after this process (the server's process id, kept by the supervisor) and removed when the
    server ends; a server that a signal ended cannot remove it, so the folders of servers no
    longer running are removed here, at start-up."""
    parent = Path(tempfile.gettempdir()) / f"h5lake-metrics-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    for old in parent.iterdir():
        if old.name.isdigit() and not _running(int(old.name)):
            shutil.rmtree(old, ignore_errors=True)
    folder = parent / str(os.getpid())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    return str(folder)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _serve_one(options: dict[str, Any], line: str) -> None:
    """One process serving (uvicorn.run's way), announcing itself once it listens."""
    config = uvicorn.Config("h5lake.api.app:create_app_from_env", factory=True, **options)
    server = AnnouncingServer(config, line)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


def _supervise(options: dict[str, Any]) -> None:
    """Become the small supervisor of several workers (:mod:`h5lake.cli.supervise`): the same
    process (id, process group, signals) in a fresh interpreter, without what the checks loaded."""
    package_root = str(Path(h5lake.__file__).resolve().parents[1])
    paths = [package_root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))  # this very h5lake, wherever it came from
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "h5lake.cli.supervise", json.dumps(options)])


def _warn_about_auth(settings: Any) -> None:
    if not settings.authenticates:
        bar = "!" * 78
        click.echo(
            f"{bar}\n! NO AUTHENTICATION: any user name is accepted with any password, so anyone who can\n"
            f"! reach {settings.host}:{settings.port} can read, change and delete everything as any user.\n"
            f"! Give --passwd FILE (see `h5lake passwd`) or --oidc-issuer for real use.\n{bar}",
            err=True,
        )
        return
    if settings.passwd is not None:
        for user in load_passwd(settings.passwd).plain_users:
            click.echo(
                f"warning: {settings.passwd}: the password of {user!r} is in plain text; "
                f"replace the line with the output of `h5lake passwd {user}`",
                err=True,
            )


@click.group(short_help="Create, list and revoke API keys.")
def apikey() -> None:
    """Create, list and revoke API keys (h5pyd: api_key=KEY or hs_api_key in ~/.hscfg)."""


_STORE_OPTIONS = [
    click.option("--data", type=click.Path(path_type=Path), help="Local storage root [H5LAKE_DATA, ./h5lake-data]."),
    click.option("--storage", help="s3://BUCKET[/PREFIX] instead of --data [H5LAKE_STORAGE]."),
    click.option("--s3-endpoint", help="S3 endpoint URL [H5LAKE_S3_ENDPOINT]."),
    click.option("--s3-region", help="S3 region [H5LAKE_S3_REGION]."),
]


def _store_options(fn: Any) -> Any:
    for option in reversed(_STORE_OPTIONS):
        fn = option(fn)
    return fn


def _with_keys(options: dict[str, Any], work: Any) -> Any:
    """Run ``work(ApiKeys)`` on the store the settings name (the same one ``serve`` uses)."""
    settings = _settings({**options, "insecure_no_auth": True})

    async def run() -> Any:
        store = open_store(settings)
        try:
            return await work(ApiKeys(store, ttl=0))
        finally:
            await store.close()

    return asyncio.run(run())


@apikey.command("create")
@click.argument("user")
@click.option("--note", default="", help="A reminder of what the key is for.")
@_store_options
def apikey_create(user: str, note: str, **options: Any) -> None:
    """Make a key for USER and print it (only once: the store keeps just its hash)."""
    if ":" in user or not user:
        raise click.UsageError("user names may not be empty or contain ':'")
    token, record = _with_keys(options, lambda keys: keys.create(user, note))
    click.echo(token)
    click.echo(f"key {record.id} for {user}: give it to h5pyd as api_key= or hs_api_key", err=True)


@apikey.command("list")
@click.option("--user", help="Only this user's keys.")
@_store_options
def apikey_list(user: str | None, **options: Any) -> None:
    """List keys by id, user, creation time and note (never the keys themselves)."""
    for record in _with_keys(options, lambda keys: keys.list(user)):
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(record.created))
        click.echo(f"{record.id}  {record.user}  {created}Z  {record.note}")


@apikey.command("revoke")
@click.argument("key_id")
@_store_options
def apikey_revoke(key_id: str, **options: Any) -> None:
    """Revoke the key whose id (from `h5lake apikey list`) starts with KEY_ID."""
    try:
        gone = _with_keys(options, lambda keys: keys.revoke(key_id))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if not gone:
        raise click.ClickException(f"no key with id {key_id}")
    click.echo(f"revoked {gone} key(s); servers stop accepting it within --apikey-cache-seconds")


@click.command("gc", short_help="Delete committed chunks and manifests no version references.")
@click.option("--grace", type=float, default=GRACE, show_default=True, help="Keep anything written less than this many seconds ago.")
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@_store_options
def gc(grace: float, dry_run: bool, as_json: bool, **options: Any) -> None:
    """Collect the content-addressed store directly on the store (safe beside running servers and
    other gc runs, e.g. from cron on several hosts); see docs/versions.md. A run that deletes
    adds what it reclaimed to the store's record, which servers report in /metrics."""
    settings = _settings({**options, "insecure_no_auth": True})

    async def run() -> Collected:
        store = open_store(settings)
        try:
            started = time.time()
            found = await collect(store, grace, dry_run)
            if not dry_run:
                await record_run(store, found, started, time.time())
            return found
        finally:
            await store.close()

    found = asyncio.run(run())
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(found)))
    else:
        verb = "would delete" if dry_run else "deleted"
        click.echo(
            f"{found.roots} version(s) live; {verb} {found.blobs_deleted} chunk(s) and {found.trees_deleted} "
            f"manifest(s), {found.bytes_deleted} bytes; kept {found.young_kept} younger than {grace:g} s"
        )


def register(group: click.Group) -> None:
    group.add_command(serve)
    group.add_command(apikey)
    group.add_command(gc)
