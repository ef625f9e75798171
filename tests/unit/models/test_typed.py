"""Typed kwargs: bodies validated into models, clear errors for bad ones, models in patches."""

from __future__ import annotations

from typing import Any, Literal

import anyio
import pytest
from pydantic import Field

import anyop
from anyop.errors import PermanentError
from anyop.handlers.bodies import Body
from anyop.handlers.records import ConversionHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import DeclarationTypeError, DeclarationValueError
from anyop.manifests.files import typed_resources
from anyop.models.typed import typed_function, typed_kwargs, validated


class ItemSpec(anyop.Model):
    replicas: int = Field(default=1, ge=0, le=100)
    engine: Literal["postgres", "mysql"]
    max_size: int | None = None


class ItemStatus(anyop.Model):
    ready: bool = False
    seen_replicas: int | None = None


class Item(anyop.CustomResource, group="demo.example.com", version="v1", kind="Item"):
    spec: ItemSpec
    status: ItemStatus | None = None


BODY = {
    "apiVersion": "demo.example.com/v1",
    "kind": "Item",
    "metadata": {"name": "i", "namespace": "ns", "labels": {"a": "b"}},
    "spec": {"replicas": 3, "engine": "mysql", "maxSize": 9},
    "status": {"ready": True, "create_fn": {"message": "kept by the schema"}},
}


def test_kwargs_of_a_typed_resource_are_model_instances() -> None:
    kwargs = typed_kwargs(Item, {"body": Body(BODY), "spec": None, "name": "i"})
    assert isinstance(kwargs["body"], Item)
    assert kwargs["spec"] == ItemSpec(replicas=3, engine="mysql", max_size=9)
    assert kwargs["status"] == ItemStatus(ready=True)
    assert kwargs["body"].metadata.labels == {"a": "b"}
    assert kwargs["name"] == "i"  # the other kwargs stay as they are


def test_a_body_without_a_status_gets_none() -> None:
    body = {**BODY, "status": None}
    assert typed_kwargs(Item, {"body": body})["status"] is None


def test_a_body_that_does_not_validate_is_a_permanent_error_naming_path_and_value() -> None:
    body = {**BODY, "spec": {"replicas": 500, "engine": "oracle"}}
    with pytest.raises(PermanentError) as info:
        validated(Item, body)
    message = str(info.value)
    assert message.startswith("The Item does not validate:")
    assert "spec.replicas=500: Input should be less than or equal to 100" in message
    assert "spec.engine='oracle'" in message


def test_a_missing_required_field_is_named_as_missing() -> None:
    with pytest.raises(PermanentError, match=r"spec.engine=\(missing\): Field required"):
        validated(Item, {**BODY, "spec": {"replicas": 1}})


async def _async_handler(spec: ItemSpec, **_: Any) -> int:
    return spec.replicas


def _sync_handler(spec: ItemSpec, **_: Any) -> int:
    return spec.replicas * 2


@pytest.mark.anyio
async def test_wrapped_async_handlers_stay_async_and_get_the_models() -> None:
    wrapped = typed_function(_async_handler, Item)
    assert await wrapped(body=BODY, spec={}) == 3
    assert wrapped.__name__ == "_async_handler"


def test_wrapped_sync_handlers_stay_sync_and_get_the_models() -> None:
    wrapped = typed_function(_sync_handler, Item)
    assert wrapped(body=BODY, spec={}) == 6


def test_decorating_with_a_class_selects_its_resource_and_records_the_model() -> None:
    registry = OperatorRegistry()

    @anyop.on.create(Item, registry=registry)
    def created(spec: ItemSpec, **_: Any) -> None: ...

    [handler] = registry.changing.handlers
    assert handler.selector is not None
    assert (handler.selector.group, handler.selector.version) == ("demo.example.com", "v1")
    assert handler.selector.plural == "items"
    assert handler.model is Item
    assert handler.fn is not created  # wrapped: the kwargs become models
    assert handler.id.endswith("<locals>.created")  # as untyped handlers are named


def test_untyped_declarations_keep_the_function_and_no_model() -> None:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry)
    def created(**_: Any) -> None: ...

    [handler] = registry.changing.handlers
    assert handler.fn is created
    assert handler.model is None


def test_a_class_with_other_selector_arguments_is_refused() -> None:
    with pytest.raises(DeclarationTypeError, match="names the resource alone"):
        anyop.on.create(Item, plural="items", registry=OperatorRegistry())(_sync_handler)
    with pytest.raises(DeclarationTypeError, match="names the resource alone"):
        anyop.on.create("demo.example.com", Item, registry=OperatorRegistry())(_sync_handler)


def test_every_resource_handler_kind_takes_a_class() -> None:
    registry = OperatorRegistry()
    anyop.on.update(Item, registry=registry)(_sync_handler)
    anyop.on.field(Item, field="spec.replicas", registry=registry)(_sync_handler)
    anyop.on.event(Item, registry=registry)(_sync_handler)
    anyop.daemon(Item, registry=registry)(_async_handler)
    anyop.timer(Item, interval=1, registry=registry)(_async_handler)
    anyop.index(Item, id="items", registry=registry)(_sync_handler)
    anyop.on.validate(Item, registry=registry)(_sync_handler)
    anyop.reconcile(Item, registry=registry)(_async_handler)
    handlers = [
        *registry.changing.handlers,
        *registry.watching.handlers,
        *registry.spawning.handlers,
        *registry.indexing.handlers,
        *registry.webhooks.handlers,
        *registry.reconciling.handlers,
    ]
    assert len(handlers) == 8
    assert all(getattr(handler, "model", None) is Item for handler in handlers)


def test_patches_take_models_by_wire_names_and_only_the_fields_that_were_set() -> None:
    patch = anyop.Patch()
    patch.status.update(ItemStatus(seen_replicas=3))
    patch.spec["sub"] = ItemSpec(engine="mysql")
    patch["metadata"] = {"labels": {"x": "y"}}
    assert patch == {
        "status": {"seenReplicas": 3},
        "spec": {"sub": {"engine": "mysql"}},
        "metadata": {"labels": {"x": "y"}},
    }


def test_patch_views_still_update_from_mappings_and_keywords() -> None:
    patch = anyop.Patch()
    patch.status.update({"a": 1}, b=2)
    assert patch == {"status": {"a": 1, "b": 2}}


def test_a_mapping_set_into_a_patch_is_the_very_object_that_later_writes_change() -> None:
    patch = anyop.Patch()
    status: dict[str, Any] = {}
    patch["status"] = status
    status["late"] = 1
    assert patch == {"status": {"late": 1}}


class ItemSpecV2(anyop.Model):
    size: int
    engine: str


class ItemV2(anyop.CustomResource, group="demo.example.com", version="v2", kind="Item"):
    spec: ItemSpecV2


def test_a_typed_conversion_selects_the_kind_and_its_versions_by_the_classes() -> None:
    registry = OperatorRegistry()

    @anyop.on.convert(from_=Item, to=ItemV2, registry=registry)
    def upgrade(spec: ItemSpec, **_: Any) -> ItemV2:
        return ItemV2(spec=ItemSpecV2(size=spec.replicas, engine=spec.engine))

    [handler] = registry.webhooks.handlers
    assert isinstance(handler, ConversionHandler)
    assert (handler.from_version, handler.to_version) == ("v1", "v2")
    assert handler.selector is not None
    assert (handler.selector.group, handler.selector.plural) == ("demo.example.com", "items")
    assert handler.fn(body=BODY, spec={}) == {"spec": {"size": 3, "engine": "mysql"}}
    assert typed_resources(registry) == [Item, ItemV2]


def test_a_typed_conversion_that_returns_another_kind_fails_for_good() -> None:
    registry = OperatorRegistry()

    @anyop.on.convert(from_=Item, to=ItemV2, registry=registry)
    async def wrong(body: Item, **_: Any) -> Item:
        return body

    [handler] = registry.webhooks.handlers
    with pytest.raises(PermanentError, match="returned a Item, not a ItemV2"):
        anyio.run(lambda: handler.fn(body=BODY))


def test_a_typed_conversion_needs_two_classes_of_one_kind_and_no_other_selector() -> None:
    with pytest.raises(DeclarationTypeError, match="two typed resources' classes"):
        anyop.on.convert(from_=Item, to="v2", registry=OperatorRegistry())(_sync_handler)
    with pytest.raises(DeclarationTypeError, match="no other selector"):
        anyop.on.convert("items", from_=Item, to=ItemV2, registry=OperatorRegistry())(_sync_handler)
    with pytest.raises(DeclarationValueError, match="different resources"):
        anyop.on.convert(from_=Item, to=Thing, registry=OperatorRegistry())(_sync_handler)


class Thing(anyop.CustomResource, group="demo.example.com", version="v2", kind="Thing"):
    spec: ItemSpecV2


def test_a_whole_typed_object_updates_a_patch_by_wire_names() -> None:
    patch = anyop.Patch()
    patch.update(Item(spec=ItemSpec(engine="mysql", max_size=4)))
    assert patch == {"spec": {"engine": "mysql", "maxSize": 4}}


def test_typed_owned_resources_are_named_by_plural_and_group_and_their_crds_written() -> None:
    registry = OperatorRegistry()
    anyop.reconcile("kopfexamples", owns=[ItemV2, "configmaps"], registry=registry)(_async_handler)
    [handler] = registry.reconciling.handlers
    assert handler.owned_names == ("items.demo.example.com", "configmaps")
    assert handler.owned_models == {"items.demo.example.com": ItemV2}
    assert handler.model is None
    assert typed_resources(registry) == [ItemV2]


def test_untyped_parents_get_typed_children_and_their_own_views() -> None:
    wrapped = typed_function(lambda **kwargs: kwargs, None, {"items.demo.example.com": Item})
    kwargs = wrapped(body=BODY, children={"items.demo.example.com": [BODY], "pods": [{"a": 1}]})
    assert kwargs["body"] is BODY
    assert isinstance(kwargs["children"]["items.demo.example.com"][0], Item)
    assert kwargs["children"]["pods"] == [{"a": 1}]


def test_a_long_refused_value_is_shortened_in_the_message() -> None:
    body = {**BODY, "spec": {"replicas": 1, "engine": "x" * 500}}
    with pytest.raises(PermanentError) as info:
        validated(Item, body)
    assert "spec.engine='xxxx" in str(info.value)
    assert "x" * 100 not in str(info.value)
