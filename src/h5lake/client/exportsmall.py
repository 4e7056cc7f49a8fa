"""Export's short ways for the commonest small things (`exportwriter.Writer`): a scalar
attribute of a number or string type written straight from its JSON value, and a dataset's
value listed inline written in one piece. Anything else takes the general path, which checks
and converts every form."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from h5py import h5s

from h5lake.client import h5memory, h5values
from h5lake.client.exportvalues import fill_wire, may_skip
from h5lake.model.fromjson import int_scalar
from h5lake.model.stored import Doc
from h5lake.model.types import (
    TypeClass,
    TypeJson,
    array_dims,
    reduced_precision,
    to_dtype,
    type_class,
    wire_dtype,
)


@dataclass(frozen=True, slots=True)
class ListedPlan:
    """How the values listed inline of datasets alike (type, shape, creation properties) are
    written: ``skip`` and ``fill``: a value of only the fill value is left unwritten
    (`exportvalues.may_skip`, `exportvalues.fill_wire`); ``whole``: one write of the whole value
    with the dataset's own type as the memory type (a fixed-size, full-precision type not
    committed, in one chunk at most), as `ValueWriting.write_value` does, else its path;
    ``same``: the wire bytes are the memory bytes."""

    skip: bool
    fill: bytes
    whole: bool
    same: bool

    @classmethod
    def kept(cls, plans: dict[bytes, ListedPlan], key: bytes, doc: Doc, t: TypeJson) -> ListedPlan:
        """The plan of datasets alike (``key``: their type, shape and creation properties),
        remembered in ``plans`` (at most 1,024)."""
        plan = plans.get(key)
        if plan is None:
            if len(plans) >= 1024:
                plans.clear()
            plan = plans[key] = cls.of(doc, t)
        return plan

    @classmethod
    def of(cls, doc: Doc, t: TypeJson) -> ListedPlan:
        props = doc.get("creationProperties") or {}
        layout = props.get("layout") or {}
        dims = [int(d) for d in (doc.get("shape") or {}).get("dims") or ()]
        one_chunk = layout.get("class") != "H5D_CHUNKED" or all(int(c) >= d for c, d in zip(layout.get("dims") or (), dims, strict=False))
        whole = h5values.is_raw(t) and not reduced_precision(t) and "id" not in t and one_chunk
        same = whole and to_dtype(array_dims(t)[1]) == wire_dtype(array_dims(t)[1])
        return cls(may_skip(t, props), fill_wire(t, props), whole, same)

    def write(self, dsid: Any, tid: Any, t: TypeJson, data: bytes) -> bool | None:
        """Write a listed value of wire bytes ``data``: False when it is all fill (left
        unwritten, as `exportvalues.listed_value` does), True once written whole, None when it
        takes `ValueWriting.write_value`'s path."""
        if self.skip and len(data) % len(self.fill) == 0 and data == self.fill * (len(data) // len(self.fill)):
            return False
        if not self.whole:
            return None
        raw = data if self.same else h5values.wire_to_raw(data, t)
        dsid.write(h5s.ALL, h5s.ALL, np.frombuffer(raw, dtype=np.uint8), mtype=tid)
        return True


def scalar_kind(t: TypeJson, dims: tuple[int, ...], space: Any) -> np.dtype[Any] | str | None:
    """What `write_scalar` writes a scalar attribute of ``t`` with: the memory dtype of a
    predefined number type, ``"string"`` for a variable-length string; else None (the general
    path: the JSON value to an array, to wire bytes, to HDF5's memory form)."""
    if dims or space.get_simple_extent_type() != h5s.SCALAR:
        return None
    if set(t) == {"class", "base"} and t["class"] in (TypeClass.INTEGER.value, TypeClass.FLOAT.value):
        return to_dtype(t)
    if type_class(t) is TypeClass.STRING and t.get("length") == "H5T_VARIABLE":
        return "string"
    return None


def write_scalar(aid: Any, scalar: np.dtype[Any] | str, t: TypeJson, raw_type: Any, value: Any) -> bool:
    """Write the commonest attribute values directly: a scalar integer in its type's range, a
    float, a string. False (nothing written) for any other value: the general path then reads
    it, with its checks and messages (an out-of-range or stringly number, a bool, bad Unicode)."""
    if isinstance(scalar, str):
        if type(value) is not str:
            return False
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        h5memory.write_string(aid, t, raw)
        return True
    if scalar.kind == "f":
        if type(value) is not float:
            return False
        with np.errstate(over="ignore"):
            arr = np.array([value], dtype=scalar)
        if math.isfinite(value) and not np.isfinite(arr[0]):
            return False  # out of range: refused with its message
    elif int_scalar(value, t) is None:
        return False
    else:
        arr = np.array([value], dtype=scalar)
    aid.write(arr, mtype=raw_type)
    return True
