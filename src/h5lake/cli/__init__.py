"""The ``h5lake`` command and the server process: ``serve`` (and its supervisor), ``apikey``,
``gc``, ``passwd``; the client tools' commands live in :mod:`h5lake.client`."""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from h5lake.cli.command import main


def __getattr__(name: str) -> object:
    if name == "main":
        return importlib.import_module("h5lake.cli.command").main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["main"]
