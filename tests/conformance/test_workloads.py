"""Conformance: a Deployment's pod template checked as kube-apiserver checks it (containers'
images, ports, environment, resources; the selector; the strategy), and resource quantities
decoded to their canonical form."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target, status_shown

pytestmark = pytest.mark.anyio

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
    "spec": {"selector": {"matchLabels": {"app": "d"}},
             "template": {"metadata": {"labels": {"app": "d"}},
                          "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
}  # fmt: skip


def _container(**fields: Any) -> dict[str, Any]:
    body = copy.deepcopy(DEPLOYMENT)
    body["spec"]["template"]["spec"]["containers"][0].update(fields)
    return body


def _spec(**fields: Any) -> dict[str, Any]:
    body = copy.deepcopy(DEPLOYMENT)
    body["spec"].update(fields)
    return body


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    containers = document["spec"]["template"]["spec"]["containers"]
    return [container.get("resources") for container in containers]


CASES: list[tuple[str, dict[str, Any]]] = [
    ("quantities", _container(resources={
        "requests": {"cpu": "0.5", "memory": "0.5Gi", "ephemeral-storage": 1000},
        "limits": {"cpu": 2.5, "memory": "1.5Gi", "ephemeral-storage": "1e3"}})),
    ("more quantities", _container(resources={
        "requests": {"cpu": "1000m", "memory": "0.1Ki", "ephemeral-storage": "0.0000000001"}})),
    ("requests above limits", _container(resources={
        "requests": {"cpu": "2", "memory": "1.5Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}})),
    ("a quantity that is not one", _container(resources={"requests": {"cpu": "1.5.5"}})),
    ("an unknown suffix", _container(resources={"requests": {"cpu": "12e"}})),
    ("a negative quantity", _container(resources={"requests": {"cpu": "-1"}})),
    ("no image", _container(image="")),
    ("ports", _container(ports=[{"containerPort": 70000}, {"containerPort": 80,
                                                           "protocol": "HTTP"}])),
    ("environment", _container(env=[{"name": "", "value": "v"}, {"name": "A=B", "value": "v"},
                                    {"name": "1 ok", "value": "v"}])),
    ("container names", _container(name="Bad_Name")),
    ("no containers", _spec(template={"metadata": {"labels": {"app": "d"}},
                                      "spec": {"containers": []}})),
    ("a selector that does not match", _spec(selector={"matchLabels": {"app": "other"}})),
    ("negative replicas", _spec(replicas=-1)),
    ("an unknown strategy", _spec(strategy={"type": "Bogus"})),
]  # fmt: skip


@pytest.mark.parametrize("body", [body for _, body in CASES], ids=[name for name, _ in CASES])
async def test_a_deployment_is_checked_and_its_quantities_made_canonical(
    conform: Conform, body: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis("apps/v1", "deployments"), body, record=_shown)

    await conform(scenario)


def _strategy_shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    spec = document["spec"]
    counts = ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds")
    return {"strategy": spec.get("strategy"), **{key: spec.get(key) for key in counts}}


STRATEGIES: list[tuple[str, dict[str, Any]]] = [
    ("recreate", _spec(strategy={"type": "Recreate"})),
    ("recreate with a rolling update", _spec(strategy={"type": "Recreate",
                                                       "rollingUpdate": {"maxSurge": 1}})),
    ("recreate with an empty rolling update", _spec(strategy={"type": "Recreate",
                                                              "rollingUpdate": {}})),
    ("rolling, integers", _spec(strategy={"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 2}})),
    ("rolling, both zero", _spec(strategy={"rollingUpdate": {"maxSurge": 0,
                                                             "maxUnavailable": "0%"}})),
    ("rolling, not percents", _spec(strategy={"rollingUpdate": {"maxSurge": "1.5%",
                                                                "maxUnavailable": "x"}})),
    ("rolling, negative", _spec(strategy={"rollingUpdate": {"maxSurge": -1,
                                                            "maxUnavailable": -2}})),
    ("rolling, over 100%", _spec(strategy={"rollingUpdate": {"maxUnavailable": "150%"}})),
    ("negative counts", _spec(minReadySeconds=-1, revisionHistoryLimit=-2,
                              progressDeadlineSeconds=-3)),
    ("a deadline not after ready", _spec(minReadySeconds=30, progressDeadlineSeconds=30)),
]  # fmt: skip


@pytest.mark.parametrize(
    "body", [body for _, body in STRATEGIES], ids=[name for name, _ in STRATEGIES]
)
async def test_a_deployments_strategy_and_counts_are_checked(
    conform: Conform, body: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis("apps/v1", "deployments"), body, record=_strategy_shown)

    await conform(scenario)


async def test_a_switch_to_recreate_keeps_the_defaulted_rolling_update_and_is_refused(
    conform: Conform,
) -> None:
    """The rolling update that defaulting wrote stays unless the change removes it too: a merge
    patch or an apply of ``type: Recreate`` alone is refused, one that nulls it is not."""

    async def scenario(t: Target) -> None:
        path = t.apis("apps/v1", "deployments", "d")
        await t.post(t.apis("apps/v1", "deployments"), DEPLOYMENT, record=_strategy_shown)
        recreate = {"spec": {"strategy": {"type": "Recreate"}}}
        await t.patch(path, recreate, record=_strategy_shown)
        applied = {**copy.deepcopy(DEPLOYMENT), "spec": {**DEPLOYMENT["spec"], **recreate["spec"]}}
        await t.patch(path, applied, ct="application/apply-patch+yaml", record=_strategy_shown,
                      params={"fieldManager": "m", "force": "true"})  # fmt: skip
        dropped = {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}
        await t.patch(path, dropped, record=_strategy_shown)
        back = {"spec": {"strategy": {"type": "RollingUpdate"}}}
        await t.patch(path, back, ct="application/strategic-merge-patch+json",
                      record=_strategy_shown)  # fmt: skip

    await conform(scenario)


@pytest.mark.parametrize(
    "patch",
    [
        {
            "metadata": {"labels": 1.5},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "app", "resources": {"requests": {"cpu": "1.5.5"}}}]
                    }
                }
            },
        },
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "app", "resources": {"requests": {"cpu": "abc"}}, "ports": "x"}
                        ]
                    }
                }
            }
        },
        {
            "spec": {
                "replicas": "2",
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "app", "resources": {"limits": {"memory": "1.5.5"}}}
                        ]
                    }
                },
            }
        },
    ],
    ids=["metadata before spec", "quantity before ports", "replicas before template"],
)
async def test_a_patched_deployment_reports_the_converters_first_error(
    conform: Conform, patch: dict[str, Any]
) -> None:
    """A patch's result is converted field by field in the Go struct's order, and the first
    error of any kind (a quantity's own included) is the answer."""

    async def scenario(t: Target) -> None:
        await t.post(t.apis("apps/v1", "deployments"), DEPLOYMENT, record=_shown)
        path = t.apis("apps/v1", "deployments", "d")
        await t.patch(path, patch, ct="application/strategic-merge-patch+json", record=_shown)
        await t.patch(path, patch, record=_shown)

    await conform(scenario)


async def test_a_configmap_update_reports_metadata_then_immutability_then_keys(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
              "data": {"a": "1"}, "immutable": True}  # fmt: skip
        created = await t.post(t.cm(), cm)
        changed = {**created, "metadata": {**created["metadata"], "labels": {"-bad": "x"}},
                   "data": {"..": "2"}, "immutable": False}  # fmt: skip
        await t.put(t.cm("c"), changed, record=status_shown)

    await conform(scenario)
