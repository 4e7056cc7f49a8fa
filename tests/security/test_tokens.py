"""API keys and OpenID Connect bearer tokens, through real servers and the real h5pyd client."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import h5pyd
import jwt
import numpy as np
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.support.server import Server, launch, start_server

AUDIENCE = "h5lake-test"


def h5lake(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    return subprocess.run([sys.executable, "-m", "h5lake.cli.command", *args], check=False, capture_output=True, text=True,
                          env=env, timeout=60)


# --- API keys -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def key_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("keys"), env={"H5LAKE_APIKEY_CACHE_SECONDS": "0"})
    yield srv
    srv.stop()


def test_api_key_lifecycle_with_h5pyd(key_server: Server) -> None:
    created = h5lake("apikey", "create", "test_user1", "--note", "laptop", "--data", str(key_server.data))
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("h5l_") and len(key) > 40

    # the store keeps only the key's hash
    stored = list((key_server.data / ".h5lake" / "apikeys").iterdir())
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert [p.name for p in stored] == [digest]
    assert key not in stored[0].read_text()

    ep = key_server.endpoint
    folder = "/home/test_user1/"
    h5pyd.Folder(folder, mode="w", endpoint=ep, username="test_user1", password="test1-pw")
    name = f"{folder}{uuid.uuid4().hex}.h5"
    with h5pyd.File(name, "w", endpoint=ep, api_key=key) as f:
        f.create_dataset("x", data=np.arange(5))
    with h5pyd.File(name, "r", endpoint=ep, username="test_user1", password="test1-pw") as f:
        assert f["x"][:].tolist() == [0, 1, 2, 3, 4]
        assert f.owner == "test_user1"

    listed = h5lake("apikey", "list", "--data", str(key_server.data))
    assert listed.returncode == 0
    assert digest[:16] in listed.stdout and "test_user1" in listed.stdout and "laptop" in listed.stdout
    assert key not in listed.stdout

    bad = requests.get(ep + "/", params={"domain": name}, headers={"Authorization": "Bearer h5l_" + "x" * 43}, timeout=10)
    assert bad.status_code == 401 and "API key" in bad.json()["error"]["message"]

    revoked = h5lake("apikey", "revoke", digest[:12], "--data", str(key_server.data))
    assert revoked.returncode == 0, revoked.stderr
    gone = requests.get(ep + "/", params={"domain": name}, headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert gone.status_code == 401


def test_key_store_is_not_a_domain(key_server: Server) -> None:
    h5lake("apikey", "create", "test_user2", "--data", str(key_server.data))
    listing = requests.get(key_server.endpoint + "/domains", params={"domain": "/"}, auth=("admin", "admin-pw"), timeout=10)
    assert listing.status_code == 200
    assert all(".h5lake" not in d["name"] for d in listing.json()["domains"])
    probe = requests.get(key_server.endpoint + "/", params={"domain": "/.h5lake/apikeys"}, auth=("admin", "admin-pw"), timeout=10)
    assert probe.status_code in (400, 404)


def test_revoke_needs_a_real_prefix(key_server: Server) -> None:
    assert h5lake("apikey", "revoke", "ab", "--data", str(key_server.data)).returncode != 0
    missing = h5lake("apikey", "revoke", "0" * 16, "--data", str(key_server.data))
    assert missing.returncode != 0 and "no key" in missing.stderr


# --- OpenID Connect -------------------------------------------------------------------------


class Issuer:
    """A minimal OpenID provider on a loopback port: a discovery document and a JWKS."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        documents: dict[str, Any] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = documents.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body or {}).encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # a port of its own, bound at once
        self.port = self.http.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid="k1", use="sig", alg="RS256")
        documents["/.well-known/openid-configuration"] = {"issuer": self.url, "jwks_uri": self.url + "/jwks"}
        documents["/jwks"] = {"keys": [jwk]}
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def token(self, user: str, *, key: Any = None, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": AUDIENCE, "iat": now, "exp": now + 300, "preferred_username": user}
        body.update(claims)
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": kid})


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    found = Issuer()
    yield found
    found.http.shutdown()


@pytest.fixture(scope="module")
def oidc_server(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that takes tokens of ``issuer`` and no passwords (no --passwd: Basic is refused)."""
    work = tmp_path_factory.mktemp("oidc")
    env = {k: v for k, v in os.environ.items() if not k.startswith("H5LAKE_")}
    started = launch(work, lambda port: [
        sys.executable, "-m", "h5lake.cli.command", "serve", "--data", str(work / "data"), "--port", str(port),
        "--oidc-issuer", issuer.url, "--oidc-audience", AUDIENCE,
        "--oidc-admin-claim", "groups", "--oidc-admin-value", "h5lake-admins", "--workers", "1",
    ], env=env)
    srv = Server(started.endpoint, work / "data", started.process, started.log)
    yield srv
    srv.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_h5pyd_with_an_oidc_token(issuer: Issuer, oidc_server: Server) -> None:
    ep = oidc_server.endpoint
    admin = issuer.token("boss", groups=["staff", "h5lake-admins"])
    alice = issuer.token("alice", groups=["staff"])
    bob = issuer.token("bob")
    # a user makes their own home folder, not someone else's
    made = requests.put(ep + "/", params={"domain": "/home/alice/"}, json={"folder": 1}, headers=bearer(alice), timeout=10)
    assert made.status_code == 201, made.text
    other = requests.put(ep + "/", params={"domain": "/home/carol/"}, json={"folder": 1}, headers=bearer(alice), timeout=10)
    assert other.status_code == 403
    name = f"/home/alice/{uuid.uuid4().hex}.h5"
    with h5pyd.File(name, "w", endpoint=ep, api_key=alice) as f:
        f.attrs["who"] = "alice"
    with h5pyd.File(name, "r", endpoint=ep, api_key=alice) as f:
        assert f.attrs["who"] == "alice" and f.owner == "alice"
    # the admin claim grants what --admin grants: reading another user's private domain
    assert requests.get(ep + "/", params={"domain": name}, headers=bearer(bob), timeout=10).status_code == 403
    assert requests.get(ep + "/", params={"domain": name}, headers=bearer(admin), timeout=10).status_code == 200
    about = requests.get(ep + "/about", headers=bearer(alice), timeout=10).json()
    assert about["username"] == "alice" and not about.get("isadmin")
    assert requests.get(ep + "/about", headers=bearer(admin), timeout=10).json().get("isadmin")


@pytest.mark.parametrize(
    "case",
    ["expired", "audience", "issuer", "signature", "unknown_kid", "none_alg", "garbage", "basic"],
)
def test_bad_tokens_are_refused(issuer: Issuer, oidc_server: Server, case: str) -> None:
    now = int(time.time())
    headers = {
        "expired": lambda: bearer(issuer.token("alice", exp=now - 3600, iat=now - 7200)),
        "audience": lambda: bearer(issuer.token("alice", aud="someone-else")),
        "issuer": lambda: bearer(issuer.token("alice", iss="http://127.0.0.1:1/evil")),
        "signature": lambda: bearer(issuer.token("alice", key=issuer.other_key)),
        "unknown_kid": lambda: bearer(issuer.token("alice", kid="k9")),
        "none_alg": lambda: bearer(jwt.encode({"iss": issuer.url, "aud": AUDIENCE, "exp": now + 60,
                                               "preferred_username": "alice"}, key=None, algorithm="none")),
        "garbage": lambda: bearer("a.b.c"),
        "basic": lambda: {"Authorization": "Basic YWxpY2U6eA=="},
    }[case]()
    reply = requests.get(oidc_server.endpoint + "/about", headers=headers, timeout=10)
    assert reply.status_code == 401, (case, reply.text)
    assert reply.json()["error"]["message"]
    # and the server is still fine
    assert requests.get(oidc_server.endpoint + "/about", headers=bearer(issuer.token("alice")), timeout=10).status_code == 200
