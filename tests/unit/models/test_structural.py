"""Kubernetes' structural-schema rules, and that every model the generator takes obeys them."""

from __future__ import annotations

import itertools
import types
from typing import Annotated, Any, Literal

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anyop
from anyop.models.schemas import resource_schema
from anyop.models.structural import structural_violations

OBJECT = {"type": "object"}


@pytest.mark.parametrize(
    ("schema", "violation"),
    [
        ({"properties": {"a": {"type": "string"}}}, "(root): has no type"),
        ({**OBJECT, "properties": {"a": {}}}, "a: has no type"),
        ({**OBJECT, "properties": {"a": {"$ref": "#/x"}}}, "a: $ref is not a keyword"),
        ({"type": "null"}, "(root): type 'null' is not one of"),
        (
            {**OBJECT, "anyOf": [{"type": "string"}, {"type": "integer"}]},
            "(root).anyOf[0]: type must not be inside allOf/anyOf/oneOf/not",
        ),
        (
            {**OBJECT, "properties": {"a": OBJECT}, "additionalProperties": OBJECT},
            "properties and additionalProperties are mutually exclusive",
        ),
        ({**OBJECT, "additionalProperties": False}, "additionalProperties must not be false"),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems"),
        ({"type": "array"}, "(root): an array must have items"),
        ({"type": "integer", "exclusiveMinimum": 3}, "exclusiveMinimum must be a boolean"),
        (
            {"type": "integer", "x-kubernetes-int-or-string": True},
            "x-kubernetes-int-or-string must have no type",
        ),
        ({**OBJECT, "properties": {}, "required": ["a"]}, "required names fields that are not"),
        ({**OBJECT, "properties": {"a": "string"}}, "a: a schema node must be a mapping"),
        ({**OBJECT, "const": 1}, "const is not a keyword"),
    ],
)
def test_each_rule_of_structural_schemas_is_reported_with_its_path(
    schema: dict[str, Any], violation: str
) -> None:
    violations = structural_violations(schema)
    assert any(violation in line for line in violations), violations


@pytest.mark.parametrize(
    "schema",
    [
        {"x-kubernetes-preserve-unknown-fields": True},
        {"x-kubernetes-int-or-string": True},
        {**OBJECT, "additionalProperties": {"type": "string"}},
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "nullable": True},
    ],
)
def test_schemas_within_the_rules_have_no_violations(schema: dict[str, Any]) -> None:
    assert structural_violations(schema) == []


_names = itertools.count()

SCALARS: list[Any] = [
    int,
    str,
    float,
    bool,
    Any,
    int | str,
    Literal["a", "b"],
    Literal[1, 2],
    Annotated[int, pydantic.Field(ge=0, lt=10)],
    Annotated[str, pydantic.Field(pattern="^x", max_length=5)],
    Annotated[float, pydantic.Field(gt=0.5, description="A ratio.")],
    set[str],
    dict[str, Any],
]


def model_of(fields: list[tuple[Any, bool]]) -> type[anyop.Model]:
    """A model with one field per type; the flag says whether it has a default."""
    definitions: dict[str, Any] = {
        f"field_{index}": (kind, None if optional else ...)
        for index, (kind, optional) in enumerate(fields)
    }
    return pydantic.create_model(f"Part{next(_names)}", __base__=anyop.Model, **definitions)


def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        children.map(lambda kind: list[kind]),  # type: ignore[valid-type]
        children.map(lambda kind: dict[str, kind]),  # type: ignore[valid-type]
        children.map(lambda kind: kind | None),
        st.lists(st.tuples(children, st.booleans()), min_size=1, max_size=4).map(model_of),
    )


TYPES = st.recursive(st.sampled_from(SCALARS), extend, max_leaves=12)


def resource_of(spec: type[anyop.Model]) -> type[anyop.CustomResource]:
    options = {"group": "demo.example.com", "version": "v1", "kind": "Generated"}

    def body(namespace: dict[str, Any]) -> None:
        namespace["__annotations__"] = {"spec": spec, "status": spec | None}
        namespace["status"] = None

    return types.new_class("Generated", (anyop.CustomResource,), options, body)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TYPES, st.booleans()), min_size=1, max_size=5))
def test_every_schema_generated_from_a_model_is_structural(fields: list[tuple[Any, bool]]) -> None:
    schema = resource_schema(resource_of(model_of(fields)))
    assert structural_violations(schema) == []
    assert "$ref" not in repr(schema)
    assert "anyOf" not in repr(schema)
