"""Conformance: HorizontalPodAutoscalers served in ``autoscaling/v2`` and ``autoscaling/v1``, one
object read and written in either: converted as kube-apiserver converts them (stored in
``autoscaling/v2``; ``autoscaling/v1`` carries the metrics beyond a CPU target, the behaviour,
the current metrics and the conditions in ``autoscaling.alpha.kubernetes.io/*`` annotations),
with ``autoscaling/v2``'s defaults and checks, and each manager's ``managedFields`` entry in the
version it wrote."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

V1, V2 = "autoscaling/v1", "autoscaling/v2"
PLURAL = "horizontalpodautoscalers"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
}
MEMORY = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}},
}
PODS = {
    "type": "Pods",
    "pods": {
        "metric": {"name": "qps", "selector": {"matchLabels": {"b": "2", "a": "1"}}},
        "target": {"type": "AverageValue", "averageValue": "1500m"},
    },
}
OBJECT = {
    "type": "Object",
    "object": {
        "describedObject": {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "name": "main",
        },
        "metric": {"name": "requests"},
        "target": {"type": "Value", "value": "2k"},
    },
}
EXTERNAL = {
    "type": "External",
    "external": {
        "metric": {
            "name": "queue",
            "selector": {
                "matchExpressions": [{"key": "q", "operator": "In", "values": ["x", "y"]}]
            },
        },
        "target": {"type": "AverageValue", "averageValue": "30"},
    },
}
CONTAINER = {
    "type": "ContainerResource",
    "containerResource": {
        "name": "cpu",
        "container": "app",
        "target": {"type": "Utilization", "averageUtilization": 70},
    },
}
BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 120,
                          "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
            "scaleUp": {"selectPolicy": "Min", "tolerance": "0.05"}}  # fmt: skip
ALL_METRICS = [CPU, MEMORY, PODS, OBJECT, EXTERNAL, CONTAINER]
V1_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
V1_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"


def _v2(name: str = "a", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": V2, "kind": "HorizontalPodAutoscaler",
                            "metadata": {"name": name},
                            "spec": {"scaleTargetRef": REF, "maxReplicas": 5}}  # fmt: skip
    body["spec"].update(copy.deepcopy(spec))
    return body


def _v1(name: str = "a", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": V1, "kind": "HorizontalPodAutoscaler",
                            "metadata": {"name": name},
                            "spec": {"scaleTargetRef": REF, "maxReplicas": 5}}  # fmt: skip
    if annotations is not None:
        body["metadata"]["annotations"] = annotations
    body["spec"].update(spec)
    return body


def _path(version: str, name: str = "", sub: str = "") -> tuple[str, str, str]:
    return version, name, sub


async def _get(t: Target, version: str, name: str = "a", **kwargs: Any) -> Any:
    return await t.get(t.apis(version, PLURAL, name), **kwargs)


def _owners(document: Any) -> Any:
    """The object's managers: who, how, in which version, which fields (or a refusal's
    message), in kube-apiserver's order but for the times (by operation, then manager, version,
    subresource): entries of one operation come in the order of their times' seconds, which a
    second's tick between two writes decides on either server."""
    if document.get("kind") == "Status":
        return document.get("message")
    entries = (document.get("metadata") or {}).get("managedFields") or []
    timeless = [{k: v for k, v in entry.items() if k != "time"} for entry in entries]
    return sorted(timeless, key=lambda entry: tuple(
        str(entry.get(key) or "") for key in ("operation", "manager", "apiVersion", "subresource")
    ))  # fmt: skip


# -- discovery and OpenAPI -----------------------------------------------------------------------


async def test_discovery_lists_both_versions_with_v2_preferred(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(
            "/apis", record=lambda d: [g for g in d["groups"] if g["name"] == "autoscaling"]
        )
        await t.get("/apis/autoscaling")
        await t.get("/apis/autoscaling/v2")
        await t.get("/apis/autoscaling/v1")

    await conform(scenario)


async def test_the_v2_openapi_document_is_served(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        def shown(document: Any) -> Any:
            schemas = document["components"]["schemas"]
            name = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"
            return {"paths": sorted(document["paths"]), "spec": schemas[name]}

        await t.get("/openapi/v3/apis/autoscaling/v2", record=shown)
        await t.get("/openapi/v3", record=lambda d: sorted(
            p for p in d["paths"] if p.startswith("apis/autoscaling")))  # fmt: skip

    await conform(scenario)


# -- created in v2 ---------------------------------------------------------------------------------

CREATED_V2: list[tuple[str, dict[str, Any]]] = [
    ("defaults", _v2()),
    ("a CPU target", _v2(minReplicas=2, metrics=[CPU])),
    ("every kind of metric", _v2(metrics=ALL_METRICS)),
    ("a behaviour completed from the defaults", _v2(behavior=BEHAVIOR)),
    ("an empty behaviour", _v2(behavior={})),
    ("only a scale-up rule", _v2(behavior={"scaleUp": {"stabilizationWindowSeconds": 30}})),
    ("metrics without a CPU target, and a behaviour", _v2(metrics=[PODS], behavior=BEHAVIOR)),
]  # fmt: skip


@pytest.mark.parametrize("body", [b for _, b in CREATED_V2], ids=[n for n, _ in CREATED_V2])
async def test_created_in_v2_and_read_in_both_versions(
    conform: Conform, body: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), body)
        await _get(t, V2)
        await _get(t, V1)
        await t.get(t.apis(V1, PLURAL))
        await t.get(t.apis(V2, PLURAL))

    await conform(scenario)


INVALID_V2: list[tuple[str, dict[str, Any]]] = [
    ("a rule without policies", _v2(behavior={"scaleUp": {"policies": []}})),
    ("bad policies", _v2(behavior={"scaleDown": {"selectPolicy": "Most", "policies": [
        {"type": "Nodes", "value": 0, "periodSeconds": 1801}]}})),
    ("a window too long", _v2(behavior={"scaleUp": {"stabilizationWindowSeconds": 3601}})),
    ("a negative tolerance", _v2(behavior={"scaleUp": {"tolerance": "-1"}})),
    ("bad metrics", _v2(metrics=[
        {"type": "Pods", "pods": {"metric": {"name": ""}, "target": {"type": "Value"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
        {"type": "Object"}])),
    ("a metric of two sources", _v2(metrics=[{**CPU, "pods": PODS["pods"]}])),
]  # fmt: skip


@pytest.mark.parametrize("body", [b for _, b in INVALID_V2], ids=[n for n, _ in INVALID_V2])
async def test_a_v2_object_is_checked(conform: Conform, body: dict[str, Any]) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), body)

    await conform(scenario)


# -- created in v1 ---------------------------------------------------------------------------------

_METRICS_TEXT = json.dumps(
    [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}},
        {"type": "External", "external": {"metricName": "q", "targetValue": "1"}},
        {
            "type": "Object",
            "object": {
                "target": {"kind": "Service", "name": "s"},
                "metricName": "hits",
                "targetValue": "0",
                "averageValue": "3",
            },
        },
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "1Gi"}},
    ]
)
CREATED_V1: list[tuple[str, dict[str, Any]]] = [
    ("defaults", _v1()),
    ("a CPU target", _v1(targetCPUUtilizationPercentage=40)),
    ("metrics in the annotation", _v1(annotations={V1_METRICS: _METRICS_TEXT, "keep": "me"})),
    ("metrics and a CPU target", _v1(annotations={V1_METRICS: _METRICS_TEXT},
                                     targetCPUUtilizationPercentage=40)),
    ("a behaviour in the annotation, its fields' names in any case", _v1(annotations={
        V1_BEHAVIOR: '{"scaleDown": {"StabilizationWindowSeconds": 60, "policies": '
                     '[{"type": "Percent", "value": 50, "periodSeconds": 30}]}}'})),
    ("annotations that do not decode", _v1(annotations={
        V1_METRICS: "[{", V1_BEHAVIOR: '{"ScaleUp": {"StabilizationWindowSeconds": "1"}}',
        "autoscaling.alpha.kubernetes.io/conditions": "[]"})),
    ("a behaviour without policies", _v1(annotations={
        V1_BEHAVIOR: '{"ScaleUp": {"StabilizationWindowSeconds": 10}}'})),
    ("a bad metric in the annotation", _v1(annotations={V1_METRICS: json.dumps(
        [{"type": "Pods", "pods": {"metricName": "", "targetAverageValue": "0"}}])},
        targetCPUUtilizationPercentage=0)),
]  # fmt: skip


@pytest.mark.parametrize("body", [b for _, b in CREATED_V1], ids=[n for n, _ in CREATED_V1])
async def test_created_in_v1_and_read_in_both_versions(
    conform: Conform, body: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        created = await t.post(t.apis(V1, PLURAL), body)
        if created.get("kind") == "HorizontalPodAutoscaler":
            await _get(t, V2)
            await _get(t, V1)

    await conform(scenario)


# -- updates across versions ---------------------------------------------------------------------


async def test_a_v1_update_keeps_what_only_v2_holds(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), _v2(metrics=[CPU, PODS], behavior=BEHAVIOR))
        read = await _get(t, V1)
        read["spec"]["maxReplicas"] = 7
        read["spec"]["targetCPUUtilizationPercentage"] = 75
        await t.put(t.apis(V1, PLURAL, "a"), read)
        await _get(t, V2)
        # A PUT without the annotations drops what they held; an unchanged one writes nothing.
        again = await _get(t, V1)
        await t.put(t.apis(V1, PLURAL, "a"), again)
        del again["metadata"]["annotations"]
        await t.put(t.apis(V1, PLURAL, "a"), again)
        await _get(t, V2)

    await conform(scenario)


async def test_patches_in_either_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), _v2(metrics=[PODS, CPU]))
        await t.patch(t.apis(V1, PLURAL, "a"), {"spec": {"maxReplicas": 9}})
        await t.patch(t.apis(V1, PLURAL, "a"), {"spec": {"targetCPUUtilizationPercentage": 30}},
                      ct=STRATEGIC)  # fmt: skip
        await _get(t, V2)
        await t.patch(
            t.apis(V2, PLURAL, "a"),
            {"spec": {"behavior": {"scaleUp": {"stabilizationWindowSeconds": 45}}}},
        )
        await t.patch(t.apis(V2, PLURAL, "a"), {"spec": {"metrics": [MEMORY]}}, ct=STRATEGIC)
        await t.patch(t.apis(V2, PLURAL, "a"), [
            {"op": "replace", "path": "/spec/minReplicas", "value": 2}],
            ct="application/json-patch+json")  # fmt: skip
        await _get(t, V1)
        await t.patch(t.apis(V1, PLURAL, "a"), {"metadata": {"annotations": {V1_BEHAVIOR: None}}})
        await _get(t, V2)

    await conform(scenario)


async def test_a_v1_update_is_checked_as_the_internal_form(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), _v2(metrics=[PODS, CPU]))
        await t.patch(t.apis(V1, PLURAL, "a"), {"spec": {"targetCPUUtilizationPercentage": 0}})
        await t.patch(t.apis(V2, PLURAL, "a"), {"spec": {"maxReplicas": 0}})
        bad = '{"ScaleDown": {"Policies": [{"Type": "Pods", "Value": -1, "PeriodSeconds": 5}]}}'
        await t.patch(t.apis(V1, PLURAL, "a"), {"metadata": {"annotations": {V1_BEHAVIOR: bad}}})

    await conform(scenario)


async def test_server_side_apply_in_v2_and_managers_by_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(V2, PLURAL, "a")
        body = _v2(metrics=[CPU], behavior={"scaleUp": {"stabilizationWindowSeconds": 10}})
        await t.patch(path, body, ct=APPLY, params={"fieldManager": "applier"}, record=_owners)
        await t.patch(t.apis(V1, PLURAL, "a"), {"spec": {"maxReplicas": 8}},
                      params={"fieldManager": "v1-writer"}, record=_owners)  # fmt: skip
        await _get(t, V2, record=_owners)
        await _get(t, V1, record=_owners)
        await t.patch(t.apis(V2, PLURAL, "a"), {"spec": {"minReplicas": 2}},
                      params={"fieldManager": "v2-writer"}, record=_owners)  # fmt: skip
        await _get(t, V2)

    await conform(scenario)


async def test_managers_of_a_v1_create_then_a_v2_update(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V1, PLURAL), _v1(targetCPUUtilizationPercentage=50),
                     params={"fieldManager": "one"}, record=_owners)  # fmt: skip
        read = await _get(t, V2)
        read["spec"]["metrics"].append(PODS)
        await t.put(t.apis(V2, PLURAL, "a"), read, params={"fieldManager": "two"},
                    record=_owners)  # fmt: skip
        await _get(t, V1, record=_owners)

    await conform(scenario)


async def test_status_written_in_v2_read_in_v1(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), {**_v2(behavior={}), "apiVersion": None, "kind": None})
        read = await _get(t, V2)
        read["status"] = {
            "currentReplicas": 2, "desiredReplicas": 3,
            "currentMetrics": [
                {"type": "Resource",
                 "resource": {"name": "cpu", "current": {"averageUtilization": 55,
                                                         "averageValue": "200m"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                          "current": {"averageValue": "7"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True", "reason": "Ready",
                            "lastTransitionTime": "2026-01-02T03:04:05Z"}],
        }  # fmt: skip
        await t.put(t.apis(V2, PLURAL, "a", sub="status"), read)
        await _get(t, V1)
        # A v1 update keeps the status; a v1 status update sets it from its annotations.
        v1 = await _get(t, V1)
        v1["spec"]["maxReplicas"] = 6
        del v1["metadata"]["annotations"]
        await t.put(t.apis(V1, PLURAL, "a"), v1)
        await _get(t, V2)
        v1 = await _get(t, V1)
        v1["status"]["desiredReplicas"] = 4
        v1["status"]["currentCPUUtilizationPercentage"] = 10
        v1["metadata"]["annotations"].pop("autoscaling.alpha.kubernetes.io/current-metrics")
        await t.put(t.apis(V1, PLURAL, "a", sub="status"), v1)
        await _get(t, V2)

    await conform(scenario)


async def test_lists_watches_and_deletes_across_versions(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        created = await t.post(t.apis(V2, PLURAL), _v2("b", metrics=[PODS]))
        version = created["metadata"]["resourceVersion"]

        async def actions() -> None:
            await t.post(t.apis(V1, PLURAL), _v1("c", targetCPUUtilizationPercentage=20))
            await t.patch(t.apis(V2, PLURAL, "b"), {"spec": {"maxReplicas": 4}})
            await t.delete(t.apis(V1, PLURAL, "b"))

        await t.watch(t.apis(V1, PLURAL), {"resourceVersion": version}, actions=actions,
                      until=lambda events: len(events) >= 3)  # fmt: skip
        await t.watch(t.apis(V2, PLURAL), {"resourceVersion": version},
                      until=lambda events: len(events) >= 3)  # fmt: skip
        await t.get(t.apis(V1, PLURAL))
        await t.get(t.apis(V2, PLURAL))
        await t.post(t.apis(V2, PLURAL), _v2("d", behavior={}))
        await t.delete(t.apis(V1, PLURAL))  # the collection, answered in v1
        await t.get(t.apis(V2, PLURAL))

    await conform(scenario)


async def test_a_dry_run_in_v1_answers_as_stored(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _v1(annotations={V1_METRICS: _METRICS_TEXT})
        await t.post(t.apis(V1, PLURAL), body, params={"dryRun": "All"})
        await t.post(t.apis(V2, PLURAL), _v2(behavior={}), params={"dryRun": "All"})

    await conform(scenario)


async def test_managers_lose_fields_another_version_changes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), _v2(metrics=[CPU, PODS], behavior=BEHAVIOR),
                     params={"fieldManager": "one"}, record=_owners)  # fmt: skip
        await t.patch(t.apis(V1, PLURAL, "a"), {"spec": {"targetCPUUtilizationPercentage": 30}},
                      params={"fieldManager": "two"}, record=_owners)  # fmt: skip
        bad = '{"ScaleUp": {"Policies": [{"Type": "Pods", "Value": 2, "PeriodSeconds": 5}]}}'
        await t.patch(t.apis(V1, PLURAL, "a"), {"metadata": {"annotations": {V1_BEHAVIOR: bad}}},
                      params={"fieldManager": "three"}, record=_owners)  # fmt: skip
        await t.patch(t.apis(V2, PLURAL, "a"), {"spec": {"maxReplicas": 6}},
                      params={"fieldManager": "four"}, record=_owners)  # fmt: skip
        await _get(t, V1)

    await conform(scenario)


async def test_a_body_of_the_other_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V1, PLURAL), _v2(metrics=[PODS]))
        await t.post(t.apis(V2, PLURAL), _v1())
        await t.post(t.apis(V2, PLURAL), {**_v2(behavior={}), "apiVersion": None, "kind": None})
        read = await _get(t, V2)
        await t.put(t.apis(V1, PLURAL, "a"), read)
        await t.patch(t.apis(V1, PLURAL, "a"), {"apiVersion": V2, "spec": {"maxReplicas": 2}})
        await _get(t, V2)

    await conform(scenario)


async def test_server_side_apply_against_a_manager_of_the_other_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(V2, PLURAL), _v2(metrics=[CPU, PODS]), params={"fieldManager": "one"})
        config = _v1(targetCPUUtilizationPercentage=30)
        path = t.apis(V1, PLURAL, "a")
        await t.patch(path, config, ct=APPLY, params={"fieldManager": "two"}, record=_owners)
        await t.patch(path, config, ct=APPLY, params={"fieldManager": "two", "force": "true"},
                      record=_owners)  # fmt: skip
        await _get(t, V2)

    await conform(scenario)
