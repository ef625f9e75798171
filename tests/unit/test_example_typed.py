"""examples/21-typed on FakeCluster with its generated CRD: typed kwargs, defaults, refusals;
its manifests are up to date, and it passes ``mypy --strict``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from anyop.handlers.registry import OperatorRegistry, get_default_registry, set_default_registry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, RunningOperator
from anyop.testing.fake.statuses import StatusError

ROOT = Path(__file__).parents[2]
FOLDER = ROOT / "examples" / "21-typed"
WIDGETS = Resource("demo.example.com", "v1", "widgets", kind="Widget")
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")


def load_example(registry: OperatorRegistry) -> ModuleType:
    """The example's module, its handlers in ``registry`` (not in the default one)."""
    previous = get_default_registry()
    set_default_registry(registry)
    try:
        spec = importlib.util.spec_from_file_location("example_21_typed", FOLDER / "example.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        set_default_registry(previous)


REGISTRY = OperatorRegistry()
EXAMPLE = load_example(REGISTRY)


@pytest.fixture
def anyop_registry() -> OperatorRegistry:
    return REGISTRY


@pytest.fixture
def fake_cluster(fake_cluster: FakeCluster) -> FakeCluster:
    fake_cluster.install(EXAMPLE.Widget)
    return fake_cluster


async def configmap_names(operator: RunningOperator) -> list[str]:
    url = operator.url(CONFIGMAPS)
    items = (await operator.api.get(url)).json()["items"]
    return sorted(item["metadata"]["name"] for item in items if item["metadata"].get("labels"))


@pytest.mark.anyio
@pytest.mark.fake_time
async def test_a_widget_gets_its_configmaps_and_its_typed_status(
    fake_operator: RunningOperator,
) -> None:
    await fake_operator.create(WIDGETS, {"metadata": {"name": "w"}, "spec": {"replicas": 2}})
    done = await fake_operator.wait_for(
        WIDGETS, "w", lambda obj: obj.get("status", {}).get("replicas")
    )
    assert done["spec"]["engine"] == "postgres"  # defaulted by the generated CRD
    assert done["status"]["replicas"] == 2
    assert await configmap_names(fake_operator) == ["w-0", "w-1"]


@pytest.mark.anyio
@pytest.mark.fake_time
async def test_a_widget_that_breaks_a_rule_across_fields_fails_with_an_event(
    fake_operator: RunningOperator,
) -> None:
    body = {"metadata": {"name": "w"}, "spec": {"replicas": 3, "maxReplicas": 1}}
    await fake_operator.create(WIDGETS, body)
    line = await fake_operator.wait_for_log("failed permanently")
    assert "replicas 3 exceed maxReplicas 1" in line
    url = f"/api/v1/namespaces/{fake_operator.namespace}/events"
    events = (await fake_operator.api.get(url)).json()["items"]
    assert [event["reason"] for event in events if event["reason"] == "Invalid"] == ["Invalid"]
    assert await configmap_names(fake_operator) == []


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": 11}, "spec.replicas"),
        ({"engine": "oracle"}, "spec.engine"),
        ({"maxReplicas": -1}, "spec.maxReplicas"),
        ({"settings": {"a": 1}}, "spec.settings.a"),
    ],
)
def test_the_generated_crd_refuses_bad_widgets_naming_the_field(
    fake_cluster: FakeCluster, spec: dict[str, Any], field: str
) -> None:
    body = {"apiVersion": "demo.example.com/v1", "kind": "Widget", "spec": spec}
    with pytest.raises(StatusError) as info:
        fake_cluster.create({**body, "metadata": {"name": "bad", "namespace": "default"}})
    assert field in str(info.value)


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=False
    )


def test_the_examples_manifests_are_what_anyop_manifests_writes() -> None:
    example, out = str(FOLDER / "example.py"), str(FOLDER / "manifests")
    result = run(
        sys.executable,
        "-m",
        "anyop",
        "manifests",
        example,
        "-n",
        "default",
        "--out",
        out,
        "--check",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_example_passes_mypy_strict() -> None:
    pytest.importorskip("mypy")  # a dev tool: not in the oldest-versions environment
    result = run(sys.executable, "-m", "mypy", "--strict", str(FOLDER / "example.py"))
    assert result.returncode == 0, result.stdout + result.stderr
