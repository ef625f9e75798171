"""examples/21-typed on the real control plane: the generated CRD is accepted, Widgets are
defaulted and refused as the models say, and the operator handles them with typed kwargs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.live import LiveOperator
from tests.e2e.test_examples_more_e2e import until

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

FOLDER = Path(__file__).parents[2] / "examples" / "21-typed"
EXAMPLE = str(FOLDER / "example.py")


def apply_widget(plane: LocalControlPlane, namespace: str, name: str, spec: dict[str, Any]) -> str:
    body = {
        "apiVersion": "demo.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return kubectl(plane, "apply", "-f", "-", stdin=json.dumps(body))


def get_widget(plane: LocalControlPlane, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        kubectl(plane, "get", "widgets", name, "-n", namespace, "-o", "json")
    )
    return found


def test_the_generated_crd_defaults_widgets_as_the_model_says(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, widget_crd: str
) -> None:
    apply_widget(anyop_controlplane, anyop_namespace, "w", {"replicas": 2})
    widget = get_widget(anyop_controlplane, anyop_namespace, "w")
    assert widget["spec"] == {"replicas": 2, "engine": "postgres", "settings": {}}
    table = kubectl(anyop_controlplane, "get", "wd", "-n", anyop_namespace)
    assert table.split("\n")[0].split()[:3] == ["NAME", "REPLICAS", "ENGINE"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": 50}, "spec.replicas"),
        ({"engine": "oracle"}, "spec.engine"),
        ({"settings": {"a": 1}}, "spec.settings.a"),
    ],
)
def test_kubectl_refuses_a_bad_widget_naming_the_field(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    widget_crd: str,
    spec: dict[str, Any],
    field: str,
) -> None:
    with pytest.raises(AssertionError, match=field.replace(".", r"\.")):
        apply_widget(anyop_controlplane, anyop_namespace, "bad", spec)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_typed_example_keeps_its_configmaps_and_reports_a_typed_status(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, widget_crd: str, backend: str
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = LiveOperator(plane, EXAMPLE, ns, backend, "--verbose")
    try:
        apply_widget(plane, ns, "w", {"replicas": 2, "engine": "mysql"})
        status = until(lambda: get_widget(plane, ns, "w").get("status", {}).get("replicas"), "2")
        assert status == 2
        names = kubectl(plane, "get", "configmaps", "-n", ns, "-o", "name")
        assert {"configmap/w-0", "configmap/w-1"} <= set(names.split())
        apply_widget(plane, ns, "over", {"replicas": 3, "maxReplicas": 1})
        operator.wait_for("replicas 3 exceed maxReplicas 1", timeout=60)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert f"[{ns}/w] Created w-0 for mysql." in output
    assert "Traceback" not in output, output
