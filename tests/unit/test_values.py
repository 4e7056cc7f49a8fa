"""Values of every type class as JSON and as binary, checked against h5pyd 1.0's own converters.

h5pyd converts values with h5json's ``array_util`` (jsonToArray, arrayToBytes, bytesToArray,
bytesArrayToList): whatever it writes we must read, and whatever we send back it must read. The
tests below run both directions through those functions, so a mismatch with the real client's
wire format fails here.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np
import orjson
import pytest
from h5json import hdf5dtype
from h5json.array_util import arrayToBytes, bytesArrayToList, bytesToArray, jsonToArray
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from h5lake.errors import InvalidInput
from h5lake.model.fromjson import int_scalar, json_to_array
from h5lake.model.typecheck import validate_type
from h5lake.model.types import array_dims, to_dtype
from h5lake.model.values import array_to_bytes, array_to_json, bytes_to_array
from h5lake.service.objects.attributes import shown_value

I32 = "H5T_STD_I32LE"
F64 = "H5T_IEEE_F64LE"
VSTR = {"class": "H5T_STRING", "length": "H5T_VARIABLE", "charSet": "H5T_CSET_UTF8"}
VASCII = {"class": "H5T_STRING", "length": "H5T_VARIABLE", "charSet": "H5T_CSET_ASCII"}
S5 = {"class": "H5T_STRING", "length": 5, "charSet": "H5T_CSET_ASCII"}
UTF8_8 = {"class": "H5T_STRING", "length": 8, "charSet": "H5T_CSET_UTF8"}
BOOL: dict[str, Any] = {
    "class": "H5T_ENUM",
    "base": "H5T_STD_I8LE",
    "members": [{"name": "FALSE", "value": 0}, {"name": "TRUE", "value": 1}],
}
COLORS = {
    "class": "H5T_ENUM",
    "base": "H5T_STD_U16BE",
    "members": [{"name": "RED", "value": 0}, {"name": "GREEN", "value": 7}],
}
REF = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}
REGION = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}
OPAQUE = {"class": "H5T_OPAQUE", "size": 3}
BITS = {"class": "H5T_BITFIELD", "base": "H5T_STD_B16BE"}
G = "g-b76eacdd-d16f54ec-3fe6-245559-e7dc64"
D = "datasets/d-b76eacdd-d16f54ec-3fe6-245559-e7dc64"


def vlen(base: Any) -> dict[str, Any]:
    return {"class": "H5T_VLEN", "base": base}


def array(dims: list[int], base: Any) -> dict[str, Any]:
    return {"class": "H5T_ARRAY", "dims": dims, "base": base}


def compound(**fields: Any) -> dict[str, Any]:
    return {"class": "H5T_COMPOUND", "fields": [{"name": k, "type": v} for k, v in fields.items()]}


def plain(x: Any) -> Any:
    """h5json's output with numpy containers and scalars turned into JSON-like Python."""
    if isinstance(x, np.ndarray):
        return [plain(v) for v in x.tolist()] if x.ndim else plain(x.item())
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):
        return plain(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, bytes):
        return x.decode()
    return x


# (type, shape, JSON value): every type class, in forms h5pyd 1.0 handles correctly.
AGREED: list[tuple[Any, tuple[int, ...], Any]] = [
    (I32, (2, 3), [[1, 2, 3], [4, 5, -6]]),
    ("H5T_STD_I8BE", (2,), [-128, 127]),
    ("H5T_STD_U64BE", (2,), [2**64 - 1, 2**63 + 5]),
    ("H5T_STD_I64LE", (2,), [-(2**63), 2**63 - 1]),
    ("H5T_IEEE_F32BE", (4,), [1.5, "NaN", "Infinity", "-Infinity"]),
    ("H5T_IEEE_F16LE", (2,), [0.5, 65504.0]),
    (F64, (2,), [1e300, -0.0]),
    (BOOL, (3,), [True, False, True]),
    (COLORS, (2,), [7, 0]),
    (S5, (2,), ["abcde", "x"]),
    (VSTR, (4,), ["a", "bb", "", "dddd ü"]),
    (VASCII, (2,), ["a", "bcd"]),
    (vlen(I32), (3,), [[1, 2, 3], [7], [4]]),
    (vlen("H5T_IEEE_F64BE"), (2,), [[1.5], [2.5, 3.5]]),
    (compound(x=I32, y=F64, s=S5), (2,), [[1, 2.5, "ab"], [3, 4.5, "cd"]]),
    (compound(x=I32, s=VSTR, v=vlen(I32)), (2,), [[1, "ab", [1, 2]], [3, "", [5]]]),
    (compound(x="H5T_STD_I16BE", a=array([2], F64)), (2,), [[1, [0.5, 1.5]], [2, [3.0, 4.0]]]),
    (array([3], I32), (2,), [[1, 2, 3], [4, 5, 6]]),
    (array([2, 2], "H5T_STD_U8LE"), (), [[1, 2], [3, 4]]),
    (vlen(compound(x=I32, y=F64)), (2,), [[[1, 2.5], [3, 4.5]], [[5, 6.5]]]),
    (vlen(compound(x=I32, s=VSTR)), (2,), [[[1, "a"], [3, "bc"]], [[5, "d"]]]),
    (REF, (2,), [G, D]),
    (vlen(REF), (2,), [[D], [D, G]]),  # DIMENSION_LIST
    (compound(dataset=REF, index=I32), (2,), [[D, 0], [D, 1]]),  # REFERENCE_LIST
    (compound(a=compound(x=I32, y=F64), s=VSTR), (2,), [[[1, 2.5], "a"], [[3, 4.5], "bc"]]),
    (OPAQUE, (2,), ["AQID", ""]),
    (I32, (), 5),
    (VSTR, (), "hello"),
    (compound(x=I32, y=F64), (), [1, 2.5]),
    (vlen(I32), (), [1, 2, 3]),
    (I32, (0,), []),
    (VSTR, (2, 0), [[], []]),
]
AGREED_IDS = [f"{t if isinstance(t, str) else t['class']}-{s}-{v}"[:70] for t, s, v in AGREED]


@pytest.mark.parametrize(("t", "shape", "value"), AGREED, ids=AGREED_IDS)
def test_json_and_binary_round_trip(t: Any, shape: tuple[int, ...], value: Any) -> None:
    t = validate_type(t)
    arr = json_to_array(value, t, shape)
    assert array_to_json(arr, t) == value
    data = array_to_bytes(arr, t)
    back = bytes_to_array(data, t, shape)
    assert array_to_json(back, t) == value
    assert array_to_bytes(back, t) == data


@pytest.mark.parametrize(("t", "shape", "value"), AGREED, ids=AGREED_IDS)
def test_binary_matches_h5pyd(t: Any, shape: tuple[int, ...], value: Any) -> None:
    t = validate_type(t)
    dtype = hdf5dtype.createDataType(t)
    ours = array_to_bytes(json_to_array(value, t, shape), t)
    theirs = arrayToBytes(jsonToArray(shape, dtype, value))
    assert ours == theirs  # what h5pyd PUTs is what we send back on GET
    client_view = bytesArrayToList(bytesToArray(ours, dtype, shape))
    assert plain(client_view) == plain(value)  # h5pyd reads what we send


@pytest.mark.parametrize(("t", "shape", "value"), AGREED, ids=AGREED_IDS)
def test_h5pyd_reads_our_json(t: Any, shape: tuple[int, ...], value: Any) -> None:
    t = validate_type(t)
    arr = json_to_array(value, t, shape)
    client = jsonToArray(shape, hdf5dtype.createDataType(t), array_to_json(arr, t))
    assert arrayToBytes(client) == array_to_bytes(arr, t)


def test_wire_examples_from_the_api_notes() -> None:
    data = array_to_bytes(
        json_to_array(["a", "bb", "", "dddd ü"], validate_type(VSTR), (4,)), validate_type(VSTR)
    )
    assert data.hex() == "010000006102000000626200000000070000006464646420c3bc"
    t = validate_type(vlen(I32))
    data = array_to_bytes(json_to_array([[1, 2, 3], []], t, (2,)), t)
    assert data.hex() == "0c000000" + "010000000200000003000000" + "00000000"
    ref = array_to_bytes(json_to_array(G, validate_type(REF), ()), validate_type(REF))
    assert ref == G.encode() + bytes(48 - len(G))


# Forms h5pyd 1.0 gets wrong itself (h5json raises or writes a broken body); we keep a
# consistent format: each variable element counted, compounds and arrays as their parts.
OURS_ONLY: list[tuple[Any, tuple[int, ...], Any]] = [
    (UTF8_8, (2,), ["ü", "abc"]),  # h5json: UnicodeEncodeError in jsonToArray
    (compound(a=compound(b=I32, s=VSTR), c=F64), (2,), [[[1, "q"], 2.5], [[3, "rr"], 4.5]]),
    (compound(s=VSTR), (2,), [["x"], ["yy"]]),  # h5json: AttributeError on one-field compound
    (array([2], VSTR), (2,), [["a", "b"], ["c", ""]]),  # h5json cannot read this back
    (vlen(VSTR), (2,), [["a", "bc"], []]),  # h5json writes no outer count
    (vlen(array([2], I32)), (2,), [[[1, 2], [3, 4]], []]),
    (vlen(I32), (3,), [[1, 2, 3], [], [4]]),  # h5json reads the empty element back as 0
    (compound(x=I32, a=array([2], VSTR)), (2,), [[1, ["a", "b"]], [2, ["c", "dd"]]]),
    (array([2], compound(v=vlen(I32), s=VASCII)), (1,), [[[[1], "a"], [[], "b"]]]),
    (BITS, (2,), [1, 65535]),  # no bitfield class in h5json
]


@pytest.mark.parametrize(("t", "shape", "value"), OURS_ONLY, ids=lambda x: str(x)[:50])
def test_round_trip_where_h5pyd_falls_short(t: Any, shape: tuple[int, ...], value: Any) -> None:
    test_json_and_binary_round_trip(t, shape, value)


def test_nested_compound_with_vlen_matches_h5pyd_binary() -> None:
    """h5pyd cannot write this from JSON, but its binary writer handles it: compare with that."""
    t = validate_type(compound(a=compound(b=I32, s=VSTR), c=F64))
    theirs = np.zeros(2, hdf5dtype.createDataType(t))
    theirs[0], theirs[1] = ((1, "q"), 2.5), ((3, "rr"), 4.5)
    ours = json_to_array([[[1, "q"], 2.5], [[3, "rr"], 4.5]], t, (2,))
    assert array_to_bytes(ours, t) == arrayToBytes(theirs)


def test_we_read_h5pyd_padded_compound_body() -> None:
    """h5json writes 4 zero bytes too many per compound field that is an array of vlens."""
    t = validate_type(compound(x=I32, a=array([2], VSTR)))
    value = [[1, ["a", "b"]], [2, ["c", "dd"]]]
    sent = arrayToBytes(jsonToArray((2,), hdf5dtype.createDataType(t), value))
    ours = array_to_bytes(json_to_array(value, t, (2,)), t)
    assert sent == ours + bytes(8)
    assert array_to_json(bytes_to_array(sent, t, (2,)), t) == value
    with pytest.raises(InvalidInput):
        bytes_to_array(ours + bytes(4), t, (2,))
    with pytest.raises(InvalidInput):
        bytes_to_array(ours + b"\x01" + bytes(7), t, (2,))


def test_region_references_pass_through_binary() -> None:
    t = validate_type(REGION)
    blob = hdf5dtype.RegionReference(D).tobytes()
    theirs = np.array([blob, b""], dtype=hdf5dtype.createDataType(t))
    sent = arrayToBytes(theirs)
    arr = bytes_to_array(sent, t, (2,))
    assert arr.tolist() == [blob, b""]
    assert array_to_bytes(arr, t) == sent
    assert json_to_array([None, None], t, (2,)).tolist() == [b"", b""]
    assert array_to_json(json_to_array(None, t, ()), t) is None
    # the JSON form is the blob in base64 (attributes are kept as JSON), null for a null ref
    as_json = array_to_json(arr, t)
    assert as_json == [base64.b64encode(blob).decode(), None]
    assert json_to_array(as_json, t, (2,)).tolist() == [blob, b""]
    # h5json's object form (h5pyd 1.0's, in attributes): stored as h5lake's blob, answered so again
    sent_json = {"id": D.split("/")[1][2:], "select_type": "H5S_SEL_POINTS", "selection": [[0, 1], [2, 3]]}
    stored = json_to_array([sent_json, None], t, (2,))
    assert orjson.loads(stored[0]) == {**sent_json, "id": D}
    back = array_to_json(stored, t)
    assert back == [{**sent_json, "id": D}, None]
    assert json_to_array(back, t, (2,)).tolist() == stored.tolist()
    with pytest.raises(InvalidInput, match="not a dataset id"):
        json_to_array({"id": D.replace("datasets/d-", "groups/g-")}, t, ())


def test_other_accepted_json_forms() -> None:
    t = validate_type(compound(x=I32, s=VSTR))
    by_name = json_to_array([{"s": "a", "x": 1}, {"x": 2, "s": "b"}], t, (2,))
    assert array_to_json(by_name, t) == [[1, "a"], [2, "b"]]
    colors = validate_type(COLORS)
    assert json_to_array(["GREEN", 0], colors, (2,)).tolist() == [7, 0]
    assert json_to_array([1.0, 2], validate_type(I32), (2,)).tolist() == [1, 2]
    assert json_to_array([0, 1], validate_type(BOOL), (2,)).tolist() == [False, True]
    floats = json_to_array([math.nan, math.inf, "nan", "-inf", 3], validate_type(F64), (5,))
    assert array_to_json(floats, validate_type(F64)) == ["NaN", "Infinity", "NaN", "-Infinity", 3.0]
    refs = json_to_array(["groups/" + G, "", None], validate_type(REF), (3,))
    assert array_to_json(refs, validate_type(REF)) == ["groups/" + G, "", ""]
    assert json_to_array((1, 2), validate_type(I32), (2,)).tolist() == [1, 2]
    numpy_scalars = [np.int64(3), np.float32(2.0)]
    assert json_to_array(numpy_scalars, validate_type(I32), (2,)).tolist() == [3, 2]
    assert json_to_array([np.int8(1)], validate_type(F64), (1,)).tolist() == [1.0]


def test_array_type_values_fold_dims_into_the_shape() -> None:
    t = validate_type(array([3], I32))
    arr = json_to_array([[1, 2, 3], [4, 5, 6]], t, (2,))
    assert arr.shape == (2, 3) and arr.dtype == np.dtype("<i4")
    assert bytes_to_array(array_to_bytes(arr, t), t, (2,)).shape == (2, 3)
    with pytest.raises(InvalidInput, match="dims"):
        array_to_bytes(np.zeros((2, 4), "<i4"), t)


@pytest.mark.parametrize(
    ("t", "shape", "value", "expected"),
    [
        (I32, (2, 3), 7, [[7] * 3] * 2),
        (I32, (2, 3), [1, 2, 3], [[1, 2, 3]] * 2),
        (I32, (2, 3), [[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 5, 6]]),
        (compound(x=I32, y=I32), (2,), [1, 2], [[1, 2], [1, 2]]),
        (compound(x=I32, y=I32), (2,), [[1, 2], [3, 4]], [[1, 2], [3, 4]]),
        (vlen(I32), (3,), [1, 2], [[1, 2]] * 3),
        (vlen(I32), (2,), [[1], [2, 3]], [[1], [2, 3]]),
        (VSTR, (2, 2), "x", [["x", "x"], ["x", "x"]]),
        (array([2], I32), (3,), [1, 2], [[1, 2]] * 3),
    ],
    ids=str,
)
def test_broadcast(t: Any, shape: tuple[int, ...], value: Any, expected: Any) -> None:
    t = validate_type(t)
    assert array_to_json(json_to_array(value, t, shape, broadcast=True), t) == expected


BAD_VALUES: list[tuple[Any, tuple[int, ...], Any]] = [
    (I32, (3,), [1, 2]),
    (I32, (2,), [[1], [2]]),
    (I32, (2, 2), [[1, 2], [3]]),
    (I32, (2, 2), [1, 2, 3]),  # flat, but not all the elements
    (I32, (), [5, 6]),
    (I32, (), [[5]]),
    (I32, (2,), 5),
    (I32, (), 2**31),
    ("H5T_STD_U8LE", (2,), [1, -1]),
    ("H5T_STD_U64LE", (), 2**64),
    ("H5T_STD_I64LE", (2,), [2**63, -1]),
    (I32, (), 1.5),
    (I32, (), "5"),
    (I32, (), True),
    (I32, (2,), [None, 1]),
    (I32, (2,), [{"a": 1}, 1]),
    (F64, (), "abc"),
    (F64, (), True),
    (F64, (), None),
    ("H5T_IEEE_F16LE", (), 1e10),
    ("H5T_IEEE_F32LE", (2,), [1.0, 1e300]),
    (F64, (), 10**400),
    (BOOL, (), 2),
    (BOOL, (), "yes"),
    (COLORS, (), "BLUE"),
    (COLORS, (), 70000),
    (S5, (), "abcdef"),
    (S5, (), "ééé"),
    (S5, (), 5),
    (VSTR, (), 5),
    (VSTR, (), None),
    (VSTR, (), "\ud800"),
    (compound(x=I32, y=F64), (), [1]),
    (compound(x=I32, y=F64), (), [1, 2.0, 3]),
    (compound(x=I32, y=F64), (), {"x": 1}),
    (compound(x=I32, y=F64), (), {"x": 1, "y": 2.0, "z": 3}),
    (compound(x=I32, y=F64), (), 5),
    (compound(x=I32, y=F64), (), ["a", 1.0]),
    (array([3], I32), (), [1, 2]),
    (array([3], I32), (2,), [1, 2, 3]),
    (vlen(I32), (), 5),
    (vlen(I32), (2,), [[1], 2]),
    (vlen(I32), (), [[1]]),
    (REF, (), "g-123"),
    (REF, (), "d-b76eacdd-d16f54ec-3fe6-245559-e7dc64x"),
    (REF, (), "groups/d-b76eacdd-d16f54ec-3fe6-245559-e7dc64"),
    (REF, (), "files/" + G),
    (REF, (), 7),
    (OPAQUE, (), "not base64!"),
    (OPAQUE, (), "AQIDBA=="),
    (OPAQUE, (), 1),
    (BITS, (), 70000),
]


def test_hsds_value_forms_are_accepted() -> None:
    i32 = validate_type(I32)
    # rank 2 or more as one flat list in C order; a scalar as a list of one (HSDS takes both)
    assert json_to_array([1, 2, 3, 4, 5, 6], i32, (2, 3)).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert json_to_array([5], i32, ()).tolist() == 5
    assert json_to_array(["ab"], validate_type(S5), ()).tolist() == b"ab"
    # one field of a compound: its bare value
    one = validate_type(compound(x=I32))
    assert json_to_array([7, 8], one, (2,)).tolist() == [(7,), (8,)]


@pytest.mark.parametrize(("t", "shape", "value"), BAD_VALUES, ids=lambda x: str(x)[:50])
def test_bad_json_values_raise_invalid_input(t: Any, shape: tuple[int, ...], value: Any) -> None:
    t = validate_type(t)
    with pytest.raises(InvalidInput) as caught:
        json_to_array(value, t, shape)
    assert caught.value.message


@pytest.mark.parametrize("value", [[1, 2], "x", [[1, 2, 3]] * 3, [2**40]])
def test_broadcast_still_checks_the_value(value: Any) -> None:
    with pytest.raises(InvalidInput):
        json_to_array(value, validate_type(I32), (2, 3), broadcast=True)


def test_error_names_the_element() -> None:
    with pytest.raises(InvalidInput, match=r"value\[1, 0\]: 300 is out of range"):
        json_to_array([[1, 2], [300, 4]], validate_type("H5T_STD_U8LE"), (2, 2))
    with pytest.raises(InvalidInput, match=r"value\[1\]: field 's'"):
        json_to_array([[1, "a"], [2, 3]], validate_type(compound(x=I32, s=VSTR)), (2,))


def test_negative_shape_is_invalid() -> None:
    with pytest.raises(InvalidInput):
        json_to_array([], validate_type(I32), (-1,))


@pytest.mark.parametrize(
    ("t", "shape", "data"),
    [
        (I32, (2,), b"\x00" * 7),
        (I32, (2,), b"\x00" * 9),
        (I32, (), b""),
        (compound(x=I32, y=F64), (1,), b"\x00" * 16),
        (array([3], I32), (2,), b"\x00" * 12),
        (VSTR, (2,), b"\x01\x00\x00\x00a"),  # second element missing
        (VSTR, (1,), b"\x01\x00\x00\x00a\x00"),  # trailing byte
        (VSTR, (1,), b"\x05\x00\x00\x00ab"),  # count past the end
        (VSTR, (1,), b"\x01\x00"),  # truncated count
        (VSTR, (1,), b"\xff\xff\xff\xff"),
        (vlen(I32), (1,), b"\x03\x00\x00\x00abc"),  # not whole int32s
        (vlen(compound(x=I32, s=VSTR)), (1,), b"\x06\x00\x00\x00\x01\x00\x00\x00\x09\x00"),
        (compound(x=I32, s=VSTR), (1,), b"\x01\x00\x00\x00"),
        (VSTR, (10**12,), b"\x00" * 8),  # refused before allocating
    ],
    ids=str,
)
def test_bad_bodies_raise_invalid_input(t: Any, shape: tuple[int, ...], data: bytes) -> None:
    with pytest.raises(InvalidInput) as caught:
        bytes_to_array(data, validate_type(t), shape)
    assert caught.value.message


def test_byte_count_message() -> None:
    with pytest.raises(InvalidInput, match="expected 24 bytes, got 20"):
        bytes_to_array(b"\x00" * 20, validate_type(I32), (2, 3))


def test_fixed_types_are_zero_copy() -> None:
    buf = bytearray(np.arange(6, dtype="<i4").tobytes())
    arr = bytes_to_array(buf, validate_type(I32), (2, 3))
    assert np.shares_memory(arr, np.frombuffer(buf, dtype="u1"))
    assert arr.flags.writeable
    ro = bytes_to_array(bytes(buf), validate_type(I32), (2, 3))
    assert not ro.flags.writeable and ro.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert bytes_to_array(memoryview(buf), validate_type(I32), (6,)).tolist() == list(range(6))
    assert bytes_to_array(np.arange(6, dtype="<i4").data, validate_type(I32), (6,))[5] == 5


def test_undecodable_strings_survive_binary_and_degrade_in_json() -> None:
    t = validate_type(VSTR)
    body = b"\x02\x00\x00\x00\xff\xfe"
    arr = bytes_to_array(body, t, (1,))
    assert array_to_bytes(arr, t) == body
    assert array_to_json(arr, t) == ["\ufffd\ufffd"]
    fixed = validate_type(S5)
    assert array_to_json(bytes_to_array(b"\xffab\x00\x00", fixed, ()), fixed) == "\ufffdab"


def test_offsets_are_unpacked_in_memory_and_packed_on_the_wire() -> None:
    t = validate_type(
        {
            "class": "H5T_COMPOUND",
            "fields": [
                {"name": "a", "type": "H5T_STD_I8LE", "offset": 0},
                {"name": "b", "type": "H5T_STD_I16BE", "offset": 4},
            ],
            "size": 8,
        }
    )
    arr = json_to_array([[1, 2], [3, 4]], t, (2,))
    assert arr.dtype.itemsize == 8
    data = array_to_bytes(arr, t)
    assert data == bytes([1, 0, 2, 3, 0, 4])
    back = bytes_to_array(data, t, (2,))
    assert back.dtype == arr.dtype and array_to_json(back, t) == [[1, 2], [3, 4]]


def test_complex_arrays_store_as_r_i_compounds() -> None:
    t = validate_type(compound(r=F64, i=F64))
    data = array_to_bytes(np.array([1 + 2j, 3 - 4j]), t)
    assert array_to_json(bytes_to_array(data, t, (2,)), t) == [[1.0, 2.0], [3.0, -4.0]]


# --- properties ------------------------------------------------------------------------------

NUMERIC_BASES = [
    f"H5T_STD_{s}{b}{o}" for s in "IU" for b in (8, 16, 32, 64) for o in ("LE", "BE")
] + [f"H5T_IEEE_F{b}{o}" for b in (16, 32, 64) for o in ("LE", "BE")]

numeric_types = st.sampled_from(NUMERIC_BASES).map(validate_type)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def fixed_types(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    leaves = st.one_of(
        numeric_types,
        st.builds(lambda n: validate_type({"class": "H5T_STRING", "length": n}), st.integers(1, 6)),
        st.just(validate_type(BOOL)),
        st.just(validate_type(COLORS)),
    )
    if depth == 0:
        return leaves

    def make_compound(types: list[dict[str, Any]]) -> dict[str, Any]:
        return validate_type(compound(**{f"f{i}": t for i, t in enumerate(types)}))

    inner = fixed_types(depth - 1)
    return st.one_of(
        leaves,
        st.lists(inner, min_size=1, max_size=4).map(make_compound),
        st.builds(
            lambda d, t: validate_type(array(d, t)),
            st.lists(st.integers(1, 3), min_size=1, max_size=2),
            inner,
        ),
    )


@st.composite
def typed_arrays(draw: st.DrawFn, types: st.SearchStrategy[dict[str, Any]]) -> Any:
    t = draw(types)
    shape = draw(shapes)
    dims, leaf = array_dims(t)
    arr = draw(hnp.arrays(to_dtype(leaf), shape + dims))
    return t, shape, arr


@settings(max_examples=300, deadline=None)
@given(typed_arrays(numeric_types))
def test_numeric_round_trips(case: Any) -> None:
    t, shape, arr = case
    data = array_to_bytes(arr, t)
    assert data == arr.tobytes()
    assert data == arrayToBytes(arr)  # h5pyd's encoder
    assert bytes_to_array(data, t, shape).tobytes() == data
    value = array_to_json(arr, t)
    again = json_to_array(value, t, shape)
    assert array_to_json(again, t) == value
    assert np.array_equal(again, arr, equal_nan=True)
    assert plain(jsonToArray(shape, hdf5dtype.createDataType(t), value).tolist()) == plain(value)


@settings(max_examples=300, deadline=None)
@given(typed_arrays(fixed_types()))
def test_fixed_type_round_trips_agree_with_h5pyd(case: Any) -> None:
    t, shape, arr = case
    data = array_to_bytes(arr, t)
    assert data == arrayToBytes(arr)
    try:
        dtype = hdf5dtype.createDataType(t)
    except TypeError:  # h5json refuses arrays of enums
        dtype = None
    if dtype is not None and dtype.base.subdtype is None:  # h5json misreads arrays of arrays
        assert bytesToArray(data, dtype, shape).tobytes() == data  # h5pyd decodes what we send
    back = bytes_to_array(data, t, shape)
    assert back.tobytes() == data
    value = array_to_json(back, t)
    if "\ufffd" not in repr(value):  # bytes that are not UTF-8 cannot survive JSON
        assert array_to_json(json_to_array(value, t, shape), t) == value


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(), max_size=5),
    st.lists(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4), min_size=5, max_size=5),
)
def test_variable_compound_round_trips_agree_with_h5pyd(texts: list[str], ints: Any) -> None:
    t = validate_type(compound(s=VSTR, v=vlen(I32), n=I32))
    value = [[s, ints[i], i] for i, s in enumerate(texts)]
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(InvalidInput):
            json_to_array(value, t, (len(texts),))
        return
    arr = json_to_array(value, t, (len(texts),))
    data = array_to_bytes(arr, t)
    theirs = np.zeros(len(texts), dtype=hdf5dtype.createDataType(t))
    for i, (s, v, n) in enumerate(value):
        theirs[i] = (s, np.array(v, "<i4"), n)
    assert data == arrayToBytes(theirs)
    assert array_to_json(bytes_to_array(data, t, (len(texts),)), t) == value


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(2**63), 2**64 - 1), min_size=1, max_size=20),
    st.sampled_from(
        ["H5T_STD_I8LE", "H5T_STD_U16BE", "H5T_STD_I32LE", "H5T_STD_I64BE", "H5T_STD_U64LE"]
    ),
)
def test_integer_range_is_exact(values: list[int], base: str) -> None:
    t = validate_type(base)
    info = np.iinfo(to_dtype(t))
    fits = all(info.min <= v <= info.max for v in values)
    if fits:
        assert json_to_array(values, t, (len(values),)).tolist() == values
    else:
        with pytest.raises(InvalidInput, match="out of range"):
            json_to_array(values, t, (len(values),))


# --- fuzzing: any JSON value or body gives an array or InvalidInput, nothing else -------------

ALL_TYPES = [validate_type(t) for t, _, _ in AGREED + OURS_ONLY] + [validate_type(REGION)]
_json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=4),
        st.sampled_from(["NaN", "-Infinity", "GREEN", G, D, "AQID", ""]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["x", "s", "y"]), inner)
    ),
    max_leaves=20,
)
_small_shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(ALL_TYPES), _json_values, _small_shapes, st.booleans())
def test_any_json_value_gives_an_array_or_invalid_input(
    t: dict[str, Any], value: Any, shape: tuple[int, ...], broadcast: bool
) -> None:
    try:
        arr = json_to_array(value, t, shape, broadcast=broadcast)
    except InvalidInput:
        return
    array_to_bytes(arr, t)
    try:
        array_to_json(arr, t)
    except InvalidInput:
        assert t["base"] == "H5T_STD_REF_DSETREG"


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(ALL_TYPES), st.binary(max_size=64), _small_shapes)
def test_any_body_gives_an_array_or_invalid_input(
    t: dict[str, Any], data: bytes, shape: tuple[int, ...]
) -> None:
    try:
        arr = bytes_to_array(data, t, shape)
    except InvalidInput:
        return
    out = array_to_bytes(arr, t)
    assert data[: len(out)] == out and not any(data[len(out) :])  # h5pyd's padding, at most


def test_fixed_string_beside_an_array_of_vlen_strings_decodes() -> None:
    """Issue 17 case 3: a fixed string inside a variable-length element (here beside an array
    of vlen strings in a compound) once failed with "byte indices must be integers"."""
    t = validate_type({"class": "H5T_COMPOUND", "fields": [
        {"name": "key", "type": {"class": "H5T_STRING", "length": 4, "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD"}},
        {"name": "names", "type": {"class": "H5T_ARRAY", "dims": [2], "base": {"class": "H5T_STRING", "length": "H5T_VARIABLE", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM"}}},
    ]})
    body = b"ab\0\0" + b"\x01\0\0\0a" + b"\x02\0\0\0\xc3\xa9"
    arr = bytes_to_array(body, t, (1,))
    assert arr[0]["key"] == b"ab" and list(arr[0]["names"]) == ["a", "é"]
    assert array_to_bytes(arr, t) == body


@pytest.mark.parametrize("base", [f"H5T_STD_{s}{n}{e}" for s in "IU" for n in (8, 16, 32, 64) for e in ("LE", "BE")])
def test_int_scalar_is_what_the_array_round_trip_gives(base: str) -> None:
    """The scalar integer shortcut of attribute PUTs answers only what numpy would, or nothing."""
    t = validate_type(base)
    info = np.iinfo(to_dtype(t))
    edges = [int(info.min), int(info.max)]
    values: list[Any] = [0, 1, -1, True, False, 1.0, "1", None, [1]]
    values += [e + d for e in edges for d in (-1, 0, 1)]
    for value in values:
        fast = int_scalar(value, t)
        try:
            slow = array_to_json(json_to_array(value, t, ()), t)
        except InvalidInput:
            slow = None
        if fast is not None:
            assert type(fast) is int and fast == slow, (value, fast, slow)
        elif type(value) is int and info.min <= value <= info.max:
            pytest.fail(f"{value} in range of {base} not taken by the shortcut")
    assert int_scalar(1, validate_type("H5T_IEEE_F32LE")) is None
    assert int_scalar(1, {"class": "H5T_ENUM", "base": t, "members": [{"name": "A", "value": 1}]}) is None


def test_region_references_stored_as_base64_are_shown_as_objects() -> None:
    """An attribute stored before region references were answered in h5json's object form holds
    the base64 blob; it is shown as the object (h5pyd 1.0 reads no other form)."""
    doc = {"id": D, "select_type": "H5S_SEL_HYPERSLABS", "selection": [[[0, 0], [1, 2]]]}
    blob = base64.b64encode(orjson.dumps(doc)).decode()
    stored = {"type": REGION, "shape": {"class": "H5S_SIMPLE", "dims": [2]}, "value": [blob, None]}
    assert shown_value(stored) == [doc, None]
    scalar = {"type": REGION, "shape": {"class": "H5S_SCALAR"}, "value": blob}
    assert shown_value(scalar) == doc
    other = base64.b64encode(hdf5dtype.RegionReference(D).tobytes()).decode()  # h5pyd's binary form
    assert shown_value({**scalar, "value": other}) == other
    ints = {"type": {"class": "H5T_INTEGER", "base": I32}, "shape": {"class": "H5S_SCALAR"}, "value": 3}
    assert shown_value(ints) == 3
