"""Arrays as downloadable files: ``.npy`` (numpy's format), ``.csv`` and ``.tiff``."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np

from h5lake.errors import InvalidInput

CSV_BLOCK = 16 * 1024  # values turned to text in one call (milliseconds, between thread switches)


def npy_bytes(values: np.ndarray) -> memoryview:
    """The array in numpy's ``.npy`` format (no pickled objects: variable-length values refused),
    made in one buffer of its final size: one copy of the values, not three."""
    arr = np.asarray(values)
    if arr.dtype.hasobject:
        raise InvalidInput(".npy downloads need fixed-size values; use .csv for variable-length data")
    if arr.dtype.metadata:
        arr = arr.astype(np.dtype(arr.dtype.str) if arr.dtype.names is None else _plain(arr.dtype))
    described = np.lib.format.header_data_from_array_1_0(arr)
    head = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(head, described)
    except ValueError:  # a header over 64 KiB (thousands of fields): format 2.0, as np.save writes it
        head = io.BytesIO()
        np.lib.format.write_array_header_2_0(head, described)
    header = head.getvalue()
    out = bytearray(len(header) + arr.nbytes)
    out[: len(header)] = header
    if arr.size:
        body = np.frombuffer(out, dtype=arr.dtype, count=arr.size, offset=len(header))
        body[...] = arr.reshape(-1, order="F" if described["fortran_order"] else "C")
        del body
    return memoryview(out)


def _plain(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """``dtype`` without h5py's metadata (which ``np.save`` would have to pickle)."""
    if dtype.names is None:
        return np.dtype(dtype.str) if dtype.subdtype is None else np.dtype((_plain(dtype.subdtype[0]), dtype.shape))
    return np.dtype([(n, _plain(dtype.fields[n][0])) for n in dtype.names])  # type: ignore[index]


def csv_text(values: np.ndarray) -> str:
    """Rows of the array: a 2-D array as its rows, N-D as rows of its last axis, 1-D as one
    value per line; compound elements as one column per field, with a header line."""
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf" and arr.ndim:
        # Plain numbers need no quoting: joins over Python's own text of each (as below), a
        # block at a time, so that a thread making a large file lets the others run between.
        rows = arr.reshape(math.prod(arr.shape[:-1]), arr.shape[-1]) if arr.ndim > 1 else arr
        step = max(1, CSV_BLOCK // max(1, arr.shape[-1] if arr.ndim > 1 else 1))
        parts = []
        for start in range(0, len(rows), step):
            block = rows[start : start + step].tolist()
            if rows.ndim == 1:
                parts.append("".join(map("{}\n".format, block)))
            else:
                parts.append("".join([",".join(map(str, row)) + "\n" for row in block]))
        return "".join(parts)
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
        for row in arr.reshape(math.prod(arr.shape[:-1]), arr.shape[-1]):
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


def tiff_bytes(values: np.ndarray) -> bytes:
    """A numeric array of two or more dimensions as a grey-scale TIFF (uncompressed, written by
    tifffile, as h5grove writes it): a 2-D array is one image, an N-D one a page per image of its
    last two axes, with tifffile's shape description so that ``tifffile.imread`` gives the array
    back. Values are kept: integers, floats and complex numbers of their own size (booleans as
    8-bit integers; a long double, which TIFF has no sample format for, as float64)."""
    arr = np.asarray(values)
    if arr.ndim < 2:
        raise InvalidInput(f"Unsupported encoding tiff for {arr.ndim}-D data (2 or more dimensions are needed)")
    if arr.dtype.kind == "b":
        arr = arr.astype("u1")
    elif arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        arr = arr.astype("<f8")
    if arr.dtype.kind not in "uifc" or arr.dtype.names is not None:
        raise InvalidInput(f"Unsupported encoding tiff for {arr.dtype} data")
    out = io.BytesIO()
    import tifffile  # only for this format: 3.5 MiB resident in every worker otherwise

    tifffile.imwrite(out, np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")), photometric="minisblack")
    return out.getvalue()
