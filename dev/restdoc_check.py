"""Send the HDF REST API documentation's example requests to a real h5lake and compare the answers.

    python dev/restdoc_check.py [--endpoint URL] [-v]

Not part of the suite. The examples are those of the documentation's pages (HDFGroup/hdf-rest-api,
``*/*.md`` and ``openapi.yaml``), sent as the pages write them: the domain in ``X-Hdf-domain``
(or ``?domain=``), bodies as the page's sample request (curl's ``-d`` sends
``application/x-www-form-urlencoded`` unless the page adds ``Content-Type``; the python-requests
samples of the older pages send none), ids replaced by
ids of objects made first. Each answer is checked against the page's sample response: the
status, every key the sample shows with its JSON type, and the ``rel``s of ``hrefs``. Where the
documentation and HSDS 1.0 disagree, the check follows HSDS and says so (``hsds:``); a line
``DIFF`` is a documented form h5lake answers otherwise on purpose (docs/api.md, "The HDF REST
API documentation, replayed"). Without ``--endpoint`` it starts ``h5lake serve`` from this tree on a free
loopback port with the test users (tests/support/server.py) and stops it at the end. Exit
status 1 if any check FAILs.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from tests.support.server import USERS, start_server

NUM = (int, float)
FORM = "application/x-www-form-urlencoded"  # curl -d without --header "Content-Type: ..."
JSON = "application/json"
NONE = ""  # no Content-Type at all: the python-requests 2.3 samples of the h5serv-era pages


class Checker:
    def __init__(self, endpoint: str, verbose: bool) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.verbose = verbose
        self.session = requests.Session()
        self.session.auth = ("test_user1", USERS["test_user1"])
        self.domain = ""
        self.failed: list[str] = []
        self.counts = {"OK": 0, "FAIL": 0, "DIFF": 0}

    # --- requests as the pages write them ------------------------------------------------------

    def send(self, method: str, path: str, body: str | bytes | None = None, *, ctype: str | None = None,
             accept: str = "*/*", domain: str | None = None, in_query: bool = False,
             params: dict[str, str] | None = None) -> requests.Response:
        headers = {"Accept": accept}
        params = dict(params or {})
        dom = self.domain if domain is None else domain
        if dom:
            if in_query:
                params["domain"] = dom
            else:
                headers["X-Hdf-domain"] = dom
        if body is not None and ctype != NONE:
            headers["Content-Type"] = ctype or FORM
        return self.session.request(method, self.endpoint + path, data=body if body is not None else b"",
                                    headers=headers, params=params, timeout=60)

    # --- comparisons ---------------------------------------------------------------------------

    def check(self, name: str, r: requests.Response, status: int, keys: dict[str, Any] | None = None,
              rels: set[str] | None = None, extra: Callable[[Any], list[str]] | None = None,
              diff: str | None = None) -> Any:
        problems: list[str] = []
        if r.status_code != status:
            problems.append(f"status {r.status_code}, documented {status}: {r.text[:300]}")
        body: Any = None
        if r.status_code < 300 and r.content and r.headers.get("Content-Type", "").startswith(JSON):
            try:
                body = r.json()
            except ValueError:
                problems.append("answer is not JSON")
        if body is not None and keys:
            problems += shape_problems(body, keys, "")
        if body is not None and rels is not None:
            got = {h.get("rel") for h in body.get("hrefs", [])}
            if not rels <= got:
                problems.append(f"hrefs lack rel {sorted(rels - got)} (have {sorted(got)})")
        if body is not None and extra is not None and not problems:
            problems += extra(body)
        ctype = r.headers.get("Content-Type", "")
        if r.status_code < 300 and status < 300 and r.content and not ctype.startswith(JSON) and "octet-stream" not in ctype:
            problems.append(f"Content-Type {ctype}")
        if problems and diff:
            self.counts["DIFF"] += 1
            print(f"DIFF  {name}: {'; '.join(problems)}\n      (on purpose: {diff})")
        elif problems:
            self.counts["FAIL"] += 1
            self.failed.append(name)
            print(f"FAIL  {name}: {'; '.join(problems)}")
        else:
            self.counts["OK"] += 1
            if self.verbose:
                print(f"OK    {name}")
        return body


def shape_problems(value: Any, expected: Any, where: str) -> list[str]:
    """``expected``: a type (or tuple of types), a literal to equal, or a dict of key -> expected."""
    if isinstance(expected, dict):
        if not isinstance(value, dict):
            return [f"{where or 'answer'} is {type(value).__name__}, not an object"]
        out = []
        for k, sub in expected.items():
            if k not in value:
                out.append(f"{where}{k} missing")
            else:
                out += shape_problems(value[k], sub, f"{where}{k}.")
        return out
    if isinstance(expected, type) or (isinstance(expected, tuple) and all(isinstance(t, type) for t in expected)):
        if isinstance(value, bool) and expected is not bool and not (isinstance(expected, tuple) and bool in expected):
            return [f"{where.rstrip('.')} is a boolean"]
        return [] if isinstance(value, expected) else [f"{where.rstrip('.')} is {type(value).__name__}"]
    return [] if value == expected else [f"{where.rstrip('.')} is {value!r}, documented {expected!r}"]


def j(obj: Any) -> str:
    return json.dumps(obj)


HSDS_EMPTY = "HSDS answers {} (link_sn/attr_sn PUT), the page {\"hrefs\": []}"


def acl_list(b: Any) -> list[str]:
    """GET_ACLs (and HSDS) list entries with userName; openapi.yaml's object keyed by user is not what HSDS sends."""
    return [p for e in b["acls"] for p in shape_problems(e, {"userName": str, **ACL}, "acls[].")]


OBJ_KEYS = {"id": str, "root": str, "created": NUM, "lastModified": NUM, "attributeCount": int}
ACL = {k: bool for k in ("create", "read", "update", "delete", "readACL", "updateACL")}


def run(c: Checker, home: str) -> None:
    # --- DomainOps ----------------------------------------------------------------------------
    c.domain = f"{home}/restdoc-{uuid.uuid4().hex[:8]}.h5"
    r = c.send("PUT", "/")  # PUT_Domain sample: no body, Content-Length: 0
    c.check("PUT_Domain", r, 201, {"root": str, "created": NUM, "owner": str, "lastModified": NUM,
                                   "acls": {"test_user1": ACL}})
    root = r.json()["root"]
    c.check("PUT_Domain again (409)", c.send("PUT", "/"), 409)
    c.check("GET_Domain (X-Hdf-domain)", c.send("GET", "/"), 200,
            {"root": root, "created": NUM, "owner": "test_user1", "class": "domain", "lastModified": NUM},
            {"self", "database", "groupbase", "typebase", "root", "acls", "parent"})
    c.check("GET_Domain (?domain=)", c.send("GET", "/", in_query=True), 200, {"root": root})
    r = c.send("GET", "/")
    for h in ("Content-Length", "Etag", "Content-Type"):  # CommonResponseHeaders
        if h not in r.headers:
            c.check(f"GET_Domain header {h}", r, -1)
    folder = f"{home}/restdoc-folder-{uuid.uuid4().hex[:6]}"
    c.check("PUT_Domain ?folder=1 (openapi)", c.send("PUT", "/", domain=folder + "-q", params={"folder": "1"}), 201,
            {"owner": str, "created": NUM, "lastModified": NUM},
            extra=lambda b: [] if b.get("class", "folder") == "folder" and "root" not in b else ["not a folder"],
            diff="HSDS reads folder from the JSON body only and makes a domain")
    c.send("DELETE", "/", domain=folder + "-q")
    c.check("PUT_Domain folder (body)", c.send("PUT", "/", j({"folder": 1}), domain=folder, ctype=JSON), 201,
            {"class": "folder"})
    c.check("GET_Domain of a folder (openapi: class folder, no root)", c.send("GET", "/", domain=folder), 200,
            {"class": "folder"}, extra=lambda b: ["root present"] if "root" in b else [])

    # --- GroupOps -----------------------------------------------------------------------------
    r = c.send("POST", "/groups")  # POST_Group sample: Content-Length: 0
    g = c.check("POST_Group", r, 201, {**OBJ_KEYS, "root": root, "linkCount": int})
    gid = g["id"] if g else ""
    r = c.send("POST", "/groups", j({"link": {"id": root, "name": "linked_group"}}))  # curl -d: form type
    g1 = c.check("POST_Group with link", r, 201, {**OBJ_KEYS, "linkCount": 0})
    g1id = g1["id"] if g1 else ""
    c.check("GET_Group", c.send("GET", f"/groups/{g1id}"), 200,
            {**OBJ_KEYS, "linkCount": int, "domain": c.domain}, {"self", "links", "root", "home", "attributes"})
    c.check("GET_Group ?getalias=1 (openapi)", c.send("GET", f"/groups/{g1id}", params={"getalias": "1"}), 200,
            {"alias": ["/linked_group"]})
    c.check("GET_Group ?include_links=1", c.send("GET", f"/groups/{root}", params={"include_links": "1"}), 200,
            {"links": dict}, extra=lambda b: [] if "linked_group" in b["links"] else ["links lack linked_group"])
    # GET_Groups, with Marker and Limit over five more groups
    made = [gid, g1id]
    for n in range(5):
        r = c.send("POST", "/groups", j({"link": {"id": root, "name": f"g{n}"}}), ctype=JSON)
        made.append(r.json()["id"])
    c.send("PUT", f"/groups/{root}/links/unlinked", j({"id": gid}), ctype=JSON)
    listed = c.check("GET_Groups", c.send("GET", "/groups"), 200, {"groups": list}, {"self", "root", "home"},
                     extra=lambda b: [] if root not in b["groups"] and set(made) <= set(b["groups"])
                     else [f"groups {b['groups']} (root must be left out, all {len(made)} made listed)"])
    if listed:
        ids = listed["groups"]
        c.check("GET_Groups ?Marker=&Limit=2", c.send("GET", "/groups", params={"Marker": ids[1], "Limit": "2"}),
                200, {"groups": ids[2:4]})
    # PUT_Link: hard (Content-Type json), soft (no Content-Type: curl's form type), external
    c.check("PUT_Link hard", c.send("PUT", f"/groups/{root}/links/hard3", j({"id": g1id}), ctype=JSON), 201,
            diff=HSDS_EMPTY)
    c.check("PUT_Link soft (curl form type)", c.send("PUT", f"/groups/{root}/links/softlink",
                                                      j({"h5path": "/somewhere"})), 201,
            {"hrefs": list}, diff=HSDS_EMPTY)
    c.check("PUT_Link external", c.send("PUT", f"/groups/{root}/links/extlink",
                                         j({"h5domain": "/shared/ext_file.h5", "h5path": "/dset1"})), 201,
            {"hrefs": list}, diff=HSDS_EMPTY)
    c.check("GET_Link hard", c.send("GET", f"/groups/{root}/links/hard3"), 200,
            {"lastModified": NUM, "created": NUM,
             "link": {"id": g1id, "collection": "groups", "class": "H5L_TYPE_HARD", "title": "hard3"}},
            {"self", "home", "owner", "target"})
    c.check("GET_Link soft", c.send("GET", f"/groups/{root}/links/softlink"), 200,
            {"created": NUM, "lastModified": NUM,
             "link": {"title": "softlink", "class": "H5L_TYPE_SOFT", "h5path": "/somewhere"}},
            {"self", "home", "owner"})
    c.check("GET_Link external", c.send("GET", f"/groups/{root}/links/extlink"), 200,
            {"created": NUM, "lastModified": NUM,
             "link": {"title": "extlink", "class": "H5L_TYPE_EXTERNAL", "h5path": "/dset1",
                      "h5domain": "/shared/ext_file.h5"}},
            {"self", "home", "owner"})
    item = {"id": str, "title": str, "class": "H5L_TYPE_HARD", "collection": "groups", "created": NUM,
            "href": str, "target": str}
    c.check("GET_Links", c.send("GET", f"/groups/{root}/links"), 200, {"links": list}, {"self", "home", "owner"},
            extra=lambda b: shape_problems(next(x for x in b["links"] if x["class"] == "H5L_TYPE_HARD"), item, "links[hard].")
            + ([] if [x["title"] for x in b["links"]] == sorted(x["title"] for x in b["links"])
               else ["links not sorted by title (openapi)"]))
    c.check("GET_Links ?Marker=g1&Limit=1", c.send("GET", f"/groups/{root}/links", params={"Marker": "g1", "Limit": "1"}),
            200, extra=lambda b: [] if [x["title"] for x in b["links"]] == ["g2"] else [f"links {b['links']}"])
    c.check("GET_Links ?Limit=0 (openapi: N >= 0; hsds: no limit)",
            c.send("GET", f"/groups/{root}/links", params={"Limit": "0"}), 200,
            extra=lambda b: [] if len(b["links"]) >= 9 else [f"{len(b['links'])} links"])
    c.check("GET_Groups ?Limit=0", c.send("GET", "/groups", params={"Limit": "0"}), 200,
            extra=lambda b: [] if len(b["groups"]) >= len(made) else [f"{len(b['groups'])} groups"])
    c.send("PUT", f"/groups/{root}/links/deleteme", j({"id": g1id}), ctype=JSON)
    c.check("DELETE_Link", c.send("DELETE", f"/groups/{root}/links/deleteme"), 200)
    c.check("GET deleted link (410)", c.send("GET", f"/groups/{root}/links/deleteme"), 410)
    c.check("DELETE the root group (403: DELETE_Link's special error, hsds)", c.send("DELETE", f"/groups/{root}"), 403)
    c.check("DELETE_Group", c.send("DELETE", f"/groups/{made[-1]}"), 200)
    c.check("GET deleted group (410)", c.send("GET", f"/groups/{made[-1]}"), 410)

    # --- DatatypeOps --------------------------------------------------------------------------
    t = c.check("POST_Datatype", c.send("POST", "/datatypes", j({"type": "H5T_IEEE_F32LE"}), ctype=JSON), 201,
                {**OBJ_KEYS, "root": root})
    tid = t["id"] if t else ""
    t2 = c.check("POST_Datatype with link", c.send("POST", "/datatypes", j(
        {"type": "H5T_IEEE_F64LE", "link": {"id": root, "name": "linked_dtype"}}), ctype=JSON), 201, OBJ_KEYS)
    t2id = t2["id"] if t2 else ""
    c.check("GET_Datatype", c.send("GET", f"/datatypes/{t2id}"), 200,
            {**OBJ_KEYS, "domain": c.domain, "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}},
            {"self", "root", "home", "attributes"})
    for n in range(3):
        c.send("POST", "/datatypes", j({"type": "H5T_STD_I8LE", "link": {"id": root, "name": f"t{n}"}}), ctype=JSON)
    dts = c.check("GET_Datatypes", c.send("GET", "/datatypes"), 200, {"datatypes": list}, {"self", "root", "home"})
    if dts:
        ids = dts["datatypes"]
        c.check("GET_Datatypes ?Marker=&Limit=2", c.send("GET", "/datatypes", params={"Marker": ids[0], "Limit": "2"}),
                200, {"datatypes": ids[1:3]})
    c.check("DELETE_Datatype", c.send("DELETE", f"/datatypes/{tid}"), 200)

    # --- DatasetOps ---------------------------------------------------------------------------
    dkeys = {**OBJ_KEYS}
    d = c.check("POST_Dataset shape 10", c.send("POST", "/datasets", j({"shape": 10, "type": "H5T_IEEE_F32LE"}), ctype=NONE),
                201, dkeys)
    did = d["id"] if d else ""
    vlen_h5serv = {"class": "H5T_STRING", "strsize": "H5T_VARIABLE", "cset": "H5T_CSET_ASCII",
                   "order": "H5T_ORDER_NONE", "strpad": "H5T_STR_NULLTERM"}
    c.check("POST_Dataset with link, h5serv string keys (hsds: 400, 'length' not provided)",
            c.send("POST", "/datasets", j({"type": vlen_h5serv, "shape": 10,
                                           "link": {"id": root, "name": "linked_dset"}})), 400)
    vlen = {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLTERM", "length": "H5T_VARIABLE"}
    c.check("POST_Dataset with link (Types/ string keys)", c.send("POST", "/datasets", j(
        {"type": vlen, "shape": 10, "link": {"id": root, "name": "linked_dset"}})), 201, dkeys)
    r = c.send("POST", "/datasets", j({"type": "H5T_IEEE_F32LE", "shape": 10, "maxdims": 0}))
    rd = c.check("POST_Dataset resizable (maxdims 0)", r, 201, dkeys)
    if rd:
        c.check("GET_DatasetShape of maxdims 0", c.send("GET", f"/datasets/{rd['id']}/shape"), 200,
                {"shape": {"class": "H5S_SIMPLE", "dims": [10], "maxdims": list}},
                diff="unlimited maxdims shown as \"H5S_UNLIMITED\" (API-NOTES; HSDS shows 0)")
    c.check("POST_Dataset committed type", c.send("POST", "/datasets", j({"type": t2id, "shape": [10, 10]})), 201,
            dkeys)
    szip = {"creationProperties": {"filters": [{"bitsPerPixel": 8, "coding": "H5_SZIP_EC_OPTION_MASK", "id": 4,
                                                "pixelsPerBlock": 32, "pixelsPerScanline": 100}],
                                   "layout": {"class": "H5D_CHUNKED", "dims": [100, 100]}},
            "shape": [1000, 1000], "type": "H5T_IEEE_F32LE"}
    c.check("POST_Dataset SZIP with chunking", c.send("POST", "/datasets", j(szip)), 201, dkeys)
    c.check("POST_Dataset H5S_NULL", c.send("POST", "/datasets", j({"type": "H5T_STD_I32LE", "shape": "H5S_NULL"})),
            201, dkeys)
    sc = c.check("POST_Dataset scalar (no shape)", c.send("POST", "/datasets", j({"type": "H5T_STD_I32LE"})), 201,
                 dkeys)
    if sc:
        c.check("GET_Dataset scalar shape", c.send("GET", f"/datasets/{sc['id']}/shape"), 200,
                {"shape": {"class": "H5S_SCALAR"}}, extra=lambda b: ["dims present"] if "dims" in b["shape"] else [])
    c.send("PUT", f"/groups/{root}/links/dset", j({"id": did}), ctype=JSON)
    c.check("GET_Dataset", c.send("GET", f"/datasets/{did}"), 200,
            {**OBJ_KEYS, "domain": c.domain, "shape": {"dims": [10], "class": "H5S_SIMPLE"},
             "type": {"base": "H5T_IEEE_F32LE", "class": "H5T_FLOAT"}, "creationProperties": dict},
            {"self", "root", "attributes", "data", "home"})
    dsl = c.check("GET_Datasets", c.send("GET", "/datasets"), 200, {"datasets": list}, {"self", "root", "home"})
    if dsl and len(dsl["datasets"]) >= 2:
        c.check("GET_Datasets ?Marker=&Limit=5", c.send("GET", "/datasets",
                                                       params={"Marker": dsl["datasets"][0], "Limit": "5"}),
                200, {"datasets": dsl["datasets"][1:6]})
    c.check("GET_DatasetShape", c.send("GET", f"/datasets/{did}/shape"), 200,
            {"shape": {"class": "H5S_SIMPLE", "dims": [10]}, "created": NUM, "lastModified": NUM},
            {"self", "owner", "root"})
    r2 = c.send("POST", "/datasets", j({"type": "H5T_STD_I32LE", "shape": [10, 10], "maxdims": [10, 0]}))
    rz = r2.json()["id"]
    c.check("PUT_DatasetShape", c.send("PUT", f"/datasets/{rz}/shape", j({"shape": [10, 25]}), ctype=NONE), 201)
    c.check("GET_DatasetShape resizable", c.send("GET", f"/datasets/{rz}/shape"), 200,
            {"shape": {"class": "H5S_SIMPLE", "dims": [10, 25], "maxdims": [10, 0]}},
            diff="unlimited maxdims shown as \"H5S_UNLIMITED\" (API-NOTES; HSDS shows 0)")
    c.check("GET_DatasetType predefined", c.send("GET", f"/datasets/{sc['id'] if sc else did}/type"), 200,
            {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}}, {"self", "owner", "root"})
    compound = {"class": "H5T_COMPOUND", "fields": [
        {"name": "date", "type": "H5T_STD_I64LE"},
        {"name": "time", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
                                  "length": 6}},
        {"name": "temp", "type": "H5T_STD_I64LE"},
        {"name": "pressure", "type": "H5T_IEEE_F64LE"},
        {"name": "wind", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
                                  "length": 6}}]}
    cd = c.send("POST", "/datasets", j({"type": compound, "shape": [72]})).json()["id"]
    c.check("GET_DatasetType compound", c.send("GET", f"/datasets/{cd}/type"), 200,
            {"type": {"class": "H5T_COMPOUND", "fields": list}},
            extra=lambda b: [] if [f["name"] for f in b["type"]["fields"]] == ["date", "time", "temp", "pressure", "wind"]
            else ["field names"])
    # values: the 10x10 sample
    v = c.send("POST", "/datasets", j({"type": "H5T_STD_I32LE", "shape": [10, 10]})).json()["id"]
    c.check("PUT_Value 10x10", c.send("PUT", f"/datasets/{v}/value",
                                      j({"value": [[i * 10 + k for k in range(10)] for i in range(10)]}), ctype=NONE),
            200)
    mult = [[i * k for k in range(10)] for i in range(10)]
    c.send("PUT", f"/datasets/{v}/value", j({"value": mult}), ctype=JSON)
    c.check("GET_Value", c.send("GET", f"/datasets/{v}/value"), 200, {"value": mult}, {"self", "root", "owner", "home"})
    c.check("GET_Value select=[1:9,1:9:2]", c.send("GET", f"/datasets/{v}/value", params={"select": "[1:9,1:9:2]"}),
            200, {"value": [row[1:9:2] for row in mult[1:9]]})
    c.check("GET_Value binary", c.send("GET", f"/datasets/{v}/value", accept="application/octet-stream"), 200,
            extra=None)
    packed = base64.b64encode(b"".join(int(i * 7).to_bytes(4, "little") for i in range(100))).decode()
    c.check("PUT_Value value_base64 (openapi)", c.send("PUT", f"/datasets/{v}/value", j({"value_base64": packed}),
                                                       ctype=JSON), 200)
    c.check("PUT_Value value_base64 read back", c.send("GET", f"/datasets/{v}/value", params={"select": "[9:10,0:10]"}),
            200, {"value": [[i * 7 for i in range(90, 100)]]})
    c.send("PUT", f"/datasets/{v}/value", j({"value": mult}), ctype=JSON)
    c.check("PUT_Value start/stop", c.send("PUT", f"/datasets/{did}/value",
                                           j({"start": 5, "stop": 10, "value": [13, 17, 19, 23, 29]})), 200)
    sq = c.send("POST", "/datasets", j({"type": "H5T_STD_I32LE", "shape": [20]})).json()["id"]
    c.send("PUT", f"/datasets/{sq}/value", j({"value": [i * i for i in range(20)]}), ctype=JSON)
    pts = [19, 17, 13, 11, 7, 5, 3, 2]
    c.check("POST_Value points", c.send("POST", f"/datasets/{sq}/value", j({"points": pts}), ctype=NONE), 200,
            {"value": [p * p for p in pts]})
    c.check("POST_Value points 2-D (openapi)", c.send("POST", f"/datasets/{v}/value",
                                                      j({"points": [[0, 0], [0, 1], [1, 0], [1, 1]]})), 200,
            {"value": [0, 0, 0, 1]})
    c.check("PUT_Value points (openapi)", c.send("PUT", f"/datasets/{v}/value",
                                                 j({"points": [[4, 3], [6, 1], [9, 0]], "value": [323, 16, 44]})), 200)
    c.check("PUT_Value points written", c.send("POST", f"/datasets/{v}/value", j({"points": [[4, 3], [6, 1], [9, 0]]})),
            200, {"value": [323, 16, 44]})
    rows = [[21, "17:53", 74, 29.87, "S 9"], [21, "16:53", 75, 29.87, "SW 10"], [21, "15:53", 69, 29.87, "S 12"]]
    rows += [[23, f"{h}:53", 60 + h, 29.8, "W 5"] for h in range(69)]
    c.send("PUT", f"/datasets/{cd}/value", j({"value": rows}), ctype=JSON)
    c.check("GET_Value query", c.send("GET", f"/datasets/{cd}/value", params={"query": "(date == 21) & (temp >= 72)"}),
            200, {"index": [0, 1], "value": [rows[0], rows[1]]}, {"self", "root", "owner", "home"})
    c.check("GET_Value query Limit select", c.send("GET", f"/datasets/{cd}/value",
                                                   params={"query": "date == 23", "Limit": "5", "select": "[24:72]"}),
            200, {"index": list(range(24, 29)), "value": rows[24:29]})

    c.check("PUT_Value query update with select (hsds)", c.send("PUT", f"/datasets/{cd}/value", j({"temp": -1}),
                                                               ctype=JSON, params={"query": "date == 23",
                                                                                   "select": "[30:33]"}),
            200, {"index": [30, 31, 32]})
    c.check("query update changed only the selection", c.send("GET", f"/datasets/{cd}/value",
                                                              params={"query": "temp == -1"}), 200,
            {"index": [30, 31, 32]})

    # --- AttrOps ------------------------------------------------------------------------------
    c.check("PUT_Attribute scalar", c.send("PUT", f"/groups/{root}/attributes/attr4",
                                           j({"type": "H5T_STD_I32LE", "value": 42})), 201, {"hrefs": list},
            diff=HSDS_EMPTY)
    c.check("PUT_Attribute string, h5serv keys (hsds: 400)", c.send("PUT", f"/groups/{root}/attributes/attr6x", j(
        {"shape": [2], "type": {"class": "H5T_STRING", "cset": "H5T_CSET_ASCII", "strpad": "H5T_STR_NULLPAD",
                                "strsize": 40}, "value": ["Hello, I'm a fixed-width string!", "Goodbye!"]})), 400)
    c.check("PUT_Attribute string (curl keys)", c.send("PUT", f"/groups/{root}/attributes/attr6", j(
        {"shape": [2], "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
                                "length": 40}, "value": ["Hello, I'm a fixed-width string!", "Goodbye!"]}),
                                                        ctype=JSON), 201)
    c.check("PUT_Attribute compound shape 2", c.send("PUT", f"/groups/{root}/attributes/attr_compound", j(
        {"shape": 2, "type": {"class": "H5T_COMPOUND", "fields": [{"type": "H5T_STD_I32LE", "name": "temp"},
                                                                  {"type": "H5T_IEEE_F32LE", "name": "pressure"}]},
         "value": [[55, 32.34], [59, 29.34]]})), 201)
    c.check("PUT_Attribute attr1 I8 [10]", c.send("PUT", f"/groups/{root}/attributes/attr1", j(
        {"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I8LE"}, "shape": [10],
         "value": [97, 98, 99, 100, 101, 102, 103, 104, 105, 0]})), 201)
    c.check("GET_Attribute", c.send("GET", f"/groups/{root}/attributes/attr1"), 200,
            {"name": "attr1", "type": {"base": "H5T_STD_I8LE", "class": "H5T_INTEGER"},
             "shape": {"class": "H5S_SIMPLE", "dims": [10]}, "created": NUM, "lastModified": NUM,
             "value": [97, 98, 99, 100, 101, 102, 103, 104, 105, 0]}, {"self", "home", "owner"})
    c.check("GET_Attribute compound", c.send("GET", f"/groups/{root}/attributes/attr_compound"), 200,
            {"shape": {"class": "H5S_SIMPLE", "dims": [2]}, "value": list})
    akeys = {"type": dict, "name": str, "shape": dict, "created": NUM, "href": str}
    c.check("GET_Attributes", c.send("GET", f"/groups/{root}/attributes"), 200, {"attributes": list},
            {"self", "home", "owner"}, extra=lambda b: shape_problems(b["attributes"][0], akeys, "attributes[0].")
            + ([] if [a["name"] for a in b["attributes"]] == sorted(a["name"] for a in b["attributes"])
               else ["not sorted by name"]))
    for n in (2, 3, 5, 7):
        c.send("PUT", f"/groups/{root}/attributes/attr{n}", j({"type": "H5T_STD_U64LE", "value": n}), ctype=JSON)
    c.check("GET_Attributes ?Marker=attr2&Limit=5", c.send("GET", f"/groups/{root}/attributes",
                                                           params={"Marker": "attr2", "Limit": "5"}), 200,
            extra=lambda b: [] if [a["name"] for a in b["attributes"]] == ["attr3", "attr4", "attr5", "attr6", "attr7"]
            else [f"names {[a['name'] for a in b['attributes']]}"])
    c.check("PUT_Attribute on a dataset", c.send("PUT", f"/datasets/{did}/attributes/a", j({"type": "H5T_STD_I32LE",
                                                                                          "value": 1})), 201)
    c.check("PUT_Attribute on a datatype", c.send("PUT", f"/datatypes/{t2id}/attributes/a",
                                                  j({"type": "H5T_STD_I32LE", "value": 1})), 201)
    c.check("GET_Attributes of a datatype", c.send("GET", f"/datatypes/{t2id}/attributes"), 200, {"attributes": list})
    c.check("DELETE_Attribute", c.send("DELETE", f"/groups/{root}/attributes/attr4"), 200)
    c.check("GET deleted attribute (410)", c.send("GET", f"/groups/{root}/attributes/attr4"), 410)

    # --- Types/ examples ----------------------------------------------------------------------
    types: list[tuple[str, dict[str, Any], Any, Any]] = [
        ("fixed string scalar", {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII", "strPad": "H5T_STR_NULLPAD",
                                 "length": 40}, None, "Hello, World!"),
        ("vlen string [4]", vlen, [4], ["Hypermedia", "as the", "engine", "of state."]),
        ("compound scalar", {"class": "H5T_COMPOUND", "fields": [
            {"name": "real_part", "type": {"base": "H5T_IEEE_F64LE", "class": "H5T_FLOAT"}},
            {"name": "imaginary_part", "type": {"base": "H5T_IEEE_F64LE", "class": "H5T_FLOAT"}}]}, None,
         [1.2345, -2.468]),
        ("enum", {"class": "H5T_ENUM", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I16BE"},
                  "mapping": {"GAS": 2, "LIQUID": 1, "PLASMA": 3, "SOLID": 0}}, [7], [0, 2, 3, 2, 0, 1, 1]),
        ("array", {"class": "H5T_ARRAY", "base": {"class": "H5T_INTEGER", "base": "H5T_STD_I16BE"}, "dims": [2, 2]},
         [3], [[[1, 2], [3, 4]], [[2, 1], [4, 3]], [[1, 1], [4, 4]]]),
        ("object reference", {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_OBJ"}, [3],
         [f"groups/{g1id}", "", f"datasets/{did}"]),
    ]
    for name, typ, shape, value in types:
        body: dict[str, Any] = {"type": typ, "value": value}
        if shape is not None:
            body["shape"] = shape
        aname = name.replace(" ", "_")
        r = c.send("PUT", f"/groups/{root}/attributes/{aname}", j(body), ctype=JSON)
        c.check(f"Types: attribute {name}", r, 201)
        c.check(f"Types: attribute {name} read back", c.send("GET", f"/groups/{root}/attributes/{aname}"), 200,
                {"value": value})
        dbody = {"type": typ, **({"shape": shape} if shape is not None else {})}
        r = c.send("POST", "/datasets", j(dbody), ctype=JSON)
        if c.check(f"Types: dataset {name}", r, 201):
            dd = r.json()["id"]
            c.check(f"Types: dataset {name} written", c.send("PUT", f"/datasets/{dd}/value", j({"value": value}),
                                                             ctype=JSON), 200)
            c.check(f"Types: dataset {name} read back", c.send("GET", f"/datasets/{dd}/value"), 200, {"value": value})
    region = {"class": "H5T_REFERENCE", "base": "H5T_STD_REF_DSETREG"}
    c.check("Types: region reference dataset", c.send("POST", "/datasets", j({"type": region, "shape": [2]}),
                                                       ctype=JSON), 201)

    # --- AclOps -------------------------------------------------------------------------------
    c.check("GET_ACLs (domain)", c.send("GET", "/acls"), 200, {"acls": list}, {"self"},
            extra=acl_list)
    c.check("GET_ACL (domain)", c.send("GET", "/acls/test_user1"), 200, {"acl": {"userName": "test_user1", **ACL}})
    c.check("PUT_ACL (domain)", c.send("PUT", "/acls/test_user2", j({"read": True, "create": False, "update": False,
                                                                      "delete": False, "readACL": False,
                                                                      "updateACL": False}), ctype=JSON), 201)
    c.check("PUT_ACL Python-literal sample body (not JSON: 400)", c.send(
        "PUT", "/acls/test_user2", "{ 'read': True, 'create': False, 'update': False, 'delete': False, "
        "'readACL': False, 'updateACL': False }"), 400)
    c.check("GET_ACLs (group)", c.send("GET", f"/groups/{root}/acls"), 200, {"acls": list}, extra=acl_list)
    c.check("GET_ACL (group)", c.send("GET", f"/groups/{root}/acls/test_user1"), 200, {"acl": {"userName": "test_user1", **ACL}})
    c.check("PUT_ACL (group)", c.send("PUT", f"/groups/{g1id}/acls/test_user2", j({"read": True}), ctype=JSON), 201)
    c.check("GET_ACLs (dataset)", c.send("GET", f"/datasets/{did}/acls"), 200, {"acls": list}, extra=acl_list)
    c.check("GET_ACLs (datatype)", c.send("GET", f"/datatypes/{t2id}/acls"), 200, {"acls": list}, extra=acl_list)

    # --- errors (CommonErrorResponses) --------------------------------------------------------
    c.check("405 PUT /datasets/{id}/type", c.send("PUT", f"/datasets/{did}/type", j({})), 405)
    anon = requests.get(c.endpoint + "/", headers={"X-Hdf-domain": c.domain}, timeout=60)
    c.check("401 without credentials", anon, 401)
    c.check("404 unknown group", c.send("GET", f"/groups/g-{uuid.uuid4()}"), 404)

    # --- DELETE_Domain ------------------------------------------------------------------------
    c.check("DELETE_Domain", c.send("DELETE", "/"), 200)
    c.check("GET deleted domain (410)", c.send("GET", "/"), 410)
    c.check("DELETE folder", c.send("DELETE", "/", domain=folder), 200)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", help="a running h5lake with the test users (else one is started)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing checks too")
    args = ap.parse_args()
    workdir = None
    server = None
    try:
        endpoint = args.endpoint
        if not endpoint:
            workdir = Path(tempfile.mkdtemp(prefix="restdoc-"))
            server = start_server(workdir)
            endpoint = server.endpoint
        c = Checker(endpoint, args.verbose)
        home = "/home/test_user1"
        r = c.session.put(c.endpoint + "/", params={"domain": home, "folder": "1"}, timeout=60)
        assert r.status_code in (201, 409), r.text
        run(c, home)
    finally:
        if server is not None:
            server.stop()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{c.counts['OK']} OK, {c.counts['DIFF']} DIFF, {c.counts['FAIL']} FAIL")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
