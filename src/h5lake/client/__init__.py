"""Python clients of h5lake features that h5py and h5pyd do not have: `Map` (HDF5 Map objects)."""

from h5lake.client.maps import Map, MapError

__all__ = ["Map", "MapError"]
