"""HDF5 files as single objects: datasets served in place from .h5 files by byte range."""
