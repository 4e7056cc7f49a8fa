"""HDF5's nbit and scaleoffset filters, which need the dataset's type."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from h5lake.chunks.codecs import nbit, scaleoffset
from h5lake.chunks.codecs.base import (
    H5Z_FLAG_OPTIONAL,
    Buffer,
    Context,
    FilterId,
    Params,
)
from h5lake.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Nbit:
    """HDF5's N-bit filter (``chunks.codecs.nbit``). Its cd_values are the ones a file gives
    (``parameters``), else computed from the dataset's type and chunk shape as HDF5 does."""

    cd: tuple[int, ...] = ()
    given: bool = False  # the cd_values came with the filter (a file's); kept in its JSON
    file_flags: int | None = None  # a file's flags for the filter, kept for export

    filter_id: ClassVar[FilterId] = FilterId.NBIT
    flags: ClassVar[int] = H5Z_FLAG_OPTIONAL

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> Nbit:
        given = p.take("parameters")
        flags = p.take("flags")
        if flags is not None and (
            isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags < 1 << 32
        ):
            raise InvalidInput("nbit filter: flags must be an unsigned integer")
        if given:
            layout = nbit.NbitLayout(given)
            if not layout.noop and layout.item_size != ctx.itemsize:
                raise InvalidInput(
                    f"nbit filter: parameters describe {layout.item_size}-byte elements, the type has {ctx.itemsize}"
                )
            if ctx.chunk_shape is not None and layout.elements != math.prod(ctx.chunk_shape):
                raise InvalidInput(
                    f"nbit filter: parameters describe chunks of {layout.elements} elements, not {math.prod(ctx.chunk_shape)}"
                )
            return cls(layout.cd, True, flags)
        if ctx.type_json is None or ctx.chunk_shape is None:
            return cls(())  # only described (for export: HDF5 computes the parameters itself)
        return cls(nbit.cd_values_for(ctx.type_json, math.prod(ctx.chunk_shape)))

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"parameters": list(cd)} if cd else {}

    @property
    def _layout(self) -> nbit.NbitLayout:
        if not self.cd:
            raise InvalidInput("nbit filter: the dataset's type and chunk shape are needed to apply it")
        return nbit.NbitLayout(self.cd)

    def encode(self, buf: Buffer) -> Buffer:
        return self._layout.encode(buf)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        return self._layout.decode(buf, nbytes)

    def encoded_size(self, nbytes: int) -> int | None:
        layout = self._layout
        return nbytes if layout.noop else layout.elements * layout.bits // 8 + 1

    def json_params(self) -> dict[str, Any]:
        if not self.given:
            return {}
        out: dict[str, Any] = {"parameters": list(self.cd)}
        if self.file_flags is not None:
            out["flags"] = self.file_flags
        return out

    def cd_values(self) -> tuple[int, ...]:
        return ()  # HDF5's set_local computes them from the dataset


_SCALE_TYPES = {"H5Z_SO_FLOAT_DSCALE": scaleoffset.SO_FLOAT_DSCALE, "H5Z_SO_INT": scaleoffset.SO_INT}
# the HDF5 REST VOL connector writes the integer scale type under this name (and reads back
# H5Z_SO_INT, the name answered)
_SCALE_TYPE_NAMES: dict[str | int, Any] = {
    **{k.lower(): v for k, v in _SCALE_TYPES.items()}, "h5z_float_so_int": scaleoffset.SO_INT
}


def _scale_json(cd: Sequence[int]) -> dict[str, Any]:
    """``scaleType`` and ``scaleOffset`` of a file's cd_values (the factor as HDF5's C int)."""
    names = {v: k for k, v in _SCALE_TYPES.items()}
    if cd[0] not in names:
        return {}
    return {"scaleType": names[cd[0]], "scaleOffset": cd[1] - (1 << 32) if cd[1] >= 1 << 31 else cd[1]}


def _check_given_scale(p: Params, cd: Sequence[int]) -> None:
    """``scaleType``/``scaleOffset`` beside a file's ``parameters`` must say what they say."""
    expected = _scale_json(cd)
    for key in ("scaleType", "scaleOffset"):
        value = p.take(key)
        if value is not None and value != expected.get(key):
            raise InvalidInput(f"scaleoffset filter: {key} {value!r} differs from the parameters' {expected.get(key)!r}")


@dataclass(frozen=True, slots=True)
class ScaleOffset:
    """HDF5's scale-offset filter (``chunks.codecs.scaleoffset``): integers, and floats with D-scaling.
    Its cd_values are a file's (``parameters``), else worked out from ``scaleType`` and
    ``scaleOffset`` and the dataset's type and chunk shape as HDF5 does for a dataset without
    a fill value."""

    cd: tuple[int, ...] = ()
    given: bool = False
    file_flags: int | None = None
    scale_type: int = scaleoffset.SO_INT
    factor: int = 0

    filter_id: ClassVar[FilterId] = FilterId.SCALEOFFSET
    flags: ClassVar[int] = 0  # HDF5's H5Pset_scaleoffset makes it mandatory

    @classmethod
    def parse(cls, p: Params, ctx: Context) -> ScaleOffset:
        given = p.take("parameters")
        flags = p.take("flags")
        if flags is not None and (
            isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags < 1 << 32
        ):
            raise InvalidInput("scaleoffset filter: flags must be an unsigned integer")
        if given:
            layout = scaleoffset.ScaleOffsetLayout(given)
            _check_given_scale(p, layout.cd)
            if layout.size != ctx.itemsize:
                raise InvalidInput(
                    f"scaleoffset filter: parameters describe {layout.size}-byte values, the type has {ctx.itemsize}"
                )
            if ctx.chunk_shape is not None and layout.elements != math.prod(ctx.chunk_shape):
                raise InvalidInput(
                    f"scaleoffset filter: parameters describe chunks of {layout.elements} values, not {math.prod(ctx.chunk_shape)}"
                )
            return cls(layout.cd, True, flags, layout.scale_type, layout.factor)
        scale_type = p.choice("scaleType", "H5Z_SO_INT", _SCALE_TYPE_NAMES)
        factor = p.integer("scaleOffset", 0, -(1 << 31), (1 << 31) - 1)
        if ctx.type_json is None or ctx.chunk_shape is None:
            return cls((), False, None, scale_type, factor)
        cd = scaleoffset.cd_values_for(scale_type, factor, dict(ctx.type_json), math.prod(ctx.chunk_shape))
        scaleoffset.ScaleOffsetLayout(cd)  # refuses what it cannot apply, by name
        return cls(cd, False, None, scale_type, factor)

    @staticmethod
    def params_from_cd(cd: Sequence[int]) -> dict[str, Any]:
        return {"parameters": list(cd)} if cd else {}

    @property
    def _layout(self) -> scaleoffset.ScaleOffsetLayout:
        if not self.cd:
            raise InvalidInput(
                "scaleoffset filter: the dataset's type and chunk shape are needed to apply it"
            )
        return scaleoffset.ScaleOffsetLayout(self.cd)

    def encode(self, buf: Buffer) -> Buffer:
        return self._layout.encode(buf)

    def decode(self, buf: Buffer, nbytes: int | None) -> Buffer:
        return self._layout.decode(buf, nbytes)

    def encoded_size(self, nbytes: int) -> int | None:
        return None

    def json_params(self) -> dict[str, Any]:
        if self.given:
            out: dict[str, Any] = {"parameters": list(self.cd)}
            if self.file_flags is not None:
                out["flags"] = self.file_flags
            # also as a client creating it says it (h5pyd's dset.scaleoffset reads scaleOffset)
            return {**_scale_json(self.cd), **out}
        name = {v: k for k, v in _SCALE_TYPES.items()}[self.scale_type]
        return {"scaleType": name, "scaleOffset": self.factor}

    def cd_values(self) -> tuple[int, ...]:
        return (self.scale_type, self.factor & 0xFFFFFFFF)
