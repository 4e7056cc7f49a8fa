"""Selections, chunk projection and value queries (h5lake.model.selection/projection/query).

The property tests hold the planner to one oracle: numpy indexing of the whole array. A dataset
is cut into full-size chunk arrays (edge chunks padded with a sentinel), a selection is read by
iterating projections, and the result must equal ``arr[selection.numpy_index()]``; writing
scatters an output array back and must equal numpy assignment.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from h5lake.errors import InvalidInput
from h5lake.model.layout import chunk_bounds, chunk_grid
from h5lake.model.projection import ChunkProjection, project, project_points
from h5lake.model.query import parse_query, query_mask
from h5lake.model.selection import Coords, PairedSelection, PointSelection, Selection, Slice
from h5lake.model.selectparse import Bounds, parse_select

SENTINEL = -1

# --- helpers --------------------------------------------------------------------------------


def split_chunks(arr: np.ndarray, chunk_shape: tuple[int, ...]) -> dict[tuple[int, ...], Any]:
    """Full-size chunk arrays of ``arr``; the part beyond an edge is SENTINEL."""
    chunks = {}
    for index in itertools.product(*(range(g) for g in chunk_grid(arr.shape, chunk_shape))):
        chunk = np.full(chunk_shape, SENTINEL, dtype=arr.dtype)
        region = chunk_bounds(index, arr.shape, chunk_shape)
        chunk[tuple(slice(0, s.stop - s.start) for s in region)] = arr[region]
        chunks[index] = chunk
    return chunks


def join_chunks(
    chunks: dict[tuple[int, ...], Any], shape: tuple[int, ...], chunk_shape: tuple[int, ...]
) -> np.ndarray:
    out = np.empty(shape, dtype=np.int64)
    for index, chunk in chunks.items():
        region = chunk_bounds(index, shape, chunk_shape)
        out[region] = chunk[tuple(slice(0, s.stop - s.start) for s in region)]
    return out


def read_via_projection(
    arr: np.ndarray, sel: Selection, chunk_shape: tuple[int, ...]
) -> tuple[np.ndarray, list[ChunkProjection]]:
    chunks = split_chunks(arr, chunk_shape)
    out = np.full(sel.shape, -2, dtype=arr.dtype)
    projections = list(project(sel, arr.shape, chunk_shape))
    for p in projections:
        out[p.out_selection] = chunks[p.chunk_index][p.chunk_selection]
    return out, projections


# --- strategies -----------------------------------------------------------------------------

shapes = st.lists(st.integers(0, 11), min_size=1, max_size=4).map(tuple)


@st.composite
def slice_text(draw: st.DrawFn, n: int) -> tuple[str, slice]:
    """A slice as h5pyd might spell it, and the equivalent plain numpy slice."""
    lo = draw(st.integers(0, n))
    hi = draw(st.integers(lo, n))
    step = draw(st.integers(1, 5))
    start_txt = draw(st.sampled_from(["abs", "neg", "none"] if lo < n else ["abs"]))
    if start_txt == "none" and lo != 0:
        start_txt = "abs"
    start = {"abs": str(lo), "neg": str(lo - n), "none": ""}[start_txt]
    if hi == n:
        stop = draw(st.sampled_from(["", str(n)]))
    else:
        stop = draw(st.sampled_from([str(hi), str(hi - n)]))
    text = f"{start}:{stop}" + draw(st.sampled_from([f":{step}"] if step != 1 else ["", ":1"]))
    return text, slice(lo, hi, step)


@st.composite
def coords_text(draw: st.DrawFn, n: int) -> tuple[str, np.ndarray]:
    idx = draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=8))
    spelled = [i - n if draw(st.booleans()) else i for i in idx]
    return "[" + ",".join(map(str, spelled)) + "]", np.array(idx, dtype=np.int64)


@st.composite
def select_case(draw: st.DrawFn) -> tuple[tuple[int, ...], str, tuple[Any, ...]]:
    """(shape, select text, numpy key giving the same output) with at most one coord list."""
    shape = draw(shapes)
    coord_dim = draw(st.sampled_from([None, *range(len(shape))]))
    texts: list[str] = []
    key: list[Any] = []
    for d, n in enumerate(shape):
        kind = draw(st.sampled_from(["slice", "index"])) if n else "slice"
        if d == coord_dim and n:
            text, idx = draw(coords_text(n))
            texts.append(text)
            key.append(idx)
        elif kind == "index":
            i = draw(st.integers(-n, n - 1))
            texts.append(str(i))
            key.append(slice(i % n, i % n + 1))
        else:
            text, sl = draw(slice_text(n))
            texts.append(text)
            key.append(sl)
    return shape, "[" + ",".join(texts) + "]", tuple(key)


chunk_shapes = st.lists(st.integers(1, 6), min_size=4, max_size=4)


# --- parsing --------------------------------------------------------------------------------


class TestParseSelect:
    def test_hyperslab_with_step(self) -> None:
        sel = parse_select("[10:20,0:20:5]", (100, 100))
        assert sel.parts == (Slice(10, 20), Slice(0, 20, 5))
        assert sel.shape == (10, 4) and sel.count == 40

    def test_single_element_as_h5pyd_sends_it(self) -> None:
        assert parse_select("[3:4,4:5]", (10, 10)).shape == (1, 1)

    def test_integer_index_keeps_dimension(self) -> None:
        sel = parse_select("[3,:]", (10, 7))
        assert sel.parts == (Slice(3, 4), Slice(0, 7)) and sel.shape == (1, 7)

    def test_omitted_bounds(self) -> None:
        assert parse_select("[:,5:]", (10, 10)).parts == (Slice(0, 10), Slice(5, 10))
        assert parse_select("[::2]", (5,)).parts == (Slice(0, 5, 2),)
        assert parse_select("[:3]", (5,)).parts == (Slice(0, 3),)

    def test_negative_bounds_follow_numpy(self) -> None:
        sel = parse_select("[-3:-1,-1]", (10, 10))
        assert sel.parts == (Slice(7, 9), Slice(9, 10))

    def test_stop_beyond_extent_is_refused_as_hsds_does(self) -> None:
        with pytest.raises(InvalidInput):
            parse_select("[0:11]", (10,))
        with pytest.raises(InvalidInput):
            parse_select("[0:2,0:100]", (10, 5))

    def test_stop_beyond_extent_next_to_a_coordinate_list_is_clamped(self) -> None:
        # h5pyd sends the slice of d[0:100, [1]] unclamped
        sel = parse_select("[0:100,[1]]", (10, 5))
        assert isinstance(sel, Selection) and sel.parts[0] == Slice(0, 10)

    def test_several_coordinate_lists_pair_up(self) -> None:
        arr = np.arange(60).reshape(3, 4, 5)
        for text, key in (
            ("[[0,2],1:3,[1,4]]", ([0, 2], slice(1, 3), [1, 4])),
            ("[:,[3,0,3],[4,4,1]]", (slice(None), [3, 0, 3], [4, 4, 1])),
            ("[[2,0],[1,1],[0,3]]", ([2, 0], [1, 1], [0, 3])),
        ):
            sel = parse_select(text, arr.shape)
            assert isinstance(sel, PairedSelection)
            want = arr[key]
            assert sel.shape == want.shape and sel.count == want.size
            got = arr[tuple(sel.points().coords.T)].reshape(sel.shape)
            np.testing.assert_array_equal(got, want)
        with pytest.raises(InvalidInput):
            parse_select("[[0,1],[0,1,2]]", (4, 4))  # lengths differ

    def test_bounds_from_a_json_body(self) -> None:
        assert Bounds.from_body({"value": 1}) is None
        assert Bounds(5, 10).parse((10,)) == parse_select("[5:10]", (10,))
        assert Bounds([1, 0], [3, 4], [1, 2]).parse((5, 4)) == parse_select("[1:3,0:4:2]", (5, 4))
        assert Bounds(stop=[2, 2]).parse((5, 4)) == parse_select("[0:2,0:2]", (5, 4))
        for bad in (Bounds(0, 11), Bounds(10), Bounds([0, 0], [1, 1]), Bounds(-1, 2), Bounds(0, 2, 0), Bounds("0", 1)):
            with pytest.raises(InvalidInput):
                bad.parse((10,))

    def test_coordinate_list(self) -> None:
        sel = parse_select("[0:3,[0,2,5]]", (10, 10))
        assert sel.parts == (Slice(0, 3), Coords([0, 2, 5])) and sel.shape == (3, 3)

    def test_coordinates_any_order_duplicates_and_negative(self) -> None:
        sel = parse_select("[[5,-1,0,5]]", (10,))
        assert sel.parts[0] == Coords([5, 9, 0, 5]) and sel.count == 4

    def test_empty_coordinate_list_and_empty_slice(self) -> None:
        assert parse_select("[[]]", (4,)).count == 0
        assert parse_select("[2:2]", (4,)).count == 0
        assert parse_select("[0:0]", (0,)).count == 0

    def test_whitespace_ignored(self) -> None:
        assert parse_select(" [ 1 : 3 , [ 0 , 1 ] ] ", (5, 5)).shape == (2, 2)

    def test_absent_select_is_everything(self) -> None:
        sel = parse_select(None, (4, 5))
        assert sel.is_all((4, 5)) and sel.shape == (4, 5)
        assert parse_select("[0:4,0:5]", (4, 5)).is_all((4, 5))
        assert not parse_select("[0:4,0:5:2]", (4, 5)).is_all((4, 5))

    def test_scalar(self) -> None:
        for text in (None, "[]"):
            sel = parse_select(text, ())
            assert sel.shape == () and sel.count == 1
        with pytest.raises(InvalidInput):
            parse_select("[0]", ())

    def test_str_round_trips(self) -> None:
        for text in ("[10:20,0:16:5]", "[0:3,[0,2,5]]", "[3:4,:]"):
            shape = (100, 100)
            sel = parse_select(text, shape)
            assert parse_select(str(sel), shape) == sel

    @pytest.mark.parametrize(
        "text, shape",
        [
            ("[0:5]", (4, 4)),  # wrong rank
            ("[0:5,0:1,0:1]", (4, 4)),
            ("[]", (4,)),
            ("0:4", (4,)),  # no brackets
            ("[0:4", (4,)),
            ("[", (4,)),
            ("", (4,)),
            ("[5:6]", (4,)),  # start out of range
            ("[-5:]", (4,)),
            ("[:-5]", (4,)),
            ("[3:1]", (4,)),  # stop before start
            ("[0:4:0]", (4,)),  # step <= 0
            ("[0:4:-1]", (4,)),
            ("[4]", (4,)),  # index out of range
            ("[-5]", (4,)),
            ("[[0,4]]", (4,)),  # coordinate out of range
            ("[[-5]]", (4,)),
            ("[[0,1],[0,1,2]]", (4, 4)),  # two coordinate lists of different lengths
            ("[[[0]]]", (4,)),  # nested
            ("[[0]x]", (4,)),
            ("[0]]", (4,)),
            ("[a:b]", (4,)),  # garbage
            ("[1.5]", (4,)),
            ("[0x1]", (4,)),
            ("[1:2:3:4]", (4,)),
            ("[,]", (4, 4)),
            ("[[1,,2]]", (4,)),
            ("[1e3]", (4,)),
            ("[0:99999999999999999999999]", (4,)),  # stop out of range (HSDS: 400)
            ("[0:5]", (4,)),
        ],
    )
    def test_errors_are_invalid_input(self, text: str, shape: tuple[int, ...]) -> None:
        with pytest.raises(InvalidInput):
            parse_select(text, shape)

    def test_non_string_rejected(self) -> None:
        with pytest.raises(InvalidInput):
            parse_select(123, (4,))  # type: ignore[arg-type]

    @given(st.text(alphabet="[]:,-0123456789 x", max_size=20), shapes)
    def test_fuzz_only_invalid_input(self, text: str, shape: tuple[int, ...]) -> None:
        try:
            sel = parse_select(text, shape)
        except InvalidInput:
            return
        assert sel.rank == len(shape)
        sel.check_within(shape)

    @given(select_case())
    def test_parse_matches_numpy(self, case: tuple[tuple[int, ...], str, tuple[Any, ...]]) -> None:
        shape, text, key = case
        arr = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        sel = parse_select(text, shape)
        assert sel.shape == arr[key].shape
        np.testing.assert_array_equal(arr[sel.numpy_index()], arr[key])


class TestSelectionValues:
    def test_slice_is_normalised(self) -> None:
        assert Slice(0, 20, 5) == Slice(0, 16, 5)
        assert Slice(0, 20, 5).count == 4
        assert Slice(3, 3).count == 0
        with pytest.raises(InvalidInput):
            Slice(5, 3)

    def test_coords_value_semantics(self) -> None:
        assert Coords([1, 2]) == Coords(np.array([1, 2], dtype=np.uint8))
        assert hash(Coords([1, 2])) == hash(Coords([1, 2]))
        assert Coords([1, 2]) != Coords([2, 1])
        with pytest.raises(ValueError):
            Coords([1, 2]).index[0] = 5  # read-only

    def test_from_key(self) -> None:
        sel = Selection.from_key((2, slice(None, None, 3), [4, 1]), (5, 7, 6))
        assert sel.parts == (Slice(2, 3), Slice(0, 7, 3), Coords([4, 1]))
        with pytest.raises(InvalidInput):
            Selection.from_key((1,), (5, 5))

    def test_check_within(self) -> None:
        sel = parse_select("[0:8]", (10,))
        sel.check_within((8,))
        with pytest.raises(InvalidInput):
            sel.check_within((7,))
        with pytest.raises(InvalidInput):
            Selection((Coords([9]),)).check_within((5,))


class TestPointSelection:
    def test_from_uint64_array(self) -> None:
        pts = PointSelection.from_array(np.array([[1, 2], [3, 0]], dtype=np.uint64), (4, 3))
        assert pts.shape == (2,) and pts.count == 2 and pts.coords.dtype == np.int64

    def test_from_bytes(self) -> None:
        body = np.array([1, 2, 3, 0], dtype="<u8").tobytes()
        pts = PointSelection.from_bytes(body, (4, 3))
        assert pts.coords.tolist() == [[1, 2], [3, 0]]
        with pytest.raises(InvalidInput):
            PointSelection.from_bytes(body[:-8], (4, 3))

    def test_from_json(self) -> None:
        assert PointSelection.from_json([[1], [3]], (5,)).coords.tolist() == [[1], [3]]
        assert PointSelection.from_json([1, 3], (5,)).coords.tolist() == [[1], [3]]
        assert PointSelection.from_json([[1, 1], [2, 3]], (5, 5)).count == 2

    @pytest.mark.parametrize(
        "points, shape",
        [
            ([[5]], (5,)),
            ([[0, 5]], (5, 5)),
            ([[-1, 0]], (5, 5)),
            ([[0]], (5, 5)),
            ([[0, 0], [1]], (5, 5)),
            ([[0.5, 1]], (5, 5)),
            ([[True, 1]], (5, 5)),
            ("[[0,0]]", (5, 5)),
            ([[2**64, 0]], (5, 5)),
            ([[0]], ()),
        ],
    )
    def test_json_errors(self, points: Any, shape: tuple[int, ...]) -> None:
        with pytest.raises(InvalidInput):
            PointSelection.from_json(points, shape)

    def test_array_errors(self) -> None:
        big = np.array([[2**63 + 5, 0]], dtype=np.uint64)
        for arr, shape in [
            (big, (5, 5)),
            (np.array([[1.0, 2.0]]), (5, 5)),
            (np.zeros((2, 3), dtype=np.uint64), (5, 5)),
            (np.array([[-1, 0]]), (5, 5)),
        ]:
            with pytest.raises(InvalidInput):
                PointSelection.from_array(arr, shape)

    def test_empty(self) -> None:
        pts = PointSelection.from_bytes(b"", (4, 4))
        assert pts.count == 0 and list(project_points(pts, (2, 2))) == []


# --- chunk projection -----------------------------------------------------------------------


class TestProject:
    def test_regular_4096_square(self) -> None:
        sel = Selection.all((4096, 4096))
        projections = list(project(sel, (4096, 4096), (512, 512)))
        assert len(projections) == 64
        assert all(p.is_complete_chunk for p in projections)
        assert all(isinstance(s, slice) for p in projections for s in p.chunk_selection)
        assert projections[9].chunk_index == (1, 1)
        assert projections[9].out_selection == (slice(512, 1024, 1), slice(512, 1024, 1))

    def test_large_step_skips_chunks_cheaply(self) -> None:
        # 10**17 chunks of which 1,000 are selected: a projection that visited every chunk (or
        # every element) would never finish, so finishing at all shows the skip
        sel = parse_select("[::1000000000000000]", (10**18,))
        projections = list(project(sel, (10**18,), (10,)))
        assert len(projections) == 1000
        assert projections[1].chunk_index == (10**14,)
        assert projections[1].chunk_selection == (slice(0, 1, 1),)

    def test_steps_within_chunks(self) -> None:
        (p0, p1) = project(parse_select("[1:10:3]", (10,)), (10,), (5,))
        assert p0.chunk_selection == (slice(1, 5, 3),) and p0.out_selection == (slice(0, 2, 1),)
        assert p1.chunk_selection == (slice(2, 3, 3),) and p1.out_selection == (slice(2, 3, 1),)

    def test_edge_chunk_complete_within_extent(self) -> None:
        projections = list(project(Selection.all((10,)), (10,), (4,)))
        assert [p.chunk_index for p in projections] == [(0,), (1,), (2,)]
        assert projections[2].chunk_selection == (slice(0, 2, 1),)
        assert all(p.is_complete_chunk for p in projections)

    def test_sorted_coords_become_slices(self) -> None:
        (p,) = project(parse_select("[[0,2,4]]", (10,)), (10,), (10,))
        assert p.chunk_selection == (slice(0, 5, 2),) and p.out_selection == (slice(0, 3, 1),)

    def test_unsorted_coords_keep_arrays(self) -> None:
        (p, q) = project(parse_select("[[7,1,3]]", (10,)), (10,), (5,))
        assert p.chunk_index == (0,) and q.chunk_index == (1,)
        assert p.chunk_selection == (slice(1, 4, 2),) and p.out_selection == (slice(1, 3, 1),)
        assert q.chunk_selection == (slice(2, 3, 1),) and q.out_selection == (slice(0, 1, 1),)

    def test_scalar(self) -> None:
        (p,) = project(parse_select(None, ()), (), ())
        assert p.chunk_index == () and p.chunk_selection == () and p.is_complete_chunk
        arr = np.array(5)
        out = np.empty(())
        out[p.out_selection] = arr[p.chunk_selection]
        assert out == 5

    def test_empty_selection_and_empty_dataset(self) -> None:
        assert list(project(parse_select("[2:2,:]", (4, 4)), (4, 4), (2, 2))) == []
        assert list(project(Selection.all((0, 4)), (0, 4), (2, 2))) == []

    def test_invalid_arguments(self) -> None:
        sel = Selection.all((4, 4))
        for shape, chunks in [((4, 4), (2,)), ((4, 4), (0, 2)), ((3, 4), (2, 2)), ((4,), (2,))]:
            with pytest.raises(InvalidInput):
                project(sel, shape, chunks)

    @settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
    @given(select_case(), chunk_shapes)
    def test_read_matches_numpy(
        self, case: tuple[tuple[int, ...], str, tuple[Any, ...]], chunk_list: list[int]
    ) -> None:
        shape, text, key = case
        chunk_shape = tuple(chunk_list[: len(shape)])
        arr = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        sel = parse_select(text, shape)
        out, projections = read_via_projection(arr, sel, chunk_shape)
        np.testing.assert_array_equal(out, arr[key])
        indices = [p.chunk_index for p in projections]
        assert indices == sorted(set(indices))  # C order, each chunk once

    @settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
    @given(select_case(), chunk_shapes, st.randoms(use_true_random=False))
    def test_write_matches_numpy(
        self,
        case: tuple[tuple[int, ...], str, tuple[Any, ...]],
        chunk_list: list[int],
        rnd: Any,
    ) -> None:
        shape, text, key = case
        chunk_shape = tuple(chunk_list[: len(shape)])
        base = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        sel = parse_select(text, shape)
        data = np.array([rnd.randint(1000, 2000) for _ in range(sel.count)], dtype=np.int64)
        data = data.reshape(sel.shape)
        chunks = split_chunks(base, chunk_shape)
        for p in project(sel, shape, chunk_shape):
            chunk = chunks[p.chunk_index]
            chunk[p.chunk_selection] = data[p.out_selection]
            # completeness: every in-extent element of the chunk is selected
            mask = np.zeros(chunk_shape, dtype=bool)
            mask[p.chunk_selection] = True
            region = chunk_bounds(p.chunk_index, shape, chunk_shape)
            inside = tuple(slice(0, s.stop - s.start) for s in region)
            assert p.is_complete_chunk == bool(mask[inside].all())
            outside = mask.copy()
            outside[inside] = False
            assert not outside.any()  # never beyond the extent
        expected = base.copy()
        expected[key] = data
        np.testing.assert_array_equal(join_chunks(chunks, shape, chunk_shape), expected)
        for index, chunk in chunks.items():  # padding beyond the extent untouched
            region = chunk_bounds(index, shape, chunk_shape)
            outside = np.ones(chunk_shape, dtype=bool)
            outside[tuple(slice(0, s.stop - s.start) for s in region)] = False
            assert (chunk[outside] == SENTINEL).all()

    @settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def test_orthogonal_multi_coords_match_ix(self, data: st.DataObject) -> None:
        shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=2, max_size=4)))
        chunk_shape = tuple(data.draw(st.integers(1, 5)) for _ in shape)
        key: list[Any] = []
        for n in shape:
            if data.draw(st.booleans()):
                key.append(data.draw(st.lists(st.integers(0, n - 1), max_size=6)))
            else:
                lo = data.draw(st.integers(0, n))
                key.append(slice(lo, data.draw(st.integers(lo, n)), data.draw(st.integers(1, 3))))
        sel = Selection.from_key(tuple(key), shape)
        arr = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        expanded = [np.arange(n)[k] for k, n in zip(key, shape)]
        expected = arr[np.ix_(*expanded)]
        np.testing.assert_array_equal(arr[sel.numpy_index()], expected)
        out, _ = read_via_projection(arr, sel, chunk_shape)
        np.testing.assert_array_equal(out, expected)


class TestProjectPoints:
    @settings(max_examples=200)
    @given(st.data())
    def test_read_and_write_match_numpy(self, data: st.DataObject) -> None:
        shape = tuple(data.draw(st.lists(st.integers(1, 10), min_size=1, max_size=4)))
        chunk_shape = tuple(data.draw(st.integers(1, 6)) for _ in shape)
        npoints = data.draw(st.integers(0, 30))
        raw = [[data.draw(st.integers(0, n - 1)) for n in shape] for _ in range(npoints)]
        points = PointSelection.from_array(np.array(raw, dtype=np.uint64), shape)
        arr = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        chunks = split_chunks(arr, chunk_shape)

        out = np.full(npoints, -2, dtype=np.int64)
        seen = []
        for p in project_points(points, chunk_shape):
            seen.append(p.chunk_index)
            assert p.chunk_coords.shape == (p.out_positions.size, len(shape))
            assert (p.chunk_coords >= 0).all() and (p.chunk_coords < chunk_shape).all()
            out[p.out_positions] = chunks[p.chunk_index][p.chunk_selection]
        assert seen == sorted(set(seen))
        np.testing.assert_array_equal(out, arr[points.numpy_index()])

        values = np.arange(1000, 1000 + npoints, dtype=np.int64)
        for p in project_points(points, chunk_shape):
            chunks[p.chunk_index][p.chunk_selection] = values[p.out_positions]
        expected = arr.copy()
        for i, pt in enumerate(raw):  # sequential: the last write of a repeated point wins
            expected[tuple(pt)] = values[i]
        np.testing.assert_array_equal(join_chunks(chunks, shape, chunk_shape), expected)

    def test_grouping_is_vectorised_and_ordered(self) -> None:
        rng = np.random.default_rng(0)
        pts = rng.integers(0, 4096, size=(200_000, 2)).astype(np.uint64)
        sel = PointSelection.from_array(pts, (4096, 4096))
        groups = list(project_points(sel, (512, 512)))
        assert len(groups) == 64
        assert sum(g.out_positions.size for g in groups) == 200_000
        for g in groups:
            assert (np.diff(g.out_positions) > 0).all()  # request order kept in each chunk

    def test_errors(self) -> None:
        with pytest.raises(InvalidInput):
            project_points(np.zeros((3, 2), dtype=np.int64), (2,))
        with pytest.raises(InvalidInput):
            project_points(np.zeros((3, 2), dtype=np.int64), (2, 0))
        with pytest.raises(InvalidInput):
            project_points(np.zeros((3, 2), dtype=np.float64), (2, 2))


# --- queries --------------------------------------------------------------------------------


@pytest.fixture
def table() -> np.ndarray:
    dt = np.dtype([("temp", "f8"), ("city", "S10"), ("n", "i4"), ("flag", "?"), ("u", "U4")])
    return np.array(
        [
            (10.0, b"Boston", 1, True, "ab"),
            (31.0, b"Boston", 2, False, "cd"),
            (40.0, b"NY", 3, True, "ab"),
            (50.0, b"Boston", 4, False, "x"),
            (20.0, b"LA", 5, True, "y"),
        ],
        dtype=dt,
    )


class TestQuery:
    def test_plain_array_any_name(self) -> None:
        arr = np.array([1.0, 2.5, 3.0, -1.0])
        assert query_mask("val > 2.0", arr).tolist() == [False, True, True, False]
        assert query_mask("x >= -1", arr).tolist() == [True, True, True, True]
        assert query_mask("x < 1e0", arr).tolist() == [False, False, False, True]

    def test_compound(self, table: np.ndarray) -> None:
        mask = query_mask("(temp > 30) & (city == b'Boston')", table)
        assert mask.tolist() == [False, True, False, True, False]
        assert query_mask("city == 'NY'", table).tolist() == [False, False, True, False, False]

    def test_comparisons_bind_tighter_than_bool_ops(self, table: np.ndarray) -> None:
        assert query_mask("n == 1 | temp < 25", table).tolist() == [True, False, False, False, True]
        assert query_mask("n > 1 & n < 4", table).tolist() == [False, True, True, False, False]
        assert query_mask("n == 1 | n == 2 & temp > 100", table).tolist()[0:2] == [True, False]

    def test_all_operators(self, table: np.ndarray) -> None:
        def q(s: str) -> list[int]:
            return np.flatnonzero(query_mask(s, table)).tolist()

        assert q("n == 3") == [2]
        assert q("n != 3") == [0, 1, 3, 4]
        assert q("n < 3") == [0, 1]
        assert q("n <= 3") == [0, 1, 2]
        assert q("n > 3") == [3, 4]
        assert q("n >= 3") == [2, 3, 4]
        assert q("3 < n") == [3, 4]  # literal on the left
        assert q("1 < n <= 3") == [1, 2]  # chained
        assert q("~(n > 2)") == [0, 1]
        assert q("not n > 2 and flag") == [0]
        assert q("n > 4 or n < 2") == [0, 4]
        assert q("flag") == [0, 2, 4]
        assert q("flag == True") == [0, 2, 4]
        assert q("temp > n") == [0, 1, 2, 3, 4]  # field against field

    def test_in(self, table: np.ndarray) -> None:
        assert np.flatnonzero(query_mask("city in ('NY','LA')", table)).tolist() == [2, 4]
        assert np.flatnonzero(query_mask("city not in (b'Boston',)", table)).tolist() == [2, 4]
        assert np.flatnonzero(query_mask("n in (1, 5)", table)).tolist() == [0, 4]
        assert np.flatnonzero(query_mask('u in ("ab")', table)).tolist() == [0, 2]

    def test_string_escapes_and_unicode(self) -> None:
        arr = np.array(["it's", 'q"x', "é"])
        assert query_mask("s == 'it\\'s'", arr).tolist() == [True, False, False]
        assert query_mask('s == "q\\"x"', arr).tolist() == [False, True, False]
        assert query_mask("s == 'é'", arr).tolist() == [False, False, True]

    def test_vlen_strings(self) -> None:
        arr = np.array([b"a", "b", b"c"], dtype=object)
        assert query_mask("s in ('a', 'b')", arr).tolist() == [True, True, False]

    def test_multidimensional(self) -> None:
        arr = np.arange(6).reshape(2, 3)
        assert query_mask("v >= 3", arr).shape == (2, 3)

    def test_parse_once_apply_many(self) -> None:
        mask = parse_query("v > 1")
        assert mask(np.array([1, 2])).tolist() == [False, True]
        assert mask(np.array([5])).tolist() == [True]

    @pytest.mark.parametrize(
        "expr",
        [
            "",
            "   ",
            "temp >",
            "(temp > 1",
            "temp > 1)",
            "temp >> 1",
            "temp = 1",
            "temp > 1 &",
            "nosuch > 1",
            "city > 3",
            "temp == 'x'",
            "1 == 1",
            "5",
            "temp",
            "__import__('os').system('true')",
            "temp.real > 1",
            "temp[0] > 1",
            "temp > 1; 2",
            "city == 'a\\q'",
            "city == b'\u00e9'",
            "city in 'a'",
            "city in ()",
            "temp > -'a'",
            "lambda: 1",
            "temp > 10**400",
        ],
    )
    def test_invalid_queries(self, table: np.ndarray, expr: str) -> None:
        with pytest.raises(InvalidInput):
            query_mask(expr, table)

    def test_non_scalar_field_rejected(self) -> None:
        arr = np.zeros(2, dtype=[("a", "i4", (2,))])
        with pytest.raises(InvalidInput):
            query_mask("a > 1", arr)

    def test_too_long(self) -> None:
        with pytest.raises(InvalidInput):
            query_mask("x > 1 " + "| x > 1 " * 2000, np.arange(3))

    @given(
        st.lists(st.integers(-50, 50), min_size=1, max_size=20),
        st.integers(-50, 50),
        st.integers(-50, 50),
    )
    def test_matches_numpy(self, values: list[int], a: int, b: int) -> None:
        arr = np.array(values)
        got = query_mask(f"(x > {a}) & (x <= {b}) | x == {a}", arr)
        np.testing.assert_array_equal(got, ((arr > a) & (arr <= b)) | (arr == a))
