"""What ``h5lake load`` and ``h5lake export`` share: connection options, progress, errors."""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from tqdm import tqdm

from h5lake.client.rest import NOT_A_URL, RestClient, RestError, Settings, resolve_settings

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


def connect(options: dict[str, Any], domain: str, workers: int) -> RestClient:
    """A client for ``domain``, after one quick request that proves the server is there and takes
    the credentials, so both tools fail the same way, at once, before any work."""
    client = RestClient(settings_from(options), check_domain(domain), pool_size=workers)
    try:
        client.probe()
    except RestError as exc:
        raise ToolError(explain(exc, client)) from None
    return client


WHERE_ENDPOINT = "-e/--endpoint, HS_ENDPOINT or hs_endpoint in ~/.hscfg"
WHERE_CREDENTIALS = "-u/-p, HS_USERNAME/HS_PASSWORD or hs_username/hs_password in ~/.hscfg"


def explain(exc: RestError, client: RestClient) -> str:
    """One line for a failed request that says what to do where the cause is the user's to fix
    (endpoint, credentials, permissions, a missing folder); otherwise the request and the
    server's message."""
    settings = client.settings
    endpoint = settings.endpoint
    if exc.status is None and exc.message == NOT_A_URL:
        return f"{endpoint!r} is {NOT_A_URL}: give the server's URL with {WHERE_ENDPOINT}"
    if exc.status is None:
        return f"cannot reach a server at {endpoint}: {exc.message}; check that it runs and give its URL with {WHERE_ENDPOINT}"
    if exc.status == 401:
        if not settings.username:
            return f"the server at {endpoint} needs a user name and password: give them with {WHERE_CREDENTIALS}"
        return f"the server at {endpoint} refused user {settings.username!r} (401): wrong user name or password (set {WHERE_CREDENTIALS})"
    if exc.status == 403:
        return f"{exc.message} on {endpoint}: log in as a user with access ({WHERE_CREDENTIALS}) or ask the owner for access (hsacl)"
    if exc.status == 404 and exc.method == "PUT" and exc.path == "/":
        folder = posixpath.dirname(client.domain)
        return f"{exc.message} on {endpoint}: create the folder first (hstouch {folder}/ with h5pyd's tools, or h5pyd.Folder('{folder}/', mode='w'))"
    if exc.status in (404, 410) and exc.method == "GET" and exc.path == "/":
        folder = posixpath.dirname(client.domain)
        return f"{exc.message} on {endpoint} (hsls {folder}/ lists what the folder holds)"
    if exc.status == 404 and exc.path == "/about":
        return f"{endpoint} does not answer as an HDF REST API server would (no /about): check {WHERE_ENDPOINT}"
    return f"{_action(exc.method, exc.path, client.domain)}: the server refused it ({exc.status}): {exc.message}"


def _action(method: str, path: str, domain: str) -> str:
    """What a request was doing, in words (a user reads no HTTP verbs)."""
    if path == "/":
        return {"GET": f"reading {domain}", "PUT": f"creating {domain}", "DELETE": f"deleting {domain}"}.get(method, f"reading {domain}")
    doing = {"GET": "reading", "DELETE": "deleting"}.get(method, "writing")
    kinds = {"datasets": "a dataset", "groups": "a group", "datatypes": "a datatype", "maps": "a map", "versions": "the versions", "acls": "the permissions"}
    return f"{doing} {kinds.get(path.strip('/').split('/')[0], 'part')} of {domain}"


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
