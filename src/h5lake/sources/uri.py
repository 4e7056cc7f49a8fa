"""Where an HDF5 file lives, and whether this server may read it.

A ``file_uri`` in a linked layout is one of:

* ``s3://bucket/key``: read through the S3 backend's ranged GETs;
* ``file:///abs/path`` or a bare absolute path ``/abs/path``: a local file.

Everything else (``http://``, relative paths, ``file://host/...``) is refused. A local path is
resolved with symlinks followed *before* it is compared with the allowed roots, so a link
inside a root pointing outside it is refused; an S3 URI must lie under an allowed
``s3://bucket[/prefix]`` root. Refusals are raised when a reference is created, and checked
again before every read, so a file outside the roots is never opened.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from h5lake.errors import Forbidden, InvalidInput


class SourceScheme(enum.Enum):
    LOCAL = "file"
    S3 = "s3"


@dataclass(frozen=True, slots=True)
class SourceURI:
    """A parsed ``file_uri``: ``location`` is the bucket (S3) or ``""`` (local); ``key`` is the
    object key (S3) or the absolute path as written (local, not yet resolved)."""

    scheme: SourceScheme
    location: str
    key: str
    text: str


def parse_source_uri(text: object) -> SourceURI:
    """Parse a ``file_uri``; ``InvalidInput`` for anything that is not a file or S3 URI."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text:
        raise InvalidInput(f"file_uri must be a non-empty string, not {text!r}")
    if "\x00" in text:
        raise InvalidInput("file_uri must not contain NUL")
    if text.startswith("/"):
        return SourceURI(SourceScheme.LOCAL, "", text, text)
    parts = urlsplit(text)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise InvalidInput(f"file_uri {text!r} names a remote host; only local files are read")
        path = unquote(parts.path)
        if not path.startswith("/"):
            raise InvalidInput(f"file_uri {text!r} must be an absolute path")
        return SourceURI(SourceScheme.LOCAL, "", path, text)
    if parts.scheme == "s3":
        bucket = parts.netloc
        key = parts.path.lstrip("/")
        if not bucket or not key:
            raise InvalidInput(f"file_uri {text!r} must look like s3://bucket/key")
        return SourceURI(SourceScheme.S3, bucket, key, text)
    raise InvalidInput(
        f"file_uri {text!r} is not supported: use s3://bucket/key, file:///path or an absolute path"
    )


@dataclass(frozen=True, slots=True)
class SourcePolicy:
    """The roots linked files may come from: resolved local folders and ``s3://`` prefixes."""

    local_roots: tuple[str, ...] = ()
    s3_roots: tuple[tuple[str, str], ...] = ()  # (bucket, key prefix without leading "/")

    @classmethod
    def from_roots(cls, roots: tuple[str, ...] | list[str]) -> SourcePolicy:
        local: list[str] = []
        s3: list[tuple[str, str]] = []
        for root in roots:
            if root.startswith("s3://"):
                bucket, _, prefix = root[len("s3://") :].partition("/")
                if bucket:
                    s3.append((bucket, prefix.strip("/")))
            else:
                local.append(os.path.realpath(root))
        return cls(tuple(local), tuple(s3))

    def roots(self) -> tuple[str, ...]:
        """The roots as ``--allow-source`` takes them."""
        return self.local_roots + tuple(f"s3://{b}/{p}".rstrip("/") for b, p in self.s3_roots)

    def authorize(self, uri: SourceURI) -> str:
        """The key to read (the real path of a local file); ``Forbidden`` when outside the roots.

        A local file must also exist and be a regular file (``InvalidInput`` otherwise), which
        is checked after the root test so a refusal says nothing about files elsewhere.
        """
        if uri.scheme is SourceScheme.S3:
            for bucket, prefix in self.s3_roots:
                if uri.location == bucket and (not prefix or uri.key == prefix or uri.key.startswith(prefix + "/")):
                    return uri.key
            raise Forbidden(f"{uri.text} is not under an allowed source root (--allow-source s3://...)")
        real = os.path.realpath(uri.key)
        for root in self.local_roots:
            if real == root or real.startswith(root.rstrip("/") + "/"):
                if not os.path.isfile(real):
                    raise InvalidInput(f"{uri.text} is not a file")
                return real
        raise Forbidden(f"{uri.text} is not inside an allowed source root (--allow-source)")
