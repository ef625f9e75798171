"""The manifests as files, the Deployment's command line, and `anyop manifests` itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.manifests.files import differences, manifest_files, typed_resources
from anyop.manifests.options import ManifestOptions
from anyop.manifests.workloads import command_line, deployment, service


class ToolSpec(anyop.Model):
    size: int = 1


class Tool(anyop.CustomResource, group="demo.example.com", version="v1", kind="Tool"):
    spec: ToolSpec


def handler(**_: Any) -> None: ...


def test_typed_resources_are_found_once_each_across_handler_kinds() -> None:
    registry = OperatorRegistry()
    anyop.on.create(Tool, registry=registry)(handler)
    anyop.on.update(Tool, registry=registry)(handler)
    anyop.on.create("pods", registry=registry)(handler)
    assert typed_resources(registry) == [Tool]


def test_the_files_are_crds_rbac_and_the_deployment() -> None:
    registry = OperatorRegistry()
    anyop.on.create(Tool, registry=registry)(handler)
    files = manifest_files(registry, ManifestOptions(namespaces=("demo",)))
    assert sorted(files) == ["crds.yaml", "deployment.yaml", "rbac.yaml"]
    [crd] = yaml.safe_load_all(files["crds.yaml"])
    assert crd["metadata"]["name"] == "tools.demo.example.com"
    kinds = [doc["kind"] for doc in yaml.safe_load_all(files["rbac.yaml"])]
    assert kinds[0] == "ServiceAccount"
    assert all("&id" not in text for text in files.values())  # no YAML aliases


def test_without_typed_resources_there_is_no_crds_file() -> None:
    registry = OperatorRegistry()
    anyop.on.create("pods", registry=registry)(handler)
    assert "crds.yaml" not in manifest_files(registry, ManifestOptions(namespaces=("demo",)))


def test_the_command_line_mirrors_the_options() -> None:
    options = ManifestOptions(
        namespaces=("demo",),
        sources=("ops/app.py",),
        modules=("more",),
        peering=False,
        sharding=True,
        metrics_port=8443,
    )
    assert command_line(options) == [
        "anyop",
        "run",
        "/src/app.py",
        "--module=more",
        "--namespace=demo",
        "--standalone",
        "--shards=auto",
        "--lease-name=anyop-operator",
        "--liveness=http://0.0.0.0:8080/healthz",
        "--metrics=https://0.0.0.0:8443/metrics",
        "--log-format=json",
    ]


def test_the_deployment_probes_the_health_endpoints_and_names_its_ports() -> None:
    options = ManifestOptions(clusterwide=True, metrics_port=8443, webhook_port=9443)
    [container] = deployment(options)["spec"]["template"]["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert [port["name"] for port in container["ports"]] == ["probes", "metrics", "webhooks"]
    assert "--all-namespaces" in container["command"]
    webhooks = service(options)
    assert webhooks is not None
    assert webhooks["spec"]["ports"] == [
        {"name": "webhooks", "port": 443, "targetPort": "webhooks"}
    ]


def test_without_probes_or_webhooks_there_are_no_probes_and_no_service() -> None:
    options = ManifestOptions(namespaces=("demo",), probes_port=None)
    [container] = deployment(options)["spec"]["template"]["spec"]["containers"]
    assert "livenessProbe" not in container
    assert "ports" not in container
    assert service(options) is None


def test_differences_are_a_unified_diff_and_empty_when_equal() -> None:
    assert differences({"a.yaml": "x\n"}, {"a.yaml": "x\n"}) == ""
    diff = differences({"a.yaml": "x\ny\n"}, {"a.yaml": "x\n"})
    assert "--- a/a.yaml" in diff
    assert "+y" in diff
    missing = differences({"b.yaml": "z\n"}, {"b.yaml": None})
    assert "--- /dev/null" in missing
    assert "+z" in missing


APP = """
import anyop


class GadgetSpec(anyop.Model):
    size: int = 1


class Gadget(anyop.CustomResource, group="demo.example.com", version="v1", kind="Gadget"):
    spec: GadgetSpec


@anyop.on.create(Gadget)
def created(**_):
    pass
"""


def anyop_manifests(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "anyop", "manifests", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def test_the_command_writes_the_files_and_check_passes_on_them(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    written = anyop_manifests("app.py", "-n", "demo", "--out", "deploy", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert sorted(p.name for p in (tmp_path / "deploy").iterdir()) == [
        "crds.yaml",
        "deployment.yaml",
        "rbac.yaml",
    ]
    checked = anyop_manifests("app.py", "-n", "demo", "--out", "deploy", "--check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_check_fails_with_a_diff_when_the_files_differ(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    anyop_manifests("app.py", "-n", "demo", "--out", "deploy", cwd=tmp_path)
    rbac = tmp_path / "deploy" / "rbac.yaml"
    rbac.write_text(rbac.read_text().replace("- patch\n", ""))
    checked = anyop_manifests("app.py", "-n", "demo", "--out", "deploy", "--check", cwd=tmp_path)
    assert checked.returncode == 1
    assert "+  - patch" in checked.stdout
    assert "not up to date" in checked.stderr


def test_bad_options_fail_with_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    result = anyop_manifests("app.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("anyop: The manifests need either namespaces")


KOPF_APP = """
import anyop


@anyop.on.create("kex")
def created(**_):
    pass
"""


def test_crds_given_with_crd_name_the_resources_of_string_selectors(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(KOPF_APP)
    crds = Path(__file__).parents[3] / "examples" / "crd.yaml"
    args = ("app.py", "-n", "demo", "--out", "deploy", "--crd", str(crds))
    assert anyop_manifests(*args, cwd=tmp_path).returncode == 0
    rbac = (tmp_path / "deploy" / "rbac.yaml").read_text()
    assert "- kopfexamples/status" in rbac
    assert not (tmp_path / "deploy" / "crds.yaml").exists()
    refused = anyop_manifests("app.py", "-n", "demo", "--out", "deploy", cwd=tmp_path)
    assert refused.returncode == 1
    assert "the resource 'kex' is unknown" in refused.stderr
    missing = anyop_manifests("app.py", "-n", "demo", "--crd", "nowhere.yaml", cwd=tmp_path)
    assert missing.stderr.startswith("anyop: Cannot read the CRDs in nowhere.yaml")
