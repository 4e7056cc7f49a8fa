"""netCDF4 files loaded with ``h5lake load`` read back through xarray, h5netcdf and h5pyd exactly
as xarray reads the local file, with the call the README shows (issue 17, item 11)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5netcdf
import h5py
import numpy as np
import pytest
import xarray as xr
from tests.support.cli import run_h5lake
from tests.support.server import USERS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()

# Importing netCDF4 points HDF5_PLUGIN_PATH at its own filter plugins, built against its own copy of
# HDF5; h5py's HDF5 in this process would then load them (and fail) for every other test. The
# variable is put back at once; the loader's subprocess below gets it on purpose.
_plugin_path = os.environ.get("HDF5_PLUGIN_PATH")
import netCDF4

if _plugin_path is None:
    os.environ.pop("HDF5_PLUGIN_PATH", None)
else:
    os.environ["HDF5_PLUGIN_PATH"] = _plugin_path


def with_netcdf4(path: Path) -> None:
    """Unidata's library: an unlimited dimension, coordinate variables, CF attributes, a
    compressed variable with a fill value, a variable-length string variable and a group."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "h5lake test"
        ds.history = "made by netCDF4-python"
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 2000-01-01", "standard"
        t[:] = np.arange(4.0)
        x = ds.createVariable("x", "i4", ("x",))
        x.long_name = "x position"
        x[:] = [10, 20, 30]
        v = ds.createVariable("temp", "f4", ("time", "x"), zlib=True, complevel=4, fill_value=-999.0)
        v.units = "K"
        v[:] = np.ma.masked_array(np.arange(12, dtype="f4").reshape(4, 3), mask=np.eye(4, 3, dtype=bool))
        s = ds.createVariable("station", str, ("x",))
        s[:] = np.array(["north", "bé", "z"], dtype=object)
        g = ds.createGroup("obs")
        g.createDimension("n", 2)
        c = g.createVariable("count", "i8", ("n",))
        c.note = "in a group"
        c[:] = [5, 6]


def with_h5netcdf(path: Path) -> None:
    """h5netcdf's own writer (no netCDF-C): dimensions, coordinates, attributes, strings."""
    with h5netcdf.File(path, "w") as f:
        f.attrs["Conventions"] = "CF-1.8"
        f.dimensions = {"lat": 3, "lon": 4}
        lat = f.create_variable("lat", ("lat",), "f8", data=np.array([-10.0, 0.0, 10.0]))
        lat.attrs["units"] = "degrees_north"
        f.create_variable("lon", ("lon",), "f8", data=np.linspace(0.0, 270.0, 4)).attrs["units"] = "degrees_east"
        air = f.create_variable("air", ("lat", "lon"), "f4", data=np.arange(12, dtype="f4").reshape(3, 4), chunks=(3, 2),
                                compression="gzip")
        air.attrs["long_name"] = "air temperature"
        f.create_variable("label", ("lat",), h5py.string_dtype(), data=np.array(["a", "bb", "ccc"], dtype=object))


def readme_call() -> str:
    """The xarray block of the README, as written."""
    section = README[README.index("## netCDF4 files and xarray") :]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


def open_as_the_readme_says(endpoint: str, domain: str, group: str | None = None) -> xr.Dataset:
    code = readme_call()
    for old, new in (("http://127.0.0.1:5101", endpoint), ('"alice"', '"test_user1"'), ('"secret"', f'"{USERS["test_user1"]}"'),
                     ('"/home/alice/air.nc"', f'"{domain}"')):
        assert old in code, old
        code = code.replace(old, new)
    if group is not None:  # the README's call, for one group
        code = code.replace('engine="h5netcdf",', f'engine="h5netcdf", group="{group}",')
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102  (the README's own code is what is tested)
    return scope["ds"]


@pytest.mark.parametrize(("writer", "groups"), [(with_netcdf4, (None, "obs")), (with_h5netcdf, (None,))])
def test_xarray_reads_a_loaded_netcdf4_file_identically(
    writer: Callable[[Path], None], groups: tuple[str | None, ...], endpoint: str, home_folder: str, tmp_path: Path
) -> None:
    local = tmp_path / "air.nc"
    writer(local)
    domain = f"{home_folder}/{uuid.uuid4().hex[:8]}-air.nc"
    # importing netCDF4 points HDF5_PLUGIN_PATH at its plugins, which map a second libhdf5 into
    # the loader's process; a netCDF user's shell has that too, and the loader must still work
    plugins = Path(netCDF4.__file__).parent / "plugins"
    env = {"HDF5_PLUGIN_PATH": str(plugins)} if plugins.is_dir() else {}
    loaded = run_h5lake("load", str(local), domain, "-e", endpoint, "-u", "test_user1", "-p", USERS["test_user1"],
                        cwd=tmp_path, env=env)
    assert loaded.returncode == 0, loaded.stderr
    for group in groups:
        with xr.open_dataset(local, engine="h5netcdf", group=group) as mine, open_as_the_readme_says(endpoint, domain, group) as served:
            mine.load()
            served.load()
            xr.testing.assert_identical(mine, served)
            assert mine.encoding["unlimited_dims"] == served.encoding["unlimited_dims"]
            for name in mine.variables:
                ours = {k: v for k, v in mine[name].encoding.items() if k != "source"}
                theirs = {k: v for k, v in served[name].encoding.items() if k != "source"}
                assert ours == theirs, name
        # and as Unidata's library reads the local file (xarray's other engine)
        with xr.open_dataset(local, engine="netcdf4", group=group) as unidata, open_as_the_readme_says(endpoint, domain, group) as served:
            xr.testing.assert_identical(unidata.load(), served.load())
