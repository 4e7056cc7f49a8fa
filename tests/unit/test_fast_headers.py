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


def test_get_answers_as_starlettes_headers_for_every_name_the_fast_path_asks() -> None:
    """The names `api.http` reads from a request (and ``accept``), present once, twice, with
    empty or latin-1 values, with a name of latin-1 bytes, or with a raw name not lowercased
    (against the ASGI rule: neither finds it); a name that is not latin-1 fails alike."""
    raw = [
        (b"accept", b"application/octet-stream, application/json"),
        (b"content-encoding", b""),
        (b"content-length", b"5"),
        (b"content-length", b"7"),
        (b"content-type", "text/plain; charset=\xff".encode("latin-1")),
        (b"X-Hdf-Domain", b"/upper"),
        ("x-caf\u00e9".encode("latin-1"), b"\xe9t\xe9"),
    ]
    names = ["accept", "Accept", "content-encoding", "Content-Length", "content-type", "x-hdf-domain",
             "X-Hdf-Domain", "x-caf\u00e9", "X-CAF\u00c9", "x-cafe"]  # fmt: skip
    for headers in (raw, raw[::-1], raw[:3], [(b"x-hdf-domain", b"/a")] * 2):
        ours, theirs = FastHeaders(scope={"headers": list(headers)}), Headers(scope={"headers": list(headers)})
        for name in names:
            assert ours.get(name) == theirs.get(name), (name, headers)
            assert ours.get(name, "") == theirs.get(name, ""), (name, headers)
        for failing in (ours, theirs):
            try:
                failing.get("x-\u20ac")
            except UnicodeEncodeError:
                pass
            else:
                raise AssertionError(f"{type(failing).__name__} found a name latin-1 cannot hold")
