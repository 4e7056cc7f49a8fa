"""Models of the Zarr bridge's JSON (``/zarr{domain}/...``, docs/zarr.md) for ``/openapi.json``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from h5lake.api.schemas import Open


class ZarrNode(Open):
    """A Zarr v3 ``zarr.json``: a group or an array (Zarr v3 core specification, "Metadata")."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [{
        "zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "int16", "fill_value": 0,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}}]})
    zarr_format: Literal[3]
    node_type: Literal["group", "array"]
    attributes: dict[str, Any] = Field(default_factory=dict, description="the HDF5 attributes as JSON")
