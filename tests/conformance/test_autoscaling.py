"""Conformance: HorizontalPodAutoscalers defaulted and checked as kube-apiserver does it (their
replicas, the reference to what they scale, their CPU target), created and updated.

The scenarios are of ``autoscaling/v1`` (``test_autoscaling_v2`` has ``autoscaling/v2``'s and
those across versions); its CPU target is the internal metric whose path
(``spec.metrics[0]...``) the errors name."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
HPA: dict[str, Any] = {
    "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"},
    "spec": {"scaleTargetRef": REF, "maxReplicas": 3},
}  # fmt: skip


def _hpa(**spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(HPA)
    body["spec"].update(spec)
    return body


def _ref(**fields: Any) -> dict[str, Any]:
    return {**REF, **fields}


CASES: list[tuple[str, dict[str, Any]]] = [
    ("defaults", _hpa()),
    ("a CPU target", _hpa(minReplicas=2, maxReplicas=10, targetCPUUtilizationPercentage=65)),
    ("one replica at most", _hpa(minReplicas=1, maxReplicas=1)),
    ("a replication controller of the core group",
     _hpa(scaleTargetRef={"apiVersion": "v1", "kind": "ReplicationController", "name": "r"})),
    ("no maximum", _hpa(maxReplicas=0)),
    ("no maximum, no minimum", _hpa(maxReplicas=0, minReplicas=0)),
    ("a negative maximum", _hpa(maxReplicas=-2)),
    ("a minimum above the maximum", _hpa(minReplicas=5, maxReplicas=2)),
    ("a minimum of zero", _hpa(minReplicas=0)),
    ("a negative minimum", _hpa(minReplicas=-1, maxReplicas=2)),
    ("an empty reference", _hpa(scaleTargetRef={})),
    ("a reference without kind and name", _hpa(scaleTargetRef={"apiVersion": "apps/v1"})),
    ("a reference's names with slashes", _hpa(scaleTargetRef=_ref(kind="a/b", name="x%/y"))),
    ("a reference's names as dots", _hpa(scaleTargetRef=_ref(kind=".", name=".."))),
    ("a reference's version of no group", _hpa(scaleTargetRef=_ref(apiVersion="v1"))),
    ("a reference's version of an empty group", _hpa(scaleTargetRef=_ref(apiVersion="/v1"))),
    ("a reference's version as a slash", _hpa(scaleTargetRef=_ref(apiVersion="/"))),
    ("a reference's version with a group only", _hpa(scaleTargetRef=_ref(apiVersion="apps/"))),
    ("a reference's version of three parts", _hpa(scaleTargetRef=_ref(apiVersion="a/b/c"))),
    ("a reference without version", _hpa(scaleTargetRef={"kind": "Deployment", "name": "d"})),
    ("a CPU target of zero", _hpa(targetCPUUtilizationPercentage=0)),
    ("a negative CPU target", _hpa(targetCPUUtilizationPercentage=-5)),
    ("everything wrong", _hpa(minReplicas=0, maxReplicas=-1, targetCPUUtilizationPercentage=0,
                              scaleTargetRef={"apiVersion": "x/y/z", "kind": "", "name": "/"})),
]  # fmt: skip


@pytest.mark.parametrize("body", [body for _, body in CASES], ids=[name for name, _ in CASES])
async def test_a_horizontal_pod_autoscaler_is_defaulted_and_checked(
    conform: Conform, body: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        created = await t.post(t.apis("autoscaling/v1", "horizontalpodautoscalers"), body)
        if created.get("kind") == "HorizontalPodAutoscaler":
            await t.get(t.apis("autoscaling/v1", "horizontalpodautoscalers", "a"))

    await conform(scenario)


UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("a valid change", {"spec": {"maxReplicas": 8, "targetCPUUtilizationPercentage": 70}}),
    ("a maximum of zero", {"spec": {"maxReplicas": 0}}),
    ("a minimum above the maximum", {"spec": {"minReplicas": 9}}),
    ("a reference's version changed to no group",
     {"spec": {"scaleTargetRef": {"apiVersion": "v1"}}}),
    ("a reference's kind changed to a bad one", {"spec": {"scaleTargetRef": {"kind": "a/b"}}}),
    ("a CPU target of zero", {"spec": {"targetCPUUtilizationPercentage": 0}}),
    ("the minimum left out (defaulted again)", {"spec": {"minReplicas": None}}),
    ("labels only", {"metadata": {"labels": {"team": "a"}}}),
]  # fmt: skip


@pytest.mark.parametrize("patch", [patch for _, patch in UPDATES], ids=[n for n, _ in UPDATES])
async def test_an_update_of_a_horizontal_pod_autoscaler_is_checked(
    conform: Conform, patch: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis("autoscaling/v1", "horizontalpodautoscalers", "a")
        await t.post(t.apis("autoscaling/v1", "horizontalpodautoscalers"),
                     _hpa(minReplicas=2, targetCPUUtilizationPercentage=50))  # fmt: skip
        await t.patch(path, patch)
        await t.get(path)

    await conform(scenario)


async def test_a_put_of_a_horizontal_pod_autoscaler_is_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis("autoscaling/v1", "horizontalpodautoscalers", "a")
        stored = await t.post(t.apis("autoscaling/v1", "horizontalpodautoscalers"), _hpa())
        bad = copy.deepcopy(stored)
        bad["spec"].update(minReplicas=0, maxReplicas=0, scaleTargetRef={"name": "d"})
        await t.put(path, bad)
        good = copy.deepcopy(stored)
        good["spec"].update(maxReplicas=6)
        del good["spec"]["minReplicas"]
        await t.put(path, good)

    await conform(scenario)
