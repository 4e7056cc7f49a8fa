"""The client side of h5lake, talking to a server over REST: `Map` (HDF5 Map objects from Python,
which h5py and h5pyd do not have) and the tools behind ``h5lake load``, ``h5lake export`` and
``h5lake version``."""

import importlib
from typing import TYPE_CHECKING

from h5lake.client.live import shapes

if TYPE_CHECKING:
    from h5lake.client.maps import Map, MapError


def __getattr__(name: str) -> object:
    if name in ("Map", "MapError"):
        return getattr(importlib.import_module("h5lake.client.maps"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Map", "MapError", "shapes"]
