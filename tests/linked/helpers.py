"""Linking h5py datasets over plain HTTP, with `h5lake.client.load_link` planning each one."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np
import orjson

from h5lake.client import load_link as link
from h5lake.model.typecheck import type_from_dtype
from tests.conftest import Client

OCTET = {"Accept": "application/octet-stream"}


def post_dataset(c: Client, body: dict[str, Any]) -> Any:
    return c.post("/datasets", data=orjson.dumps(body))


def create_linked(c: Client, dset: h5py.Dataset, uri: str, **kw: Any) -> str:
    """Link ``dset`` (of the file at ``uri``) into ``c``'s domain; returns the dataset id."""
    plan = link.plan_link(dset, uri, **kw)
    assert plan is not None, link.copy_reason(dset)
    table_id = None
    if plan.table is not None:
        table_id = create_table(c, plan.table)
    body: dict[str, Any] = {"type": type_from_dtype(dset.dtype), "shape": plan.shape, "creationProperties": plan.with_table(table_id)}
    if plan.maxdims is not None:
        body["maxdims"] = [0 if m is None else m for m in plan.maxdims]
    r = post_dataset(c, body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def create_table(c: Client, table: link.ChunkTable) -> str:
    body: dict[str, Any] = {"type": table.type_json, "shape": list(table.shape), "creationProperties": table.creation_properties()}
    if table.maxdims is not None:
        body["maxdims"] = [0 if m is None else m for m in table.maxdims]
    r = post_dataset(c, body)
    assert r.status_code == 201, r.text
    tid = str(r.json()["id"])
    put_table(c, tid, table.body(), None)
    return tid


def put_table(c: Client, tid: str, payload: bytes | dict[str, Any], select: str | None) -> None:
    params = {"select": select} if select else {}
    if isinstance(payload, bytes):
        r = c.put(f"/datasets/{tid}/value", data=payload, params=params, headers={"Content-Type": "application/octet-stream"})
    else:
        r = c.put(f"/datasets/{tid}/value", data=orjson.dumps(payload), params=params, headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text


def read(c: Client, did: str, dtype: np.dtype[Any], shape: tuple[int, ...], select: str | None = None) -> np.ndarray:
    params = {"select": select} if select else {}
    r = c.get(f"/datasets/{did}/value", params=params, headers=OCTET)
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, dtype=dtype).reshape(shape)
