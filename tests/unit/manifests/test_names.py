"""Which resource a selector names, for RBAC: by the CRDs given, the typed classes, built-ins."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

import anyop
from anyop.errors import ConfigError
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import Selector
from anyop.manifests.names import Named, known_resources, named
from anyop.manifests.options import ManifestOptions
from anyop.manifests.rbac import needed_rules, rbac_documents


def crd(group: str, plural: str, kind: str, *, scope: str = "Namespaced", **more: Any) -> Any:
    names = {"plural": plural, "singular": plural[:-1], "kind": kind, **more}
    versions = [{"name": "v1", "subresources": {"status": {}}}]
    spec = {"group": group, "names": names, "scope": scope, "versions": versions}
    return {"kind": "CustomResourceDefinition", "spec": spec}


KEX = crd("kopf.dev", "kopfexamples", "KopfExample", shortNames=["kex"])
KNOWN = known_resources([KEX, crd("other.dev", "examples", "Example")])


@pytest.mark.parametrize(
    "selector",
    [
        Selector("kopfexamples"),
        Selector("kex"),
        Selector("KopfExample"),
        Selector("kopfexample"),
        Selector("kopf.dev", "kopfexamples"),
        Selector("kopfexamples.kopf.dev"),
    ],
    ids=repr,
)
def test_any_name_of_a_known_crd_names_its_group_and_plural(selector: Selector) -> None:
    assert named(selector, KNOWN, "culprit") == Named("kopf.dev", "kopfexamples", status=True)


def test_built_ins_are_known_without_crds_and_a_plural_with_a_group_is_taken_as_written() -> None:
    assert named(Selector("deployments"), {}, "x") == Named("apps", "deployments")
    assert named(Selector("namespaces"), {}, "x") == Named("", "namespaces", cluster=True)
    assert named(Selector("widgets.demo.example.com"), {}, "x") == Named(
        "demo.example.com", "widgets"
    )


def test_a_name_of_two_resources_is_ambiguous_until_its_group_is_given() -> None:
    known = known_resources([KEX, crd("else.dev", "kopfexamples", "KopfExample")])
    with pytest.raises(ConfigError, match="'kopfexamples' is ambiguous"):
        named(Selector("kopfexamples"), known, "culprit")
    assert named(Selector("else.dev", "kopfexamples"), known, "x").group == "else.dev"


class Cog(
    anyop.CustomResource, group="demo.example.com", version="v1", kind="Cog", scope="Cluster"
):
    spec: dict[str, Any] = Field(default_factory=dict)


def test_a_cluster_scoped_resource_is_served_by_the_cluster_role() -> None:
    registry = OperatorRegistry()
    anyop.on.create(Cog, registry=registry)(lambda **_: None)
    options = ManifestOptions(namespaces=("demo",))
    rules = needed_rules(registry, options, known_resources(classes=[Cog]))
    documents = rbac_documents(rules, options)
    cluster_role = next(doc for doc in documents if doc["kind"] == "ClusterRole")
    assert {
        "resources": ["cogs"],
        "apiGroups": ["demo.example.com"],
        "verbs": ["list", "watch", "patch"],
    } in [
        {key: rule[key] for key in ("resources", "apiGroups", "verbs")}
        for rule in cluster_role["rules"]
    ]


class Nut(anyop.CustomResource, group="demo.example.com", version="v1", kind="Nut"):
    spec: dict[str, Any] = Field(default_factory=dict)
    status: dict[str, Any] | None = None


class Washer(anyop.CustomResource, group="demo.example.com", version="v1", kind="Washer"):
    spec: dict[str, Any] = Field(default_factory=dict)


def rules_of(declare: Any) -> dict[str, tuple[str, ...]]:
    registry = OperatorRegistry()
    declare(registry)
    known = known_resources(classes=[Nut, Washer])
    rules = needed_rules(registry, ManifestOptions(namespaces=("demo",)), known)
    return {rule.resource: rule.verbs for rule in rules if rule.group == "demo.example.com"}


async def reconciler(**_: Any) -> None: ...


def test_a_reconciler_with_a_status_subresource_and_no_finalizer_patches_the_status_only() -> None:
    rules = rules_of(lambda r: anyop.reconcile(Nut, registry=r)(reconciler))
    assert rules == {"nuts": ("list", "watch"), "nuts/status": ("patch",)}
    rules = rules_of(lambda r: anyop.reconcile(Nut, finalizer=True, registry=r)(reconciler))
    assert rules == {"nuts": ("list", "watch", "patch"), "nuts/status": ("patch",)}


def test_a_resource_without_a_status_subresource_gets_no_status_rule() -> None:
    rules = rules_of(lambda r: anyop.on.create(Washer, registry=r)(reconciler))
    assert rules == {"washers": ("list", "watch", "patch")}
    rules = rules_of(lambda r: anyop.reconcile(Washer, registry=r)(reconciler))
    assert rules == {"washers": ("list", "watch", "patch")}
