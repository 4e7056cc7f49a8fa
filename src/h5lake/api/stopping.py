"""Whether this process has been asked to stop, set by its server on SIGTERM (`cli/supervise.py`)
and read by ``/readyz`` (`api/observe.py`). A module of its own, importing nothing of the
application: the supervisor imports it without loading the application."""

from __future__ import annotations

import threading

SHUTDOWN = threading.Event()
"""Set once this process has been asked to stop: ``/readyz`` answers 503 from then on."""
