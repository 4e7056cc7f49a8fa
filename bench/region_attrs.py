"""Reading region reference attributes (h5json's object form, docs/fidelity.md "Region
references"): server CPU of ``GET`` of one attribute and of its object with ``include_attrs``.

    python bench/region_attrs.py [--endpoint URL --user U --password P] [--repeat 10]

Two attributes near the 1 MB limit: 9,000 references of one point each, and one reference of
100,000 points.
"""

from __future__ import annotations

import argparse

from bench.common import CpuMeter, add_target_args, row, target

REGION = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_target_args(ap)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    with target(args) as t:
        s = t.session()
        domain = t.new_folder("regions") + "r.h5"
        root = s.put(t.endpoint + "/", params={"domain": domain}, timeout=60).json()["root"]
        dset = s.post(t.endpoint + "/datasets", params={"domain": domain}, timeout=60,
                      json={"type": "H5T_STD_I32LE", "shape": [10, 10]}).json()["id"]
        point = {"id": dset, "select_type": "H5S_SEL_POINTS", "selection": [[1, 2]]}
        cases = {"many": [point] * 9000, "big": [{**point, "selection": [[1, 2]] * 100000}]}
        for name, value in cases.items():
            r = s.put(f"{t.endpoint}/groups/{root}/attributes/{name}", params={"domain": domain}, timeout=60,
                      json={"type": REGION, "shape": [len(value)], "value": value})
            assert r.status_code == 201, r.text
            for what, url, params in (("attribute", f"/groups/{root}/attributes/{name}", {}),
                                      ("object, include_attrs", f"/groups/{root}", {"include_attrs": 1})):
                meter = CpuMeter(t.server_pid).start()
                for _ in range(args.repeat):
                    r = s.get(t.endpoint + url, params={"domain": domain, **params}, timeout=60)
                    assert r.status_code == 200, r.text
                meter.stop()
                row(f"{name}: GET {what}", f"{len(r.content)} bytes", meter.note(args.repeat, "GET"))


if __name__ == "__main__":
    main()
