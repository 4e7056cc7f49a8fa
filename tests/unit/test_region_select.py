"""Selections of region references as the export makes them (``h5values.select_region``) on
real HDF5 dataspaces: h5json's ``selection_dict`` (h5pyd 1.0's form for a stepped slice)."""

from __future__ import annotations

from h5py import h5s

from h5lake.client import h5values


def test_a_stepped_slice_over_a_huge_extent_is_a_hyperslab() -> None:
    """A slice of h5json's over 10^12 elements is selected as one hyperslab: the export made the
    list of the slice's indices first (8 TB for this one; any client can store such a region)."""
    n = 10**12
    space = h5s.create_simple((n, 4))
    d = {"shape": [n, 4], "slices": [{"type": "slice", "start": 1, "stop": n, "step": 3},
                                      {"type": "slice", "start": 0, "stop": 4, "step": 2}]}
    h5values.select_region(space, {"id": "datasets/d-x", "selection_dict": d})
    assert space.get_select_npoints() == len(range(1, n, 3)) * 2
    start, stride, count, block = space.get_regular_hyperslab()
    assert (start, stride, count, block) == ((1, 0), (3, 2), (len(range(1, n, 3)), 2), (1, 1))
    # beside an index list, the points are made one by one: a few, and the slice's end clipped
    d["slices"][1] = {"type": "list", "values": [3, 0]}
    d["slices"][0] = {"type": "slice", "start": n - 5, "stop": n + 10, "step": 2}
    h5values.select_region(space, {"id": "datasets/d-x", "selection_dict": d})
    assert space.get_select_npoints() == 6
