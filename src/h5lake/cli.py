"""The ``h5lake`` command: ``serve``, ``passwd``, ``apikey``, and the client tools."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import click
from pydantic import ValidationError

from h5lake import __version__


def _settings(options: dict[str, Any]) -> Any:
    from h5lake.config import Settings

    given = {k: v for k, v in options.items() if v not in (None, ())}
    try:
        return Settings(**given)
    except ValidationError as exc:
        err = exc.errors()[0]
        message = str(err["msg"]).removeprefix("Value error, ")
        if not err["loc"]:
            raise click.UsageError(message) from None
        where = ".".join(str(p) for p in err["loc"])
        raise click.UsageError(f"invalid setting {where}: {message}") from None


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


class _Commands(click.Group):
    """Serving needs none of the client tools, so their modules load only when asked for."""

    lazy: ClassVar[dict[str, str]] = {"load": "h5lake.tools.load", "export": "h5lake.tools.export"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in self.lazy:
            import importlib

            holder = click.Group()
            importlib.import_module(self.lazy[name]).register(holder)
            command = holder.commands.get(name)
        return command


@click.group(cls=_Commands)
@click.version_option(__version__, prog_name="h5lake")
def main() -> None:
    """h5lake: the HDF5 data model in object storage, served over the HDF REST API."""


@main.command()
@click.option("--data", type=click.Path(path_type=Path), help="Local storage root [H5LAKE_DATA, ./h5lake-data].")
@click.option("--storage", help="s3://BUCKET[/PREFIX] instead of --data [H5LAKE_STORAGE].")
@click.option("--s3-endpoint", help="S3 endpoint URL [H5LAKE_S3_ENDPOINT].")
@click.option("--s3-region", help="S3 region [H5LAKE_S3_REGION].")
@click.option("--host", help="Address to listen on [H5LAKE_HOST, 127.0.0.1].")
@click.option("--port", type=int, help="Port [H5LAKE_PORT, 5101].")
@click.option("--workers", type=int, help="Server processes sharing the port [H5LAKE_WORKERS, 1].")
@click.option("--passwd", type=click.Path(path_type=Path), help="user:password lines [H5LAKE_PASSWD].")
@click.option("--admin", multiple=True, help="Admin user (repeatable) [H5LAKE_ADMIN, JSON list].")
@click.option("--allow-source", multiple=True, help="Folder or s3://BUCKET[/PREFIX] of HDF5 files that may be linked (repeatable).")
@click.option("--max-request-bytes", type=int, help="Largest request body accepted.")
@click.option("--max-chunk-bytes", type=int, help="Largest chunk a dataset may have [64 MiB].")
@click.option("--public-read", is_flag=True, default=None, help="New domains are readable by everyone.")
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
@click.option(
    "--insecure-no-auth", is_flag=True, default=None,
    help="Allow no authentication off loopback or with --admin (anyone may act as anyone).",
)
def serve(**options: Any) -> None:
    """Run the service."""
    import uvicorn

    from h5lake.api.connections import PROTOCOL_PATH

    settings = _settings(options)
    if settings.storage is None:
        settings.data.mkdir(parents=True, exist_ok=True)
    _export(settings)
    scheme_host = f"http://{settings.host}:{settings.port}"
    where = settings.storage or str(settings.data.resolve())
    click.echo(f"h5lake {__version__} serving {where} at {scheme_host}", err=False)
    _warn_about_auth(settings)
    sys.stdout.flush()
    uvicorn.run(
        "h5lake.api.app:create_app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        access_log=False,
        http=PROTOCOL_PATH,
        limit_concurrency=settings.max_connections,
        timeout_keep_alive=settings.keep_alive_timeout,
        timeout_graceful_shutdown=10,
    )


def _warn_about_auth(settings: Any) -> None:
    from h5lake.auth import load_passwd

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


@main.command()
@click.argument("user")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
def passwd(user: str, password: str) -> None:
    """Print a passwd-file line with a salted hash of PASSWORD."""
    from h5lake.auth import hash_password

    if ":" in user or not user:
        raise click.UsageError("user names may not be empty or contain ':'")
    click.echo(f"{user}:{hash_password(password)}")


@main.group()
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
    from h5lake.api.app import open_store
    from h5lake.auth import ApiKeys

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


if __name__ == "__main__":
    main()
