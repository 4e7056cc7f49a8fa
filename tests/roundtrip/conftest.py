"""Fixtures for the round-trip suite: the corpus, made once per session, and cached round trips."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from h5lake.client.export import export_domain
from h5lake.client.load import load_file
from h5lake.client.rest import RestClient, Settings
from tests.roundtrip.compare import compare_files
from tests.roundtrip.corpus import CORPUS, build_all
from tests.support.server import USERS, Server

# The corpus runs on every storage backend through the session's ``backing`` and ``server``
# (tests/conftest.py), like the rest of the suite. This folder must not define a ``backing`` of
# its own: the session ``server`` would then follow whichever ``backing`` made it first, and
# tests elsewhere that start more servers on their ``backing`` would get a server on another
# store (as happened once tests ran in parallel, in another order).
ROUNDTRIP_BACKENDS = [b for b in os.environ.get("ROUNDTRIP_BACKENDS", "").split(",") if b]
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``ROUNDTRIP_BACKENDS=local`` narrows this folder further than ``H5LAKE_TEST_BACKENDS``."""
    if not ROUNDTRIP_BACKENDS:
        return
    kept, dropped = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        kind = spec.params.get("backing") if spec is not None else None
        narrowed = item.path.is_relative_to(HERE) and kind is not None and kind not in ROUNDTRIP_BACKENDS
        (dropped if narrowed else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_all(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def settings(server: Server) -> Settings:
    return Settings(server.endpoint, "test_user1", USERS["test_user1"])


@pytest.fixture(scope="session")
def new_domain(home_folder: str) -> Callable[[str], str]:
    def make(stem: str) -> str:
        return f"{home_folder}/{stem}-{uuid.uuid4().hex[:8]}.h5"

    return make


@dataclass
class RoundTrip:
    source: Path
    domain: str
    exported: Path
    diffs: list[str] = field(default_factory=list)
    load_notes: list[str] = field(default_factory=list)
    export_notes: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def round_trip(
    corpus: dict[str, Path], settings: Settings, new_domain: Callable[[str], str], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], RoundTrip]:
    """``round_trip(name)``: load a corpus file, export it again, compare; done once per name.

    Each export goes to a folder of its own, so external raw files re-created next to it never
    meet the source's.
    """
    done: dict[str, RoundTrip | BaseException] = {}
    out = tmp_path_factory.mktemp("exported")

    def one(name: str) -> RoundTrip | BaseException:
        source = corpus[name]
        domain = new_domain(name)
        target = out / name / source.name
        target.parent.mkdir()
        client = RestClient(settings, domain)
        try:
            _, load_notes = load_file(source, client, workers=4)
            _, export_notes = export_domain(client, target, workers=4, external_files=True)
        except Exception as exc:  # noqa: BLE001 - raised again in the test that asks for it
            return exc
        return RoundTrip(source, domain, target, compare_files(str(source), str(target)), load_notes, export_notes)

    def run(name: str) -> RoundTrip:
        if not done:
            # all at once, a few at a time: the client and the server then use both cores; files
            # with external storage go alone, as reading them changes the working directory
            together = [n for n in sorted(corpus) if n not in ALONE]
            with ThreadPoolExecutor(3) as pool:
                done.update(zip(together, pool.map(one, together), strict=True))
            done.update((n, one(n)) for n in sorted(ALONE & set(corpus)))
        result = done[name]
        if isinstance(result, BaseException):
            raise result
        return result

    return run


ALONE = {"external_storage"}
CORPUS_NAMES = sorted(CORPUS)
