"""Conformance of the controllers: garbage collection and namespace deletion.

Each scenario's notes must be the behaviour Kubernetes documents ("Garbage Collection", "Owners
and Dependents", "Namespaces"), on FakeCluster with its controllers and on the plugin's control
plane, which runs kube-controller-manager (with ``--anyop-bare`` it does not: then only the
documented behaviour is compared). They are marked ``controllers``.

The notes wait (up to 30 s) for what a controller does later on a real cluster; FakeCluster's
controllers have done it by the time the request that caused it is answered.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.conformance.conftest import run_on
from tests.conformance.harness import Scenario, Target

from anyop.kube.transport import KubeTransport
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

pytestmark = [pytest.mark.anyio, pytest.mark.controllers]

Documented = Callable[[Scenario], Awaitable[list[Any]]]
Body = dict[str, Any]


@pytest.fixture
def documented(request: pytest.FixtureRequest) -> Documented:
    """``notes = await documented(scenario)``: the scenario's notes on FakeCluster (with its
    controllers), and, on a control plane with controllers, the same as the real one's."""

    async def run(scenario: Scenario) -> list[Any]:
        namespace = f"conf-{uuid.uuid4().hex[:8]}"
        fake = FakeCluster()
        async with fake.client(timeout=30) as api:
            faked = await run_on("fake", api, scenario, namespace=namespace)
        notes = [record for record in faked if "note" in record]
        if not request.config.getoption("--anyop-bare"):
            plane: LocalControlPlane = request.getfixturevalue("anyop_controlplane")
            transport = KubeTransport(plane.ssl_context())  # see harness._raw_chunks
            async with httpx.AsyncClient(
                base_url=plane.server, transport=transport, timeout=30
            ) as real_api:
                real = await run_on("real", real_api, scenario, namespace=namespace)
            assert [record for record in real if "note" in record] == notes
        return notes

    return run


def _cm(name: str, *owners: dict[str, Any], finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if owners:
        metadata["ownerReferences"] = list(owners)
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def _owner(body: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    reference = {"apiVersion": "v1", "kind": "ConfigMap",
                 "name": body["metadata"]["name"], "uid": body["metadata"]["uid"]}  # fmt: skip
    return reference | ({"blockOwnerDeletion": True} if block else {})


async def _settled(t: Target, path: str, done: Callable[[int, Any], bool]) -> tuple[int, Any]:
    """GET until ``done(code, body)`` (a real controller acts later), for 30 s at most."""
    with anyio.move_on_after(30):
        while True:
            response = await t.api.get(path)
            body = response.json()
            if done(response.status_code, body):
                break
            await anyio.sleep(0.2)
    return response.status_code, body


async def _gone(t: Target, path: str) -> int:
    code, _ = await _settled(t, path, lambda code, _: code == 404)
    return code


async def test_background_deletion_deletes_the_dependents_once_their_owner_is_gone(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        owner = await t.post(t.cm(), _cm("owner"))
        child = await t.post(t.cm(), _cm("child", _owner(owner)))
        await t.post(t.cm(), _cm("grandchild", _owner(child)))
        await t.delete(t.cm("owner"))
        t.note("child", await _gone(t, t.cm("child")))
        t.note("grandchild", await _gone(t, t.cm("grandchild")))

    assert await documented(scenario) == [
        {"note": "child", "value": 404},
        {"note": "grandchild", "value": 404},
    ]


async def test_a_dependent_with_another_live_owner_only_loses_the_gone_ones_reference(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        first = await t.post(t.cm(), _cm("first"))
        second = await t.post(t.cm(), _cm("second"))
        await t.post(t.cm(), _cm("shared", _owner(first), _owner(second)))
        await t.delete(t.cm("first"))
        code, body = await _settled(
            t, t.cm("shared"), lambda _, b: len(b["metadata"].get("ownerReferences", [])) < 2
        )
        names = [ref["name"] for ref in body["metadata"].get("ownerReferences", [])]
        t.note("shared", [code, names])

    assert await documented(scenario) == [{"note": "shared", "value": [200, ["second"]]}]


async def test_foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        owner = await t.post(t.cm(), _cm("owner"))
        await t.post(t.cm(), _cm("child", _owner(owner, block=True), finalizers=("x.dev/f",)))
        await t.delete(t.cm("owner"), params={"propagationPolicy": "Foreground"})
        _, child = await _settled(
            t, t.cm("child"), lambda _, b: "deletionTimestamp" in b["metadata"]
        )
        waiting = await t.api.get(t.cm("owner"))
        t.note("owner waits", [waiting.status_code, waiting.json()["metadata"]["finalizers"]])
        t.note("child deleting", "deletionTimestamp" in child["metadata"])
        await t.patch(t.cm("child"), {"metadata": {"finalizers": None}})
        t.note("owner", await _gone(t, t.cm("owner")))

    assert await documented(scenario) == [
        {"note": "owner waits", "value": [200, ["foregroundDeletion"]]},
        {"note": "child deleting", "value": True},
        {"note": "owner", "value": 404},
    ]


async def test_orphan_deletion_leaves_the_dependents_without_the_reference(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        owner = await t.post(t.cm(), _cm("owner"))
        await t.post(t.cm(), _cm("child", _owner(owner)))
        await t.delete(t.cm("owner"), params={"propagationPolicy": "Orphan"})
        t.note("owner", await _gone(t, t.cm("owner")))
        code, body = await _settled(
            t, t.cm("child"), lambda _, b: "ownerReferences" not in b["metadata"]
        )
        t.note("child", [code, body["metadata"].get("ownerReferences")])

    assert await documented(scenario) == [
        {"note": "owner", "value": 404},
        {"note": "child", "value": [200, None]},
    ]


async def test_deleting_a_namespace_deletes_its_objects_and_waits_for_their_finalizers(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("plain"))
        await t.post(t.cm(), _cm("kept", finalizers=("x.dev/f",)))
        namespace = f"/api/v1/namespaces/{t.namespace}"
        await t.api.delete(namespace)
        t.note("plain", await _gone(t, t.cm("plain")))
        _, kept = await _settled(t, t.cm("kept"), lambda _, b: "deletionTimestamp" in b["metadata"])
        t.note("kept deleting", "deletionTimestamp" in kept["metadata"])
        _, ns = await _settled(t, namespace, lambda code, _: code == 200)
        t.note("namespace", [ns["status"]["phase"], ns["spec"]["finalizers"]])
        await t.patch(t.cm("kept"), {"metadata": {"finalizers": None}})
        t.note("namespace at last", await _gone(t, namespace))

    assert await documented(scenario) == [
        {"note": "plain", "value": 404},
        {"note": "kept deleting", "value": True},
        {"note": "namespace", "value": ["Terminating", ["kubernetes"]]},
        {"note": "namespace at last", "value": 404},
    ]


async def test_a_namespace_with_its_own_finalizer_stays_until_it_is_removed(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        namespace = f"/api/v1/namespaces/{t.namespace}"
        await t.patch(namespace, {"metadata": {"finalizers": ["x.dev/f"]}})
        await t.api.delete(namespace)
        _, ns = await _settled(t, namespace, lambda _, b: not b["spec"].get("finalizers"))
        t.note("emptied", [ns["status"]["phase"], ns["spec"].get("finalizers")])
        await t.patch(namespace, {"metadata": {"finalizers": None}})
        t.note("namespace", await _gone(t, namespace))

    assert await documented(scenario) == [
        {"note": "emptied", "value": ["Terminating", None]},
        {"note": "namespace", "value": 404},
    ]


_ROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"


def _role(name: str, labels: dict[str, str], *rules: dict[str, Any], **extra: Any) -> Body:
    metadata = {"name": name, "labels": labels}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": metadata, "rules": list(rules), **extra}  # fmt: skip


def _rule(group: str, *resources: str, verbs: tuple[str, ...] = ("get", "list")) -> Body:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}


def _owners(role: Body) -> list[list[Any]]:
    return [[entry["manager"], entry["operation"], entry.get("fieldsV1")]
            for entry in role["metadata"].get("managedFields") or ()]  # fmt: skip


async def test_aggregating_cluster_roles_hold_the_rules_their_selectors_choose(
    documented: Documented,
) -> None:
    async def scenario(t: Target) -> None:
        label = f"conformance.anyop.dev/agg-{t.namespace}"
        chosen = {label: "true"}
        names = [f"zz-{t.namespace}-{suffix}" for suffix in ("agg", "a", "b", "view")]
        agg, first, second, viewer = names
        try:
            widgets, gadgets = _rule("example.com", "widgets"), _rule("example.com", "gadgets")
            extra = {"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": chosen}]}}
            await t.post(_ROLES, _role(agg, {}, _rule("x.dev", "own"), **extra))
            await t.post(_ROLES, _role(second, chosen, gadgets, widgets))
            await t.post(_ROLES, _role(first, chosen, widgets, _rule("", "pods")))
            wanted = [widgets, _rule("", "pods"), gadgets]
            _, role = await _settled(t, f"{_ROLES}/{agg}", lambda _, b: b["rules"] == wanted)
            t.note("aggregated", [role["rules"], _owners(role)])
            await t.delete(f"{_ROLES}/{first}")
            wanted = [gadgets, widgets]
            _, role = await _settled(t, f"{_ROLES}/{agg}", lambda _, b: b["rules"] == wanted)
            t.note("one gone", role["rules"])
            mine = _rule("example.com", "sprockets", verbs=("watch",))
            view = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
            await t.post(_ROLES, _role(viewer, view, mine))
            _, role = await _settled(t, f"{_ROLES}/view", lambda _, b: mine in b["rules"])
            t.note("view", [role["rules"][-1], _owners(role)[0]])
            await t.delete(f"{_ROLES}/{viewer}")
            _, role = await _settled(t, f"{_ROLES}/view", lambda _, b: mine not in b["rules"])
            t.note("view again", mine in role["rules"])
        finally:  # (cluster-scoped: the real plane's other tests see them)
            for name in names:
                await t.api.delete(f"{_ROLES}/{name}")

    notes = await documented(scenario)
    assert notes[0]["value"][0] == [
        _rule("example.com", "widgets"),
        _rule("", "pods"),
        _rule("example.com", "gadgets"),
    ]
    assert ["clusterrole-aggregation-controller", "Apply", {"f:rules": {}}] in notes[0]["value"][1]
    assert notes[-1] == {"note": "view again", "value": False}
