"""Write tests/durations.json from a JUnit report of a full run: seconds per test module.

    python -m pytest -q --junitxml=/tmp/run.xml && python dev/suite_durations.py /tmp/run.xml

The parallel run (tests/conftest.py, ``ScopeScheduling``) hands out the longest modules first, so
that no long module starts last and leaves the other cores idle while it runs; this file is
where it learns which are long. Only the order depends on it: a module missing from the file
(a new one) is weighed by its number of tests, and stale figures never change what runs.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def module_of(classname: str) -> str:
    """``tests.unit.test_selection.TestProject`` -> ``tests/unit/test_selection.py``."""
    parts = classname.split(".")
    last = max((i for i, p in enumerate(parts) if p.startswith("test")), default=len(parts) - 1)
    if parts[last][0].isupper():  # a class named Test...: the module is the part before it
        last -= 1
    return "/".join(parts[: last + 1]) + ".py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("junit", type=Path, help="a report written by pytest --junitxml")
    args = parser.parse_args()
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(args.junit).getroot().iter("testcase"):
        seconds[module_of(case.get("classname", ""))] += float(case.get("time") or 0)
    ordered = {m: round(s, 1) for m, s in sorted(seconds.items())}
    OUT.write_text(json.dumps(ordered, indent=0) + "\n")
    print(f"{OUT}: {len(ordered)} modules, {sum(ordered.values()):.0f} s in all")


if __name__ == "__main__":
    main()
