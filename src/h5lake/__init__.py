"""h5lake: the HDF5 data model in object storage, served over the HDF REST API."""

__version__ = "0.1.0"
HSDS_COMPAT_VERSION = "1.0.0"
