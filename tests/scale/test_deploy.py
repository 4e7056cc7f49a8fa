"""The deployment files hang together: no Docker engine or cluster here, so check what a
reader of them would (``kubectl apply --dry-run`` and ``hadolint`` are the next step up).

* every manifest parses and names its kind; the Deployment's selector, Service and probes agree;
* every ConfigMap key is an ``H5LAKE_*`` variable of a ``Settings`` field and the values load;
* the container args are options ``h5lake serve --help`` lists;
* the Dockerfile builds from python:3.11-slim, installs the package, runs ``h5lake serve`` on
  0.0.0.0 as a non-root user, and exposes the port the pods use.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from h5lake.config import Settings

pytestmark = pytest.mark.slow  # deployment images and manifests: minutes, left to CI by -m "not slow"

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
DOCKERFILE = REPO / "deploy" / "Dockerfile"


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is None:
                continue
            assert {"apiVersion", "kind"} <= doc.keys(), path
            if doc["kind"] == "Kustomization":
                listed = set(doc["resources"])
                assert listed == {p.name for p in K8S.glob("*.yaml")} - {path.name}, "kustomization misses a file"
                continue
            name = doc["metadata"]["name"]
            assert (doc["kind"], name) not in found, f"{doc['kind']} {name} twice"
            found[(doc["kind"], name)] = doc
    return found


@pytest.fixture(scope="module")
def k8s() -> dict[tuple[str, str], dict[str, Any]]:
    return manifests()


def container(k8s: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    (spec,) = [d["spec"]["template"]["spec"] for (kind, _), d in k8s.items() if kind == "Deployment"]
    (c,) = spec["containers"]
    return dict(c)


def test_deployment_service_and_probes_agree(k8s: dict[tuple[str, str], dict[str, Any]]) -> None:
    (deployment,) = [d for (kind, _), d in k8s.items() if kind == "Deployment"]
    assert deployment["apiVersion"] == "apps/v1"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert deployment["spec"]["replicas"] >= 2, "the point is several identical pods"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    c = container(k8s)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = c[probe]["httpGet"]
        assert get["path"] == path
        assert get["port"] in ports or get["port"] in ports.values()
    (service,) = [d for (kind, _), d in k8s.items() if kind == "Service"]
    assert service["spec"]["selector"].items() <= labels.items()
    for port in service["spec"]["ports"]:
        assert port["targetPort"] in ports or port["targetPort"] in ports.values()
    # Everything the pod refers to exists.
    for source in c["envFrom"]:
        kind, ref = ("ConfigMap", source["configMapRef"]) if "configMapRef" in source else ("Secret", source["secretRef"])
        assert (kind, ref["name"]) in k8s, f"{kind} {ref['name']} is not defined"
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in c["volumeMounts"]:
        assert mount["name"] in volumes
    for v in volumes.values():
        if "secret" in v:
            secret = k8s[("Secret", v["secret"]["secretName"])]
            for item in v["secret"].get("items", []):
                assert item["key"] in secret["stringData"]


def test_settings_are_settings(k8s: dict[tuple[str, str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
                               tmp_path: Path) -> None:
    (config,) = [d for (kind, _), d in k8s.items() if kind == "ConfigMap"]
    fields = {f"H5LAKE_{name.upper()}" for name in Settings.model_fields}
    unknown = set(config["data"]) - fields
    assert not unknown, f"not settings: {unknown}"
    for key, value in config["data"].items():
        assert isinstance(value, str), f"{key}: ConfigMap values are strings"
        monkeypatch.setenv(key, value)
    # The passwd file is mounted from the Secret at the path the ConfigMap names.
    c = container(k8s)
    mounted = {m["mountPath"].rstrip("/") + "/" + item["path"]
               for m in c["volumeMounts"]
               for v in k8s[("Deployment", "h5lake")]["spec"]["template"]["spec"]["volumes"]
               if v["name"] == m["name"] and "secret" in v
               for item in v["secret"]["items"]}
    assert config["data"]["H5LAKE_PASSWD"] in mounted
    stand_in = tmp_path / "passwd"
    stand_in.write_text("admin:x\n")
    monkeypatch.setenv("H5LAKE_PASSWD", str(stand_in))
    settings = Settings()
    assert settings.storage and settings.storage.startswith("s3://")
    assert settings.admin == ("admin",)
    # The credentials are the standard AWS variables, which the S3 backend reads.
    secret_keys = {k for (kind, _), d in k8s.items() if kind == "Secret" for k in d.get("stringData", {})}
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= secret_keys


def serve_options() -> set[str]:
    out = subprocess.run([sys.executable, "-m", "h5lake.cli.command", "serve", "--help"], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"^\s+(--[a-z0-9-]+)", out, re.MULTILINE))


def test_container_args_are_serve_options(k8s: dict[tuple[str, str], dict[str, Any]]) -> None:
    options = serve_options()
    args = container(k8s)["args"]
    assert args[0] == "serve"
    assert {a for a in args if a.startswith("--")} <= options
    assert args[args.index("--host") + 1] == "0.0.0.0"
    port = int(args[args.index("--port") + 1])
    assert port in {p["containerPort"] for p in container(k8s)["ports"]}


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_structure(k8s: dict[tuple[str, str], dict[str, Any]]) -> None:
    steps = dockerfile()
    words = [w for w, _ in steps]
    assert steps[0] == ("FROM", "python:3.11-slim")
    assert "ADD" not in words, "COPY, not ADD"
    for word, rest in steps:
        if word == "COPY":
            *sources, _ = shlex.split(rest)
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: no such file in the build context"
        if word == "RUN" and "pip install" in rest:
            assert "--no-cache-dir" in rest and re.search(r"pip install [^&]*\s\.(\s|$)", rest)
    users = [rest for word, rest in steps if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    last_run = max(i for i, w in enumerate(words) if w == "RUN")
    assert words.index("USER") > last_run, "every RUN as root, then drop to the user"
    (entry,) = [rest for word, rest in steps if word == "ENTRYPOINT"]
    (cmd,) = [rest for word, rest in steps if word == "CMD"]
    argv = yaml.safe_load(entry) + yaml.safe_load(cmd)  # JSON (exec) form
    assert argv[:2] == ["h5lake", "serve"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    assert {a for a in argv[2:] if a.startswith("--")} <= serve_options()
    exposed = {int(p.split("/")[0]) for word, rest in steps if word == "EXPOSE" for p in rest.split()}
    assert int(argv[argv.index("--port") + 1]) in exposed
    assert exposed <= {p["containerPort"] for p in container(k8s)["ports"]}
    # The image's non-root uid is the one the pods require.
    pod = k8s[("Deployment", "h5lake")]["spec"]["template"]["spec"]
    assert str(pod["securityContext"]["runAsUser"]) == users[-1].split(":")[0]
