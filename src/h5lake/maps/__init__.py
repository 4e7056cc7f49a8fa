"""HDF5 Map objects below the service: key and value bytes, the placement hash, pair buckets and
their indexed leaves, and the key index of buckets read (docs/maps.md)."""
