"""Arrays as downloadable files: ``.npy`` (numpy's format) and ``.csv``."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput


def npy_bytes(values: np.ndarray) -> bytes:
    """The array in numpy's ``.npy`` format (no pickled objects: variable-length values refused)."""
    arr = np.asarray(values)
    if arr.dtype.hasobject:
        raise InvalidInput(".npy downloads need fixed-size values; use .csv for variable-length data")
    if arr.dtype.metadata:
        arr = arr.astype(np.dtype(arr.dtype.str) if arr.dtype.names is None else _plain(arr.dtype))
    buffer = io.BytesIO()
    np.save(buffer, arr, allow_pickle=False)
    return buffer.getvalue()


def _plain(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """``dtype`` without h5py's metadata (which ``np.save`` would have to pickle)."""
    if dtype.names is None:
        return np.dtype(dtype.str) if dtype.subdtype is None else np.dtype((_plain(dtype.subdtype[0]), dtype.shape))
    return np.dtype([(n, _plain(dtype.fields[n][0])) for n in dtype.names])  # type: ignore[index]


def csv_text(values: np.ndarray) -> str:
    """Rows of the array: a 2-D array as its rows, N-D as rows of its last axis, 1-D as one
    value per line; compound elements as one column per field, with a header line."""
    arr = np.asarray(values)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if arr.dtype.names is not None:
        names = list(arr.dtype.names)
        writer.writerow(names)
        for item in arr.reshape(-1):
            writer.writerow([_cell(item[n]) for n in names])
        return out.getvalue()
    if arr.ndim == 0:
        writer.writerow([_cell(arr[()])])
    elif arr.ndim == 1:
        for item in arr:
            writer.writerow([_cell(item)])
    else:
        for row in arr.reshape(-1, arr.shape[-1]):
            writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return " ".join(str(_cell(v)) for v in value.reshape(-1))
    if isinstance(value, np.floating):
        return repr(float(value))
    if isinstance(value, np.generic):
        return value.item()
    return value
