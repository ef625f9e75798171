"""Typed admission handlers: the object under review as a model, a refusal naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

import anyop
from anyop.engine.operator.admission_reviews import Reviewer
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio


class LeverSpec(anyop.Model):
    force: int = Field(default=1, le=10)


class Lever(anyop.CustomResource, group="typed.example.com", version="v1", kind="Lever"):
    spec: LeverSpec


LEVERS = Resource("typed.example.com", "v1", "levers", kind="Lever", namespaced=True)
SEEN: list[Any] = []


def review(spec: dict[str, Any]) -> dict[str, Any]:
    request = {
        "uid": "u-1",
        "resource": {"group": "typed.example.com", "version": "v1", "resource": "levers"},
        "operation": "CREATE",
        "object": {"metadata": {"name": "l", "namespace": "ns"}, "spec": spec},
        "userInfo": {"username": "alice"},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def registry_of_a_typed_validator() -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.validate(Lever, registry=registry, id="check")
    def check(spec: LeverSpec, body: Lever, **_: Any) -> None:
        SEEN.append((spec, type(body)))
        if spec.force > 5:
            raise anyop.AdmissionError("too strong")

    return registry


async def test_a_typed_validator_gets_the_object_as_a_model_and_refuses_by_it() -> None:
    SEEN.clear()
    reviewer = Reviewer(
        registry_of_a_typed_validator(), OperatorSettings(), [LEVERS], new_memo=dict
    )
    allowed = await reviewer(review({"force": 2}), headers={})
    assert allowed["response"]["allowed"] is True
    assert [(LeverSpec(force=2), Lever)] == SEEN
    refused = await reviewer(review({"force": 7}), headers={})
    assert refused["response"]["allowed"] is False
    assert refused["response"]["status"]["message"] == "too strong"


async def test_an_object_that_the_model_refuses_is_refused_naming_the_field() -> None:
    reviewer = Reviewer(
        registry_of_a_typed_validator(), OperatorSettings(), [LEVERS], new_memo=dict
    )
    refused = await reviewer(review({"force": 50}), headers={})
    assert refused["response"]["allowed"] is False
    assert "spec.force=50" in refused["response"]["status"]["message"]
