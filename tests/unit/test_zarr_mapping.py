"""The pure Zarr mappings (model/zarrtypes.py, model/zarrcreate.py): an array a Zarr client
describes is made as the HDF5 type that is served back as the same Zarr data type, fill value
and codecs; values JSON cannot carry keep a documented form (docs/zarr.md)."""

from __future__ import annotations

import base64
import struct
from typing import Any

import numpy as np
import pytest

from h5lake.errors import InvalidInput
from h5lake.model.types import to_dtype
from h5lake.model.zarrcreate import array_spec, attribute_spec, same_array
from h5lake.model.zarrtypes import (
    Elements,
    Unrepresentable,
    attribute_json,
    fill_attribute,
    fill_json,
    vlen_decode,
    vlen_encode,
    zarr_form,
)


def body(data_type: Any, fill: Any, endian: str | None = "little", head: str = "bytes") -> dict[str, Any]:
    codec: dict[str, Any] = {"name": head}
    if endian and head == "bytes":
        codec["configuration"] = {"endian": endian}
    return {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": data_type, "fill_value": fill,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "codecs": [codec]}


@pytest.mark.parametrize(("data_type", "fill", "endian", "head"), [
    ("int8", -3, None, "bytes"),
    ("uint16", 7, "big", "bytes"),
    ("int64", 0, "little", "bytes"),
    ("float32", "NaN", "little", "bytes"),
    ("float64", "-Infinity", "big", "bytes"),
    ("float16", 1.5, "little", "bytes"),
    ("complex64", [1.0, -2.0], "little", "bytes"),
    ("bool", True, None, "bytes"),
    ("string", "", None, "vlen-utf8"),
    ("variable_length_bytes", "", None, "vlen-bytes"),
    ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 5}}, base64.b64encode(b"ab").decode(), None, "bytes"),
    ({"name": "raw_bytes", "configuration": {"length_bytes": 3}}, base64.b64encode(b"\x01\x02\x03").decode(), None, "bytes"),
    ({"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", "float64"]]}}, base64.b64encode(bytes(12)).decode(),
     None, "bytes"),
])
def test_an_array_made_from_zarr_json_is_served_back_the_same(data_type: Any, fill: Any, endian: str | None, head: str) -> None:
    spec = array_spec(body(data_type, fill, endian, head))
    form = zarr_form(spec.type_json)
    assert form.data_type == data_type
    assert form.endian == endian if head == "bytes" and form.elements is Elements.FIXED and form.served.kind not in "SVb" and form.served.names is None else True
    if form.elements is Elements.FIXED:
        assert form.as_stored and to_dtype(spec.type_json).itemsize == form.served.itemsize
        # the fill value given as bytes (fillValue_base64) or none (all zero) is served back
        raw = base64.b64decode(spec.fill["fillValue_base64"]) if spec.fill else bytes(to_dtype(spec.type_json).itemsize)
        stored = np.frombuffer(raw, dtype=to_dtype(spec.type_json)).reshape(())
        served = fill_json(form, stored)
        assert served == fill or (isinstance(fill, str) and served == fill)


def test_refused_descriptions_name_what() -> None:
    with pytest.raises(InvalidInput, match="numcodecs.zlib"):
        array_spec({**body("int8", 0, None), "codecs": [{"name": "bytes"}, {"name": "gzip"}]})
    with pytest.raises(InvalidInput, match="transpose"):
        array_spec({**body("int8", 0, None), "codecs": [{"name": "transpose"}, {"name": "bytes"}]})
    with pytest.raises(InvalidInput, match="vlen-utf8"):
        array_spec(body("string", "", None, "bytes"))
    with pytest.raises(InvalidInput, match="outside"):
        array_spec(body("uint8", 300, None))
    with pytest.raises(InvalidInput, match="fill_value"):
        array_spec(body("float32", "0xzz", "little"))


def test_unrepresentable_types_say_why() -> None:
    with pytest.raises(Unrepresentable, match="reference"):
        zarr_form({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"})
    with pytest.raises(Unrepresentable, match="array"):
        zarr_form({"class": "H5T_ARRAY", "dims": [2], "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}})
    inner = {"class": "H5T_COMPOUND", "fields": [{"name": "x", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}}]}
    with pytest.raises(Unrepresentable, match="compound field"):
        zarr_form({"class": "H5T_COMPOUND", "fields": [{"name": "n", "type": inner}]})


def test_a_big_endian_compound_is_served_decoded() -> None:
    t = {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32BE"}}]}
    form = zarr_form(t)
    assert form.data_type == {"name": "structured", "configuration": {"fields": [["a", "int32"]]}}
    assert not form.as_stored and form.served == np.dtype([("a", "<i4")])


def test_vlen_chunks_round_trip_in_numcodecs_format() -> None:
    import numcodecs

    form = zarr_form({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE", "strPad": "H5T_STR_NULLTERM"})
    items = np.array(["a", "bé", ""], dtype=object)
    encoded = vlen_encode(items, form)
    assert bytes(numcodecs.VLenUTF8().encode(items)) == encoded
    assert list(vlen_decode(encoded, 3, form)) == ["a", "bé", ""]
    with pytest.raises(ValueError, match="elements"):
        vlen_decode(encoded, 4, form)
    with pytest.raises(ValueError, match="after the last"):
        vlen_decode(encoded + b"x", 3, form)


def test_attributes_in_their_documented_forms() -> None:
    assert attribute_json({"shape": {"class": "H5S_SIMPLE", "dims": [1]}, "value": [2.5]}) == 2.5
    assert attribute_json({"shape": {"class": "H5S_SIMPLE", "dims": [2]}, "value": [1, 2]}) == [1, 2]
    assert attribute_json({"value": "x", "value_base64": "AAE=", "type": {"class": "H5T_OPAQUE", "size": 2}}) == {
        "base64": "AAE=", "hdf5_type": {"class": "H5T_OPAQUE", "size": 2}}
    f32 = zarr_form({"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"})
    coded = fill_attribute({"_FillValue": -999.0}, f32)["_FillValue"]
    assert struct.unpack("<d", base64.b64decode(coded))[0] == -999.0
    text = zarr_form({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "length": 4, "strPad": "H5T_STR_NULLPAD"})
    assert fill_attribute({"_FillValue": "x"}, text) == {"_h5lake_FillValue": "x"}
    assert attribute_spec({"k": [1]})["value"] == '{"k":[1]}'
    assert attribute_spec([1, 2.5])["type"]["base"] == "H5T_IEEE_F64LE"


def test_what_a_zarr_json_put_may_not_change() -> None:
    current = {"data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
               "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
    assert same_array(current, body("int16", 0)) is None
    assert same_array(current, body("int32", 0)) == "its data type"
    assert same_array(current, body("int16", 0, "big")) == "its byte order"
    assert same_array(current, {**body("int16", 0), "codecs": [{"name": "bytes"}, {"name": "zstd"}]}) == "its codecs"
