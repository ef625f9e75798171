"""Conversion reviews, routes between versions, the managed CRD config and the decorator: pure."""

from __future__ import annotations

from typing import Any

import pytest

import anyop.on as on
from anyop.errors import ConfigError
from anyop.handlers.records import ConversionHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import EVERYTHING, DeclarationTypeError, DeclarationValueError
from anyop.webhooks.conversion import (
    ConversionFailure,
    build_conversion_response,
    converted_object,
    parse_conversion,
    split_api_version,
)
from anyop.webhooks.conversion_managed import (
    build_conversion,
    conversion_client_config,
    crd_versions,
)
from anyop.webhooks.conversion_routes import plan_routes
from anyop.webhooks.review import ReviewError

CRD = "backends.convert.anyop.dev"
METADATA: dict[str, Any] = {
    "name": "db",
    "namespace": "ns",
    "uid": "u",
    "resourceVersion": "7",
    "labels": {"a": "1"},
}
OBJECT: dict[str, Any] = {
    "apiVersion": "convert.anyop.dev/v1alpha1",
    "kind": "Backend",
    "metadata": METADATA,
    "spec": {"endpoint": "db:5432"},
}


def review(**request: Any) -> dict[str, Any]:
    base = {"uid": "r-1", "desiredAPIVersion": "convert.anyop.dev/v1", "objects": [OBJECT]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": base | request,
    }


def step(source: str, target: str, name: str | None = None) -> ConversionHandler:
    return ConversionHandler(
        id=name or f"{source}-{target}", fn=lambda **_: None, from_version=source, to_version=target
    )


def test_a_review_is_parsed_with_its_uid_target_and_objects() -> None:
    request = parse_conversion(review())
    assert request.uid == "r-1"
    assert request.api_version == "apiextensions.k8s.io/v1"
    assert request.desired_api_version == "convert.anyop.dev/v1"
    assert request.objects == [OBJECT]


@pytest.mark.parametrize(
    ("payload", "culprit"),
    [
        ([], "not a JSON object"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "ConversionReview"),
        ({"apiVersion": "apiextensions.k8s.io/v2", "kind": "ConversionReview"}, "v2"),
        ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}, "no request"),
        (review(uid=""), "no uid"),
        (review(desiredAPIVersion="v1"), "desiredAPIVersion"),
        (review(desiredAPIVersion=None), "desiredAPIVersion"),
        (review(objects={"a": 1}), "not a list of objects"),
        (review(objects=[1]), "not a list of objects"),
        (review(objects=[{"spec": [[[[1]]]]}]), "nested deeper"),
    ],
)
def test_a_malformed_review_is_refused_with_400_and_the_culprit(
    payload: Any, culprit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("anyop.webhooks.conversion.MAX_DEPTH", 4)
    with pytest.raises(ReviewError, match=culprit) as info:
        parse_conversion(payload)
    assert info.value.status == 400


def test_a_success_echoes_the_uid_and_the_review_version_with_every_object() -> None:
    request = parse_conversion(review(objects=[OBJECT, OBJECT]))
    answer = build_conversion_response(request, converted=[{"a": 1}, {"b": 2}])
    assert answer == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": "r-1",
            "convertedObjects": [{"a": 1}, {"b": 2}],
            "result": {"status": "Success"},
        },
    }


def test_a_failure_has_no_objects_and_the_message() -> None:
    payload = review() | {"apiVersion": "apiextensions.k8s.io/v1beta1"}
    answer = build_conversion_response(parse_conversion(payload), failure="No way.")
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    assert answer["response"] == {
        "uid": "r-1",
        "convertedObjects": [],
        "result": {"status": "Failed", "message": "No way."},
    }


def test_a_converted_object_keeps_kind_and_metadata_and_takes_labels_and_annotations() -> None:
    result = {
        "apiVersion": "whatever/v9",
        "kind": "Other",
        "metadata": {**METADATA, "labels": {"b": "2"}, "annotations": {"n": "x"}},
        "spec": {"host": "db", "port": 5432},
    }
    converted = converted_object(OBJECT, result, api_version="convert.anyop.dev/v1")
    assert converted == {
        "apiVersion": "convert.anyop.dev/v1",
        "kind": "Backend",
        "metadata": {
            "name": "db",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"b": "2"},
            "annotations": {"n": "x"},
        },
        "spec": {"host": "db", "port": 5432},
    }


def test_a_converted_object_without_metadata_keeps_the_original_one() -> None:
    converted = converted_object(OBJECT, {"spec": {}}, api_version="convert.anyop.dev/v1")
    assert converted["metadata"] == METADATA


def test_emptied_labels_are_removed() -> None:
    result = {"metadata": {**METADATA, "labels": {}}}
    converted = converted_object(OBJECT, result, api_version="convert.anyop.dev/v1")
    assert "labels" not in converted["metadata"]


@pytest.mark.parametrize(
    ("metadata", "culprit"),
    [
        ({"name": "other"}, "not metadata.name"),
        ({"resourceVersion": "8", "uid": "v"}, "not metadata.resourceVersion, metadata.uid"),
        ({"generation": 2}, "not metadata.generation"),
    ],
)
def test_a_change_of_other_metadata_fails_the_conversion(
    metadata: dict[str, Any], culprit: str
) -> None:
    result = {"metadata": {**METADATA, **metadata}}
    with pytest.raises(ConversionFailure, match=culprit):
        converted_object(OBJECT, result, api_version="convert.anyop.dev/v1")


@pytest.mark.parametrize("metadata", [[], {**METADATA, "labels": "a=1"}])
def test_metadata_that_is_not_an_object_fails_the_conversion(metadata: Any) -> None:
    with pytest.raises(ConversionFailure, match="not an object"):
        converted_object(OBJECT, {"metadata": metadata}, api_version="convert.anyop.dev/v1")


@pytest.mark.parametrize("api_version", ["v1", "a/b/c", "/v1", "group/", None, 5])
def test_an_api_version_without_a_group_is_not_a_custom_resources(api_version: Any) -> None:
    with pytest.raises(ConversionFailure, match="Not an apiVersion"):
        split_api_version(api_version)


def test_a_hub_connects_every_pair_through_itself() -> None:
    steps = [
        step("v1alpha1", "v1"),
        step("v1", "v1alpha1"),
        step("v1beta1", "v1"),
        step("v1", "v1beta1"),
    ]
    routes = plan_routes(
        CRD, group="g.dev", kind="K", versions=["v1alpha1", "v1beta1", "v1"], steps=steps
    )
    assert [h.id for h in routes.route("v1alpha1", "v1beta1")] == ["v1alpha1-v1", "v1-v1beta1"]
    assert [h.id for h in routes.route("v1", "v1alpha1")] == ["v1-v1alpha1"]
    assert routes.route("v1", "v1") == ()


def test_a_chain_is_followed_step_by_step_and_the_shortest_route_wins() -> None:
    chain = [
        step("v1alpha1", "v1beta1"),
        step("v1beta1", "v1"),
        step("v1", "v1beta1"),
        step("v1beta1", "v1alpha1"),
    ]
    shortcut = step("v1alpha1", "v1", "shortcut")
    versions = ["v1alpha1", "v1beta1", "v1"]
    long = plan_routes(CRD, group="g.dev", kind="K", versions=versions, steps=chain)
    short = plan_routes(CRD, group="g.dev", kind="K", versions=versions, steps=[*chain, shortcut])
    assert [h.id for h in long.route("v1alpha1", "v1")] == ["v1alpha1-v1beta1", "v1beta1-v1"]
    assert [h.id for h in long.route("v1", "v1alpha1")] == ["v1-v1beta1", "v1beta1-v1alpha1"]
    assert [h.id for h in short.route("v1alpha1", "v1")] == ["shortcut"]


def test_an_unknown_version_has_no_route() -> None:
    routes = plan_routes(
        CRD,
        group="g.dev",
        kind="K",
        versions=["v1", "v2"],
        steps=[step("v1", "v2"), step("v2", "v1")],
    )
    with pytest.raises(KeyError):
        routes.route("v1", "v3")
    with pytest.raises(KeyError):
        routes.route("v3", "v3")


def test_every_missing_pair_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        plan_routes(
            CRD,
            group="g.dev",
            kind="K",
            versions=["v1alpha1", "v1beta1", "v1"],
            steps=[step("v1alpha1", "v1"), step("v1", "v1alpha1")],
        )
    message = str(info.value)
    assert CRD in message
    assert "from v1alpha1 to v1beta1" in message
    assert "from v1beta1 to v1alpha1" in message
    assert "from v1 to v1beta1" in message
    assert "from v1beta1 to v1;" in message
    assert "from v1alpha1 to v1;" not in message
    assert "from v1 to v1alpha1" not in message


def test_a_step_to_a_version_the_crd_lacks_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"names the version 'v2', which .* does not have"):
        plan_routes(CRD, group="g.dev", kind="K", versions=["v1"], steps=[step("v1", "v2")])


def test_two_functions_for_one_step_are_refused() -> None:
    steps = [step("v1", "v2", "one"), step("v1", "v2", "two"), step("v2", "v1")]
    with pytest.raises(ConfigError, match=r"'one' .* and .* 'two' .* both convert"):
        plan_routes(CRD, group="g.dev", kind="K", versions=["v1", "v2"], steps=steps)


def test_the_crd_conversion_points_to_the_servers_url_with_the_ca() -> None:
    config = {"url": "https://127.0.0.1:9443/hooks/", "caBundle": "Q0E="}
    assert build_conversion(config, CRD) == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "url": f"https://127.0.0.1:9443/hooks/convert/{CRD}",
                "caBundle": "Q0E=",
            },
            "conversionReviewVersions": ["v1", "v1beta1"],
        },
    }


def test_a_service_gets_the_conversion_path() -> None:
    config = {"service": {"namespace": "ops", "name": "op", "port": 443}}
    assert conversion_client_config(config, CRD)["service"] == {
        "namespace": "ops",
        "name": "op",
        "port": 443,
        "path": f"/convert/{CRD}",
    }


def test_the_crd_versions_are_the_served_the_storage_and_the_stored_ones() -> None:
    crd = {
        "spec": {
            "versions": [
                {"name": "v1alpha1", "served": False, "storage": False},
                {"name": "v1beta1", "served": True, "storage": False},
                {"name": "v1", "served": False, "storage": True},
            ]
        },
        "status": {"storedVersions": ["v1alpha1", "v1"]},
    }
    assert crd_versions(crd) == ("v1beta1", "v1", "v1alpha1")


def test_the_decorator_registers_a_step_with_a_kopf_style_id() -> None:
    registry = OperatorRegistry()

    @on.convert("kopf.dev", "kopfexamples", from_="v1alpha1", to="v1", registry=registry)
    def split(**_: Any) -> None:
        pass

    @on.convert("kopfexamples", from_="v1", to="v1alpha1", registry=registry, id="join", param=3)
    async def join(**_: Any) -> None:
        pass

    first, second = registry.webhooks.conversions
    assert (first.id, first.from_version, first.to_version) == (
        split.__qualname__,
        "v1alpha1",
        "v1",
    )
    assert first.selector is not None
    assert first.selector.group == "kopf.dev"
    assert (second.id, second.param, second.fn) == ("join", 3, join)
    assert str(second) == "Conversion 'join' (v1 -> v1alpha1)"
    assert registry.webhooks.admission == []
    assert not registry.watched_selectors()


@pytest.mark.parametrize(
    ("args", "options", "error", "culprit"),
    [
        (("kopfexamples",), {"from_": "v1", "to": "v1"}, DeclarationValueError, "the same"),
        (("kopfexamples",), {"from_": "V1", "to": "v2"}, DeclarationValueError, "version name"),
        (("kopfexamples",), {"from_": 1, "to": "v2"}, DeclarationTypeError, "version name"),
        (
            ("kopf.dev", "v1", "kex"),
            {"from_": "v1", "to": "v2"},
            DeclarationValueError,
            "without a version",
        ),
        ((EVERYTHING,), {"from_": "v1", "to": "v2"}, DeclarationValueError, "one resource"),
        (
            ("kex",),
            {"from_": "v1", "to": "v2", "labels": {}},
            DeclarationTypeError,
            "unknown options",
        ),
        (("kex",), {"from_": "v1", "to": "v2", "id": ""}, DeclarationValueError, "empty"),
    ],
)
def test_wrong_declarations_are_refused_naming_the_function(
    args: tuple[Any, ...], options: dict[str, Any], error: type[Exception], culprit: str
) -> None:
    def fn(**_: Any) -> None:
        pass

    with pytest.raises(error, match=culprit) as info:
        on.convert(*args, registry=OperatorRegistry(), **options)(fn)
    assert "@anyop.on.convert() on " in str(info.value)
