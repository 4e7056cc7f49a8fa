"""Creation properties of HDF5 objects to the service's ``creationProperties`` JSON and back.

The keys follow the HDF5/JSON dataset creation property list (``layout``, ``filters``,
``fillValue``, ``fillTime``, ``allocTime``, ``attributeCreationOrder``, ``attributePhaseChange``,
``trackTimes``), plus what fidelity needs and docs/fidelity.md lists: ``layout.externalStorage``,
``flags`` and ``parameters`` (cd_values) on the filters the service records without applying,
``fillValueUndefined``, ``linkCreationOrder`` and ``linkPhaseChange`` on groups, and
``comment`` on any object. h5pyd's ``CreateOrder`` is set on
groups that track link creation order, so h5pyd lists their links in that order too.

:func:`dataset_properties`, :func:`group_properties` and :func:`datatype_properties` read a
file's objects (raising :class:`~h5lake.client.h5types.Unrepresentable`);
:func:`make_dcpl`, :func:`make_gcpl` and :func:`make_tcpl` build property lists for export.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from h5py import h5d, h5f, h5i, h5p, h5z

from h5lake.chunks.codecs.lzo import Lzo
from h5lake.chunks.filters import FilterId, FilterPipeline, filters_of_plist
from h5lake.client import h5native
from h5lake.client.h5types import Unrepresentable
from h5lake.errors import InvalidInput
from h5lake.model.stored import Doc
from h5lake.model.types import TypeJson, is_variable, to_dtype

LAYOUTS = {h5d.COMPACT: "H5D_COMPACT", h5d.CONTIGUOUS: "H5D_CONTIGUOUS", h5d.CHUNKED: "H5D_CHUNKED"}
FILL_TIMES = {h5d.FILL_TIME_IFSET: "H5D_FILL_TIME_IFSET", h5d.FILL_TIME_ALLOC: "H5D_FILL_TIME_ALLOC", h5d.FILL_TIME_NEVER: "H5D_FILL_TIME_NEVER"}
ALLOC_TIMES = {
    h5d.ALLOC_TIME_DEFAULT: "H5D_ALLOC_TIME_DEFAULT",
    h5d.ALLOC_TIME_EARLY: "H5D_ALLOC_TIME_EARLY",
    h5d.ALLOC_TIME_LATE: "H5D_ALLOC_TIME_LATE",
    h5d.ALLOC_TIME_INCR: "H5D_ALLOC_TIME_INCR",
}
CRT_ORDER = {h5p.CRT_ORDER_TRACKED: "H5P_CRT_ORDER_TRACKED", h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED: "H5P_CRT_ORDER_INDEXED"}
DEFAULT_PHASE_CHANGE = (8, 6)
OPTIONAL = 1  # H5Z_FLAG_OPTIONAL, the flag a filter recorded without its flags gets


def _invert(table: dict[Any, str]) -> dict[str, Any]:
    return {v: k for k, v in table.items()}


# -- filters HDF5 itself lacks --------------------------------------------------------------------


def _lzo(decode: bool, cd: tuple[int, ...], data: bytes) -> bytes:
    f = Lzo(cd)
    return bytes(f.decode(data, None) if decode else f.encode(data))


def register_codec_filters() -> None:
    """Make HDF5 (in this process) run the filters h5lake has a codec for and no HDF5 plugin
    ships: PyTables' LZO. Load reads such datasets through HDF5 and export writes them, each
    with the very codec the server uses. A real plugin, when installed, is left in place."""
    if h5native.available():
        h5native.register_filter(int(FilterId.LZO), b"lzo", _lzo)


# -- reading a file ------------------------------------------------------------------------------


def _common(plist: Any, props: Doc) -> None:
    """Attribute storage and timestamps, shared by every object creation property list."""
    order = plist.get_attr_creation_order()
    if order & h5p.CRT_ORDER_TRACKED:
        props["attributeCreationOrder"] = CRT_ORDER[order & (h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)]
    phase = tuple(plist.get_attr_phase_change())
    if phase != DEFAULT_PHASE_CHANGE:
        props["attributePhaseChange"] = {"maxCompact": phase[0], "minDense": phase[1]}
    props["trackTimes"] = bool(plist.get_obj_track_times())


def _comment(obj_id: Any, props: Doc) -> None:
    """Add an object's comment to its ``props`` (last), if it has one."""
    comment = h5native.comment(obj_id)
    if comment:
        props["comment"] = comment.decode("utf-8", "surrogateescape")


add_comment = _comment


def group_properties(gid: Any, gcpl: Any = None) -> Doc:
    """``creationProperties`` of a group (h5py ``GroupID``; ``gcpl``: its creation property
    list, when the caller has it)."""
    if gcpl is None:
        gcpl = gid.get_create_plist()
    props: Doc = {}
    order = gcpl.get_link_creation_order()
    if order & h5p.CRT_ORDER_TRACKED:
        props["CreateOrder"] = 1
        props["linkCreationOrder"] = CRT_ORDER[order & (h5p.CRT_ORDER_TRACKED | h5p.CRT_ORDER_INDEXED)]
    _common(gcpl, props)
    if h5native.available():
        phase = h5native.link_phase_change(gcpl)
        if phase != DEFAULT_PHASE_CHANGE:
            props["linkPhaseChange"] = {"maxCompact": phase[0], "minDense": phase[1]}
    _comment(gid, props)
    return props


def datatype_properties(tid: Any) -> Doc:
    props: Doc = {}
    _common(tid.get_create_plist(), props)
    _comment(tid, props)
    return props


def _printf_file(name: str) -> str:
    """The file a virtual mapping's source name names first: HDF5's printf-style names stand
    for one file per block of an unlimited mapping, ``%b`` the block number (from 0) and ``%%``
    a percent sign; the first block's file must be there (the later ones are found by HDF5 as
    far as they go)."""
    return "%".join(part.replace("%b", "0") for part in name.split("%%"))


def _virtual_note(dsid: Any, dcpl: Any) -> str:
    """A virtual dataset is loaded as an ordinary one holding the values HDF5 reads through its
    mappings; every source file must be there (HDF5 would read a missing one as fill values)."""
    here = Path(h5f.get_name(dsid).decode("utf-8", "surrogateescape")).parent
    prefix = os.environ.get("HDF5_VDS_PREFIX")
    count = dcpl.get_virtual_count()
    files = sorted({dcpl.get_virtual_filename(i) for i in range(count)})
    missing = []
    for name in files:
        if name == ".":
            continue
        folder = Path(prefix.replace("${ORIGIN}", str(here))) if prefix else here
        first = _printf_file(name)
        if not ((folder / first).is_file() or Path(first).is_file()):
            missing.append(name)
    name = h5i.get_name(dsid).decode("utf-8", "surrogateescape")
    if missing:
        raise Unrepresentable(f"a virtual dataset whose source files are missing: {', '.join(missing)} (looked for in {prefix or here})")
    return f"dataset {name}: virtual dataset ({count} mappings from {len(files)} file(s)) loaded as an ordinary dataset holding its values"


def dataset_properties(dsid: Any, fill_json: Any, notes: list[str], dcpl: Any = None) -> Doc:
    """``creationProperties`` of a dataset (h5py ``DatasetID``; ``dcpl``: its creation property
    list, when the caller has it). ``fill_json`` is its fill value
    as JSON (the caller reads values), used when the file has a user-defined one. Anything kept
    only approximately is described in ``notes``."""
    if dcpl is None:
        dcpl = dsid.get_create_plist()
    props: Doc = {}
    layout = dcpl.get_layout()
    if layout == h5d.VIRTUAL:
        notes.append(_virtual_note(dsid, dcpl))
        layout = h5d.CONTIGUOUS
    if layout not in LAYOUTS:
        raise Unrepresentable(f"dataset layout {layout}")
    props["layout"] = {"class": LAYOUTS[layout]}
    if layout == h5d.CHUNKED:
        props["layout"]["dims"] = list(dcpl.get_chunk())
    count = dcpl.get_external_count()
    if count:
        external = []
        for i in range(count):
            name, offset, size = dcpl.get_external(i)
            external.append({"name": name.decode("utf-8", "surrogateescape"), "offset": int(offset), "size": int(size)})
        props["layout"]["externalStorage"] = external
    filters = _filters(dcpl, notes)
    if filters:
        props["filters"] = filters
    defined = dcpl.fill_value_defined()
    if defined == h5d.FILL_VALUE_USER_DEFINED:
        props["fillValue"] = fill_json
    elif defined == h5d.FILL_VALUE_UNDEFINED:
        props["fillValueUndefined"] = True
    props["fillTime"] = FILL_TIMES[dcpl.get_fill_time()]
    props["allocTime"] = ALLOC_TIMES[dcpl.get_alloc_time()]
    _common(dcpl, props)
    _comment(dsid, props)
    return props


def _filters(dcpl: Any, notes: list[str]) -> list[Doc]:
    """The filter list. Filters the service runs itself carry HDF5's usual flags; a differing
    flag on one of those is noted (the service's filter JSON has no place for it). Filters it
    records verbatim keep their ``flags`` and ``parameters`` (cd_values)."""
    out = filters_of_plist(dcpl)
    for i, spec in enumerate(out):
        fid, flags, _, _ = dcpl.get_filter(i)
        if "parameters" in spec:
            spec["flags"] = int(flags)
            continue
        try:
            ((_, usual, _),) = FilterPipeline.from_json([spec], 1).hdf5_filters()
        except InvalidInput:
            continue  # reported when the dataset is created
        if usual != flags:
            notes.append(f"filter {spec.get('name', fid)} had flags {flags}; HDF5's usual {usual} will be used")
    return out


# -- building property lists for export ----------------------------------------------------------


def _set_common(plist: Any, props: Doc) -> None:
    order = props.get("attributeCreationOrder")
    if order is not None:
        plist.set_attr_creation_order(_invert(CRT_ORDER)[order])
    phase = props.get("attributePhaseChange")
    if phase is not None:
        plist.set_attr_phase_change(phase["maxCompact"], phase["minDense"])
    if "trackTimes" in props:
        plist.set_obj_track_times(bool(props["trackTimes"]))


def make_gcpl(props: Doc) -> Any:
    gcpl = h5p.create(h5p.GROUP_CREATE)
    order = props.get("linkCreationOrder")
    if order is None and props.get("CreateOrder"):
        order = "H5P_CRT_ORDER_INDEXED"  # h5pyd's track_order: tracked and indexed
        props = {"attributeCreationOrder": order, **props}
    if order is not None:
        gcpl.set_link_creation_order(_invert(CRT_ORDER)[order])
    phase = props.get("linkPhaseChange")
    if phase is not None:
        h5native.set_link_phase_change(gcpl, phase["maxCompact"], phase["minDense"])
    _set_common(gcpl, props)
    return gcpl


def make_tcpl(props: Doc) -> Any:
    tcpl = h5native.datatype_create_plist()
    _set_common(tcpl, props)
    return tcpl


def filter_triples(filters: list[Doc], type_json: TypeJson, chunk: list[int] | None) -> list[tuple[int, int, tuple[int, ...]]]:
    """``(id, flags, cd_values)`` for ``H5Pset_filter``, in order. Filters the service applies
    are resolved through its own pipeline; recorded ones carry their ``parameters``."""
    out: list[tuple[int, int, tuple[int, ...]]] = []
    element: Any = 1 if is_variable(type_json) else to_dtype(type_json)
    for spec in filters:
        fid = int(spec.get("id", 0))
        if "parameters" in spec and not _applied_user_form(spec, element, chunk):
            flags = int(spec.get("flags", OPTIONAL))
            out.append((fid, flags, tuple(int(v) for v in spec["parameters"])))
            continue
        try:
            ((fid, flags, cd),) = FilterPipeline.from_json([spec], element, chunk).hdf5_filters()
        except InvalidInput as exc:
            raise Unrepresentable(f"filter {spec.get('name', fid)}: {exc.message}") from None
        if fid == h5z.FILTER_SZIP:
            cd = cd[:2]  # the user's options mask and pixels per block; HDF5 works out the rest
        out.append((fid, flags, tuple(cd)))
    return out


def _applied_user_form(spec: Doc, element: Any, chunk: list[int] | None) -> bool:
    """Is this a filter the service applies, sent as ``H5Z_FILTER_USER`` (the HDF5 REST VOL
    connector's form)? Its ``parameters`` are kept as sent, beside the named parameters the
    service filled in and applied; recorded filters (import) have ``flags``."""
    if spec.get("class") != "H5Z_FILTER_USER" or "flags" in spec:
        return False
    try:
        FilterPipeline.from_json([spec], element, chunk)
    except InvalidInput:
        return False
    return True


def make_dcpl(props: Doc, type_json: TypeJson, fill: bytes | np.ndarray | None, fill_tid: Any) -> Any:
    """A dataset creation property list. ``fill`` is the fill value as raw bytes of ``fill_tid``
    (the dataset's type), or as a one-element array h5py converts, or None for the default."""
    dcpl = h5p.create(h5p.DATASET_CREATE)
    layout = props.get("layout") or {"class": "H5D_CONTIGUOUS"}
    cls = _invert(LAYOUTS).get(str(layout.get("class")), h5d.CONTIGUOUS)
    external = layout.get("externalStorage")
    if cls == h5d.CHUNKED and layout.get("dims"):
        dcpl.set_chunk(tuple(layout["dims"]))
    elif cls != h5d.CHUNKED:
        dcpl.set_layout(cls)
    for item in external or ():
        dcpl.set_external(item["name"].encode("utf-8", "surrogateescape"), item["offset"], item["size"])
    if cls == h5d.CHUNKED and props.get("filters"):
        for fid, flags, cd in filter_triples(props["filters"], type_json, layout.get("dims")):
            if fid == h5z.FILTER_SZIP:
                dcpl.set_szip(cd[0], cd[1])  # as HDF5's own call makes it (it adds the raw flag)
            else:
                dcpl.set_filter(fid, flags, cd)
    if props.get("fillValueUndefined"):
        h5native.set_fill_value(dcpl, fill_tid, None)
    elif isinstance(fill, bytes):
        h5native.set_fill_value(dcpl, fill_tid, fill)
    elif fill is not None:
        dcpl.set_fill_value(fill)
    if props.get("fillTime") in _invert(FILL_TIMES):
        dcpl.set_fill_time(_invert(FILL_TIMES)[props["fillTime"]])
    if props.get("allocTime") in _invert(ALLOC_TIMES):
        dcpl.set_alloc_time(_invert(ALLOC_TIMES)[props["allocTime"]])
    _set_common(dcpl, props)
    return dcpl
