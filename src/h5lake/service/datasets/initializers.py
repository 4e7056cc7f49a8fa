"""Dataset initializers: ``creationProperties.initializer`` (``["arange", "--start=S",
"--step=T"]``, as HSDS and h5pyd's ``initializer=``/``initializer_opts=`` send it).

HSDS runs an initializer lazily, per chunk, when a chunk is first read. h5lake writes the
values once, when the dataset is created, so a read never depends on it; that bounds the
datasets it can initialize by the request-size limit (400 beyond, before anything is made).
Only ``arange`` is run (HSDS's ``chunklocator`` initializer links HDF5 files: h5lake does that
through ``h5lake link``), on one-dimensional integer or float datasets, as HSDS requires.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from h5lake.chunks import writes
from h5lake.errors import InvalidInput
from h5lake.model.projection import project
from h5lake.model.selection import Selection
from h5lake.model.shapes import SpaceClass, space_from_json
from h5lake.model.stored import DatasetDoc
from h5lake.model.types import TypeClass, to_dtype
from h5lake.service.context import Service
from h5lake.service.datasets import compact
from h5lake.service.datasets.dataset_layout import native_layout
from h5lake.service.views import Domain


def check_initializer(svc: Service, doc: DatasetDoc) -> tuple[float, float] | None:
    """Validate a new dataset's initializer; its (start, step), or None when it has none."""
    init = doc.get("creationProperties", {}).get("initializer")
    if init is None:
        return None
    if not isinstance(init, list) or not init or not all(isinstance(a, str) for a in init):
        raise InvalidInput("initializer must be a list of strings: a name, then its options")
    if init[0] != "arange":
        raise InvalidInput(f"initializer {init[0][:40]!r} is not supported (only arange)")
    space = space_from_json(doc["shape"])
    if space.kind is not SpaceClass.SIMPLE or len(space.dims) != 1:
        raise InvalidInput("the arange initializer needs a one-dimensional dataset")
    if doc["type"].get("class") not in (TypeClass.INTEGER, TypeClass.FLOAT):
        raise InvalidInput("the arange initializer needs an integer or float type")
    nbytes = space.dims[0] * to_dtype(doc["type"]).itemsize
    if nbytes > svc.limits.max_request_size:
        raise InvalidInput(f"an initialized dataset of {nbytes} bytes exceeds the request-size limit")
    options = {"--start": 0.0, "--step": 1.0}
    for arg in init[1:]:
        key, _, value = arg.partition("=")
        if key not in options:
            raise InvalidInput(f"unknown arange option {arg[:40]!r} (--start= and --step= are known)")
        try:
            options[key] = float(value)
        except ValueError:
            raise InvalidInput(f"arange option {arg[:40]!r} is not a number") from None
    return options["--start"], options["--step"]


async def run_initializer(svc: Service, domain: Domain, doc: DatasetDoc, args: tuple[float, float]) -> None:
    """Write the values of a dataset just created (``args`` from `check_initializer`)."""
    layout = native_layout(domain, doc)
    if layout is None or not layout.shape[0]:
        return
    start, step = args
    dtype = layout.dtype
    values: Any
    if dtype.kind in "iu":
        values = (int(start) + np.arange(layout.shape[0], dtype=np.int64) * int(step)).astype(dtype)
    else:
        values = (start + np.arange(layout.shape[0], dtype=np.float64) * step).astype(dtype)
    sel = Selection.all(layout.shape)
    if compact.is_compact(doc):
        moved = await compact.write(
            svc, domain, None, None, doc["id"], lambda at: writes.write_selection(at, sel, values, svc.workers)
        )
        if moved is None:
            return
        layout = native_layout(domain, moved)
        assert layout is not None
    indexes = [p.chunk_index for p in project(sel, layout.shape, layout.chunk_shape, layout.origin)]
    async with svc.catalog.recording(layout.domain, layout.dataset_id, indexes):
        await writes.write_selection(layout, sel, values, svc.workers)
