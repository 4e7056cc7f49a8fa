"""The vocabulary of links, shared by the service, the HTTP edge and the client tools."""

from __future__ import annotations

import enum

MAX_NAME_BYTES = 4096
"""The longest link or attribute name the service keeps, in UTF-8 bytes (HDF5 allows longer ones:
``h5lake load`` refuses such a file before sending anything)."""


class LinkClass(enum.Enum):
    """A link's ``class`` as the HDF REST API writes it."""

    HARD = "H5L_TYPE_HARD"
    SOFT = "H5L_TYPE_SOFT"
    EXTERNAL = "H5L_TYPE_EXTERNAL"
    USER_DEFINED = "H5L_TYPE_USER_DEFINED"
    """An HDF5 user-defined link (class 64..255), carried but never followed: ``linkClass`` is
    its class number and ``value`` its user data in base64."""
