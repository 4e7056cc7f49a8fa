"""Python clients of h5lake features that h5py and h5pyd do not have: `Map` (HDF5 Map objects),
`shapes` (a growing dataset's new shapes, over the watch)."""

from h5lake.client.live import shapes
from h5lake.client.maps import Map, MapError

__all__ = ["Map", "MapError", "shapes"]
