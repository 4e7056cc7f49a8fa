"""Export's short ways (client/exportsmall.py) write what the general path writes: a scalar
attribute straight from its JSON value, and hand every value they do not take (a bool, a
number as text, one out of range, an int for a float type) to the general path, which reads
or refuses it."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np
import pytest
from h5py import h5a, h5s

from h5lake.client import exportsmall, h5values
from h5lake.client.h5types import memory_type_id, type_id
from h5lake.errors import InvalidInput
from h5lake.model.fromjson import json_to_array
from h5lake.model.types import TypeJson
from h5lake.model.values import array_to_bytes

I8 = {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}
U64 = {"class": "H5T_INTEGER", "base": "H5T_STD_U64LE"}
I32BE = {"class": "H5T_INTEGER", "base": "H5T_STD_I32BE"}
F64 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
F32 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
F64BE = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64BE"}
UTF8 = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"}
ASCII = {**UTF8, "charSet": "H5T_CSET_ASCII"}

TAKEN = [
    (I8, -128), (I8, 127), (U64, 2**64 - 1), (I32BE, -5), (F64, 0.1), (F64, -0.0), (F64, float("inf")),
    (F64, float("nan")), (F32, 1e-50), (F32, 3.4e38), (F64BE, 2.5), (UTF8, "μm"), (ASCII, "counts"), (UTF8, ""),
]
LEFT = [(I8, 128), (I8, True), (I8, "5"), (I8, 1.0), (F64, 1), (F64, "NaN"), (F64, [0.5]), (F32, 1e300), (UTF8, 5), (UTF8, "\udc80")]


def _general(aid: Any, t: TypeJson, value: Any) -> None:
    """How exportwriter writes an attribute value it takes no short way for."""
    tid = type_id(t)
    wire = array_to_bytes(json_to_array(value, t, ()), t)
    h5values.write_attribute(aid, tid, t, (), wire, None)  # type: ignore[arg-type]


def _attribute(f: h5py.File, name: str, t: TypeJson) -> tuple[Any, Any, Any]:
    tid = type_id(t)
    space = h5s.create(h5s.SCALAR)
    raw_type = memory_type_id(tid, t) if h5values.is_raw(t) else None
    return h5a.create(f.id, name.encode(), tid, space), raw_type, exportsmall.scalar_kind(t, (), space)


@pytest.mark.parametrize(("t", "value"), TAKEN)
def test_short_way_writes_what_the_general_path_writes(tmp_path: Any, t: TypeJson, value: Any) -> None:
    with h5py.File(tmp_path / "a.h5", "w") as f:
        short, raw_type, kind = _attribute(f, "short", t)
        assert kind is not None
        assert exportsmall.write_scalar(short, kind, t, raw_type, value)
        general, _, _ = _attribute(f, "general", t)
        _general(general, t, value)
        short.close()
        general.close()
        a, b = f.attrs["short"], f.attrs["general"]
        assert f.attrs.get_id("short").dtype == f.attrs.get_id("general").dtype
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes() if not isinstance(a, str | bytes) else a == b


@pytest.mark.parametrize(("t", "value"), LEFT)
def test_short_way_leaves_other_values_to_the_general_path(tmp_path: Any, t: TypeJson, value: Any) -> None:
    with h5py.File(tmp_path / "a.h5", "w") as f:
        aid, raw_type, kind = _attribute(f, "a", t)
        assert kind is not None
        assert not exportsmall.write_scalar(aid, kind, t, raw_type, value)
        try:
            _general(aid, t, value)  # read (a "NaN", an int as a float) or refused with its message
        except InvalidInput as exc:
            assert exc.message


def test_listed_plan_takes_plain_values_whole_and_knows_fill() -> None:
    i32: TypeJson = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
    doc: dict[str, Any] = {"type": i32, "shape": {"class": "H5S_SIMPLE", "dims": [10]},
           "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [4]}}}
    several = exportsmall.ListedPlan.of(doc, i32)
    assert not several.whole  # several chunks: the general path leaves the chunks of fill unwritten
    doc["creationProperties"] = {"layout": {"class": "H5D_CONTIGUOUS"}, "fillValue": 7}
    plan = exportsmall.ListedPlan.of(doc, i32)
    assert plan.whole and plan.same and plan.skip and plan.fill == np.int32(7).tobytes()
    committed = {**i32, "id": "t-00000000-0000-0000-0000-000000000000"}
    assert not exportsmall.ListedPlan.of(doc, committed).whole
