"""Several server processes on one store, as in tests/scale."""

from tests.scale.conftest import pair, pair_backing, start, store_backing

__all__ = ["pair", "pair_backing", "start", "store_backing"]
