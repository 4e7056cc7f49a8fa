"""The ``h5lake`` command: ``serve``, ``passwd``."""

from __future__ import annotations

import json
import os
import sys
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
        where = ".".join(str(p) for p in err["loc"]) or "settings"
        raise click.UsageError(f"invalid setting {where}: {err['msg']}") from None


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
@click.option("--public-read", is_flag=True, default=None, help="New domains are readable by everyone.")
@click.option("--log-level", help="critical, error, warning, info or debug.")
def serve(**options: Any) -> None:
    """Run the service."""
    import uvicorn

    settings = _settings(options)
    if settings.storage is None:
        settings.data.mkdir(parents=True, exist_ok=True)
    _export(settings)
    scheme_host = f"http://{settings.host}:{settings.port}"
    where = settings.storage or str(settings.data.resolve())
    click.echo(f"h5lake {__version__} serving {where} at {scheme_host}", err=False)
    if settings.passwd is None:
        click.echo("warning: no --passwd file; any user name is accepted without a password", err=True)
    sys.stdout.flush()
    uvicorn.run(
        "h5lake.api.app:create_app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=10,
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


if __name__ == "__main__":
    main()
