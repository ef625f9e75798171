"""The registry: which handlers apply to which resources, causes and objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import anyop.on as on
from anyop.handlers.causes import (
    Activity,
    ChangingCause,
    Reason,
    SpawningCause,
    WatchingCause,
    WebhookCause,
    WebhookType,
)
from anyop.handlers.filters import PRESENT
from anyop.handlers.records import ActivityHandler, callable_id, generate_id
from anyop.handlers.registry import (
    ChangingRegistry,
    OperatorRegistry,
    Registry,
    SubRegistry,
    deduplicated,
)
from anyop.kube.resources import Resource

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", shortcuts=frozenset({"kex"}))
PODS = Resource("", "v1", "pods", kind="Pod")
LABELLED = {"metadata": {"name": "ex1", "labels": {"app": "demo"}}, "spec": {"x": 1}}
UNLABELLED = {"metadata": {"name": "ex2"}, "spec": {"x": 1}}
DELETING = {
    "metadata": {"name": "ex3", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["f"]},
    "spec": {"x": 1},
}


def kwargs() -> Mapping[str, Any]:
    return {}


def fn(**_: Any) -> None:
    return None


def other(**_: Any) -> None:
    return None


def changing(reason: Reason, body: Mapping[str, Any] = LABELLED, **fields: Any) -> ChangingCause:
    return ChangingCause(resource=KEX, body=body, reason=reason, **fields)


def ids(handlers: Any) -> list[str]:
    return [handler.id for handler in handlers]


@pytest.fixture
def registry() -> OperatorRegistry:
    return Registry()


def test_handlers_are_selected_by_reason(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry)(fn)
    on.update("kex", registry=registry)(other)
    assert ids(registry.changing.select(changing(Reason.CREATE), kwargs)) == ["fn"]
    assert ids(registry.changing.select(changing(Reason.UPDATE), kwargs)) == ["other"]
    assert registry.changing.select(changing(Reason.NOOP), kwargs) == []


def test_handlers_of_other_resources_are_not_selected(registry: OperatorRegistry) -> None:
    on.create("pods", registry=registry)(fn)
    assert registry.changing.select(changing(Reason.CREATE), kwargs) == []
    assert registry.changing.has_handlers(PODS)
    assert not registry.changing.has_handlers(KEX)
    assert ids(registry.changing.for_resource(PODS)) == ["fn"]


def test_a_handler_registered_later_serves_the_resource_at_once(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry)(fn)
    assert ids(registry.changing.for_resource(KEX)) == ["fn"]  # worked out and kept
    on.update("kex", registry=registry)(other)
    on.field("kex", field="spec.x", registry=registry)(other)
    assert ids(registry.changing.for_resource(KEX)) == ["fn", "other", "other/spec.x"]
    assert ids(registry.changing.select(changing(Reason.UPDATE), kwargs)) == ["other"]
    assert registry.extra_fields(KEX) == {("spec", "x")}


def test_equal_resources_with_other_names_are_matched_afresh(registry: OperatorRegistry) -> None:
    on.create("KopfExample", registry=registry)(fn)
    assert ids(registry.changing.for_resource(KEX)) == ["fn"]
    kindless = Resource("kopf.dev", "v1", "kopfexamples")  # equal to KEX, but no kind to match
    assert kindless == KEX
    assert registry.changing.for_resource(kindless) == []
    assert not registry.changing.has_handlers(kindless)
    assert ids(registry.changing.for_resource(KEX)) == ["fn"]


def test_the_same_function_and_id_runs_once_per_cause(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry)(fn)
    on.create("kopfexamples", registry=registry)(fn)  # overlapping selectors
    on.create("kex", registry=registry, id="other_id")(fn)
    assert ids(registry.changing.select(changing(Reason.CREATE), kwargs)) == ["fn", "other_id"]


def test_stacked_create_and_resume_run_once_for_an_object_new_to_the_process(
    registry: OperatorRegistry,
) -> None:
    on.resume("kex", registry=registry)(fn)
    on.create("kex", registry=registry)(fn)
    cause = changing(Reason.UPDATE, initial=True)
    on.update("kex", registry=registry)(fn)
    assert ids(registry.changing.select(cause, kwargs)) == ["fn"]


def test_resume_handlers_mix_into_causes_of_objects_new_to_the_process(
    registry: OperatorRegistry,
) -> None:
    on.resume("kex", registry=registry)(fn)
    on.update("kex", registry=registry)(other)
    assert ids(registry.changing.select(changing(Reason.UPDATE, initial=True), kwargs)) == [
        "fn",
        "other",
    ]
    assert ids(registry.changing.select(changing(Reason.UPDATE), kwargs)) == ["other"]
    assert ids(registry.changing.select(changing(Reason.RESUME, initial=True), kwargs)) == ["fn"]


def test_resume_handlers_skip_objects_being_deleted_unless_deleted_true(
    registry: OperatorRegistry,
) -> None:
    on.resume("kex", registry=registry)(fn)
    on.resume("kex", registry=registry, deleted=True)(other)
    cause = changing(Reason.DELETE, body=DELETING, initial=True)
    assert ids(registry.changing.select(cause, kwargs)) == ["other"]


def test_field_handlers_run_for_any_reason_when_their_field_changes(
    registry: OperatorRegistry,
) -> None:
    on.field("kex", registry=registry, field="spec.x")(fn)
    created = changing(Reason.CREATE, old=None, new={"spec": {"x": 1}})
    updated = changing(Reason.UPDATE, old={"spec": {"x": 1, "y": 1}}, new={"spec": {"x": 1}})
    assert ids(registry.changing.select(created, kwargs)) == ["fn/spec.x"]
    assert registry.changing.select(updated, kwargs) == []


def test_filter_callbacks_do_not_run_for_handlers_of_other_reasons(
    registry: OperatorRegistry,
) -> None:
    calls: list[str] = []

    def when(**_: Any) -> bool:
        calls.append("when")
        return True

    on.update("kex", registry=registry, when=when)(fn)
    on.create("kex", registry=registry)(other)
    registry.changing.select(changing(Reason.CREATE), kwargs)
    assert calls == []


def test_excluded_ids_are_not_selected(registry: OperatorRegistry) -> None:
    on.daemon("kex", registry=registry)(fn)
    on.timer("kex", registry=registry, interval=1)(other)
    cause = SpawningCause(resource=KEX, body=LABELLED)
    assert ids(registry.spawning.select(cause, kwargs, excluded={"fn"})) == ["other"]


def test_a_non_optional_delete_handler_requires_a_finalizer(registry: OperatorRegistry) -> None:
    on.delete("kex", registry=registry, labels={"app": "demo"})(fn)
    assert registry.requires_finalizer(changing(Reason.CREATE), kwargs)
    assert not registry.requires_finalizer(changing(Reason.CREATE, body=UNLABELLED), kwargs)


def test_optional_delete_handlers_and_other_handlers_require_no_finalizer(
    registry: OperatorRegistry,
) -> None:
    on.delete("kex", registry=registry, optional=True)(fn)
    on.create("kex", registry=registry)(fn)
    on.event("kex", registry=registry)(fn)
    assert not registry.requires_finalizer(changing(Reason.CREATE), kwargs)


def test_daemons_and_timers_require_a_finalizer_unless_excluded(registry: OperatorRegistry) -> None:
    on.daemon("kex", registry=registry)(fn)
    assert registry.requires_finalizer(changing(Reason.CREATE), kwargs)
    assert not registry.requires_finalizer(changing(Reason.CREATE), kwargs, excluded={"fn"})


def test_daemons_filter_on_the_body_for_finalizers(registry: OperatorRegistry) -> None:
    on.timer("kex", registry=registry, interval=1, field="metadata.name", value="ex1")(fn)
    assert registry.requires_finalizer(changing(Reason.CREATE, new={"spec": {}}), kwargs)


def test_a_delete_handler_for_an_unchanged_field_still_requires_the_finalizer(
    registry: OperatorRegistry,
) -> None:
    on.delete("kex", registry=registry, field="spec.x")(fn)
    cause = changing(Reason.UPDATE, old={"spec": {"x": 1}}, new={"spec": {"x": 1, "y": 2}})
    assert registry.requires_finalizer(cause, kwargs)


def test_objects_matched_by_no_handler_are_invisible(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry, labels={"app": PRESENT})(fn)
    assert registry.changing.prematch(changing(Reason.CREATE), kwargs)
    assert not registry.changing.prematch(changing(Reason.CREATE, body=UNLABELLED), kwargs)


def test_watching_handlers_are_selected_by_filters(registry: OperatorRegistry) -> None:
    on.event("kex", registry=registry, labels={"app": "demo"})(fn)
    event = {"type": "ADDED", "object": LABELLED}
    cause = WatchingCause(resource=KEX, body=LABELLED, type="ADDED", event=event)
    assert ids(registry.watching.select(cause, kwargs)) == ["fn"]


def test_extra_fields_come_from_field_filters_of_the_resource(registry: OperatorRegistry) -> None:
    on.field("kex", registry=registry, field="status.phase")(fn)
    on.daemon("kex", registry=registry, field="spec.x")(fn)
    on.event("pods", registry=registry, field="spec.y")(fn)
    assert registry.extra_fields(KEX) == {("status", "phase"), ("spec", "x")}


def test_label_selector_is_shared_across_all_watching_handlers(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry, labels={"app": "demo"})(fn)
    on.daemon("kex", registry=registry, labels={"app": "demo", "tier": PRESENT})(fn)
    on.validate("kex", registry=registry)(fn)  # webhooks do not use the watch
    assert str(registry.label_selector(KEX)) == "app=demo"
    on.event("kex", registry=registry)(other)
    assert registry.label_selector(KEX) is None


def test_selectors_and_resource_needs(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry)(fn)
    on.validate("pods", registry=registry)(fn)
    assert {repr(s) for s in registry.selectors()} == {
        "Selector(any_name='kex')",
        "Selector(any_name='pods')",
    }
    assert {repr(s) for s in registry.watched_selectors()} == {"Selector(any_name='kex')"}
    assert registry.has_handlers(KEX)
    assert not registry.has_handlers(PODS)


def webhook_cause(**fields: Any) -> WebhookCause:
    return WebhookCause(resource=KEX, body=LABELLED, **fields)


def test_webhooks_are_selected_by_type_id_operation_and_subresource(
    registry: OperatorRegistry,
) -> None:
    on.validate("kex", registry=registry, id="v_create", operations=["CREATE"])(fn)
    on.validate("kex", registry=registry, id="v_status", subresource="status")(fn)
    on.validate("kex", registry=registry, id="v_any", subresource="*")(fn)
    on.mutate("kex", registry=registry, id="m")(fn)
    everything = registry.webhooks.select(webhook_cause(operation="CREATE"), kwargs)
    assert ids(everything) == ["v_create", "v_any", "m"]
    updating = webhook_cause(operation="UPDATE", reason=WebhookType.VALIDATING)
    assert ids(registry.webhooks.select(updating, kwargs)) == ["v_any"]
    status = webhook_cause(operation="UPDATE", subresource="status")
    assert ids(registry.webhooks.select(status, kwargs)) == ["v_status", "v_any"]
    one = webhook_cause(operation="CREATE", webhook="m")
    assert ids(registry.webhooks.select(one, kwargs)) == ["m"]


def test_mutating_webhooks_skip_deletions_unless_asked_explicitly(
    registry: OperatorRegistry,
) -> None:
    on.mutate("kex", registry=registry, id="m_all")(fn)
    on.mutate("kex", registry=registry, id="m_delete", operations={"DELETE"})(fn)
    on.validate("kex", registry=registry, id="v_all")(fn)
    deleting = webhook_cause(operation="DELETE")
    assert ids(registry.webhooks.select(deleting, kwargs)) == ["m_delete", "v_all"]


def test_webhooks_are_not_selected_for_other_causes(registry: OperatorRegistry) -> None:
    on.validate("kex", registry=registry)(fn)
    assert registry.webhooks.select(changing(Reason.CREATE), kwargs) == []


def test_fallback_activities_run_only_without_regular_ones(registry: OperatorRegistry) -> None:
    fallback = ActivityHandler(id="builtin", fn=fn, activity=Activity.AUTHENTICATION, fallback=True)
    registry.activities.append(fallback)
    assert registry.activities.select(Activity.AUTHENTICATION) == [fallback]
    on.login(registry=registry)(fn)
    assert ids(registry.activities.select(Activity.AUTHENTICATION)) == ["fn"]
    assert registry.activities.select(Activity.STARTUP) == []


def test_subregistries_select_by_filters_only() -> None:
    subregistry = SubRegistry()
    parent = OperatorRegistry()
    on.create("kex", registry=parent)(fn)
    (template,) = parent.changing.handlers
    subregistry.append(template)
    assert subregistry.select(changing(Reason.CREATE), kwargs) == [template]


def test_deduplication_keeps_the_first_of_each_function_and_id() -> None:
    registry = OperatorRegistry()
    on.create("kex", registry=registry)(fn)
    on.create("kex", registry=registry)(fn)
    on.create("kex", registry=registry)(other)
    first, _, third = registry.changing.handlers
    assert deduplicated(registry.changing.handlers) == [first, third]


def test_callable_ids_reject_objects_without_stable_names() -> None:
    class Callable:
        def __call__(self, **_: Any) -> None:
            return None

    with pytest.raises(ValueError, match="pass id="):
        callable_id(Callable())
    assert generate_id(Callable(), "given") == "given"
    assert generate_id(fn, prefix="parent", suffix="spec.x") == "parent/fn/spec.x"


def test_what_serves_many_resource_instances_is_kept_for_a_bounded_number(
    registry: OperatorRegistry,
) -> None:
    on.create("kopfexamples", registry=registry)(fn)
    for _ in range(1000):  # e.g. rediscovered again and again
        again = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
        assert ids(registry.changing.for_resource(again)) == ["fn"]
    assert len(registry.changing._served) <= 256


def test_the_answers_about_a_resource_follow_later_registrations(
    registry: OperatorRegistry,
) -> None:
    assert not registry.keeps_state(KEX)
    on.event("kex", registry=registry)(fn)
    assert not registry.keeps_state(KEX)  # event handlers keep no state on objects
    assert not registry.echoes_are_quiet(KEX)  # but they see every body
    on.create("kex", registry=registry)(other)
    assert registry.keeps_state(KEX)
    assert not registry.may_require_finalizer(KEX)
    on.delete("kex", field="spec.x", registry=registry)(fn)
    assert registry.may_require_finalizer(KEX)
    assert registry.extra_fields(KEX) == {("spec", "x")}


def test_a_daemon_registered_later_is_heeded_by_the_answers(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry)(fn)
    assert registry.echoes_are_quiet(KEX)
    assert not registry.may_require_finalizer(KEX)
    on.daemon("kex", registry=registry)(other)
    assert not registry.echoes_are_quiet(KEX)
    assert registry.may_require_finalizer(KEX)
    assert registry.keeps_state(KEX)


def test_the_answers_follow_registrations_that_keep_the_number_of_handlers(
    registry: OperatorRegistry,
) -> None:
    on.create("kex", registry=registry)(fn)
    assert not registry.may_require_finalizer(KEX)
    registry.changing.handlers.pop()
    on.delete("kex", field="status.x", registry=registry)(other)  # as many handlers as before
    assert registry.may_require_finalizer(KEX)
    assert not registry.echoes_are_quiet(KEX)
    assert registry.extra_fields(KEX) == {("status", "x")}


def test_the_answers_follow_a_replaced_registry(registry: OperatorRegistry) -> None:
    on.create("kex", registry=registry)(fn)
    assert not registry.may_require_finalizer(KEX)
    registry.changing = ChangingRegistry()
    on.delete("kex", registry=registry)(other)
    assert registry.may_require_finalizer(KEX)
