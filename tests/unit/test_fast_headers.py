"""`api.fast.FastHeaders`: the fast path's request headers answer ``get`` as Starlette's do."""

from __future__ import annotations

from starlette.datastructures import Headers

from h5lake.api.fast import FastHeaders

RAW = [
    (b"host", b"127.0.0.1:5101"),
    (b"content-type", b"application/octet-stream"),
    (b"x-hdf-domain", b"/home/a/first.h5"),
    (b"x-hdf-domain", b"/home/a/second.h5"),
    (b"x-latin", "caf\u00e9".encode("latin-1")),
    (b"content-length", b"12"),
]
NAMES = ["host", "Host", "CONTENT-TYPE", "x-hdf-domain", "X-Hdf-Domain", "x-latin", "content-length",
         "content-encoding", "authorization", "", "x-hdf"]  # fmt: skip


def test_get_answers_as_starlettes_headers() -> None:
    for raw in (RAW, [], RAW[::-1]):
        ours, theirs = FastHeaders(scope={"headers": list(raw)}), Headers(scope={"headers": list(raw)})
        for name in NAMES:
            assert ours.get(name) == theirs.get(name), name
            assert ours.get(name, "absent") == theirs.get(name, "absent"), name
        assert ours.getlist("x-hdf-domain") == theirs.getlist("x-hdf-domain")
        assert ("content-encoding" in ours) == ("content-encoding" in theirs)
    headers = FastHeaders(scope={"headers": RAW})
    assert headers.get("x-hdf-domain") == "/home/a/first.h5"  # the first of two, as Starlette's
    assert headers.get("x-latin") == "caf\u00e9"
    assert headers.get("content-encoding", "") == ""
