"""Conformance: deletion, finalizers, preconditions, propagation policies, namespaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import JSON_PATCH, Target

pytestmark = pytest.mark.anyio


def _cm(name: str, *finalizers: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"x": "1"}}


async def test_delete_without_finalizers_answers_a_success_status(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.delete(t.cm("a"))
        await t.get(t.cm("a"))
        await t.delete(t.cm("a"))

    await conform(scenario)


async def test_delete_of_a_custom_resource_answers_a_success_status(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 1}}  # fmt: skip
        await t.post(t.widgets(), body)
        await t.delete(t.widgets("w"))

    await conform(scenario)


async def test_delete_with_finalizers_marks_the_object_and_keeps_it(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", "x.dev/f"))
        await t.delete(t.cm("a"))
        await t.get(t.cm("a"))
        await t.delete(t.cm("a"))

    await conform(scenario)


async def test_removing_the_last_finalizer_deletes_the_object(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", "x.dev/f", "y.dev/g"))
        await t.delete(t.cm("a"))
        await t.patch(t.cm("a"), {"metadata": {"finalizers": ["y.dev/g"]}})
        await t.patch(t.cm("a"), {"metadata": {"finalizers": None}})
        await t.get(t.cm("a"))

    await conform(scenario)


async def test_removing_finalizers_with_a_json_patch_test_deletes_the_object(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", "x.dev/f"))
        marked = await t.delete(t.cm("a"))
        ops = [{"op": "test", "path": "/metadata/resourceVersion",
                "value": marked["metadata"]["resourceVersion"]},
               {"op": "remove", "path": "/metadata/finalizers/0"}]  # fmt: skip
        await t.patch(t.cm("a"), ops, ct=JSON_PATCH)
        await t.get(t.cm("a"))

    await conform(scenario)


async def test_adding_a_finalizer_during_deletion_is_422_forbidden(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", "x.dev/f"))
        await t.delete(t.cm("a"))
        await t.patch(t.cm("a"), {"metadata": {"finalizers": ["x.dev/f", "y.dev/new"]}})

    await conform(scenario)


async def test_changes_during_deletion_keep_the_deletion_timestamp(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", "x.dev/f"))
        await t.delete(t.cm("a"))
        await t.patch(t.cm("a"), {"data": {"x": "2"}, "metadata": {"deletionTimestamp": None}})

    await conform(scenario)


async def test_delete_preconditions_on_uid_and_resource_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), _cm("a"))
        await t.delete(
            t.cm("a"), {"preconditions": {"uid": "00000000-0000-4000-8000-000000000000"}}
        )
        await t.delete(t.cm("a"), {"preconditions": {"resourceVersion": "1"}})
        rv = made["metadata"]["resourceVersion"]
        await t.delete(t.cm("a"), {"preconditions": {"resourceVersion": rv}})

    await conform(scenario)


async def test_foreground_deletion_adds_its_finalizer(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.delete(t.cm("a"), {"kind": "DeleteOptions", "apiVersion": "v1",
                                   "propagationPolicy": "Foreground"})  # fmt: skip
        await t.patch(t.cm("a"), {"metadata": {"finalizers": None}})

    await conform(scenario)


async def test_orphan_deletion_adds_its_finalizer(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.delete(t.cm("a"), params={"propagationPolicy": "Orphan"})
        await t.patch(t.cm("a"), {"metadata": {"finalizers": None}})

    await conform(scenario)


async def test_background_deletion_deletes_at_once(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.delete(t.cm("a"), {"propagationPolicy": "Background"})

    await conform(scenario)


async def test_deleted_namespace_stays_terminating_without_a_controller(conform: Conform) -> None:
    # The real control plane runs no namespace controller; FakeCluster does the same.
    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-gone"
        await t.post("/api/v1/namespaces", {"metadata": {"name": name}})
        await t.delete(f"/api/v1/namespaces/{name}")
        await t.get(f"/api/v1/namespaces/{name}")
        await t.post(t.core("configmaps", namespace=name), _cm("a"))

    await conform(scenario)


async def test_a_recreated_object_gets_a_new_uid(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        first = await t.post(t.cm(), _cm("a"))
        await t.delete(t.cm("a"))
        second = await t.post(t.cm(), _cm("a"))
        t.note("new uid", first["metadata"]["uid"] != second["metadata"]["uid"])

    await conform(scenario)


async def test_marking_for_deletion_bumps_a_custom_resources_generation(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        metadata = {"name": "w", "finalizers": ["x.dev/f"]}
        body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
                "metadata": metadata, "spec": {"size": 1}}  # fmt: skip
        await t.post(t.widgets(), body)
        await t.delete(t.widgets("w"))
        await t.patch(t.widgets("w"), {"spec": {"size": 2}})
        await t.delete(t.widgets("w"))
        await t.patch(t.widgets("w"), {"metadata": {"finalizers": None}})

    await conform(scenario)


async def test_marking_for_deletion_bumps_a_deployments_generation(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "finalizers": ["x.dev/f"]},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "m", "image": "nginx"}]},
                },
            },
        }
        path = t.apis("apps/v1", "deployments")

        def generation(d: Any) -> Any:
            return d.get("metadata", {}).get("generation"), bool(
                d.get("metadata", {}).get("deletionTimestamp")
            )

        await t.post(path, body, record=generation)
        await t.delete(f"{path}/d", record=generation)
        await t.patch(f"{path}/d", {"metadata": {"finalizers": None}}, record=generation)

    await conform(scenario)


async def test_marking_for_deletion_leaves_kinds_without_generation_alone(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", "x.dev/f"))
        await t.delete(t.cm("a"))
        await t.patch(t.cm("a"), {"metadata": {"finalizers": []}})

    await conform(scenario)


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _thing_crd(group: str, *finalizers: str) -> dict[str, Any]:
    """A CRD of the scenario's own (its group has the namespace's name, which the records
    normalise), with ``finalizers``."""
    metadata: dict[str, Any] = {"name": f"things.{group}"}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Thing", "plural": "things"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}  # fmt: skip


async def _until(t: Target, path: str, done: Callable[[httpx.Response], bool]) -> None:
    """Wait (unrecorded) until a GET of ``path`` answers as ``done`` wants: the real API server
    serves a new CRD's objects, and removes a deleted CRD, a moment later."""
    with anyio.fail_after(60):
        while not done(await t.api.get(path)):
            await anyio.sleep(0.1)


async def _crd_with_a_thing(t: Target, *finalizers: str) -> tuple[str, str]:
    """Create the CRD and one object of it; return the CRD's path and the object's rv."""
    group = f"{t.namespace}.example.com"
    things = f"/apis/{group}/v1/namespaces/{t.namespace}/things"
    await t.post(CRDS, _thing_crd(group, *finalizers), record=lambda d: d["metadata"]["name"])
    await _until(t, things, lambda answer: answer.status_code == 200)
    thing = {"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": "t"}}
    created = await t.post(things, thing, record=lambda d: d["metadata"]["name"])
    return f"{CRDS}/things.{group}", created["metadata"]["resourceVersion"]


async def test_a_deleted_crd_is_marked_first_and_goes_with_its_objects(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        crd, version = await _crd_with_a_thing(t)
        answers = []

        async def delete_the_crd() -> None:
            answers.append((await t.api.delete(crd)).json())

        things = f"/apis/{t.namespace}.example.com/v1/namespaces/{t.namespace}/things"
        await t.watch(things, {"resourceVersion": version}, actions=delete_the_crd,
                      until=lambda events: any(e["type"] == "DELETED" for e in events))  # fmt: skip
        t.note("the CRD's deletion answered", answers)
        await _until(t, crd, lambda answer: answer.status_code == 404)
        await t.get(crd)

    await conform(scenario)


async def test_a_crd_kept_by_a_finalizer_loses_its_objects_and_the_cleanup_finalizer(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        crd, _ = await _crd_with_a_thing(t, "example.com/keep")
        await t.delete(crd)
        await _until(t, crd, lambda answer: "customresourcecleanup" not in answer.text)
        await t.get(crd)
        await t.get(f"/apis/{t.namespace}.example.com/v1/namespaces/{t.namespace}/things")
        await t.patch(crd, [{"op": "remove", "path": "/metadata/finalizers"}], ct=JSON_PATCH)
        await _until(t, crd, lambda answer: answer.status_code == 404)
        await t.get(crd)

    await conform(scenario)
