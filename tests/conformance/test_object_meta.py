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


# -- names, generateName and a client's generation, by each kind's own rule ----------------------

_CORE, _APPS, _RBAC = (
    "/api/v1/namespaces/{ns}",
    "/apis/apps/v1/namespaces/{ns}",
    ("/apis/rbac.authorization.k8s.io/v1"),
)
_POD_TEMPLATE = {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
NAMED: list[tuple[str, str, dict[str, Any]]] = [
    ("configmap, a bad name, label and key", f"{_CORE}/configmaps",
     {"metadata": {"name": "Bad_Name", "labels": {"-x": "y"}}, "data": {"a b": "c"}}),
    ("configmap, a name too long", f"{_CORE}/configmaps", {"metadata": {"name": "a" * 254}}),
    ("configmap, no name", f"{_CORE}/configmaps", {"metadata": {"labels": {"a": "b"}}}),
    ("configmap, a generateName ending in a dash", f"{_CORE}/configmaps",
     {"metadata": {"generateName": "good-"}}),
    ("configmap, a generation kept", f"{_CORE}/configmaps",
     {"metadata": {"name": "g", "generation": 5}}),
    ("configmap, a negative generation", f"{_CORE}/configmaps",
     {"metadata": {"name": "g", "generation": -1}}),
    ("deployment, its generation is 1", f"{_APPS}/deployments",
     {"metadata": {"name": "d", "generation": 9},
      "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": _POD_TEMPLATE}}),
    ("service, a name of digits first", f"{_CORE}/services",
     {"metadata": {"name": "1abc"}, "spec": {"ports": [{"port": 80}]}}),
    ("service, a dotted name", f"{_CORE}/services",
     {"metadata": {"name": "a.b"}, "spec": {"ports": [{"port": 80}]}}),
    ("statefulset, a dotted name", f"{_APPS}/statefulsets",
     {"metadata": {"name": "a.b"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                                            "template": _POD_TEMPLATE}}),
    ("role, a name with colons", f"{_RBAC}/namespaces/{{ns}}/roles",
     {"metadata": {"name": "system:anyop:x"}, "rules": []}),
    ("role, a name with capitals and a percent", f"{_RBAC}/namespaces/{{ns}}/roles",
     {"metadata": {"name": "Bad%Name"}}),
    ("rolebinding, a name with colons", f"{_RBAC}/namespaces/{{ns}}/rolebindings",
     {"metadata": {"name": "a:b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                               "kind": "Role", "name": "r"}}),
    ("budget, a name with capitals", "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
     {"metadata": {"name": "Bad_Name"}, "spec": {"minAvailable": 1}}),
    ("budget, a name with a slash and a bad spec",
     "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
     {"metadata": {"name": "a%b"}, "spec": {"minAvailable": -1}}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body"), [(p, b) for _, p, b in NAMED],
                         ids=[label for label, _, _ in NAMED])  # fmt: skip
async def test_a_name_is_checked_by_its_kinds_rule_with_the_rest(
    conform: Conform, path: str, body: dict[str, Any]
) -> None:
    """Each kind's name rule (a subdomain, a label, an RFC 1035 label, a path segment), its
    ``generateName`` and a client's ``generation``: reported with the metadata's and the
    kind's other errors, as ``ValidateObjectMeta`` comes first in the kind's validation."""

    async def scenario(t: Target) -> None:
        def shown(document: Any) -> Any:
            if document.get("kind") == "Status":
                return status_shown(document)
            metadata = document["metadata"]
            return {
                "generation": metadata.get("generation"),
                "named": metadata["name"].startswith(metadata.get("generateName") or ""),
            }

        await t.post(path.format(ns=t.namespace), body, record=shown)

    await conform(scenario)
