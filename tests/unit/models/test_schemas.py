"""The structural CRD schemas that models imply: what each Python type and constraint becomes."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

import anyop
from anyop.models.crds import crd_manifests
from anyop.models.schemas import SchemaError, resource_schema
from anyop.models.structural import structural_violations


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Limits(anyop.Model):
    """Resource limits."""

    max_size: int = Field(default=3, ge=0, lt=10, description="At most this many.")


class Port(anyop.Model):
    name: str
    number: int


class ThingSpec(anyop.Model):
    engine: Literal["postgres", "mysql"]
    mode: Literal["fast"] = "fast"
    color: Color = Color.RED
    limits: Limits | None = None
    history: list[Limits] = Field(default_factory=list)
    tags: set[str] = Field(default_factory=set)
    counts: dict[str, int] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)
    anything: Any = None
    port: int | str = 80
    name: Annotated[str, Field(pattern="^[a-z]+$", min_length=1, max_length=20)] = "a"
    ratio: float = Field(default=0.5, gt=0)
    ports: list[Port] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class ThingStatus(anyop.Model):
    ready: bool = False


class Thing(anyop.CustomResource, group="demo.example.com", version="v1", kind="Thing"):
    """A thing for tests."""

    spec: ThingSpec
    status: ThingStatus | None = None


SCHEMA = resource_schema(Thing)
SPEC = SCHEMA["properties"]["spec"]["properties"]


def test_the_root_has_spec_and_status_only_and_requires_the_spec() -> None:
    assert set(SCHEMA["properties"]) == {"spec", "status"}
    assert SCHEMA["required"] == ["spec"]
    assert SCHEMA["description"] == "A thing for tests."
    assert SCHEMA["properties"]["spec"]["required"] == ["engine"]


def test_literals_and_enums_become_typed_enums() -> None:
    assert SPEC["engine"] == {"type": "string", "enum": ["postgres", "mysql"]}
    assert SPEC["mode"] == {"type": "string", "enum": ["fast"], "default": "fast"}
    assert SPEC["color"]["enum"] == ["red", "blue"]
    assert SPEC["color"]["default"] == "red"


def test_optional_models_are_nullable_objects_with_bounds_and_descriptions() -> None:
    limits = SPEC["limits"]
    assert limits["type"] == "object"
    assert limits["nullable"] is True
    assert "default" not in limits
    assert limits["description"] == "Resource limits."
    assert limits["properties"]["maxSize"] == {
        "type": "integer",
        "description": "At most this many.",
        "default": 3,
        "minimum": 0,
        "maximum": 10,
        "exclusiveMaximum": True,
    }
    assert SPEC["ratio"]["exclusiveMinimum"] is True


def test_collections_become_lists_sets_maps_and_free_form_objects() -> None:
    assert SPEC["history"]["type"] == "array"
    assert SPEC["history"]["items"]["type"] == "object"
    assert SPEC["tags"]["x-kubernetes-list-type"] == "set"
    assert "uniqueItems" not in SPEC["tags"]
    assert SPEC["counts"]["additionalProperties"] == {"type": "integer"}
    assert SPEC["extra"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "default": {},  # from its default_factory
    }
    assert (SPEC["history"]["default"], SPEC["tags"]["default"]) == ([], [])
    assert SPEC["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert SPEC["ports"]["x-kubernetes-list-type"] == "map"
    assert SPEC["ports"]["x-kubernetes-list-map-keys"] == ["name"]


def test_int_or_str_becomes_int_or_string_without_a_type() -> None:
    assert SPEC["port"] == {"x-kubernetes-int-or-string": True, "default": 80}


def test_strings_keep_their_patterns_and_lengths() -> None:
    assert SPEC["name"] == {
        "type": "string",
        "default": "a",
        "pattern": "^[a-z]+$",
        "minLength": 1,
        "maxLength": 20,
    }


def test_the_status_keeps_unknown_fields_for_handler_results() -> None:
    status = SCHEMA["properties"]["status"]
    assert status["x-kubernetes-preserve-unknown-fields"] is True
    assert status["properties"]["ready"]["type"] == "boolean"
    assert "nullable" not in status


def test_the_whole_schema_is_structural() -> None:
    assert structural_violations(SCHEMA) == []


class Node(anyop.Model):
    children: list[Node] = Field(default_factory=list)


class Tree(anyop.CustomResource, group="demo.example.com", version="v1", kind="Tree"):
    spec: Node


class Either(anyop.Model):
    value: int | list[str]


class Union(anyop.CustomResource, group="demo.example.com", version="v1", kind="Union"):
    spec: Either


class Pair(anyop.Model):
    pair: tuple[int, str]


class Tuple(anyop.CustomResource, group="demo.example.com", version="v1", kind="Tuple"):
    spec: Pair


@pytest.mark.parametrize(
    ("cls", "complaint"),
    [
        (Tree, "spec.children[] refers to Node recursively"),
        (Union, "spec.value is a union of several types"),
        (Tuple, "spec.pair has a type that a structural schema cannot express"),
    ],
)
def test_models_that_no_structural_schema_expresses_are_refused_by_field(
    cls: type[anyop.CustomResource], complaint: str
) -> None:
    with pytest.raises(SchemaError) as info:
        resource_schema(cls)
    assert complaint in str(info.value)


class ThingV2(
    anyop.CustomResource,
    group="demo.example.com",
    version="v2",
    kind="Thing",
    storage=True,
    printer_columns=[{"name": "Engine", "type": "string", "jsonPath": ".spec.engine"}],
    scale={"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
):
    spec: ThingSpec


def test_several_classes_of_one_kind_are_the_versions_of_one_crd() -> None:
    [crd] = crd_manifests([Thing, ThingV2])
    assert crd["metadata"]["name"] == "things.demo.example.com"
    assert crd["spec"]["names"] == {
        "kind": "Thing",
        "listKind": "ThingList",
        "plural": "things",
        "singular": "thing",
    }
    v1, v2 = crd["spec"]["versions"]
    assert (v1["name"], v1["storage"], v2["name"], v2["storage"]) == ("v1", False, "v2", True)
    assert v1["subresources"] == {"status": {}}
    assert v2["subresources"] == {
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    }
    assert v2["additionalPrinterColumns"] == [
        {"name": "Engine", "type": "string", "jsonPath": ".spec.engine"}
    ]


class ThingV3(anyop.CustomResource, group="demo.example.com", version="v3", kind="Thing"):
    spec: ThingSpec


def test_several_versions_need_exactly_one_storage_version() -> None:
    with pytest.raises(SchemaError, match="exactly one of the versions v1, v3"):
        crd_manifests([Thing, ThingV3])


class Other(
    anyop.CustomResource, group="demo.example.com", version="v4", kind="Thing", scope="Cluster"
):
    spec: ThingSpec


def test_versions_that_disagree_on_the_scope_are_refused() -> None:
    with pytest.raises(SchemaError, match="disagree"):
        crd_manifests([ThingV2, Other])


def test_crds_are_sorted_by_name_and_a_class_given_twice_is_one_version() -> None:
    crds = crd_manifests([Thing, Thing, Limitless])
    assert [crd["metadata"]["name"] for crd in crds] == [
        "limitlesses.demo.example.com",
        "things.demo.example.com",
    ]
    assert len(crds[1]["spec"]["versions"]) == 1


class Limitless(
    anyop.CustomResource,
    group="demo.example.com",
    version="v1",
    kind="Limitless",
    plural="limitlesses",
    short_names=["ll"],
    categories=["all"],
):
    spec: dict[str, Any] = Field(default_factory=dict)


def test_short_names_and_categories_are_in_the_names() -> None:
    [crd] = crd_manifests([Limitless])
    assert crd["spec"]["names"]["shortNames"] == ["ll"]
    assert crd["spec"]["names"]["categories"] == ["all"]
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec == {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "default": {}}
