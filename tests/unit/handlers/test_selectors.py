"""Selectors: Kopf's resource specifications, and their resolution against discovery."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.handlers.selectors import (
    EVERYTHING,
    Selector,
    ambiguous_message,
    nonpatchable_message,
    nonwatchable_message,
    resolve,
    unresolved_message,
)
from anyop.kube.resources import Resource, parse_resource_list, with_own_preferences

VERBS = frozenset({"list", "watch", "patch", "get"})


def kex(version: str = "v1", *, preferred: bool = True) -> Resource:
    return Resource(
        "kopf.dev",
        version,
        "kopfexamples",
        kind="KopfExample",
        singular="kopfexample",
        shortcuts=frozenset({"kex", "kexes"}),
        categories=frozenset({"all"}),
        preferred=preferred,
        verbs=VERBS,
    )


# Hand-written discovery documents, as a cluster with a metrics server and a CRD serves them.
CORE_V1: dict[str, Any] = {
    "resources": [
        {"name": "pods", "singularName": "", "kind": "Pod", "namespaced": True,
         "shortNames": ["po"], "categories": ["all"], "verbs": sorted(VERBS)},
        {"name": "events", "singularName": "", "kind": "Event", "namespaced": True,
         "shortNames": ["ev"], "verbs": sorted(VERBS)},
        {"name": "bindings", "singularName": "", "kind": "Binding", "namespaced": True,
         "verbs": ["create"]},
        {"name": "componentstatuses", "singularName": "", "kind": "ComponentStatus",
         "namespaced": False, "verbs": ["get", "list"]},
    ]
}  # fmt: skip
METRICS_V1BETA1: dict[str, Any] = {
    "resources": [
        {"name": "pods", "singularName": "", "kind": "PodMetrics", "namespaced": True,
         "verbs": ["get", "list"]},
    ]
}  # fmt: skip
EVENTS_K8S_V1: dict[str, Any] = {
    "resources": [
        {"name": "events", "singularName": "", "kind": "Event", "namespaced": True,
         "verbs": sorted(VERBS)},
    ]
}  # fmt: skip
ZALANDO_V1: dict[str, Any] = {
    "resources": [
        {"name": "kopfexamples", "singularName": "kopfexample", "kind": "KopfExample",
         "namespaced": True, "verbs": sorted(VERBS)},
    ]
}  # fmt: skip

CLUSTER = [
    *parse_resource_list(CORE_V1, group="", version="v1"),
    *parse_resource_list(METRICS_V1BETA1, group="metrics.k8s.io", version="v1beta1"),
    *parse_resource_list(EVENTS_K8S_V1, group="events.k8s.io", version="v1"),
    kex("v1"),
    kex("v2", preferred=False),
]
PODS = Resource("", "v1", "pods")
METRICS_PODS = Resource("metrics.k8s.io", "v1beta1", "pods")


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        (("kopf.dev", "v1", "kopfexamples"), {}, {"group": "kopf.dev", "version": "v1"}),
        (("kopf.dev/v1", "kopfexamples"), {}, {"group": "kopf.dev", "version": "v1"}),
        (("kopf.dev", "kopfexamples"), {}, {"group": "kopf.dev", "version": None}),
        (("kopfexamples.kopf.dev",), {}, {"group": "kopf.dev", "version": None}),
        (("kopfexamples.v1.kopf.dev",), {}, {"group": "kopf.dev", "version": "v1"}),
        (("pods.v1",), {}, {"group": None, "version": "v1"}),
        (("v1", "pods"), {}, {"group": "", "version": "v1"}),
        (("", "v1", "pods"), {}, {"group": "", "version": "v1"}),
        (("kopfexamples",), {}, {"group": None, "version": None}),
    ],
)
def test_positional_forms_are_interpreted_as_in_kopf(
    args: tuple[str, ...], kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    selector = Selector(*args, **kwargs)  # type: ignore[arg-type]
    assert (selector.group, selector.version) == (expected["group"], expected["version"])
    assert selector.any_name == args[-1].split(".")[0]


@pytest.mark.parametrize(
    "selector",
    [
        Selector("kopf.dev", "v1", "kopfexamples"),
        Selector("kopf.dev/v1", "kopfexamples"),
        Selector("kopf.dev", "kopfexamples"),
        Selector("kopfexamples.kopf.dev"),
        Selector("kopfexamples"),
        Selector("kopfexample"),
        Selector("KopfExample"),
        Selector("kex"),
        Selector(kind="KopfExample"),
        Selector(plural="kopfexamples"),
        Selector(singular="kopfexample"),
        Selector(shortcut="kex"),
        Selector("kex", group="kopf.dev", version="v1"),
    ],
    ids=repr,
)
def test_all_forms_select_the_same_preferred_resource(selector: Selector) -> None:
    assert selector.select(CLUSTER) == {kex("v1")}


def test_explicit_versions_select_non_preferred_resources() -> None:
    assert Selector("kopf.dev", "v2", "kex").select(CLUSTER) == {kex("v2")}


def test_a_resource_missing_from_its_groups_preferred_version_is_taken_in_its_highest() -> None:
    # Another CRD of the group serves v2, so the group prefers v2; this one serves v1 and
    # v1beta1 only: kubectl takes it in v1, and so does a selector without a version, both to
    # serve it and to match its handlers to it (an object of it reaches its handlers).
    only_v1 = [kex("v1", preferred=False), kex("v1beta1", preferred=False)]
    other = Resource("kopf.dev", "v2", "others", kind="Other", preferred=True, verbs=VERBS)
    discovered = with_own_preferences([*only_v1, other])
    v1, v1beta1 = (r for r in discovered if r.plural == "kopfexamples")
    for selector in (Selector("kex"), Selector("kopf.dev", "kopfexamples"), Selector(EVERYTHING)):
        assert v1 in selector.select(discovered)
        assert v1beta1 not in selector.select(discovered)
        assert selector.check(v1)
        assert not selector.check(v1beta1)
    both = with_own_preferences([kex("v1"), kex("v2", preferred=False)])
    assert Selector("kex").select(both) == {kex("v1")}


def test_specific_names_prefer_the_core_api_over_other_groups() -> None:
    assert Selector("pods").select(CLUSTER) == {PODS}
    assert Selector("metrics.k8s.io", "pods").select(CLUSTER) == {METRICS_PODS}


def test_categories_select_all_members_and_are_not_specific() -> None:
    selector = Selector(category="all")
    assert selector.select(CLUSTER) == {PODS, kex("v1")}
    assert not selector.is_specific


def test_everything_excludes_core_and_events_k8s_io_events() -> None:
    selected = Selector(EVERYTHING).select(CLUSTER)
    assert not any(resource.plural == "events" for resource in selected)
    assert PODS in selected
    assert kex("v1") in selected
    assert kex("v2") not in selected  # only preferred versions


def test_everything_within_a_group() -> None:
    assert Selector("kopf.dev", EVERYTHING).select(CLUSTER) == {kex("v1")}
    assert Selector("kopf.dev", "v2", EVERYTHING).select(CLUSTER) == {kex("v2")}


def test_events_are_served_when_named_explicitly() -> None:
    assert Selector("v1", "events").select(CLUSTER) == {Resource("", "v1", "events")}


def test_callable_selectors_see_non_preferred_versions_but_never_events() -> None:
    selector = Selector(lambda resource: resource.group in ("kopf.dev", "events.k8s.io"))
    assert selector.select(CLUSTER) == {kex("v1"), kex("v2")}
    assert not selector.is_specific


def test_callable_selectors_combine_with_keywords() -> None:
    selector = Selector(lambda resource: True, group="kopf.dev", version="v2")
    assert selector.select(CLUSTER) == {kex("v2")}


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "without any name"),
        (("kex",), {"kind": "KopfExample"}, "Ambiguous"),
        ((), {"plural": ""}, "empty"),
        ((lambda r: True, "x"), {}, "callable"),
        (("g", lambda r: True), {}, "callable"),
        ((123,), {}, "name, a marker or a callable"),
        (("kopf.dev", "kex"), {"group": "other"}, "twice"),
    ],
)
def test_bad_specifications_raise_type_errors(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Selector(*args, **kwargs)


def test_a_missing_group_before_a_name_means_any_group() -> None:
    assert Selector(None, "kex").select(CLUSTER) == {kex("v1")}


def test_selector_repr_shows_only_the_given_fields() -> None:
    assert repr(Selector("kopf.dev", "kex")) == "Selector(group='kopf.dev', any_name='kex')"


def test_resolution_serves_unambiguous_selectors() -> None:
    resolution = resolve([Selector("kex"), Selector("v1", "pods")], CLUSTER)
    assert resolution.resources == {kex("v1"), PODS}
    assert not resolution.ambiguous
    assert not resolution.unresolved


def test_same_name_in_several_groups_is_ambiguous_and_not_served() -> None:
    cluster = [*CLUSTER, *parse_resource_list(ZALANDO_V1, group="zalando.org", version="v1")]
    zalando_kex = Resource("zalando.org", "v1", "kopfexamples")
    resolution = resolve([Selector("kopfexamples")], cluster)
    assert resolution.ambiguous == {Selector("kopfexamples"): {kex("v1"), zalando_kex}}
    assert resolution.resources == frozenset()
    assert ambiguous_message(resolution) == [
        "Ambiguous resources will not be served (try specifying API groups): "
        "Selector(any_name='kopfexamples') => "
        "{kopfexamples.v1.kopf.dev, kopfexamples.v1.zalando.org}"
    ]


def test_ambiguity_of_one_selector_hides_those_resources_from_other_selectors() -> None:
    cluster = [*CLUSTER, *parse_resource_list(ZALANDO_V1, group="zalando.org", version="v1")]
    resolution = resolve([Selector("kopfexamples"), Selector("kopf.dev", EVERYTHING)], cluster)
    assert resolution.resources == frozenset()


def test_unresolved_selectors_are_reported() -> None:
    resolution = resolve([Selector("kopf.dev", "missings"), Selector("kex")], CLUSTER)
    assert resolution.unresolved == {Selector("kopf.dev", "missings")}
    assert unresolved_message(resolution) == (
        "Unresolved resources cannot be served (try creating their CRDs): "
        "Selector(group='kopf.dev', any_name='missings')"
    )
    assert ambiguous_message(resolution) == []


@pytest.mark.parametrize(
    ("selector", "meant"),
    [
        (Selector("kopfexampels"), "kopfexamples.kopf.dev"),
        (Selector("KopfExampel"), "kopfexamples.kopf.dev"),
        (Selector("kopfexample.kopf.dve"), "kopfexamples.kopf.dev"),
        (Selector(plural="componentstatus"), "componentstatuses"),
    ],
)
def test_an_unresolved_name_with_a_typo_gets_the_nearest_served_name(
    selector: Selector, meant: str
) -> None:
    resolution = resolve([selector], CLUSTER)
    assert unresolved_message(resolution, CLUSTER) == (
        "Unresolved resources cannot be served (try creating their CRDs): "
        f"{selector!r} (did you mean {meant}?)"
    )


def test_an_unresolved_name_far_from_every_served_one_gets_no_guess() -> None:
    resolution = resolve([Selector("kopf.dev", "missings"), Selector("databases")], CLUSTER)
    assert unresolved_message(resolution, CLUSTER) == (
        "Unresolved resources cannot be served (try creating their CRDs): "
        "Selector(any_name='databases'), Selector(group='kopf.dev', any_name='missings')"
    )


def test_nonwatchable_resources_are_not_served_and_nonpatchable_are_reported() -> None:
    resolution = resolve([Selector("bindings"), Selector("componentstatuses")], CLUSTER)
    assert resolution.nonwatchable == {Resource("", "v1", "bindings")}
    assert resolution.nonpatchable == {Resource("", "v1", "componentstatuses")}
    assert resolution.resources == {Resource("", "v1", "componentstatuses")}
    assert nonwatchable_message(resolution) == (
        "Non-watchable resources will not be served: {bindings.v1}"
    )
    assert nonpatchable_message(resolution) == (
        "Non-patchable resources will not be served: {componentstatuses.v1}"
    )


def test_a_clean_resolution_has_no_messages() -> None:
    resolution = resolve([Selector("kex")], CLUSTER)
    assert unresolved_message(resolution) is None
    assert nonwatchable_message(resolution) is None
    assert nonpatchable_message(resolution) is None
