"""Optional packages: the ones only some commands need, and the extra of h5lake that installs
them. A missing one is the user's install, not a bug: `need` says in one line what to install
(`MissingExtra`, an ImportError the command line prints as such)."""

from __future__ import annotations

import importlib
from types import ModuleType

#: import name -> (the name pip installs it by, the extra of h5lake that installs it)
OPTIONAL: dict[str, tuple[str, str]] = {
    "h5pyd": ("h5pyd", "client"),
    "h5json": ("h5pyd", "client"),  # installed with h5pyd
    "versioned_hdf5": ("versioned-hdf5", "client"),
    "opentelemetry": ("opentelemetry-sdk", "tracing"),  # and its ASGI instrumentation, OTLP exporter
}


class MissingExtra(ImportError):
    """An optional package is not installed (or cannot be imported); the message names the extra."""


def message(module: str, purpose: str, cause: ImportError | None = None) -> str:
    package, extra = OPTIONAL.get(module.split(".")[0], (module, "client"))
    missing = getattr(cause, "name", None)
    why = "is not installed" if missing in (None, module.split(".")[0]) else f"cannot be imported ({cause})"
    return f"{purpose} needs the Python package {package}, which {why}: pip install 'h5lake[{extra}]'"


def need(module: str, purpose: str) -> ModuleType:
    """``import module``, or `MissingExtra` saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(message(module, purpose, exc)) from exc


def explain(exc: BaseException) -> str | None:
    """The one line for an ImportError of an optional package raised anywhere (a module that
    imports one at its top), else None."""
    if isinstance(exc, MissingExtra):
        return str(exc)
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in OPTIONAL:
        return message(exc.name or "", "this command", exc)
    return None
