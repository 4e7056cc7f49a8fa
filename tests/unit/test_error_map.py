"""The one map from the exception tree to HTTP statuses (``api/errors.py``)."""

from __future__ import annotations

import inspect

from h5lake import errors
from h5lake.api.errors import status_of
from h5lake.api.http import UnsupportedMediaType

EXPECTED = {
    errors.InvalidInput: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.ReadOnly: 405,
    errors.Conflict: 409,
    errors.AlreadyExists: 409,
    errors.ConditionFailed: 412,
    errors.Gone: 410,
    errors.TooLarge: 413,
    UnsupportedMediaType: 415,
    errors.StorageUnavailable: 503,
    errors.Busy: 503,
    errors.CallerGone: 400,
    errors.Internal: 500,
    errors.DataCorruption: 500,
    errors.H5LakeError: 500,
}


def test_every_error_class_has_the_status_clients_see() -> None:
    for cls, status in EXPECTED.items():
        assert status_of(cls("x")) == status, cls.__name__


def test_every_class_of_the_tree_is_mapped_here() -> None:
    tree = {c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.H5LakeError)}
    assert tree <= set(EXPECTED)


def test_a_new_subclass_answers_as_its_parent() -> None:
    class SourceGone(errors.NotFound):
        pass

    class RaceLost(errors.Conflict):
        pass

    assert status_of(SourceGone("x")) == 404
    assert status_of(RaceLost("x")) == 409


def test_the_tree_below_the_edge_knows_no_status() -> None:
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        assert not hasattr(cls, "status"), cls.__name__


def test_storage_failures_do_not_reveal_where_the_store_is() -> None:
    """The store's own message (a local path, a bucket, an endpoint) is logged, never sent."""
    from starlette.applications import Starlette
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from h5lake.api.errors import HANDLERS

    async def failing(request: object) -> None:
        raise errors.StorageUnavailable("local store /srv/secret/h5lake-data: [Errno 28] No space left on device")

    app = Starlette(routes=[Route("/", failing)], exception_handlers=HANDLERS)  # type: ignore[arg-type]
    reply = TestClient(app).get("/")
    assert reply.status_code == 503 and reply.headers["retry-after"] == "1"
    assert "/srv/secret" not in reply.text and "unavailable" in reply.json()["error"]["message"]
