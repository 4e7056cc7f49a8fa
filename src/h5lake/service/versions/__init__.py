"""Versions as use cases: the read-only view of a version, commit, fork, history and tags, diff and
restore (docs/versions.md)."""
