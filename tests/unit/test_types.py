"""The HDF5 type system: validation, numpy dtypes, and agreement with what h5pyd 1.0 uses."""

from __future__ import annotations

import copy
from typing import Any

import h5py
import numpy as np
import pytest
from h5json import hdf5dtype
from hypothesis import given, settings
from hypothesis import strategies as st

from h5lake.errors import InvalidInput
from h5lake.model.types import (
    array_dims,
    empty_array,
    is_variable,
    item_size,
    to_dtype,
    wire_dtype,
)
from h5lake.model.fromjson import fill_value_array
from h5lake.model.typecheck import type_from_dtype, validate_type

I32 = {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}
F64 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
VSTR = {
    "class": "H5T_STRING",
    "length": "H5T_VARIABLE",
    "charSet": "H5T_CSET_UTF8",
    "strPad": "H5T_STR_NULLTERM",
}
VASCII = {**VSTR, "charSet": "H5T_CSET_ASCII"}
S5 = {"class": "H5T_STRING", "length": 5, "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD"}
BOOL: dict[str, Any] = {
    "class": "H5T_ENUM",
    "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"},
    "members": [{"name": "FALSE", "value": 0}, {"name": "TRUE", "value": 1}],
}
COLORS = {
    "class": "H5T_ENUM",
    "base": {"class": "H5T_INTEGER", "base": "H5T_STD_U16BE"},
    "members": [{"name": "RED", "value": 0}, {"name": "GREEN", "value": 7}],
}
OBJ_REF = {
    "class": "H5T_REFERENCE",
    "base": "H5T_STD_REF_OBJ",
    "length": 48,
    "charSet": "H5T_CSET_ASCII",
    "strPad": "H5T_STR_NULLPAD",
}
REGION_REF = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}


def vlen(base: Any) -> dict[str, Any]:
    return {"class": "H5T_VLEN", "base": base, "size": "H5T_VARIABLE"}


def array(dims: list[int], base: Any) -> dict[str, Any]:
    return {"class": "H5T_ARRAY", "dims": dims, "base": base}


def compound(**fields: Any) -> dict[str, Any]:
    return {"class": "H5T_COMPOUND", "fields": [{"name": k, "type": v} for k, v in fields.items()]}


# Every type class in its normalized form, with the numpy dtype it maps to.
NORMALIZED: list[tuple[dict[str, Any], Any]] = [
    *[
        (
            {"class": "H5T_INTEGER", "base": f"H5T_STD_{s}{b}{o}"},
            f"{'<' if o == 'LE' else '>'}{s.lower()}{b // 8}",
        )
        for s in "IU"
        for b in (8, 16, 32, 64)
        for o in ("LE", "BE")
    ],
    *[
        (
            {"class": "H5T_FLOAT", "base": f"H5T_IEEE_F{b}{o}"},
            f"{'<' if o == 'LE' else '>'}f{b // 8}",
        )
        for b in (16, 32, 64)
        for o in ("LE", "BE")
    ],
    (S5, "S5"),
    ({**S5, "charSet": "H5T_CSET_UTF8"}, "S5"),
    ({**S5, "strPad": "H5T_STR_SPACEPAD"}, "S5"),
    ({**S5, "strPad": "H5T_STR_NULLTERM"}, "S5"),
    (VSTR, object),
    (VASCII, object),
    ({**VSTR, "strPad": "H5T_STR_NULLPAD"}, object),
    (compound(x=I32, y=F64, s=S5), [("x", "<i4"), ("y", "<f8"), ("s", "S5")]),
    (compound(a=compound(b=I32), v=vlen(I32)), [("a", [("b", "<i4")]), ("v", object)]),
    (BOOL, np.bool_),
    (COLORS, ">u2"),
    (array([3], I32), ("<i4", (3,))),
    (array([2, 3], compound(x=F64)), ([("x", "<f8")], (2, 3))),
    (array([2], VSTR), (object, (2,))),
    (vlen(I32), object),
    (vlen(compound(x=I32, s=VSTR)), object),
    (vlen(array([2], F64)), object),
    (OBJ_REF, "S48"),
    (REGION_REF, object),
    ({"class": "H5T_OPAQUE", "size": 4}, "V4"),
    ({"class": "H5T_OPAQUE", "size": 7, "tag": "blob"}, "V7"),
    ({"class": "H5T_BITFIELD", "base": "H5T_STD_B8LE"}, "u1"),
    ({"class": "H5T_BITFIELD", "base": "H5T_STD_B64BE"}, ">u8"),
]


@pytest.mark.parametrize(("t", "expected"), NORMALIZED, ids=lambda x: str(x)[:60])
def test_normalized_type_round_trips_through_its_dtype(t: dict[str, Any], expected: Any) -> None:
    assert validate_type(t) == t  # already normal: validation changes nothing
    dt = to_dtype(t)
    assert dt == np.dtype(expected)
    if "8BE" not in str(t):  # numpy has no byte order for one byte
        assert type_from_dtype(dt) == t


@pytest.mark.parametrize(("t", "_"), [n for n in NORMALIZED if n[0]["class"] != "H5T_BITFIELD"], ids=lambda x: str(x)[:60])
def test_dtype_matches_the_one_h5pyd_builds(t: dict[str, Any], _: Any) -> None:
    """h5pyd builds its dtype from the type JSON with h5json: the layouts must agree, or
    binary transfer would disagree."""
    theirs = hdf5dtype.createDataType(t)  # (h5json has no bitfield class: those are left out)
    ours = wire_dtype(t)
    assert ours == theirs
    assert ours.itemsize == theirs.itemsize


@pytest.mark.parametrize(
    "dt",
    [
        np.dtype("<i2"),
        np.dtype(">u8"),
        np.dtype("<f2"),
        np.dtype(">f4"),
        np.dtype("S7"),
        np.dtype(bool),
        np.dtype([("a", "<i4"), ("b", "S3"), ("c", ">f8")]),
        np.dtype(("<i8", (2, 3))),
        np.dtype("V6"),
        h5py.string_dtype("utf-8"),
        h5py.string_dtype("ascii"),
        h5py.string_dtype("utf-8", 6),
        h5py.vlen_dtype(np.dtype("<i4")),
        h5py.enum_dtype({"A": 1, "B": 5}, np.dtype("<i2")),
        hdf5dtype.special_dtype(ref=hdf5dtype.Reference),
        hdf5dtype.special_dtype(ref=hdf5dtype.RegionReference),
        np.dtype([("x", "<i4"), ("v", h5py.vlen_dtype(np.dtype("<f8")))]),
    ],
    ids=str,
)
def test_what_h5pyd_sends_for_a_dtype_is_already_normal(dt: np.dtype[Any]) -> None:
    """h5pyd sends getTypeItem(dtype); we must accept it as is and echo it unchanged."""
    sent = hdf5dtype.getTypeItem(dt)
    sent = {**sent, "dims": list(sent["dims"])} if "dims" in sent else sent
    assert validate_type(sent) == sent
    assert type_from_dtype(dt) == sent


def test_h5py_special_dtypes_carry_their_metadata() -> None:
    assert h5py.check_string_dtype(to_dtype(VSTR)).encoding == "utf-8"
    assert h5py.check_string_dtype(to_dtype(VASCII)).encoding == "ascii"
    fixed_utf8 = h5py.check_string_dtype(to_dtype({**S5, "charSet": "H5T_CSET_UTF8"}))
    assert (fixed_utf8.encoding, fixed_utf8.length) == ("utf-8", 5)
    assert h5py.check_vlen_dtype(to_dtype(vlen(I32))) == np.dtype("<i4")
    assert h5py.check_enum_dtype(to_dtype(COLORS)) == {"RED": 0, "GREEN": 7}
    assert h5py.check_ref_dtype(to_dtype(REGION_REF)) is h5py.RegionReference


@pytest.mark.parametrize(
    ("sent", "normal"),
    [
        ("H5T_STD_I32LE", I32),
        ("H5T_IEEE_F64LE", F64),
        ("H5T_STD_B16BE", {"class": "H5T_BITFIELD", "base": "H5T_STD_B16BE"}),
        ("H5T_STD_REF_OBJ", OBJ_REF),
        ({"class": "H5T_INTEGER", "base": "H5T_STD_I32"}, I32),  # h5json allows no suffix
        ({"class": "H5T_STRING", "length": 5}, S5),
        ({"class": "H5T_STRING", "length": "H5T_VARIABLE"}, VASCII),
        ({"class": "H5T_VLEN", "base": "H5T_STD_I32LE"}, vlen(I32)),
        ({"class": "H5T_ARRAY", "dims": 3, "base": "H5T_STD_I32LE"}, array([3], I32)),
        ({"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}, OBJ_REF),
        ({"class": "H5T_OPAQUE", "size": 2, "tag": ""}, {"class": "H5T_OPAQUE", "size": 2}),
        (
            {"class": "H5T_ENUM", "base": "H5T_STD_U16BE", "mapping": {"RED": 0, "GREEN": 7}},
            COLORS,
        ),
        ({**I32, "unknown": 1, "hrefs": []}, I32),
    ],
    ids=str,
)
def test_accepted_forms_are_normalized(sent: Any, normal: dict[str, Any]) -> None:
    assert validate_type(sent) == normal


def test_validation_returns_a_copy() -> None:
    sent = compound(x=I32)
    out = validate_type(sent)
    out["fields"][0]["type"]["base"] = "changed"
    assert sent["fields"][0]["type"]["base"] == "H5T_STD_I32LE"


def test_bool_needs_exactly_h5pys_members() -> None:
    assert to_dtype(BOOL) == np.dtype(bool)
    swapped = {**BOOL, "members": list(reversed(BOOL["members"]))}
    assert to_dtype(validate_type(swapped)) == np.dtype(bool)  # as h5pyd sees it
    three = {**BOOL, "members": [*BOOL["members"], {"name": "MAYBE", "value": 2}]}
    assert to_dtype(validate_type(three)) == np.dtype("<i1")  # an ordinary enum
    inverted = {**BOOL, "members": [{"name": "FALSE", "value": 1}, {"name": "TRUE", "value": 0}]}
    assert to_dtype(validate_type(inverted)) == np.dtype("<i1")


def test_compound_offsets_are_kept_but_the_wire_is_packed() -> None:
    t = {
        "class": "H5T_COMPOUND",
        "fields": [
            {"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "offset": 0},
            {"name": "b", "type": F64, "offset": 8},
        ],
        "size": 24,
    }
    assert validate_type(t) == t
    memory = to_dtype(t)
    assert memory.fields is not None
    assert (memory.itemsize, memory.fields["b"][1]) == (24, 8)
    assert wire_dtype(t).itemsize == 9
    assert item_size(t) == 9
    assert type_from_dtype(memory) == t
    packed_with_offsets = compound(a=I32, b=F64)
    packed_with_offsets["fields"][0]["offset"] = 0
    packed_with_offsets["fields"][1]["offset"] = 4
    assert validate_type(packed_with_offsets) == packed_with_offsets
    assert type_from_dtype(to_dtype(packed_with_offsets)) == compound(a=I32, b=F64)


def test_complex_maps_to_h5pys_compound() -> None:
    t = type_from_dtype(np.dtype(">c16"))
    part = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64BE"}
    assert t == compound(r=part, i=part)
    assert type_from_dtype(np.dtype("<U3")) == {**S5, "length": 12, "charSet": "H5T_CSET_UTF8"}


@pytest.mark.parametrize(
    ("t", "size", "variable"),
    [
        (I32, 4, False),
        (S5, 5, False),
        (compound(x=I32, y=F64, s=S5), 17, False),
        (array([2, 3], compound(x=I32, y=F64)), 72, False),
        (OBJ_REF, 48, False),
        (BOOL, 1, False),
        ({"class": "H5T_FLOAT", "base": "H5T_IEEE_F16BE"}, 2, False),
        (VSTR, None, True),
        (vlen(I32), None, True),
        (REGION_REF, None, True),
        (compound(x=I32, s=VSTR), None, True),
        (array([4], compound(v=vlen(F64))), None, True),
    ],
    ids=str,
)
def test_item_size_and_is_variable(t: dict[str, Any], size: int | None, variable: bool) -> None:
    assert item_size(t) == size
    assert is_variable(t) is variable


def test_array_dims_peels_nested_arrays() -> None:
    t = array([2], array([3, 4], I32))
    assert array_dims(t) == ((2, 3, 4), I32)
    assert empty_array(t, (5,)).shape == (5, 2, 3, 4)


def test_defaults_are_typed_empties() -> None:
    e = empty_array(compound(s=VSTR, a=VASCII, v=vlen(I32), r=REGION_REF, n=I32), (2,))
    assert e[1]["s"] == "" and e[1]["a"] == b"" and e[1]["r"] == b"" and e[1]["n"] == 0
    assert isinstance(e[1]["v"], np.ndarray) and e[1]["v"].dtype == np.dtype("<i4")
    assert fill_value_array(I32).shape == () and fill_value_array(I32) == 0
    assert fill_value_array(S5)[()] == b""
    assert fill_value_array(array([2], VSTR)).tolist() == ["", ""]


def test_fill_value_from_json() -> None:
    assert fill_value_array(F64, -1.5)[()] == -1.5
    assert np.isnan(fill_value_array(F64, "NaN")[()])
    assert fill_value_array(compound(x=I32, s=S5), [3, "ab"])[()].tolist() == (3, b"ab")
    with pytest.raises(InvalidInput):
        fill_value_array(I32, "x")


BAD_TYPES: list[Any] = [
    None,
    5,
    [],
    "H5T_STD_I128LE",
    "t-b76eacdd-d16f54ec-3fe6-245559-e7dc64",
    {},
    {"class": "H5T_TIME"},
    {"class": ["H5T_INTEGER"]},
    {"class": "H5T_INTEGER"},
    {"class": "H5T_INTEGER", "base": "H5T_IEEE_F32LE"},
    {"class": "H5T_FLOAT", "base": "H5T_STD_I32LE"},
    {"class": "H5T_FLOAT", "base": {"class": "H5T_FLOAT"}},
    {"class": "H5T_STRING"},
    {"class": "H5T_STRING", "length": -1},
    {"class": "H5T_STRING", "length": 0},
    {"class": "H5T_STRING", "length": 2.5},
    {"class": "H5T_STRING", "length": True},
    {"class": "H5T_STRING", "length": "variable"},
    {"class": "H5T_STRING", "length": 4, "charSet": "H5T_CSET_LATIN1"},
    {"class": "H5T_STRING", "length": 4, "strPad": "H5T_STR_WHATEVER"},
    {"class": "H5T_COMPOUND"},
    {"class": "H5T_COMPOUND", "fields": []},
    {"class": "H5T_COMPOUND", "fields": {"a": I32}},
    {"class": "H5T_COMPOUND", "fields": [I32]},
    {"class": "H5T_COMPOUND", "fields": ["x"]},
    {"class": "H5T_COMPOUND", "fields": [{"name": "a"}]},
    {"class": "H5T_COMPOUND", "fields": [{"name": "", "type": I32}]},
    {"class": "H5T_COMPOUND", "fields": [{"name": 3, "type": I32}]},
    {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": I32}, {"name": "a", "type": F64}]},
    {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": {"class": "nope"}}]},
    {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": I32, "offset": -1}]},
    {
        "class": "H5T_COMPOUND",
        "fields": [{"name": "a", "type": I32, "offset": 0}, {"name": "b", "type": I32}],
    },
    {
        "class": "H5T_COMPOUND",
        "fields": [
            {"name": "a", "type": I32, "offset": 0},
            {"name": "b", "type": I32, "offset": 2},
        ],
    },
    {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": I32, "offset": 0}], "size": 2},
    {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": I32}], "size": 8},
    {"class": "H5T_ENUM", "members": [{"name": "A", "value": 0}]},
    {"class": "H5T_ENUM", "base": F64, "members": [{"name": "A", "value": 0}]},
    {"class": "H5T_ENUM", "base": I32},
    {"class": "H5T_ENUM", "base": I32, "members": []},
    {"class": "H5T_ENUM", "base": I32, "members": [{"name": "A", "value": 1.5}]},
    {"class": "H5T_ENUM", "base": I32, "members": [{"name": "A", "value": "1"}]},
    {"class": "H5T_ENUM", "base": I32, "members": [{"name": "A", "value": True}]},
    {"class": "H5T_ENUM", "base": I32, "members": [{"name": "A"}]},
    {"class": "H5T_ENUM", "base": I32, "members": [["A", 0]]},
    {"class": "H5T_ENUM", "base": "H5T_STD_U8LE", "members": [{"name": "A", "value": 256}]},
    {"class": "H5T_ENUM", "base": "H5T_STD_U8LE", "members": [{"name": "A", "value": -1}]},
    {
        "class": "H5T_ENUM",
        "base": I32,
        "members": [{"name": "A", "value": 0}, {"name": "A", "value": 1}],
    },
    {
        "class": "H5T_ENUM",
        "base": I32,
        "members": [{"name": "A", "value": 0}, {"name": "B", "value": 0}],
    },
    {"class": "H5T_ARRAY", "base": I32},
    {"class": "H5T_ARRAY", "dims": [3]},
    {"class": "H5T_ARRAY", "dims": [], "base": I32},
    {"class": "H5T_ARRAY", "dims": [0], "base": I32},
    {"class": "H5T_ARRAY", "dims": [-2], "base": I32},
    {"class": "H5T_ARRAY", "dims": ["3"], "base": I32},
    {"class": "H5T_ARRAY", "dims": [3], "base": "bogus"},
    {"class": "H5T_ARRAY", "dims": [2**20, 2**20, 2**20], "base": I32},
    {"class": "H5T_VLEN"},
    {"class": "H5T_VLEN", "base": {"class": "H5T_VLEN"}},
    {"class": "H5T_REFERENCE"},
    {"class": "H5T_REFERENCE", "base": "H5T_STD_REF"},
    {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ", "length": 8},
    {"class": "H5T_OPAQUE"},
    {"class": "H5T_OPAQUE", "size": 0},
    {"class": "H5T_OPAQUE", "size": "4"},
    {"class": "H5T_OPAQUE", "size": 4, "tag": 7},
    {"class": "H5T_BITFIELD", "base": "H5T_STD_U8LE"},
    {"class": "H5T_BITFIELD", "base": "H5T_STD_B7LE"},
]


@pytest.mark.parametrize("t", BAD_TYPES, ids=lambda t: str(t)[:70])
def test_bad_types_raise_invalid_input(t: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate_type(t)
    assert caught.value.message


def test_deep_nesting_is_refused_cleanly() -> None:
    t: Any = I32
    for _ in range(100):
        t = vlen(t)
    with pytest.raises(InvalidInput, match="nested"):
        validate_type(t)


def test_error_names_the_place() -> None:
    t = compound(a=I32, b=compound(c={"class": "H5T_STRING", "length": -3}))
    with pytest.raises(InvalidInput, match=r"fields\[1\]\.type\.fields\[0\]\.type"):
        validate_type(t)


@pytest.mark.parametrize(
    "dt",
    [np.dtype("M8[s]"), np.dtype(object), np.dtype("c32"), np.dtype("f16"), "nonsense"],
    ids=str,
)
def test_dtypes_without_an_hdf5_type_raise_invalid_input(dt: Any) -> None:
    with pytest.raises(InvalidInput):
        type_from_dtype(dt)


# --- fuzzing: anything JSON-shaped gives a type or InvalidInput, never another exception -------

_WORDS = [
    "class",
    "base",
    "fields",
    "name",
    "type",
    "members",
    "mapping",
    "value",
    "dims",
    "length",
    "charSet",
    "strPad",
    "size",
    "tag",
    "offset",
    "H5T_INTEGER",
    "H5T_FLOAT",
    "H5T_STRING",
    "H5T_COMPOUND",
    "H5T_ENUM",
    "H5T_ARRAY",
    "H5T_VLEN",
    "H5T_REFERENCE",
    "H5T_OPAQUE",
    "H5T_BITFIELD",
    "H5T_STD_I32LE",
    "H5T_STD_U8BE",
    "H5T_IEEE_F64LE",
    "H5T_STD_B8LE",
    "H5T_VARIABLE",
    "H5T_CSET_UTF8",
    "H5T_STR_NULLPAD",
    "H5T_STD_REF_OBJ",
    "H5T_STD_REF_DSETREG",
]
_json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.sampled_from(_WORDS),
    st.text(max_size=5),
)
_json = st.recursive(
    _json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(_WORDS), inner, max_size=5),
    ),
    max_leaves=25,
)


def _accepts_or_refuses_cleanly(t: Any) -> None:
    try:
        normal = validate_type(t)
    except InvalidInput:
        return
    assert validate_type(normal) == normal
    to_dtype(normal)
    item_size(normal)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_arbitrary_json_never_escapes_as_another_exception(t: Any) -> None:
    _accepts_or_refuses_cleanly(t)


def _paths(x: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(x, dict):
        for k, v in x.items():
            found += _paths(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            found += _paths(v, (*path, i))
    return found


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([t for t, _ in NORMALIZED]), st.data())
def test_damaged_valid_types_never_escape_as_another_exception(t: Any, data: st.DataObject) -> None:
    damaged = copy.deepcopy(t)
    path = data.draw(st.sampled_from(_paths(damaged)[1:]))
    target = damaged
    for key in path[:-1]:
        target = target[key]
    if data.draw(st.booleans()):
        target[path[-1]] = data.draw(_json)
    elif isinstance(target, dict):
        del target[path[-1]]
    else:
        target.pop(path[-1])
    _accepts_or_refuses_cleanly(damaged)


def test_bitfields_are_shown_as_marked_unsigned_integers_and_read_back() -> None:
    from h5lake.model.types import client_type

    t = validate_type({"class": "H5T_COMPOUND", "fields": [{"name": "ok", "type": {"class": "H5T_BITFIELD", "base": "H5T_STD_B16BE"}}]})
    shown = client_type(t)
    assert shown["fields"][0]["type"] == {"class": "H5T_INTEGER", "base": "H5T_STD_U16BE", "hdf5Class": "H5T_BITFIELD"}
    assert validate_type(shown) == t


def test_carried_types_keep_their_hdf5_description() -> None:
    d = {"class": "H5T_INTEGER", "size": 16, "order": "LE", "precision": 128, "offset": 0, "signed": True}
    t = validate_type({"class": "H5T_OPAQUE", "size": 16, "hdf5Type": d})
    assert t["hdf5Type"] == d
    assert type_from_dtype(to_dtype(t)) == t
    with pytest.raises(InvalidInput, match="hdf5Type"):
        validate_type({"class": "H5T_OPAQUE", "size": 8, "hdf5Type": d})


@pytest.mark.parametrize("kind", ["compound", "enum"])
def test_member_lists_stop_at_hdf5s_limit(kind: str) -> None:
    """A datatype message holds at most 65535 bytes: ~3,200 fields or ~6,500 members with short
    names, as h5py finds ("object header message is too large"). More is refused, a list far
    too long before any of it is checked (a 60,000-field type was seconds of work at every read
    of its object)."""
    def made(n: int) -> dict[str, Any]:
        if kind == "compound":
            return {"class": "H5T_COMPOUND", "fields": [{"name": f"f{i}", "type": "H5T_STD_U8LE"} for i in range(n)]}
        return {"class": "H5T_ENUM", "base": "H5T_STD_I32LE", "members": [{"name": f"m{i}", "value": i} for i in range(n)]}

    fits, over = (3200, 3400) if kind == "compound" else (6500, 7000)  # what h5py 3 / HDF5 1.14 accept
    for n in (over, 65536):
        with pytest.raises(InvalidInput, match="HDF5's limit of 65535"):
            validate_type(made(n))
    assert len(validate_type(made(fits))["fields" if kind == "compound" else "members"]) == fits
    assert len(validate_type(made(300))["fields" if kind == "compound" else "members"]) == 300


@pytest.mark.parametrize(
    "sent",
    ["H5T_STD_I32LE", {"class": "H5T_INTEGER", "base": "H5T_STD_U16BE"},
     {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"},
     {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLPAD", "length": 7}],
)
def test_a_type_sent_again_is_normalized_alike_into_a_new_dictionary(sent: Any) -> None:
    """Flat types are remembered by what was sent (model/typecheck.py): the answer must not
    depend on it, nor may a caller's change to one answer reach the next."""
    first = validate_type(copy.deepcopy(sent))
    expected = copy.deepcopy(first)
    first["class"] = "changed"
    first["extra"] = 1
    second = validate_type(copy.deepcopy(sent))
    assert second == expected and second is not first
    second.clear()
    assert validate_type(copy.deepcopy(sent)) == expected


def test_a_refused_flat_type_is_refused_every_time() -> None:
    for _ in range(3):
        with pytest.raises(InvalidInput):
            validate_type({"class": "H5T_INTEGER", "base": "H5T_STD_I33LE"})
        with pytest.raises(InvalidInput):
            validate_type("H5T_NOT_A_TYPE")
    # an integer and a boolean in the same place are different types, not one remembered
    assert validate_type({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLTERM", "length": 1})["length"] == 1
    with pytest.raises(InvalidInput):
        validate_type({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLTERM", "length": True})


def test_item_size_of_a_type_asked_again_is_the_same() -> None:
    """`item_size` remembers flat types by their items: every answer is the dtype's."""
    cases = [
        ({"class": "H5T_INTEGER", "base": "H5T_STD_I16BE"}, 2),
        ({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}, 8),
        ({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 5}, 5),
        ({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD", "length": 9}, 9),
        ({"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}, None),
    ]
    for _ in range(2):
        for t, size in cases:
            assert item_size(t) == size
