"""Conformance: the scale subresource, deletecollection, a namespace's finalize, a deleted CRD
taking its objects with it, and the metadata a status update keeps."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, Target

pytestmark = pytest.mark.anyio

CLEANUP_GROUP = f"cleanup.{GROUP}"


def _sprockets(t: Target, name: str = "", sub: str = "") -> str:
    tail = (f"/{name}" if name else "") + (f"/{sub}" if sub else "")
    return f"/apis/{GROUP}/v1/namespaces/{t.namespace}/sprockets{tail}"


def _sprocket(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Sprocket", "metadata": {"name": name},
            "spec": {"replicas": replicas}}  # fmt: skip


async def test_the_scale_subresource_reads_and_writes_the_replicas(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(_sprockets(t), _sprocket("s", 1))
        await t.patch(_sprockets(t, "s", "status"), {"status": {"replicas": 1, "selector": "a=b"}})
        scale = await t.get(_sprockets(t, "s", "scale"))
        await t.put(_sprockets(t, "s", "scale"), {**scale, "spec": {"replicas": 3}})
        await t.patch(_sprockets(t, "s", "scale"), {"spec": {"replicas": 5}})
        replace = [{"op": "replace", "path": "/spec/replicas", "value": 4}]
        await t.patch(_sprockets(t, "s", "scale"), replace, ct=JSON_PATCH)
        await t.get(_sprockets(t, "s"))
        stale = {**scale, "spec": {"replicas": 2}}
        stale["metadata"] = {
            **scale["metadata"],
            "resourceVersion": made["metadata"]["resourceVersion"],
        }
        await t.put(_sprockets(t, "s", "scale"), stale, record=lambda d: d.get("reason"))
        await t.get(t.widgets("none", sub="scale"), record=lambda d: d.get("code"))

    await conform(scenario)


def _marks(listed: Any) -> list[tuple[str, bool]]:
    """Each listed object's name, and whether it is being deleted."""
    items = listed["items"]
    return [(item["metadata"]["name"], "deletionTimestamp" in item["metadata"]) for item in items]


async def test_deletecollection_deletes_what_the_selector_selects(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = [("a", {"x": "1"}, []), ("b", {"x": "1"}, ["x.dev/f"]), ("c", {}, [])]
        for name, labels, finalizers in made:
            metadata = {"name": name, "labels": labels, "finalizers": finalizers}
            await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
        await t.delete(t.cm(), params={"labelSelector": "x=1"}, record=_marks)
        await t.get(t.cm(), record=_marks)

    await conform(scenario)


async def test_finalize_sets_only_the_namespaces_spec_finalizers(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = f"/api/v1/namespaces/{t.namespace}"
        namespace = await t.get(path)
        body = {**namespace, "spec": {"finalizers": []}, "metadata": {
            **namespace["metadata"], "labels": {"ignored": "yes"}}}  # fmt: skip
        await t.put(f"{path}/finalize", body,
                    record=lambda d: (d["spec"], sorted(d["metadata"]["labels"])))  # fmt: skip
        await t.get(f"{path}/finalize", record=lambda d: d.get("code"))

    await conform(scenario)


def _cleanup_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{CLEANUP_GROUP}"},
        "spec": {"group": CLEANUP_GROUP, "scope": "Namespaced",
                 "names": {"kind": "Thing", "plural": "things"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object",
                                         "x-kubernetes-preserve-unknown-fields": True}}}]},
    }  # fmt: skip


async def _until(t: Target, path: str, code: int) -> int:
    """GET until it answers ``code`` (the real server acts after answering), 30 s at most."""
    with anyio.move_on_after(30):
        while (answer := (await t.api.get(path)).status_code) != code:
            await anyio.sleep(0.2)
    return answer


async def test_a_deleted_crd_takes_its_objects_and_its_kind_with_it(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        things = f"/apis/{CLEANUP_GROUP}/v1/namespaces/{t.namespace}/things"
        await t.post(crds, _cleanup_crd(), record=lambda d: d["metadata"]["name"])
        await _until(t, things, 200)
        thing = {"apiVersion": f"{CLEANUP_GROUP}/v1", "kind": "Thing", "metadata": {"name": "t"}}
        await t.post(things, thing, record=lambda d: d["metadata"]["name"])
        await t.delete(f"{crds}/things.{CLEANUP_GROUP}", record=lambda d: None)
        t.note("crd", await _until(t, f"{crds}/things.{CLEANUP_GROUP}", 404))
        t.note("things", await _until(t, f"{things}/t", 404))

    await conform(scenario)


APPLY = "application/apply-patch+yaml"


async def test_server_side_apply_creates_then_merges_the_applied_fields(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                   "data": {"x": "1"}}  # fmt: skip
        manager = {"fieldManager": "conformance"}
        await t.patch(t.cm("a"), applied, ct=APPLY, params=manager)
        await t.patch(t.cm("a"), {"data": {"y": "2"}}, params={})  # another writer
        again = {**applied, "data": {"x": "3"}, "metadata": {"name": "a", "labels": {"l": "v"}}}
        shown = lambda d: (d["metadata"].get("labels"), sorted(d["data"]))  # noqa: E731
        await t.patch(t.cm("a"), again, ct=APPLY, params=manager, record=shown)
        unmanaged = {**applied, "metadata": {"name": "b"}}
        await t.patch(t.cm("b"), unmanaged, ct=APPLY, record=lambda d: d.get("code"))

    await conform(scenario)


async def test_a_status_update_keeps_metadata_as_the_kind_s_strategy_says(
    conform: Conform,
) -> None:
    """A ``/status`` patch that changes labels, annotations and the spec too: a Service and a
    namespace keep the metadata changes (not the spec's), a Deployment all but its labels, a
    ServiceCIDR and a custom resource none."""

    async def scenario(t: Target) -> None:
        def shown(document: Any) -> Any:
            if document.get("kind") == "Status":
                return document.get("message")
            metadata = document["metadata"]
            spec = document.get("spec") or {}
            return (metadata.get("labels"), metadata.get("annotations"),
                    spec.get("replicas", spec.get("ports", spec.get("size"))))  # fmt: skip

        change = {"metadata": {"labels": {"x": "1"}, "annotations": {"a": "1"}}}
        service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
        await t.post(t.core("services"), service, record=shown)
        await t.patch(t.core("services", "s") + "/status",
                      {**change, "spec": {"ports": [{"port": 81}]}}, record=shown)  # fmt: skip
        deployment = {"metadata": {"name": "d"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}  # fmt: skip
        await t.post(t.apis("apps/v1", "deployments"), deployment, record=shown)
        await t.patch(t.apis("apps/v1", "deployments", "d", sub="status"),
                      {**change, "spec": {"replicas": 3}}, record=shown)  # fmt: skip
        await t.patch(f"/api/v1/namespaces/{t.namespace}/status", change, record=shown)
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}, "spec": {"size": 1}},
                     record=shown)  # fmt: skip
        await t.patch(t.widgets("w", sub="status"), {**change, "spec": {"size": 2}},
                      record=shown)  # fmt: skip
        cidr = f"/apis/networking.k8s.io/v1/servicecidrs/{t.namespace}-s"
        try:
            await t.post("/apis/networking.k8s.io/v1/servicecidrs", {
                "metadata": {"name": f"{t.namespace}-s"}, "spec": {"cidrs": ["10.210.0.0/16"]}},
                record=shown)  # fmt: skip
            await t.patch(f"{cidr}/status", change, record=shown)
        finally:
            await t.api.delete(cidr)

    await conform(scenario)
