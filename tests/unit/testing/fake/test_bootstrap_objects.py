"""A fresh FakeCluster holds what a fresh kube-apiserver makes for itself (compared with the real
one in tests/conformance/test_outside_builtins.py): the default RBAC roles and bindings, the
system priority classes, the kubernetes Service and its endpoints, each a normal object."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.clusterrole_aggregation import aggregated_rules, clusterrole_aggregator

pytestmark = pytest.mark.anyio

RBAC = "/apis/rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SERVICES = "/api/v1/namespaces/default/services"


def _names(listed: httpx.Response) -> list[str]:
    return [item["metadata"]["name"] for item in listed.json()["items"]]


async def _allowed(api: httpx.AsyncClient, groups: list[str], **attributes: Any) -> Any:
    key = "resourceAttributes" if "resource" in attributes else "nonResourceAttributes"
    spec = {"user": "alice", "groups": groups, key: attributes}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    return (await api.post(REVIEWS, json=review)).json()["status"]


async def test_a_fresh_cluster_has_the_default_roles_bindings_and_priority_classes() -> None:
    async with FakeCluster(controllers=False).client() as api:  # (no aggregation)
        roles = (await api.get(f"{RBAC}/clusterroles")).json()["items"]
        bindings = await api.get(f"{RBAC}/clusterrolebindings")
        local = await api.get(f"{RBAC}/roles")
        classes = (await api.get("/apis/scheduling.k8s.io/v1/priorityclasses")).json()["items"]
        admin = (await api.get(f"{RBAC}/clusterroles/admin")).json()
    assert (len(roles), len(_names(bindings)), len(_names(local))) == (69, 50, 7)
    assert {"admin", "edit", "view", "cluster-admin"} <= {r["metadata"]["name"] for r in roles}
    assert all(r["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
               for r in roles)  # fmt: skip
    selector = {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}
    assert admin["aggregationRule"] == {"clusterRoleSelectors": [selector]}
    assert admin["metadata"]["annotations"] == {
        "rbac.authorization.kubernetes.io/autoupdate": "true"
    }
    owners = [(m["manager"], m["operation"]) for m in admin["metadata"]["managedFields"]]
    assert owners == [("kube-apiserver", "Update")]
    assert admin["rules"] is None
    assert [(c["metadata"]["name"], c["value"]) for c in classes] == [
        ("system-cluster-critical", 2000000000),
        ("system-node-critical", 2000001000),
    ]


async def test_the_default_bindings_decide_access_reviews() -> None:
    async with FakeCluster().client() as api:
        discovery = await _allowed(api, ["system:authenticated"], path="/apis", verb="get")
        anonymous = await _allowed(api, [], path="/apis", verb="get")
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "alice-views"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "view"},  # its rules aggregated
            "subjects": [{"kind": "User", "name": "alice"}],
        }  # fmt: skip
        assert (await api.post(f"{RBAC}/clusterrolebindings", json=binding)).status_code == 201
        listing = await _allowed(api, [], verb="list", resource="pods", namespace="ns")
        creating = await _allowed(api, [], verb="create", resource="pods", namespace="ns")
    assert discovery == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole '
        '"system:discovery" to Group "system:authenticated"',
    }
    assert anonymous == {"allowed": False}
    assert listing["allowed"] is True
    assert "alice-views" in listing["reason"]
    assert creating == {"allowed": False}


async def test_the_kubernetes_service_holds_the_first_address_and_no_other_gets_it() -> None:
    async with FakeCluster().client() as api:
        kubernetes = (await api.get(f"{SERVICES}/kubernetes")).json()
        endpoints = (await api.get("/api/v1/namespaces/default/endpoints/kubernetes")).json()
        address = (await api.get("/apis/networking.k8s.io/v1/ipaddresses/10.0.0.1")).json()
        spec = {"ports": [{"port": 80}]}
        made = [
            (await api.post(SERVICES, json={"metadata": {"name": f"s{n}"}, "spec": spec})).json()
            for n in range(30)
        ]
        asked = {"metadata": {"name": "mine"}, "spec": {**spec, "clusterIP": "10.0.0.1"}}
        refused = (await api.post(SERVICES, json=asked)).json()
    assert kubernetes["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert kubernetes["spec"]["clusterIP"] == "10.0.0.1"
    assert kubernetes["spec"]["ports"] == [
        {"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}
    ]
    assert endpoints["subsets"][0]["ports"][0]["port"] == 6443
    assert address["spec"]["parentRef"] == {
        "resource": "services", "namespace": "default", "name": "kubernetes"
    }  # fmt: skip
    assert "10.0.0.1" not in {service["spec"]["clusterIP"] for service in made}
    assert refused["code"] == 422
    assert "failed to allocate IP 10.0.0.1: provided IP is already allocated" in refused["message"]


async def test_each_cluster_has_its_own_bootstrap_objects() -> None:
    first, second, other = FakeCluster(), FakeCluster(), FakeCluster(seed=1)
    patch = {"metadata": {"labels": {"mine": "yes"}}}
    merge = {"Content-Type": "application/merge-patch+json"}
    async with first.client() as api:
        patched = (await api.patch(f"{RBAC}/clusterroles/view", json=patch, headers=merge)).json()
        await api.delete(f"{RBAC}/clusterrolebindings/system:discovery")
    async with second.client() as api:
        view = (await api.get(f"{RBAC}/clusterroles/view")).json()
        kept = await api.get(f"{RBAC}/clusterrolebindings/system:discovery")
    async with other.client() as api:
        elsewhere = (await api.get(f"{RBAC}/clusterroles/view")).json()
    assert patched["metadata"]["labels"]["mine"] == "yes"
    assert int(patched["metadata"]["resourceVersion"]) > int(view["metadata"]["resourceVersion"])
    assert "mine" not in view["metadata"]["labels"]
    assert kept.status_code == 200
    assert view["metadata"]["uid"] != elsewhere["metadata"]["uid"]
    assert view["metadata"]["uid"] == (await _uid_of_view(FakeCluster()))
    first_rules = first.store.objects[("rbac.authorization.k8s.io", "clusterroles")]
    second_rules = second.store.objects[("rbac.authorization.k8s.io", "clusterroles")]
    assert (
        first_rules["", "edit"]["aggregationRule"]
        is not second_rules["", "edit"]["aggregationRule"]
    )


async def _uid_of_view(fake: FakeCluster) -> str:
    async with fake.client() as api:
        return str((await api.get(f"{RBAC}/clusterroles/view")).json()["metadata"]["uid"])


def _aggregation(role: dict[str, Any]) -> tuple[Any, ...]:
    owners = [{k: v for k, v in entry.items() if k != "time"}
              for entry in role["metadata"]["managedFields"]]  # fmt: skip
    return role.get("rules"), owners


async def test_the_aggregating_roles_boot_as_the_aggregation_controller_leaves_them() -> None:
    names = ("admin", "edit", "view")
    bare = FakeCluster(controllers=False)
    bare.store.controllers.append(clusterrole_aggregator)
    async with FakeCluster().client() as api, bare.client() as bare_api:
        booted = [(await api.get(f"{RBAC}/clusterroles/{name}")).json() for name in names]
        unset = [(await bare_api.get(f"{RBAC}/clusterroles/{name}")).json() for name in names]
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "anything"}}  # fmt: skip
        await bare_api.post(f"{RBAC}/clusterroles", json=role)  # the controller acts on it
        applied = [(await bare_api.get(f"{RBAC}/clusterroles/{name}")).json() for name in names]
        listed = (await api.get(f"{RBAC}/clusterroles")).json()["items"]
    assert [role.get("rules") for role in unset] == [None, None, None]
    assert [_aggregation(role) for role in booted] == [_aggregation(role) for role in applied]
    assert [len(role["rules"]) for role in booted] == [29, 27, 12]  # as 1.36.3's
    assert bare.store.controller_errors == []
    versions = [int(role["metadata"]["resourceVersion"]) for role in listed]
    aggregating = {int(role["metadata"]["resourceVersion"]) for role in booted}
    assert sorted(versions)[-3:] == sorted(aggregating)  # written last, by the controller


def test_aggregated_rules_follow_the_selectors_then_the_names_each_rule_once() -> None:
    def role(name: str, labels: dict[str, str], *resources: str) -> dict[str, Any]:
        rules = [{"apiGroups": [""], "resources": [plural], "verbs": ["get"], "resourceNames": []}
                 for plural in resources]  # fmt: skip
        return {"metadata": {"name": name, "labels": labels}, "rules": rules}

    selectors = [
        {"matchLabels": {"a": "1"}},
        {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
    ]
    aggregating = {**role("agg", {"a": "1"}, "own"),
                   "aggregationRule": {"clusterRoleSelectors": selectors}}  # fmt: skip
    roles = [aggregating, role("z", {"a": "1"}, "pods", "secrets"),
             role("m", {"b": "x"}, "nodes"), role("c", {"a": "1", "b": ""}, "secrets", "services"),
             role("n", {}, "no")]  # fmt: skip
    rules = aggregated_rules(aggregating, roles)
    assert [rule["resources"] for rule in rules] == [["secrets"], ["services"], ["pods"], ["nodes"]]
    assert rules[0] == {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}
