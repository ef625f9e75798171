"""Conformance: admission webhooks called by the API server, as operators test theirs.

A webhook server inside the test (:mod:`tests.conformance.admission_hooks`) records every
``AdmissionReview`` and answers by script; the records compare what each webhook received
(kind, resource, operation, object and old object at that stage, options, dry run, user) and
what the client got (status, body, the ``Warning`` header in order), on kube-apiserver and on
FakeCluster.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from tests.conformance.admission_hooks import CONFIGMAPS, HookServer, hook, registered, send
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, Scenario, Target, normalise

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
APPLY = "application/apply-patch+yaml"
DEPLOYMENTS = {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}
GIZMOS = {"apiGroups": [GROUP], "apiVersions": ["v1"], "resources": ["gizmos"]}
_ALL = ["CREATE", "UPDATE", "DELETE"]


@pytest.fixture
async def server() -> AsyncIterator[HookServer]:
    async with HookServer.running() as running:
        yield running


def _cm(name: str = "", **fields: Any) -> Body:
    metadata: Body = {"name": name} if name else {"generateName": "gen-"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, **fields}


def _deployment(name: str, **template_spec: Any) -> Body:
    labels = {"app": name}
    container = {"name": "c", "image": "nginx"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [container], **template_spec}},
        },
    }  # fmt: skip


def _gizmo(name: str, **spec: Any) -> Body:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def _both(server: HookServer, t: Target, rules: list[Body], *, m: str = "allow+warn",
          v: str = "allow+warn", **extra: Any) -> dict[str, list[Body]]:  # fmt: skip
    return {
        "mutating": [hook(server, t, "mut", m, mutating=True, rules=rules, **extra)],
        "validating": [hook(server, t, "val", v, mutating=False, rules=rules, **extra)],
    }


def _dumped(scenario: Scenario) -> Scenario:
    """The scenario, its records written to ``$ANYOP_ADMISSION_DUMP/<target>.json`` if set
    (normalised: to compare the targets' by eye)."""
    folder = os.environ.get("ANYOP_ADMISSION_DUMP")
    if not folder:
        return scenario

    async def dumping(t: Target) -> None:
        try:
            await scenario(t)
        finally:
            records = normalise(t.records, t.namespace)
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[-1].split(" ")[0]
            text = json.dumps(records, indent=1, sort_keys=True)
            await anyio.Path(folder, f"{test}.{t.name}.json").write_text(text)

    return dumping


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_configmap_create_with_a_name_and_generated(
    conform: Conform, server: HookServer
) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules)):
            await send(t, server, "POST", t.cm(), _cm("one", data={"a": "1"}))
            await send(t, server, "POST", t.cm(), _cm(data={"b": "2"}),
                       params={"fieldManager": "maker"})  # fmt: skip

    await conform(_dumped(scenario))


async def test_configmap_update_without_the_server_fields(
    conform: Conform, server: HookServer
) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        made = await t.post(t.cm(), _cm("one", data={"a": "1"}))
        async with registered(t, server, **_both(server, t, rules)):
            body = _cm("one", data={"a": "2"})
            body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
            await send(t, server, "PUT", t.cm("one"), body)
            await send(t, server, "PUT", t.cm("one"), _cm("one", data={"a": "3"}))

    await conform(_dumped(scenario))


async def test_configmap_patches(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        await t.post(t.cm(), _cm("one", data={"a": "1"}))
        async with registered(t, server, **_both(server, t, rules)):
            await send(t, server, "PATCH", t.cm("one"), {"data": {"b": "2"}},
                       ct="application/merge-patch+json")  # fmt: skip
            ops = [{"op": "add", "path": "/data/c", "value": "3"}]
            await send(t, server, "PATCH", t.cm("one"), ops, ct=JSON_PATCH,
                       params={"fieldManager": "jp"})  # fmt: skip
            await send(t, server, "PATCH", t.cm("one"), {"data": {"a": "1"}},
                       ct="application/strategic-merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_configmap_server_side_apply(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            params = {"fieldManager": "applier"}
            await send(t, server, "PATCH", t.cm("one"), _cm("one", data={"a": "1"}), ct=APPLY,
                       params=params)  # fmt: skip
            await send(t, server, "PATCH", t.cm("one"), _cm("one", data={"a": "2"}), ct=APPLY,
                       params={**params, "force": "true"})  # fmt: skip

    await conform(_dumped(scenario))


async def test_configmap_delete(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        await t.post(t.cm(), _cm("one", data={"a": "1"}))
        await t.post(t.cm(), _cm("two", metadata={"name": "two", "finalizers": ["x.dev/y"]}))
        async with registered(t, server, **_both(server, t, rules)):
            await send(t, server, "DELETE", t.cm("one"), params={"dryRun": "All"})
            options = {"kind": "DeleteOptions", "apiVersion": "v1",
                       "propagationPolicy": "Background"}  # fmt: skip
            await send(t, server, "DELETE", t.cm("one"), options)
            await send(t, server, "DELETE", t.cm("two"))
            await send(t, server, "PATCH", t.cm("two"), {"metadata": {"finalizers": None}},
                       ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_a_dry_run_tells_the_webhooks(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            dry = {"dryRun": "All"}
            await send(t, server, "POST", t.cm(), _cm("one", data={"a": "1"}), params=dry)
            await send(t, server, "GET", t.cm("one"))
            await t.post(t.cm(), _cm("two"))
            await send(t, server, "PATCH", t.cm("two"), {"data": {"b": "2"}}, params=dry,
                       ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_deployment_create_update_patch(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**DEPLOYMENTS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules)):
            made = await send(t, server, "POST", t.apis("apps/v1", "deployments"),
                              _deployment("web"))  # fmt: skip
            made["spec"]["replicas"] = 3
            await send(t, server, "PUT", t.apis("apps/v1", "deployments", "web"), made)
            await send(t, server, "PATCH", t.apis("apps/v1", "deployments", "web"),
                       {"spec": {"paused": True}}, ct="application/merge-patch+json")  # fmt: skip
            await send(t, server, "DELETE", t.apis("apps/v1", "deployments", "web"))

    await conform(_dumped(scenario))


async def test_deployment_status_subresource(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**DEPLOYMENTS, "resources": ["deployments/status"], "operations": _ALL}]
        made = await t.post(t.apis("apps/v1", "deployments"), _deployment("web"))
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            made["status"] = {"observedGeneration": 1, "replicas": 0}
            made["spec"]["replicas"] = 5  # the status strategy keeps the spec
            await send(t, server, "PUT", t.apis("apps/v1", "deployments", "web", sub="status"),
                       made)  # fmt: skip
            await send(t, server, "PATCH", t.apis("apps/v1", "deployments", "web"),
                       {"spec": {"paused": True}}, ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_custom_resource_writes(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**GIZMOS, "resources": ["gizmos", "gizmos/status"], "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            made = await send(t, server, "POST", t.gizmos(), _gizmo("g", low=1))
            made = await send(t, server, "PATCH", t.gizmos("g"), {"spec": {"high": 5}},
                              ct="application/merge-patch+json")  # fmt: skip
            made["status"] = {"replicas": 2}
            await send(t, server, "PUT", t.gizmos("g", sub="status"), made)
            await send(t, server, "DELETE", t.gizmos("g"))

    await conform(_dumped(scenario))


async def test_an_unconditional_custom_resource_update(
    conform: Conform, server: HookServer
) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**GIZMOS, "operations": _ALL}]
        made = await t.post(t.gizmos(), _gizmo("g", low=1))
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            await t.patch(t.gizmos("g"), {"spec": {"high": 5}})
            await send(t, server, "PUT", t.gizmos("g"), made)  # stale
            stale = {"metadata": {"resourceVersion": made["metadata"]["resourceVersion"]},
                     "spec": {"high": 6}}  # fmt: skip
            await send(t, server, "PATCH", t.gizmos("g"), stale,
                       ct="application/merge-patch+json")  # fmt: skip
            made["metadata"].pop("resourceVersion")
            await send(t, server, "PUT", t.gizmos("g"), made)

    await conform(_dumped(scenario))


async def test_a_stale_update_of_a_built_in_object(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        made = await t.post(t.cm(), _cm("one"))
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            await t.patch(t.cm("one"), {"data": {"b": "2"}})
            made["data"] = {"c": "3"}
            await send(t, server, "PUT", t.cm("one"), made)  # stale
            stale = {"metadata": {"resourceVersion": made["metadata"]["resourceVersion"]},
                     "data": {"d": "4"}}  # fmt: skip
            await send(t, server, "PATCH", t.cm("one"), stale,
                       ct="application/strategic-merge-patch+json")  # fmt: skip
            made["metadata"].pop("resourceVersion")
            await send(t, server, "PUT", t.cm("one"), made)  # unconditional: allowed

    await conform(_dumped(scenario))


async def test_a_mutating_webhook_sets_a_custom_resource_status(
    conform: Conform, server: HookServer
) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**GIZMOS, "operations": _ALL}]
        mutating = [hook(server, t, "mut", "status", mutating=True, rules=rules)]
        async with registered(t, server, mutating=mutating):
            await send(t, server, "POST", t.gizmos(), _gizmo("g", low=1))
            await send(t, server, "PATCH", t.gizmos("g"), {"spec": {"high": 5}},
                       ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


@pytest.mark.parametrize(
    "action",
    [
        "big",
        "unsize",
        "extra",
    ],
)
async def test_a_mutated_custom_resource_is_checked_pruned_and_defaulted(
    conform: Conform, server: HookServer, action: str
) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**GIZMOS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m=action, v="allow")):
            await send(t, server, "POST", t.gizmos(), _gizmo("g", low=1))
            await t.post(t.gizmos(), _gizmo("h", low=1, size=4), params={"dryRun": "All"})
            await send(t, server, "PATCH", t.gizmos("g"), {"spec": {"high": 3}},
                       ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_denials(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": ["CREATE"]}]
        async with registered(t, server, **_both(server, t, rules, m="allow+warn", v="deny")):
            await send(t, server, "POST", t.cm(), _cm("one"))
        rules = [{**CONFIGMAPS, "operations": ["UPDATE"]}]
        await t.post(t.cm(), _cm("two"))
        async with registered(t, server, **_both(server, t, rules, m="deny0+warn")):
            await send(t, server, "PATCH", t.cm("two"), {"data": {"b": "2"}},
                       ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_a_json_patch_mutation_is_stored(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m="label", v="allow")):
            await send(t, server, "POST", t.cm(), _cm("one", data={"a": "1"}),
                       params={"fieldManager": "maker"})  # fmt: skip
            await send(t, server, "GET", t.cm("one"))
            await send(t, server, "PATCH", t.cm("one"), {"metadata": {"labels": {"x": "y"}}},
                       ct="application/merge-patch+json", params={"fieldManager": "p"})  # fmt: skip

    await conform(_dumped(scenario))


async def test_the_order_of_warnings(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**DEPLOYMENTS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules)):
            body = _deployment("web", nodeSelector={"beta.kubernetes.io/os": "linux"})
            body["spec"]["bogus"] = 1
            made = await send(t, server, "POST", t.apis("apps/v1", "deployments"), body,
                              params={"fieldValidation": "Warn"})  # fmt: skip
            selector = {"beta.kubernetes.io/arch": "x"}  # one: Go warns of a map's in its order
            made["spec"]["template"]["spec"]["nodeSelector"] = selector
            made["spec"]["other"] = 2
            await send(t, server, "PUT", t.apis("apps/v1", "deployments", "web"), made,
                       params={"fieldValidation": "Warn"})  # fmt: skip

    await conform(_dumped(scenario))


async def test_a_mutation_the_strategy_warns_about(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**DEPLOYMENTS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m="arch+warn")):
            await send(t, server, "POST", t.apis("apps/v1", "deployments"), _deployment("web"))
            await send(t, server, "PATCH", t.apis("apps/v1", "deployments", "web"),
                       {"spec": {"replicas": 2}}, ct="application/merge-patch+json")  # fmt: skip

    await conform(_dumped(scenario))


async def test_a_mutation_that_makes_the_object_invalid(
    conform: Conform, server: HookServer
) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        async with registered(t, server, **_both(server, t, rules, m="badkey+warn")):
            await send(t, server, "POST", t.cm(), _cm("one", data={"a": "1"}))

    await conform(_dumped(scenario))


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
async def test_the_failure_policy_with_the_server_down(
    conform: Conform, server: HookServer, policy: str
) -> None:
    port = _closed_port()

    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        url = f"https://127.0.0.1:{port}/down"
        hooks = _both(server, t, rules, url=url, failurePolicy=policy)
        async with registered(t, server, **hooks):
            await send(t, server, "POST", t.cm(), _cm("one"))

    await conform(_dumped(scenario))


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
async def test_a_webhook_that_times_out(conform: Conform, server: HookServer, policy: str) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        validating = [hook(server, t, "slow", "slow", mutating=False, rules=rules,
                           timeoutSeconds=1, failurePolicy=policy)]  # fmt: skip
        async with registered(t, server, validating=validating):
            await send(t, server, "POST", t.cm(), _cm("one"))

    await conform(_dumped(scenario))


@pytest.mark.parametrize("policy", ["Exact", "Equivalent"])
async def test_rules_by_version(conform: Conform, server: HookServer, policy: str) -> None:
    async def scenario(t: Target) -> None:
        other = {**CONFIGMAPS, "apiVersions": ["v2"], "operations": _ALL}
        hooks = [
            hook(server, t, "other", "allow", mutating=False, rules=[other], matchPolicy=policy),
            hook(
                server,
                t,
                "any",
                "allow",
                mutating=False,
                matchPolicy=policy,
                rules=[{**CONFIGMAPS, "apiVersions": ["*"], "operations": ["CREATE"]}],
            ),
        ]
        async with registered(t, server, validating=hooks):  # fmt: skip
            await send(t, server, "POST", t.cm(), _cm("one"))

    await conform(_dumped(scenario))


async def test_an_existing_name_after_the_webhooks(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**CONFIGMAPS, "operations": _ALL}]
        await t.post(t.cm(), _cm("one"))
        async with registered(t, server, **_both(server, t, rules)):
            await send(t, server, "POST", t.cm(), _cm("one"))

    await conform(_dumped(scenario))


async def test_a_scale_subresource_write(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**DEPLOYMENTS, "resources": ["deployments/scale"], "operations": _ALL}]
        await t.post(t.apis("apps/v1", "deployments"), _deployment("web"))
        async with registered(t, server, **_both(server, t, rules, m="label+warn")):
            path = t.apis("apps/v1", "deployments", "web", sub="scale")
            scale = await send(t, server, "PATCH", path, {"spec": {"replicas": 2}},
                               ct="application/merge-patch+json")  # fmt: skip
            await t.patch(path, {"spec": {"replicas": 4}})
            await send(t, server, "PUT", path, {**scale, "spec": {"replicas": 5}})  # stale

    await conform(_dumped(scenario))


async def test_a_custom_resource_scale_write(conform: Conform, server: HookServer) -> None:
    async def scenario(t: Target) -> None:
        rules = [{**GIZMOS, "resources": ["gizmos/scale"], "operations": _ALL}]
        await t.post(t.gizmos(), _gizmo("g", low=1, replicas=1))
        async with registered(t, server, **_both(server, t, rules, m="triple")):
            await send(t, server, "PATCH", t.gizmos("g", sub="scale"), {"spec": {"replicas": 2}},
                       ct="application/merge-patch+json")  # fmt: skip
            await t.get(t.gizmos("g"))

    await conform(_dumped(scenario))
