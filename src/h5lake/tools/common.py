"""What ``h5lake load`` and ``h5lake export`` share: connection options, progress, errors."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from tqdm import tqdm

from h5lake.tools.rest import Settings, resolve_settings

F = TypeVar("F", bound=Callable[..., Any])
MIB = 1024 * 1024


class ToolError(click.ClickException):
    """A failure the user can act on, printed as one clear line (exit status 1)."""


def connection_options(fn: F) -> F:
    """``--endpoint/-e``, ``--user/-u``, ``--password/-p`` and ``--bucket``, as h5pyd takes them."""
    fn = click.option("--bucket", help="Storage bucket, for servers that use one [HS_BUCKET, hs_bucket].")(fn)
    fn = click.option("-p", "--password", help="Password [HS_PASSWORD, hs_password in ~/.hscfg].")(fn)
    fn = click.option("-u", "--user", "username", help="User name [HS_USERNAME, hs_username in ~/.hscfg].")(fn)
    fn = click.option("-e", "--endpoint", help="Server URL [HS_ENDPOINT, hs_endpoint in ~/.hscfg].")(fn)
    return fn


def settings_from(options: dict[str, Any]) -> Settings:
    return resolve_settings(options.pop("endpoint"), options.pop("username"), options.pop("password"), options.pop("bucket"))


def check_domain(path: str) -> str:
    if not path.startswith("/") or path.endswith("/") or "//" in path:
        raise ToolError(f"{path!r} is not a domain path (expected /folder/name.h5)")
    return path


@contextmanager
def progress(total: int, what: str, quiet: bool) -> Iterator[tqdm]:
    """A byte progress bar on stderr, shown only on a terminal and for runs worth showing."""
    bar = tqdm(
        total=total,
        desc=what,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        disable=quiet or not sys.stderr.isatty() or total < 8 * MIB,
        leave=False,
        file=sys.stderr,
    )
    try:
        yield bar
    finally:
        bar.close()


def rate(amount: float, seconds: float) -> float:
    return amount / seconds if seconds > 0 else 0.0


def report_notes(notes: Iterable[str], quiet: bool) -> None:
    if quiet:
        return
    for note in notes:
        click.echo(f"note: {note}", err=True)
