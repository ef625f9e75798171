"""Conformance: what server-side apply counts as changed, as structured merge's compare of the
live and merged objects finds it (an empty list over a stored null, a list item twice), and
what the result is stored as (an emptied map is null; a custom resource's empty metadata)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target

pytestmark = pytest.mark.anyio

APPLY = "application/apply-patch+yaml"
_STORAGE = "/apis/storage.k8s.io/v1"


def _owners(d: Any) -> Any:
    """Who owns what (times left out), or the refusal."""
    if d.get("kind") == "Status":
        return d
    return sorted((e["manager"], e["operation"], json.dumps(e.get("fieldsV1"), sort_keys=True))
                  for e in d["metadata"].get("managedFields") or [])  # fmt: skip


async def _apply(t: Target, path: str, body: Any, manager: str, *, force: bool = False) -> Any:
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return await t.patch(path, json.dumps(body).encode(), ct=APPLY, params=params,
                         record=_owners)  # fmt: skip


async def test_an_empty_map_list_applied_over_a_stored_null_conflicts_with_its_owner(
    conform: Conform,
) -> None:
    """A CSINode created with no drivers (``[]``, stored as null): its creator owns the field;
    an apply of ``[]`` changes null to empty, which conflicts, and force takes it over."""

    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-node"
        path = f"{_STORAGE}/csinodes"
        body = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": name}, "spec": {"drivers": []}}  # fmt: skip
        try:
            await t.post(path, body, record=_owners)
            await _apply(t, f"{path}/{name}", body, "m")
            await _apply(t, f"{path}/{name}", body, "m", force=True)
            await t.get(f"{path}/{name}", record=lambda d: d["spec"])
        finally:
            await t.delete(f"{path}/{name}", record=lambda _: 0)

    await conform(scenario)


async def test_a_set_item_created_twice_conflicts_when_applied_once(conform: Conform) -> None:
    """A CSIDriver created with a mode twice: its creator owns the item (not its value); an
    apply of the mode once changes it, which conflicts on that item."""

    async def scenario(t: Target) -> None:
        name = f"{t.namespace}.example.com"
        path = f"{_STORAGE}/csidrivers"
        twice = {"volumeLifecycleModes": ["Persistent", "Persistent"]}
        try:
            await t.post(path, {"metadata": {"name": name}, "spec": twice}, record=_owners)
            body = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                    "metadata": {"name": name},
                    "spec": {"volumeLifecycleModes": ["Persistent"]}}  # fmt: skip
            await _apply(t, f"{path}/{name}", body, "m")
        finally:
            await t.delete(f"{path}/{name}", record=lambda _: 0)

    await conform(scenario)


async def test_a_map_list_item_twice_is_owned_as_a_key_alone(conform: Conform) -> None:
    """A container's env with a name twice: its creator owns the key, not the items' fields;
    an apply of the name once conflicts on the key alone. Finalizers written twice, then once,
    then twice again change the item's ownership as structured merge's compare counts it."""

    def deployment(env: list[Any]) -> dict[str, Any]:
        container = {"name": "app", "image": "nginx", "env": env}
        template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container]}}
        spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": spec}  # fmt: skip

    async def scenario(t: Target) -> None:
        path = t.apis("apps/v1", "deployments")
        created = deployment([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])
        created["metadata"]["finalizers"] = ["example.com/f", "example.com/f"]
        await t.post(path, created, record=_owners)
        applied = deployment([{"name": "A", "value": "1"}])
        del applied["spec"]["selector"]
        await _apply(t, f"{path}/d", applied, "m")
        await _apply(t, f"{path}/d", applied, "m", force=True)
        for finalizers in (["example.com/f"], ["example.com/f", "example.com/f", "x.com/g"]):
            await t.patch(f"{path}/d", {"metadata": {"finalizers": finalizers}}, record=_owners)
        await t.patch(f"{path}/d", {"metadata": {"finalizers": None}}, record=_owners)

    await conform(scenario)


@pytest.mark.parametrize("parameters", [{}, None], ids=["empty", "null"])
async def test_an_apply_that_empties_a_map_leaves_it_null(
    conform: Conform, parameters: Any
) -> None:
    """A StorageClass whose parameters its applier applies again empty (or null): structured
    merge removes the items it applied before and leaves the map null, which the immutable
    field's refusal shows."""

    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-sc"
        path = f"{_STORAGE}/storageclasses"
        body = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name}, "provisioner": "example.com/p",
                "parameters": {"a": "b"}}  # fmt: skip
        try:
            await _apply(t, f"{path}/{name}", body, "m")
            await _apply(t, f"{path}/{name}", {**body, "parameters": parameters}, "m")
        finally:
            await t.delete(f"{path}/{name}", record=lambda _: 0)

    await conform(scenario)


@pytest.mark.parametrize(
    "metadata",
    [{"labels": {}}, {"annotations": {}}, {"finalizers": []}, {"ownerReferences": []},
     {"labels": {"app": "a"}, "annotations": {}}],
    ids=["labels", "annotations", "finalizers", "owner references", "one of two"],
)  # fmt: skip
async def test_a_custom_resource_applied_with_empty_metadata_is_written_at_its_next_update(
    conform: Conform, metadata: dict[str, Any]
) -> None:
    """A custom resource applied with an empty metadata map or list keeps it as stored
    (``ObjectMeta`` reads it as none): its next update is written whatever it changes (a new
    version), and not the one after; on create and on update."""
    versions: list[Any] = []

    def moved(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d
        version = d["metadata"]["resourceVersion"]
        answer = {"moved": version not in versions, "labels": d["metadata"].get("labels")}
        versions.append(version)
        return answer

    async def scenario(t: Target) -> None:
        versions.clear()
        created = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "h"},
                   "spec": {"low": 1}}  # fmt: skip
        await t.post(t.gizmos(), created, record=moved)
        for name in ("g", "h"):
            body = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo",
                    "metadata": {"name": name, **metadata}, "spec": {"low": 1}}  # fmt: skip
            await t.patch(t.gizmos(name), json.dumps(body).encode(), ct=APPLY,
                          params={"fieldManager": "m"}, record=moved)  # fmt: skip
            for _ in range(2):
                await t.patch(t.gizmos(name), {"spec": {"low": 1}}, record=moved)

    await conform(scenario)
