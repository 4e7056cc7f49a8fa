"""The ``h5lake`` command: ``serve``, ``passwd``, ``apikey``, and the client tools."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, ClassVar, NoReturn

import click

from h5lake import __version__, extras


class _Commands(click.Group):
    """Serving needs none of the client tools, and the tools none of the server's libraries, so the
    modules of both load only when one of their commands is asked for.

    Every failure ends in one line on stderr saying what to do: usage errors too (click's
    usage block is replaced by a pointer to ``--help``), and an unexpected exception is named
    in one line unless ``H5LAKE_TRACEBACK=1`` asks for the traceback.
    """

    lazy: ClassVar[dict[str, str]] = {
        "load": "h5lake.client.load",
        "export": "h5lake.client.export",
        "serve": "h5lake.cli.server",
        "apikey": "h5lake.cli.server",
        "gc": "h5lake.cli.server",
        "version": "h5lake.client.versions",
    }

    # what ``h5lake --help`` lists for each lazy command, so the list loads no module
    # (the command's own first docstring line; tests/test_cli.py checks they agree)
    lazy_help: ClassVar[dict[str, str]] = {
        "load": "Copy HDF5 files into a domain, or link them where they are.",
        "export": "Write a domain into an HDF5 file.",
        "serve": "Run the service.",
        "apikey": "Create, list and revoke API keys.",
        "gc": "Delete committed chunks and manifests no version references.",
        "version": "Commit, list, compare, fork, merge and restore versions.",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))  # as click's own listing
        rows = []
        for name in names:
            if name in self.commands:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
            else:
                rows.append((name, self.lazy_help[name]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in self.lazy:
            holder = click.Group()
            importlib.import_module(self.lazy[name]).register(holder)
            command = holder.commands.get(name)
        return command

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        if extra.get("standalone_mode", True) is False:
            return super().main(args, prog_name, **extra)
        extra["standalone_mode"] = False
        try:
            result = super().main(args, prog_name, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # the help text, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "h5lake"
            _fail(f"{exc.format_message()} See '{where} --help'.", exc.exit_code)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            _fail("aborted", 1)
        except Exception as exc:
            missing = extras.explain(exc)  # an optional package not installed: not a bug
            if missing is not None:
                _fail(missing, 1)
            if os.environ.get("H5LAKE_TRACEBACK"):
                raise
            text = str(exc).splitlines()[0] if str(exc) else ""
            _fail(f"unexpected {type(exc).__name__}: {text} (a bug in h5lake: please report it; "
                  "H5LAKE_TRACEBACK=1 shows where it happened)", 1)
        sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: int) -> NoReturn:
    click.echo("Error: " + " ".join(message.split()), err=True)
    sys.exit(code)


@click.group(cls=_Commands)
@click.version_option(__version__, prog_name="h5lake")
def main() -> None:
    """h5lake: the HDF5 data model in object storage, served over the HDF REST API."""


@main.command(short_help="Print a passwd-file line with a salted password hash.")
@click.argument("user")
def passwd(user: str) -> None:
    """Print a passwd-file line for USER with a salted hash of the password, which is asked for on
    a terminal or read as one line from a pipe (never an option: options show in the process list)."""
    # loaded only for this command: h5lake.auth brings asyncio and the OIDC client, which the
    # client tools started by this same command line do not need
    from h5lake.auth import hash_password

    if ":" in user or not user:
        raise click.UsageError("user names may not be empty or contain ':'")
    if sys.stdin.isatty():
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise click.ClickException(
            f"no password given: type it when asked, or pipe one line (echo PASSWORD | h5lake passwd {user})"
        )
    click.echo(f"{user}:{hash_password(password)}")


if __name__ == "__main__":
    main()
