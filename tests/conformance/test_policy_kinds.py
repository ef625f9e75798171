"""Conformance: the objects that set policy around workloads (PodDisruptionBudgets,
NetworkPolicies, Roles and ClusterRoles) and DaemonSets, valid and not, on create and update."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import STRATEGIC, Target

pytestmark = pytest.mark.anyio

_SELECTOR = {"matchLabels": {"app": "d"}}
_BAD_REQUIREMENTS = [{"key": "k", "operator": "In"},
                     {"key": "k", "operator": "Exists", "values": ["v"]},
                     {"key": "k/", "operator": "Near", "values": ["$"]}]  # fmt: skip
# One label only: Go walks a map in random order, so two bad labels come in either order.
_BAD_SELECTOR = {"matchLabels": {"-a": "-"}, "matchExpressions": _BAD_REQUIREMENTS}

PDBS: list[dict[str, Any]] = [
    {"minAvailable": 1, "selector": _SELECTOR},
    {"maxUnavailable": "25%", "unhealthyPodEvictionPolicy": "AlwaysAllow"},
    {"minAvailable": 1, "maxUnavailable": "10%", "selector": _SELECTOR},
    {"minAvailable": "150%"},
    {"minAvailable": -1, "selector": _BAD_SELECTOR},
    {"maxUnavailable": "1", "unhealthyPodEvictionPolicy": "X"},
    {"maxUnavailable": "a%"},
    {
        "minAvailable": "100%",
        "maxUnavailable": 1,  # the spec shown as Go writes its struct
        "selector": {
            "matchExpressions": [{"operator": "Exists", "key": "app"}],
            "matchLabels": {"app": "d"},
        },
    },
    {  # a map in the spec shown: by key, as Go writes maps; a string as it is, not escaped
        "minAvailable": 1,
        "maxUnavailable": "150%",
        "selector": {"matchLabels": {"zone": "é", "app": "d", "b": "c"}},
    },
]

PEER_PORTS: list[dict[str, Any]] = [
    {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
     "ingress": [{"from": [{"podSelector": _SELECTOR}, {"namespaceSelector": {}}],
                  "ports": [{"port": 80}, {"port": "http", "protocol": "UDP"},
                            {"port": 8000, "endPort": 9000}]}],
     "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]},
    {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]},
    {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, "ingress": [{}]},
    {"podSelector": {}, "policyTypes": ["Ingress", "Bogus"]},
    {"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]},
    {"podSelector": _BAD_SELECTOR,
     "ingress": [{"ports": [{"port": 0}, {"port": "a b"}, {"protocol": "HTTP"},
                            {"port": 90, "endPort": 80}, {"port": "x", "endPort": 80},
                            {"endPort": 70000}]}]},
    {"podSelector": {}, "egress": [{"to": [
        {"ipBlock": {"cidr": "10.0.0.0/33"}}, {"ipBlock": {"cidr": "10.0.0.1/8"}},
        {"ipBlock": {"cidr": "010.0.0.0/8"}}, {"ipBlock": {"cidr": ""}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16", "10.0.0.0/8", "x",
                                                      "10.1.0.1/16", "2001:db8::/64"]}},
        {}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]},
]  # fmt: skip

RULES: list[list[dict[str, Any]]] = [
    [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
    [{"verbs": [], "apiGroups": [], "resources": []}],
    [{"verbs": ["get"], "nonResourceURLs": ["/x"]}],
    [{"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}],
    [{"verbs": ["get"], "resources": ["pods"]}, {"apiGroups": ["apps"]}],
]

_POD = {"metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
DAEMON_SETS: list[dict[str, Any]] = [
    {"selector": _SELECTOR, "template": _POD},
    {"selector": _SELECTOR, "template": _POD, "minReadySeconds": -1,
     "revisionHistoryLimit": -2},
    {"selector": _SELECTOR, "template": _POD,
     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}},
    {"selector": _SELECTOR, "template": _POD,
     "updateStrategy": {"type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": "200%", "maxSurge": "x"}}},
    {"selector": _SELECTOR, "template": _POD,
     "updateStrategy": {"type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}},
    {"selector": _SELECTOR, "template": _POD, "updateStrategy": {"type": "Sometimes"}},
    {"selector": _SELECTOR, "template": _POD, "updateStrategy": {"type": "OnDelete"}},
    {"selector": {"matchLabels": {"app": "d", "-x": "y"}}, "template": _POD},
    {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["d"]}]},
     "template": _POD},
]  # fmt: skip


async def _created(t: Target, path: str, body: dict[str, Any]) -> None:
    answer = await t.post(path, body)
    if answer.get("kind") != "Status":  # an update of what was made, checked the same way
        body = {**body, "metadata": {**body["metadata"], "labels": {"changed": "yes"}}}
        body["metadata"]["resourceVersion"] = answer["metadata"]["resourceVersion"]
        await t.put(f"{path}/{body['metadata']['name']}", body)


@pytest.mark.parametrize("spec", PDBS)
async def test_a_disruption_budget_is_checked(conform: Conform, spec: dict[str, Any]) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "b"}, "spec": spec}  # fmt: skip
        await _created(t, t.apis("policy/v1", "poddisruptionbudgets"), body)

    await conform(scenario)


@pytest.mark.parametrize("spec", PEER_PORTS)
async def test_a_network_policy_is_checked(conform: Conform, spec: dict[str, Any]) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": "n"}, "spec": spec}  # fmt: skip
        await _created(t, t.apis("networking.k8s.io/v1", "networkpolicies"), body)

    await conform(scenario)


@pytest.mark.parametrize("rules", RULES)
async def test_a_roles_rules_are_checked(conform: Conform, rules: list[dict[str, Any]]) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r"}, "rules": rules}  # fmt: skip
        await _created(t, t.apis("rbac.authorization.k8s.io/v1", "roles"), body)

    await conform(scenario)


@pytest.mark.parametrize(
    "body",
    [
        {"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"], "apiGroups": [""]}]},
        {"rules": [{"verbs": []}], "aggregationRule": {"clusterRoleSelectors": []}},
        {"aggregationRule": {"clusterRoleSelectors": [_BAD_SELECTOR]}},
    ],
)
async def test_a_cluster_roles_rules_are_checked(conform: Conform, body: dict[str, Any]) -> None:
    async def scenario(t: Target) -> None:  # each is refused: nothing cluster-wide is left
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": f"anyop-conformance-{t.namespace}"}, **body}  # fmt: skip
        await t.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", role)

    await conform(scenario)


@pytest.mark.parametrize("spec", DAEMON_SETS)
async def test_a_daemon_set_is_checked(conform: Conform, spec: dict[str, Any]) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
                "spec": spec}  # fmt: skip
        await _created(t, t.apis("apps/v1", "daemonsets"), body)

    await conform(scenario)


async def test_a_budgets_selector_is_replaced_by_a_strategic_merge_patch(conform: Conform) -> None:
    async def scenario(t: Target) -> None:  # its patch strategy is "replace"
        path = t.apis("policy/v1", "poddisruptionbudgets")
        spec = {"minAvailable": 1, "selector": _SELECTOR}
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "b"}, "spec": spec}  # fmt: skip
        await t.post(path, body)
        change = {"spec": {"selector": {"matchExpressions": _BAD_REQUIREMENTS[:1]}}}
        await t.patch(f"{path}/b", change, ct="application/strategic-merge-patch+json")
        other = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
        await t.patch(f"{path}/b", {"spec": {"selector": other}},
                      ct="application/strategic-merge-patch+json")  # fmt: skip

    await conform(scenario)


async def test_a_budgets_metadata_is_checked_as_any_groups(conform: Conform) -> None:
    async def scenario(t: Target) -> None:  # no check of finalizer names beyond their form
        path = t.apis("policy/v1", "poddisruptionbudgets")
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "b", "finalizers": ["unqualified"]},
                "spec": {"minAvailable": 1}}  # fmt: skip
        await t.post(path, body)
        await t.patch(f"{path}/b", {"metadata": {"finalizers": ["also-unqualified"]}})
        await t.patch(f"{path}/b", {"metadata": {"finalizers": None}})

    await conform(scenario)


@pytest.mark.parametrize(
    ("version", "plural", "body"),
    [
        ("rbac.authorization.k8s.io/v1", "roles", {"rules": [None]}),
        ("networking.k8s.io/v1", "networkpolicies",
         {"spec": {"podSelector": {}, "ingress": [None, {"ports": [None], "from": [None]}],
                   "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": [None]}}]}]}}),
    ],
)  # fmt: skip
async def test_null_items_read_as_zero_values(
    conform: Conform, version: str, plural: str, body: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(version, plural), {"metadata": {"name": "x"}, **body})

    await conform(scenario)


async def test_a_roles_empty_rules_are_owned_and_stored_as_none(conform: Conform) -> None:
    """Rules sent empty are the creator's (the write's own object has them) and read ``null``
    once stored; rules left out or ``null`` are no manager's; an update from ``null`` to
    ``[]`` is a change, written (and read ``null`` again), and owned by its manager."""

    async def scenario(t: Target) -> None:
        def shown(document: Any) -> Any:
            metadata = document.get("metadata") or {}
            owned = [entry.get("fieldsV1") for entry in metadata.get("managedFields") or ()]
            return {"rules": document.get("rules", "absent"), "owned": owned,
                    "rv": metadata.get("resourceVersion")}  # fmt: skip

        path = t.apis("rbac.authorization.k8s.io/v1", "roles")
        await t.post(path, {"metadata": {"name": "left-out"}}, record=shown)
        await t.post(path, {"metadata": {"name": "empty"}, "rules": []}, record=shown)
        await t.post(path, {"metadata": {"name": "null"}, "rules": None}, record=shown)
        for name, rules in (("left-out", []), ("empty", None), ("null", None)):
            got = await t.call("GET", f"{path}/{name}", record=shown)
            version = got["metadata"]["resourceVersion"]
            body = {"metadata": {"name": name, "resourceVersion": version}, "rules": rules}
            await t.put(f"{path}/{name}", body, record=shown)

    await conform(scenario)


@pytest.mark.parametrize("force", [False, True])
async def test_an_apply_of_an_object_for_an_int_or_string_conflicts_first(
    conform: Conform, force: bool
) -> None:
    """Structured merge owns an IntOrString given an object as one value: the apply conflicts
    on it with its owner before the object is converted (forced, the conversion refuses)."""

    async def scenario(t: Target) -> None:
        path = t.apis("policy/v1", "poddisruptionbudgets")
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "b"}, "spec": {"maxUnavailable": 1}}  # fmt: skip
        await t.post(path, body)
        applied = {**body, "spec": {"maxUnavailable": {"a": 1}}}
        params = {"fieldManager": "m", **({"force": "true"} if force else {})}
        await t.patch(f"{path}/b", applied, ct="application/apply-patch+yaml", params=params)

    await conform(scenario)


async def test_a_daemon_set_put_without_its_template_generation_owns_it(
    conform: Conform,
) -> None:
    """A PUT that leaves out the template generation annotation sends ``"0"`` as the field
    manager sees it (``apps/v1``'s conversion writes the internal field): its manager comes to
    own the annotation, and the object is written again, the annotation kept."""

    async def scenario(t: Target) -> None:
        def shown(document: Any) -> Any:
            metadata = document.get("metadata") or {}
            owned = [(entry.get("manager"), entry.get("fieldsV1"))
                     for entry in metadata.get("managedFields") or ()]  # fmt: skip
            return {"owned": owned, "rv": metadata.get("resourceVersion"),
                    "annotations": metadata.get("annotations")}  # fmt: skip

        def body(image: str) -> dict[str, Any]:
            template = {"metadata": {"labels": {"app": "d"}},
                        "spec": {"containers": [{"name": "c", "image": image}]}}  # fmt: skip
            spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
            return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "m"},
                    "spec": spec}  # fmt: skip

        path = t.apis("apps/v1", "daemonsets")
        await t.post(path, body("i"), record=shown)
        await t.patch(f"{path}/m", {"spec": {"template": body("j")["spec"]["template"]}},
                      ct=STRATEGIC, record=shown)  # fmt: skip
        await t.put(f"{path}/m", body("j"), record=shown)
        await t.put(f"{path}/m", body("j"), record=shown)  # the second changes nothing

    await conform(scenario)
