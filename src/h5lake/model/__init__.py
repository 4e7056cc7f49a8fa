"""The HDF5 data model: pure functions and values, no I/O."""
