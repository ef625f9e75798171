"""Conformance: every kind's ``metadata`` is checked as apimachinery checks it (labels,
annotations, owner references, finalizers), on create and on update, for built-in kinds and
custom resources alike; a custom resource's metadata of the wrong JSON type does not decode."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, Target, status_shown

pytestmark = pytest.mark.anyio

BAD_METADATA: list[dict[str, Any]] = [
    {"labels": {"a b": "c"}},
    {"labels": {"app": "x" * 64}},
    {"labels": {"example.com/": "v", "Example.com/k": "v"}},
    {"labels": {"app": "-bad-"}},
    {"annotations": {"a/b/c": "v"}},
    {"annotations": {"big": "x" * (256 * 1024)}},
    {"finalizers": ["not a name"]},
    {"finalizers": ["orphan", "foregroundDeletion"]},
    {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}]},
    {"ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]},
    {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "v1", "kind": "Secret", "name": "b", "uid": "2", "controller": True}]},
    {"labels": {"app": 1}},
    {"labels": ["app"]},
    {"finalizers": "example.com/f"},
    {"annotations": {"a": None}, "labels": {"b": None}},
]  # fmt: skip


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    metadata = document.get("metadata") or {}
    return {key: metadata.get(key) for key in ("labels", "annotations", "finalizers")}


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [str(case)[:60] for case in cases]


OTHER_KINDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "Lease": ("coordination.k8s.io/v1", "leases",
              {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {}}),
    "Role": ("rbac.authorization.k8s.io/v1", "roles",
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": []}),
}  # fmt: skip
"""Kinds whose groups check metadata with apimachinery's validation alone (Leases) or with the
core group's (Roles)."""


def scenario_for(kind: str, metadata: dict[str, Any]) -> Any:
    """Create with this metadata; update, patch and JSON-patch a good object with it."""

    async def scenario(t: Target) -> None:
        if kind == "ConfigMap":
            path, body = t.cm(), {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
        elif kind in OTHER_KINDS:
            group_version, plural, body = OTHER_KINDS[kind]
            path = t.apis(group_version, plural)
        else:
            path, body = t.gizmos(), {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo"}
        await t.post(path, {**body, "metadata": {"name": "bad", **metadata}}, record=_shown)
        good = await t.post(path, {**body, "metadata": {"name": "good"}}, record=_shown)
        put = {**good, "metadata": {**good["metadata"], **metadata}}
        await t.put(f"{path}/good", put, record=_shown)
        await t.patch(f"{path}/good", {"metadata": metadata}, record=_shown)
        ops = [{"op": "add", "path": f"/metadata/{key}", "value": value}
               for key, value in metadata.items()]  # fmt: skip
        await t.patch(f"{path}/good", ops, ct=JSON_PATCH, record=_shown)
        await t.patch(f"{path}/good", {"metadata": {"finalizers": None}}, record=_shown)

    return scenario


@pytest.mark.parametrize("kind", ["ConfigMap", "Gizmo"])
@pytest.mark.parametrize("metadata", BAD_METADATA, ids=_ids(BAD_METADATA))
async def test_metadata_is_checked_on_create_update_and_patch(
    conform: Conform, kind: str, metadata: dict[str, Any]
) -> None:
    await conform(scenario_for(kind, metadata))


FINALIZERS: list[dict[str, Any]] = [
    {"finalizers": ["not a name"]},
    {"finalizers": ["unqualified"]},
    {"finalizers": ["kubernetes", "example.com/f"]},
]


@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
@pytest.mark.parametrize("metadata", FINALIZERS, ids=_ids(FINALIZERS))
async def test_finalizer_names_are_checked_by_the_groups_own_validation(
    conform: Conform, kind: str, metadata: dict[str, Any]
) -> None:
    """A finalizer name without a ``/`` that is not one of Kubernetes' own is refused where the
    core group's metadata validation runs (Roles, ConfigMaps), not by apimachinery's alone
    (Leases)."""
    await conform(scenario_for(kind, metadata))
