"""AdmissionReview parsing and answers: pure."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from anyop.errors import AdmissionError, PermanentError, TemporaryError
from anyop.kube.jsonpatch import apply_json_patch
from anyop.kube.patches import Patch
from anyop.webhooks.review import (
    MAX_DEPTH,
    ReviewError,
    build_response,
    decode_review,
    error_status,
    parse_review,
)


def review(version: str = "admission.k8s.io/v1", **request: Any) -> dict[str, Any]:
    base = {
        "uid": "u-1",
        "kind": {"group": "kopf.dev", "version": "v1", "kind": "KopfExample"},
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "CREATE",
        "userInfo": {"username": "admin"},
        "object": {"metadata": {"name": "x"}, "spec": {"a": 1}},
        "oldObject": None,
        "dryRun": True,
    }
    return {"apiVersion": version, "kind": "AdmissionReview", "request": base | request}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize("version", ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])
def test_both_versions_are_answered_in_kind_with_the_same_uid(version: str) -> None:
    request = parse_review(review(version))
    answer = build_response(request)
    assert answer == {
        "apiVersion": version,
        "kind": "AdmissionReview",
        "response": {"uid": "u-1", "allowed": True},
    }


def test_the_request_fields_are_extracted() -> None:
    request = parse_review(review(subResource="status", oldObject={"spec": {"a": 0}}))
    assert (request.group, request.version, request.plural) == ("kopf.dev", "v1", "kopfexamples")
    assert (request.kind, request.subresource) == ("KopfExample", "status")
    assert request.operation == "CREATE"
    assert request.dryrun is True
    assert request.userinfo == {"username": "admin"}
    assert request.old == {"spec": {"a": 0}}
    assert request.body == request.new


def test_a_deletion_is_about_the_old_object() -> None:
    request = parse_review(review(operation="DELETE", object=None, oldObject={"spec": {}}))
    assert request.body == {"spec": {}}


@pytest.mark.parametrize(
    ("payload", "culprit"),
    [
        ([], "not a JSON object"),
        ({"apiVersion": "v1", "kind": "Pod"}, "Expected kind AdmissionReview"),
        (review("admission.k8s.io/v2"), "'admission.k8s.io/v2'"),
        ({**review(), "kind": "ConversionReview"}, "'ConversionReview'"),
        ({**review(), "request": None}, "has no request"),
        (review(uid=""), "has no uid"),
        (review(uid=None), "has no uid"),
        (review(resource="pods"), "has no resource"),
        (review(resource={"group": "", "version": "v1"}), "resource is malformed"),
        (review(operation="PATCH"), "unknown operation: 'PATCH'"),
        (review(object=[1]), "object is not an object"),
        (review(object=nested(MAX_DEPTH + 1)), "nested deeper than"),
    ],
)
def test_bad_reviews_are_refused_with_400_naming_the_culprit(payload: Any, culprit: str) -> None:
    with pytest.raises(ReviewError, match=culprit) as info:
        parse_review(payload)
    assert info.value.status == 400


@pytest.mark.parametrize(
    ("raw", "culprit"),
    [
        (b"", "empty"),
        (b"  \n", "empty"),
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_bodies_that_are_not_json_are_refused(raw: bytes, culprit: str) -> None:
    with pytest.raises(ReviewError, match=culprit):
        decode_review(raw)


def test_a_denial_carries_the_message_and_the_code_and_no_patch() -> None:
    request = parse_review(review())
    answer = build_response(
        request,
        warnings=["w1"],
        denial=("No.", 418),
        patch=[{"op": "add", "path": "/x", "value": 1}],
    )
    assert answer["response"] == {
        "uid": "u-1",
        "allowed": False,
        "warnings": ["w1"],
        "status": {"message": "No.", "code": 418},
    }


def test_a_mutation_is_a_base64_json_patch_that_the_api_server_can_apply() -> None:
    request = parse_review(review())
    patch = Patch()
    patch.spec["b"] = 2
    patch.metadata.labels["l"] = "v"
    patch.fns.append(lambda body: body["spec"].pop("a"))
    assert request.new is not None
    ops = patch.as_json_patch(request.new)
    answer = build_response(request, patch=ops)["response"]
    assert answer["patchType"] == "JSONPatch"
    decoded = json.loads(base64.b64decode(answer["patch"]))
    assert apply_json_patch(request.new, decoded) == {
        "metadata": {"name": "x", "labels": {"l": "v"}},
        "spec": {"b": 2},
    }


def test_errors_are_ranked_admission_permanent_temporary_then_others() -> None:
    others, temporary = ValueError("v"), TemporaryError("t")
    permanent, admission = PermanentError("p"), AdmissionError("a", code=499)
    assert error_status([]) is None
    assert error_status([others, temporary, permanent, admission]) == ("a", 499)
    assert error_status([others, temporary, permanent]) == ("p", 500)
    assert error_status([others, temporary]) == ("t", 500)
    assert error_status([KeyError()]) == ("KeyError", 500)
    assert error_status([AdmissionError("x", code=None)]) == ("x", 500)
