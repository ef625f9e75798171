"""HorizontalPodAutoscalers converted between ``autoscaling/v1`` and ``autoscaling/v2`` as
Kubernetes' Go conversion functions convert them (pure)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from anyop.testing.fake.autoscaling_conversion import hpa_converted, hpa_to_v1, hpa_to_v2
from anyop.testing.fake.conversions import for_storage, in_version, storage_version, written
from anyop.testing.fake.kinds import BUILTIN_KINDS, Kind

REF = {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"}
CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
}
PODS = {"type": "Pods", "pods": {
    "metric": {"name": "qps", "selector": {"matchLabels": {"b": "2", "a": "1"}}},
    "target": {"type": "AverageValue", "averageValue": "1500m"}}}  # fmt: skip
METRICS = "autoscaling.alpha.kubernetes.io/metrics"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"


def _v2(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5,
                 **copy.deepcopy(spec)},
        "status": {"desiredReplicas": 0, "currentMetrics": None},
    }  # fmt: skip


def _v1(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "a", "namespace": "n"}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": metadata,
        "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5, **spec},
        "status": {"currentReplicas": 0, "desiredReplicas": 0},
    }  # fmt: skip


def _kind(version: str) -> Kind:
    return next(k for k in BUILTIN_KINDS if k.kind == "HorizontalPodAutoscaler"
                and k.version == version)  # fmt: skip


def test_v2_to_v1_keeps_the_cpu_target_and_writes_the_rest_in_annotations() -> None:
    obj = _v2(metrics=[CPU, PODS], behavior={"scaleDown": {"selectPolicy": "Min"}})
    obj["metadata"]["annotations"] = {"keep": "me", METRICS: "stale", CONDITIONS: "[]"}
    v1 = hpa_to_v1(obj)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 60}  # fmt: skip
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert v1["metadata"]["annotations"] == {
        "keep": "me",
        METRICS: '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1500m",'
                 '"selector":{"matchLabels":{"a":"1","b":"2"}}}}]',
        BEHAVIOR: '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":null,'
                  '"SelectPolicy":"Min","Policies":null,"Tolerance":null}}',
    }  # fmt: skip
    assert obj["metadata"]["annotations"][METRICS] == "stale"  # the object given is unchanged


def test_v2_to_v1_writes_the_status_metrics_and_conditions() -> None:
    obj = _v2()
    obj["status"] = {
        "currentReplicas": 2, "desiredReplicas": 3,
        "currentMetrics": [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": 55}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": None,
                        "message": "a<b"}],
    }  # fmt: skip
    v1 = hpa_to_v1(obj)
    assert v1["status"] == {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentCPUUtilizationPercentage": 55,
    }
    assert v1["metadata"]["annotations"] == {
        CURRENT: '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":55,'
                 '"currentAverageValue":"0"}}]',
        CONDITIONS: '[{"type":"AbleToScale","status":"True","lastTransitionTime":null,'
                    '"message":"a\\u003cb"}]',
    }  # fmt: skip


def test_v1_to_v2_reads_the_annotations_then_the_cpu_target() -> None:
    others = [
        {
            "type": "Object",
            "object": {
                "target": {"kind": "Service", "name": "s"},
                "metricName": "hits",
                "targetValue": "0",
                "averageValue": "3",
            },
        },
        {"type": "External", "external": {"metricName": "q", "targetValue": "1000"}},
    ]
    behavior = '{"scaleUp": {"stabilizationwindowseconds": 5}, "Unknown": 1}'
    v2 = hpa_to_v2(_v1({METRICS: json.dumps(others), BEHAVIOR: behavior},
                       targetCPUUtilizationPercentage=40))  # fmt: skip
    assert v2["metadata"] == {"name": "a", "namespace": "n"}
    assert v2["spec"]["metrics"] == [
        {"type": "Object", "object": {
            "describedObject": {"kind": "Service", "name": "s"},
            "target": {"type": "AverageValue", "averageValue": "3"},
            "metric": {"name": "hits"}}},
        {"type": "External", "external": {
            "metric": {"name": "q"}, "target": {"type": "Value", "value": "1k"}}},
        {"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 40}}},
    ]  # fmt: skip
    assert v2["spec"]["behavior"] == {"scaleUp": {"stabilizationWindowSeconds": 5}}
    assert v2["status"] == {"desiredReplicas": 0, "currentMetrics": None}


@pytest.mark.parametrize(
    "annotations",
    [
        {METRICS: "[{"}, {METRICS: '[{"type": 1}]'}, {METRICS: "{}"},
        {METRICS: '[{"pods": {"targetAverageValue": "x"}}]'},
        {BEHAVIOR: '{"ScaleUp": {"StabilizationWindowSeconds": 1.5}}'},
        {BEHAVIOR: "{}"}, {BEHAVIOR: '{"ScaleUp": null}'},
        {CONDITIONS: '[{"lastTransitionTime": "x"}]'},
    ],
)  # fmt: skip
def test_annotations_that_do_not_decode_are_ignored(annotations: dict[str, str]) -> None:
    v2 = hpa_to_v2(_v1(annotations))
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]  # fmt: skip
    assert "behavior" not in v2["spec"]
    assert "conditions" not in v2["status"]
    assert "annotations" not in v2["metadata"]


def test_a_round_trip_through_v1_keeps_what_v2_holds() -> None:
    obj = _v2(metrics=[CPU, PODS], behavior={
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "tolerance": "50m",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}})  # fmt: skip
    back = hpa_to_v2(hpa_to_v1(obj))
    assert back["spec"]["behavior"] == obj["spec"]["behavior"]
    assert back["spec"]["metrics"] == [PODS, CPU]  # the CPU target comes last
    assert back["metadata"] == obj["metadata"]


def test_converted_keeps_an_object_already_of_the_version() -> None:
    obj = _v2()
    assert hpa_converted(obj, "v2") is obj
    assert hpa_converted(obj, "v1")["apiVersion"] == "autoscaling/v1"
    assert hpa_converted({**_v1(), "apiVersion": None}, "v2")["apiVersion"] == "autoscaling/v2"


def test_stored_in_v2_with_its_defaults() -> None:
    v1 = _kind("v1")
    assert storage_version(v1) == storage_version(_kind("v2")) == "v2"
    stored = for_storage(v1, _v1({BEHAVIOR: '{"ScaleDown": {"SelectPolicy": "Min"}}'}))
    assert stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
    assert stored["spec"]["behavior"]["scaleUp"]["policies"][0] == {
        "type": "Pods", "value": 4, "periodSeconds": 15}  # fmt: skip
    assert stored["spec"]["behavior"]["scaleDown"]["selectPolicy"] == "Min"
    assert in_version(v1, stored)["metadata"]["annotations"][BEHAVIOR].startswith('{"ScaleUp":{')
    assert for_storage(_kind("v2"), stored) is stored


def test_a_v1_write_keeps_the_stored_status_or_spec() -> None:
    v1 = _kind("v1")
    old = _v2(metrics=[PODS])
    old["status"] = {"desiredReplicas": 2, "currentMetrics": None,
                     "conditions": [{"type": "ScalingActive", "status": "False",
                                     "lastTransitionTime": None}]}  # fmt: skip
    new = hpa_to_v1(old)
    new["metadata"].pop("annotations")  # a PUT without them: the metrics go, the status stays
    assert written(v1, new, old=old)["status"] == old["status"]
    assert written(v1, new, old=old)["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]  # fmt: skip
    status = written(v1, new, old=old, request=new, subresource="status")
    assert status["spec"] == old["spec"]
    assert status["status"] == {"desiredReplicas": 2, "currentMetrics": None}
    created = written(v1, hpa_to_v1(old), old=None)
    assert created["status"] == {"desiredReplicas": 2, "currentMetrics": None}
