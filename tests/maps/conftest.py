"""Map tests use the session server (``client``, ``endpoint``) and, for several processes on
one store, the fixtures of ``tests/scale``."""

from tests.scale.conftest import start, store_backing

__all__ = ["start", "store_backing"]
