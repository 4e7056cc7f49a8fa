"""Several server processes on one store, as in tests/scale."""

from tests.scale.conftest import start, store_backing

__all__ = ["start", "store_backing"]
