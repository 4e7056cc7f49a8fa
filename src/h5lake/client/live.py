"""Following a growing dataset: `shapes` yields its shape each time it changes, over the watch
(``GET /datasets/{id}/shape?wait=S`` with ``If-None-Match``, docs/api.md, "Live data").

Each request waits on the server up to ``wait`` seconds; the server answers as soon as the shape
or the dataset's document changes (304, then the next wait, when nothing did). Nothing polls on
the client side, and a change made by any server process on the store is seen.

Plot the tail of a growing dataset (h5pyd, with matplotlib)::

    import h5pyd
    import matplotlib.pyplot as plt
    from h5lake.client import shapes

    with h5pyd.File("/home/me/run.h5", "r") as f:
        dset = f["signal"]
        for shape in shapes(dset):
            dset.refresh()
            tail = dset[max(0, shape[0] - 1000):shape[0]]
            plt.cla(); plt.plot(range(shape[0] - len(tail), shape[0]), tail); plt.pause(0.01)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests


def shapes(dataset: Any = None, *, endpoint: str | None = None, domain: str | None = None, dataset_id: str | None = None,
           auth: Any = None, wait: float = 30.0, session: requests.Session | None = None) -> Iterator[tuple[int, ...]]:
    """The dataset's current shape, then each new one as it changes (forever; stop iterating to
    end). ``dataset``: an h5pyd Dataset (its server, domain and credentials are used), or else
    ``endpoint``, ``domain``, ``dataset_id`` and ``auth`` (as ``requests`` takes it)."""
    headers: dict[str, str] = {}
    if dataset is not None:
        conn = dataset.id.db.plugin.http_conn
        endpoint, domain, dataset_id = conn.endpoint, conn.domain, dataset.id.uuid
        headers = {k: v for k, v in conn.getHeaders().items() if k.lower() != "accept-encoding"}
    if endpoint is None or domain is None or dataset_id is None:
        raise TypeError("give an h5pyd dataset, or endpoint, domain and dataset_id")
    if not 0 <= wait <= 60:
        raise ValueError("wait must be between 0 and 60 seconds")
    http = session or requests.Session()
    url = f"{endpoint.rstrip('/')}/datasets/{dataset_id}/shape"
    etag: str | None = None
    last: tuple[int, ...] | None = None
    while True:
        asked = dict(headers, **({"If-None-Match": etag} if etag else {}))
        params: dict[str, Any] = {"domain": domain, "wait": wait} if etag else {"domain": domain}
        reply = http.get(url, params=params, headers=asked, auth=auth, timeout=wait + 30)
        if reply.status_code == 304:
            continue
        if reply.status_code != 200:
            raise OSError(reply.status_code, reply.text[:200])
        etag = reply.headers.get("ETag")
        shape = tuple(reply.json()["shape"].get("dims") or ())
        if shape != last:  # a change of the document alone (an attribute) is not a new shape
            last = shape
            yield shape
