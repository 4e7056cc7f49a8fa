"""Versions below the service: the content-addressed store of chunks and manifests, its collector
(``h5lake gc``) and the grammar of ``D@REF`` names (docs/versions.md)."""
