"""Resources: identity, URLs, and parsing of discovery documents."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.kube.resources import (
    GroupVersion,
    Resource,
    parse_api_groups,
    parse_core_versions,
    parse_resource_list,
    version_priority,
    with_own_preferences,
)

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
NODES = Resource("", "v1", "nodes", kind="Node", namespaced=False)
PODS = Resource("", "v1", "pods", kind="Pod", namespaced=True)

CORE_V1: dict[str, Any] = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "pods",
            "singularName": "",
            "namespaced": True,
            "kind": "Pod",
            "verbs": ["create", "delete", "get", "list", "patch", "watch"],
            "shortNames": ["po"],
            "categories": ["all"],
        },
        {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod"},
        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod"},
        {
            "name": "namespaces",
            "singularName": "namespace",
            "namespaced": False,
            "kind": "Namespace",
            "verbs": ["get", "list", "watch"],
            "shortNames": ["ns"],
        },
    ],
}

APIS: dict[str, Any] = {
    "kind": "APIGroupList",
    "groups": [
        {
            "name": "apps",
            "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
        },
        {
            "name": "kopf.dev",
            "versions": [
                {"groupVersion": "kopf.dev/v2", "version": "v2"},
                {"groupVersion": "kopf.dev/v1", "version": "v1"},
            ],
            "preferredVersion": {"groupVersion": "kopf.dev/v2", "version": "v2"},
        },
    ],
}


def test_resources_are_equal_by_group_version_and_plural_only() -> None:
    other = Resource("kopf.dev", "v1", "kopfexamples", kind="Other", verbs=frozenset({"get"}))
    assert other == KEX
    assert hash(other) == hash(KEX)
    assert Resource("kopf.dev", "v2", "kopfexamples") != KEX
    assert KEX != ("kopf.dev", "v1", "kopfexamples")


def test_resource_repr_names_plural_version_and_group() -> None:
    assert repr(KEX) == "kopfexamples.v1.kopf.dev"
    assert repr(PODS) == "pods.v1"


def test_resource_unpacks_to_decorator_arguments() -> None:
    assert tuple(KEX) == ("kopf.dev", "v1", "kopfexamples")


def test_api_version_of_core_and_grouped_resources() -> None:
    assert PODS.api_version == "v1"
    assert KEX.api_version == "kopf.dev/v1"


@pytest.mark.parametrize(
    ("resource", "kwargs", "url"),
    [
        (KEX, {}, "/apis/kopf.dev/v1/kopfexamples"),
        (KEX, {"namespace": "ns"}, "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"),
        (KEX, {"namespace": "ns", "name": "ex"}, "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/ex"),
        (
            KEX,
            {"namespace": "ns", "name": "ex", "subresource": "status"},
            "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/ex/status",
        ),
        (
            PODS,
            {"params": {"watch": "true", "labelSelector": "a=b"}},
            "/api/v1/pods?watch=true&labelSelector=a%3Db",
        ),
        (NODES, {"name": "n1"}, "/api/v1/nodes/n1"),
        (NODES, {"server": "https://k8s:6443/"}, "https://k8s:6443/api/v1/nodes"),
    ],
)
def test_get_url_builds_api_paths(resource: Resource, kwargs: dict[str, Any], url: str) -> None:
    assert resource.get_url(**kwargs) == url


@pytest.mark.parametrize(
    ("resource", "kwargs"),
    [
        (KEX, {"namespace": "ns", "subresource": "status"}),
        (NODES, {"namespace": "ns"}),
        (KEX, {"name": "ex"}),
    ],
)
def test_get_url_rejects_meaningless_combinations(
    resource: Resource, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=r"(?i)namespace|subresources"):
        resource.get_url(**kwargs)


def test_core_resource_list_folds_subresources_into_their_parents() -> None:
    resources = parse_resource_list(CORE_V1, group="", version="v1")
    pods = next(r for r in resources if r.plural == "pods")
    assert [r.plural for r in resources] == ["pods", "namespaces"]
    assert pods.subresources == {"status", "log"}
    assert pods.shortcuts == {"po"}
    assert pods.categories == {"all"}
    assert pods.namespaced is True
    assert "watch" in pods.verbs


def test_empty_singular_names_fall_back_to_the_lowercase_kind() -> None:
    resources = parse_resource_list(CORE_V1, group="", version="v1")
    assert {r.plural: r.singular for r in resources} == {"pods": "pod", "namespaces": "namespace"}


def test_resource_list_remembers_whether_the_version_is_preferred() -> None:
    document = {"resources": [{"name": "kopfexamples", "kind": "KopfExample", "namespaced": True}]}
    (resource,) = parse_resource_list(document, group="kopf.dev", version="v1", preferred=False)
    assert resource == KEX
    assert resource.preferred is False
    assert resource.verbs == frozenset()


def test_api_groups_list_every_version_and_mark_the_preferred_one() -> None:
    assert parse_api_groups(APIS) == [
        GroupVersion("apps", "v1", True),
        GroupVersion("kopf.dev", "v2", True),
        GroupVersion("kopf.dev", "v1", False),
    ]
    assert GroupVersion("kopf.dev", "v1", False).path == "/apis/kopf.dev/v1"


def test_core_versions_come_from_the_api_document() -> None:
    assert parse_core_versions({"kind": "APIVersions", "versions": ["v1"]}) == ["v1"]
    assert parse_core_versions({}) == []


def _versions(*names: str, preferred: str | None = None, plural: str = "kopfexamples") -> list[Any]:
    return [Resource("kopf.dev", v, plural, preferred=v == preferred) for v in names]


def test_a_resource_its_groups_preferred_version_serves_keeps_that_version_alone() -> None:
    resources = _versions("v2", "v1", preferred="v2")
    assert [(r.version, r.preferred) for r in with_own_preferences(resources)] == [
        ("v2", True),
        ("v1", False),
    ]


@pytest.mark.parametrize(
    ("served", "chosen"),
    [
        (("v1", "v1beta1"), "v1"),
        (("v1beta1", "v1alpha2", "v1beta2"), "v1beta2"),
        (("v1alpha1", "v1alpha3"), "v1alpha3"),
        (("v2beta1", "v1"), "v1"),  # GA over beta, whatever the number
        (("foo", "v1alpha1"), "v1alpha1"),  # other names last
        (("foo", "bar"), "bar"),  # alphabetically among themselves
    ],
)
def test_a_resource_missing_from_its_groups_preferred_version_prefers_its_highest(
    served: tuple[str, ...], chosen: str
) -> None:
    # The group prefers v3 (another CRD of it serves v3): this resource is not served in v3.
    other = Resource("kopf.dev", "v3", "others", preferred=True)
    resources = with_own_preferences([*_versions(*served), other])
    assert {r.version for r in resources if r.plural == "kopfexamples" and r.preferred} == {chosen}
    assert [r.version for r in resources] == [*served, "v3"]  # the order is kept
    assert next(r for r in resources if r.plural == "others").preferred


def test_version_priority_orders_as_kubernetes_does() -> None:
    versions = ["v1alpha1", "foo", "v11alpha2", "v10", "v2", "v1", "v12alpha1", "v3beta1", "bar"]
    expected = ["v10", "v2", "v1", "v3beta1", "v12alpha1", "v11alpha2", "v1alpha1", "bar", "foo"]
    assert sorted(versions, key=version_priority) == expected
