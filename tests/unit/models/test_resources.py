"""Typed resources' class statements: the options they take, and the errors for bad ones."""

from __future__ import annotations

from typing import Any

import pytest

import anyop
from anyop.errors import ConfigError
from anyop.models.resources import is_custom_resource


class GadgetSpec(anyop.Model):
    max_size: int = 3


class Gadget(
    anyop.CustomResource,
    group="demo.example.com",
    version="v1",
    kind="Gadget",
    short_names=["gd"],
    scope="Cluster",
):
    spec: GadgetSpec


def test_class_options_become_the_resource_info_with_conventional_names() -> None:
    info = Gadget.__resource__
    assert (info.group, info.version, info.kind) == ("demo.example.com", "v1", "Gadget")
    assert (info.plural, info.singular, info.short_names) == ("gadgets", "gadget", ("gd",))
    assert info.scope == "Cluster"
    assert info.crd_name == "gadgets.demo.example.com"
    assert info.api_version == "demo.example.com/v1"


def test_fields_are_camel_case_on_the_wire_and_snake_case_in_python() -> None:
    gadget = Gadget.model_validate({"metadata": {"name": "g"}, "spec": {"maxSize": 7}})
    assert gadget.spec.max_size == 7
    assert GadgetSpec(max_size=2).model_dump(by_alias=True) == {"maxSize": 2}


def test_to_body_fills_in_api_version_and_kind() -> None:
    body = Gadget(metadata=anyop.models.resources.ObjectMeta(name="g"), spec=GadgetSpec()).to_body()
    assert body["apiVersion"] == "demo.example.com/v1"
    assert body["kind"] == "Gadget"
    assert body["metadata"]["name"] == "g"
    assert body["spec"] == {"maxSize": 3}


def declare(**options: Any) -> type[anyop.CustomResource]:
    class Broken(anyop.CustomResource, **options):
        spec: GadgetSpec

    return Broken


GOOD = {"group": "demo.example.com", "version": "v1", "kind": "Gadget"}


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"version": "v1", "kind": "Gadget"}, "group= are required"),
        ({**GOOD, "kind": "gadget"}, "kind= is malformed: 'gadget'"),
        ({**GOOD, "group": "Demo_Example"}, "group= is malformed"),
        ({**GOOD, "version": "V1"}, "version= is malformed"),
        ({**GOOD, "scope": "Global"}, "scope= must be one of"),
        ({**GOOD, "short_names": "gd"}, "short_names= must be a list of names"),
        ({**GOOD, "printer_columns": [{"name": "Size"}]}, "needs name, type and jsonPath"),
        (
            {**GOOD, "printer_columns": [{"name": "S", "type": "int", "jsonPath": ".spec.x"}]},
            "a type not in",
        ),
        ({**GOOD, "scale": {"specReplicasPath": ".spec.r"}}, "scale= needs specReplicasPath"),
        ({**GOOD, "storage": "yes"}, "storage= must be True or False"),
    ],
)
def test_bad_class_options_raise_a_config_error_naming_the_class(
    options: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ConfigError, match="Broken") as info:
        declare(**options)
    assert complaint in str(info.value)


def test_an_unknown_class_option_is_refused() -> None:
    with pytest.raises(TypeError):
        declare(**GOOD, plurals="gadgets")


class GadgetV2(Gadget, version="v2", storage=True):
    spec: GadgetSpec


def test_a_subclass_is_another_version_with_the_parents_options() -> None:
    info = GadgetV2.__resource__
    assert (info.group, info.version, info.kind, info.scope) == (
        "demo.example.com",
        "v2",
        "Gadget",
        "Cluster",
    )
    assert info.short_names == ("gd",)
    assert info.storage is True
    assert Gadget.__resource__.storage is False


class Base(anyop.CustomResource):
    """Common fields of several kinds."""

    note: str | None = None


class Sprocket(Base, group="demo.example.com", version="v1", kind="Sprocket"):
    spec: GadgetSpec


def test_a_subclass_without_options_is_an_abstract_base_and_no_selector() -> None:
    assert not is_custom_resource(Base)
    assert is_custom_resource(Sprocket)
    assert Sprocket.__resource__.plural == "sprockets"
    with pytest.raises(TypeError, match="Base is not a typed resource with a group"):
        anyop.on.create(Base, registry=anyop.OperatorRegistry())(lambda **_: None)


def test_a_subclass_naming_another_kind_gets_names_of_its_own() -> None:
    class Widget2(Gadget, kind="Widget"):
        spec: GadgetSpec

    assert (Widget2.__resource__.plural, Widget2.__resource__.singular) == ("widgets", "widget")
