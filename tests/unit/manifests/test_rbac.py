"""RBAC from the registry: exactly the verbs the handlers and the deployment's options need."""

from __future__ import annotations

from typing import Any

import pytest

import anyop
from anyop.errors import ConfigError
from anyop.handlers.registry import OperatorRegistry
from anyop.manifests.options import ManifestOptions
from anyop.manifests.rbac import Rule, needed_rules, rbac_documents, unasked_rules


class PartSpec(anyop.Model):
    size: int = 1


class Part(anyop.CustomResource, group="demo.example.com", version="v1", kind="Part"):
    spec: PartSpec


def handler(**_: Any) -> None: ...


async def daemon(**_: Any) -> None: ...


NAMESPACED = ManifestOptions(namespaces=("demo",), namespace="ops")


def verbs(rules: list[Rule], group: str, resource: str) -> tuple[str, ...] | None:
    found = [rule.verbs for rule in rules if (rule.group, rule.resource) == (group, resource)]
    assert len(found) <= 1, found
    return found[0] if found else None


def test_watch_only_handlers_need_list_and_watch_only() -> None:
    registry = OperatorRegistry()
    anyop.on.event(Part, registry=registry)(handler)
    anyop.index("pods", registry=registry)(handler)
    rules = needed_rules(registry, NAMESPACED)
    assert verbs(rules, "demo.example.com", "parts") == ("list", "watch")
    assert verbs(rules, "demo.example.com", "parts/status") is None
    assert verbs(rules, "", "pods") == ("list", "watch")


@pytest.mark.parametrize(
    "declare",
    [
        lambda r: anyop.on.create(Part, registry=r)(handler),
        lambda r: anyop.on.field(Part, field="spec.size", registry=r)(handler),
        lambda r: anyop.daemon(Part, registry=r)(daemon),
        lambda r: anyop.timer(Part, interval=5, registry=r)(daemon),
        lambda r: anyop.reconcile(Part, registry=r)(daemon),
    ],
    ids=["create", "field", "daemon", "timer", "reconcile"],
)
def test_handlers_that_write_need_patch_on_the_object_and_its_status(declare: Any) -> None:
    registry = OperatorRegistry()
    declare(registry)
    rules = needed_rules(registry, NAMESPACED)
    assert verbs(rules, "demo.example.com", "parts") == ("list", "watch", "patch")
    assert verbs(rules, "demo.example.com", "parts/status") == ("patch",)


def test_owned_children_of_a_reconciler_can_be_created_patched_and_deleted() -> None:
    registry = OperatorRegistry()
    anyop.reconcile(Part, owns=["configmaps", "deployments.apps"], registry=registry)(daemon)
    rules = needed_rules(registry, NAMESPACED)
    everything = ("list", "watch", "create", "patch", "delete")
    assert verbs(rules, "", "configmaps") == everything
    assert verbs(rules, "apps", "deployments") == everything


def test_the_framework_needs_events_crd_scanning_and_peering_by_default() -> None:
    registry = OperatorRegistry()
    anyop.on.event(Part, registry=registry)(handler)
    rules = needed_rules(registry, NAMESPACED)
    assert verbs(rules, "", "events") == ("create",)
    assert verbs(rules, "apiextensions.k8s.io", "customresourcedefinitions") == ("list", "watch")
    assert verbs(rules, "anyop.dev", "anyoppeerings") == ("get", "list", "watch", "patch")
    assert verbs(rules, "coordination.k8s.io", "leases") is None
    assert verbs(rules, "authentication.k8s.io", "tokenreviews") is None


@pytest.mark.parametrize(
    ("options", "group", "resource", "expected"),
    [
        (
            {"leader_election": True},
            "coordination.k8s.io",
            "leases",
            ("get", "create", "update"),
        ),
        (
            {"sharding": True},
            "coordination.k8s.io",
            "leases",
            ("get", "list", "create", "update", "delete"),
        ),
        ({"peering": False}, "anyop.dev", "anyoppeerings", None),
        ({"metrics_port": 8443}, "authentication.k8s.io", "tokenreviews", ("create",)),
        ({"metrics_port": 8443}, "authorization.k8s.io", "subjectaccessreviews", ("create",)),
        (
            {"metrics_port": 8080, "metrics_insecure": True},
            "authentication.k8s.io",
            "tokenreviews",
            None,
        ),
        ({"namespaces": ("app-*",)}, "", "namespaces", ("list", "watch")),
        ({"scanning_disabled": True}, "apiextensions.k8s.io", "customresourcedefinitions", None),
        (
            {"namespaces": (), "clusterwide": True},
            "anyop.dev",
            "clusteranyoppeerings",
            ("get", "list", "watch", "patch"),
        ),
    ],
)
def test_the_deployments_options_add_and_remove_framework_rules(
    options: dict[str, Any], group: str, resource: str, expected: tuple[str, ...] | None
) -> None:
    settings = {"namespaces": ("demo",), **options}
    rules = needed_rules(OperatorRegistry(), ManifestOptions(**settings))
    assert verbs(rules, group, resource) == expected


def test_managed_webhooks_and_conversion_need_their_configurations() -> None:
    registry = OperatorRegistry()
    anyop.on.validate(Part, registry=registry)(handler)
    anyop.on.mutate(Part, registry=registry)(handler)
    anyop.on.convert("parts.demo.example.com", from_="v1", to="v2", registry=registry)(handler)
    options = ManifestOptions(namespaces=("demo",), webhooks_managed=True, conversion_managed=True)
    rules = needed_rules(registry, options)
    group = "admissionregistration.k8s.io"
    assert verbs(rules, group, "validatingwebhookconfigurations") == ("create", "patch", "delete")
    assert verbs(rules, group, "mutatingwebhookconfigurations") == ("create", "patch", "delete")
    crds = verbs(rules, "apiextensions.k8s.io", "customresourcedefinitions")
    assert crds == ("get", "list", "watch", "patch")
    unmanaged = needed_rules(registry, NAMESPACED)
    assert verbs(unmanaged, group, "validatingwebhookconfigurations") is None


def test_an_operator_of_webhooks_only_posts_no_events() -> None:
    registry = OperatorRegistry()
    anyop.on.validate(Part, registry=registry)(handler)
    assert verbs(needed_rules(registry, NAMESPACED), "", "events") is None


def test_webhook_handlers_without_the_managed_options_are_pointed_out() -> None:
    registry = OperatorRegistry()
    assert unasked_rules(registry, NAMESPACED) == []
    anyop.on.validate(Part, registry=registry)(handler)
    notes = unasked_rules(registry, NAMESPACED)
    assert len(notes) == 1
    assert "--webhooks-managed" in notes[0]
    anyop.on.convert("parts.demo.example.com", from_="v1", to="v2", registry=registry)(handler)
    assert "--conversion-managed" in unasked_rules(registry, NAMESPACED)[1]
    both = ManifestOptions(namespaces=("demo",), webhooks_managed=True, conversion_managed=True)
    assert unasked_rules(registry, both) == []


def test_selectors_without_a_group_or_a_plural_are_refused_by_name() -> None:
    registry = OperatorRegistry()
    anyop.on.create("kopfexamples", registry=registry)(handler)
    with pytest.raises(ConfigError, match=r"the resource 'kopfexamples' is unknown; give its"):
        needed_rules(registry, NAMESPACED)
    registry = OperatorRegistry()
    anyop.on.create(anyop.EVERYTHING, registry=registry)(handler)
    with pytest.raises(ConfigError, match="RBAC needs one resource, not Selector"):
        needed_rules(registry, NAMESPACED)


def kinds_and_places(documents: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(doc["kind"], doc["metadata"].get("namespace")) for doc in documents]


def test_a_namespaced_operator_gets_roles_in_its_namespaces_and_leases_in_its_own() -> None:
    registry = OperatorRegistry()
    anyop.on.create(Part, registry=registry)(handler)
    options = ManifestOptions(namespaces=("demo", "other"), namespace="ops", leader_election=True)
    documents = rbac_documents(needed_rules(registry, options), options)
    assert kinds_and_places(documents) == [
        ("ClusterRole", None),
        ("ClusterRoleBinding", None),
        ("Role", "demo"),
        ("RoleBinding", "demo"),
        ("Role", "ops"),
        ("RoleBinding", "ops"),
        ("Role", "other"),
        ("RoleBinding", "other"),
    ]
    ops = documents[4]["rules"]
    assert [rule["resources"] for rule in ops] == [["leases"]]
    demo = {rule["resources"][0] for rule in documents[2]["rules"]}
    assert demo == {"events", "anyoppeerings", "parts", "parts/status"}
    binding = documents[3]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "namespace": "ops", "name": "anyop-operator"}
    ]


def test_a_clusterwide_operator_gets_its_resources_in_the_cluster_role() -> None:
    registry = OperatorRegistry()
    anyop.on.create(Part, registry=registry)(handler)
    options = ManifestOptions(clusterwide=True, namespace="ops")
    documents = rbac_documents(needed_rules(registry, options), options)
    assert kinds_and_places(documents) == [("ClusterRole", None), ("ClusterRoleBinding", None)]
    resources = {rule["resources"][0] for rule in documents[0]["rules"]}
    assert {"parts", "parts/status", "events", "clusteranyoppeerings"} <= resources


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({}, "either namespaces"),
        ({"namespaces": ("a",), "clusterwide": True}, "either namespaces"),
        ({"namespaces": ("a",), "name": "Bad_Name"}, "Not a valid name"),
        ({"namespaces": ("a",), "leader_election": True, "sharding": True}, "not both"),
        ({"namespaces": ("a",), "replicas": 0}, "at least 1"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        ManifestOptions(**options)
