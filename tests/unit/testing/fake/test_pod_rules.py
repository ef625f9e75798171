"""A workload's pod template checked as kube-apiserver checks it (pure)."""

from __future__ import annotations

import copy
from typing import Any

from anyop.testing.fake.pod_rules import workload_causes

DEPLOYMENT: dict[str, Any] = {
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
             "template": {"metadata": {"labels": {"app": "d"}},
                          "spec": {"containers": [{"name": "app", "image": "nginx",
                                                   "ports": [{"containerPort": 80,
                                                              "protocol": "TCP"}]}],
                                   "restartPolicy": "Always"}}},
}  # fmt: skip


def _with(**container: Any) -> dict[str, Any]:
    body = copy.deepcopy(DEPLOYMENT)
    body["spec"]["template"]["spec"]["containers"][0].update(container)
    return body


def _fields(causes: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [f"{field}: {cause['message']}" for field, cause in causes]


def test_a_valid_deployment_has_no_errors() -> None:
    assert workload_causes("Deployment", DEPLOYMENT) == []


def test_containers_are_checked_in_kubernetes_order() -> None:
    body = _with(image="", ports=[{"containerPort": 70000, "protocol": "HTTP"}],
                 env=[{"name": ""}], resources={"requests": {"cpu": "-1"}})  # fmt: skip
    prefix = "spec.template.spec.containers[0]"
    assert _fields(workload_causes("Deployment", body)) == [
        f"{prefix}.image: Required value",
        f"{prefix}.ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, "
        "inclusive",
        f'{prefix}.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", '
        '"TCP", "UDP"',
        f"{prefix}.env[0].name: Required value",
        f'{prefix}.resources.requests[cpu]: Invalid value: "-1": must be greater than or '
        "equal to 0",
    ]


def test_requests_may_not_exceed_limits() -> None:
    body = _with(resources={"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}})
    assert _fields(workload_causes("Deployment", body)) == [
        'spec.template.spec.containers[0].resources.requests: Invalid value: "2Gi": must be '
        "less than or equal to memory limit of 1Gi"
    ]


def test_the_selector_must_select_the_templates_labels() -> None:
    body = copy.deepcopy(DEPLOYMENT)
    body["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In",
                                                       "values": ["other"]}]}  # fmt: skip
    assert _fields(workload_causes("Deployment", body)) == [
        'spec.template.metadata.labels: Invalid value: {"app":"d"}: `selector` does not match '
        "template `labels`"
    ]


def test_negative_replicas_and_an_unknown_strategy() -> None:
    body = copy.deepcopy(DEPLOYMENT)
    body["spec"].update(replicas=-1, strategy={"type": "Bogus"})
    assert _fields(workload_causes("Deployment", body)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.strategy: Unsupported value: {"Type":"Bogus","RollingUpdate":null}: supported '
        'values: "Recreate", "RollingUpdate"',
    ]


def test_a_pod_needs_containers_with_unique_valid_names() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "x"},
                                   {"name": "Bad", "image": "x"}],
                    "restartPolicy": "Always"}}  # fmt: skip
    assert [field for field, _ in workload_causes("Pod", pod)] == [
        "spec.containers[1].name",
        "spec.containers[2].name",
    ]
    assert workload_causes("Pod", {"spec": {"restartPolicy": "Always"}}) == [
        ("spec.containers", {"reason": "FieldValueRequired", "message": "Required value"})
    ]
