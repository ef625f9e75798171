"""Filters: labels, annotations, fields, old/new, callbacks, combinators, server-side selectors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from anyop.handlers.causes import ChangingCause, Reason, ResourceCause, SpawningCause
from anyop.handlers.diffs import diff
from anyop.handlers.filters import (
    ABSENT,
    PRESENT,
    LabelSelector,
    all_,
    any_,
    check_callback,
    check_field_filters,
    check_meta_filter,
    match,
    none_,
    not_,
    prematch,
    server_side_selector,
)
from anyop.handlers.records import ResourceChangingHandler, ResourceWatchingHandler
from anyop.kube.resources import Resource

RESOURCE = Resource("kopf.dev", "v1", "kopfexamples")
BODY: dict[str, Any] = {
    "metadata": {
        "name": "ex1",
        "labels": {"app": "demo", "empty": ""},
        "annotations": {"note": "yes"},
    },
    "spec": {"field": "value", "flag": False},
}


def noop(**_: Any) -> None:
    return None


def watcher(**fields: Any) -> ResourceWatchingHandler:
    return ResourceWatchingHandler(id="w", fn=noop, **fields)


def updater(**fields: Any) -> ResourceChangingHandler:
    return ResourceChangingHandler(
        id="u", fn=noop, reason=Reason.UPDATE, field_needs_change=True, **fields
    )


def on_body(body: Mapping[str, Any] = BODY) -> ResourceCause:
    return SpawningCause(resource=RESOURCE, body=body)


def on_update(old: Any, new: Any) -> ChangingCause:
    return ChangingCause(
        resource=RESOURCE, body=BODY, reason=Reason.UPDATE, old=old, new=new, diff=diff(old, new)
    )


def no_kwargs() -> Mapping[str, Any]:
    raise AssertionError("kwargs must not be built for filters without callbacks")


def kwargs() -> Mapping[str, Any]:
    return {"name": "ex1", "spec": BODY["spec"]}


@pytest.mark.parametrize(
    ("labels", "matched"),
    [
        ({"app": "demo"}, True),
        ({"app": "other"}, False),
        ({"missing": "demo"}, False),
        ({"app": PRESENT, "empty": PRESENT}, True),
        ({"missing": PRESENT}, False),
        ({"missing": ABSENT}, True),
        ({"app": ABSENT}, False),
        ({"empty": ""}, True),
        ({"app": "demo", "missing": ABSENT}, True),
    ],
)
def test_label_filters(labels: dict[str, Any], matched: bool) -> None:
    assert match(watcher(labels=labels), on_body(), no_kwargs) is matched


@pytest.mark.parametrize(
    ("annotations", "matched"),
    [
        ({"note": "yes"}, True),
        ({"note": "no"}, False),
        ({"note": PRESENT}, True),
        ({"x": ABSENT}, True),
    ],
)
def test_annotation_filters(annotations: dict[str, Any], matched: bool) -> None:
    assert match(watcher(annotations=annotations), on_body(), no_kwargs) is matched


def test_value_callbacks_get_the_value_first_and_none_when_absent() -> None:
    seen: list[tuple[Any, str]] = []

    def check(value: Any, name: str, **_: Any) -> bool:
        seen.append((value, name))
        return bool(value == "demo")

    assert match(watcher(labels={"app": check}), on_body(), kwargs)
    assert not match(watcher(labels={"missing": check}), on_body(), kwargs)
    assert seen == [("demo", "ex1"), (None, "ex1")]


def test_kwargs_are_built_once_per_check_however_many_callbacks() -> None:
    calls: list[int] = []

    def factory() -> Mapping[str, Any]:
        calls.append(1)
        return kwargs()

    handler = watcher(
        labels={"app": lambda value, **_: True},
        annotations={"note": lambda value, **_: True},
        when=lambda **_: True,
    )
    assert match(handler, on_body(), factory)
    assert calls == [1]


def test_when_filters_are_checked_last() -> None:
    order: list[str] = []

    def label_cb(value: Any, **_: Any) -> bool:
        order.append("label")
        return False

    def when_cb(**_: Any) -> bool:
        order.append("when")
        return True

    assert not match(watcher(labels={"app": label_cb}, when=when_cb), on_body(), kwargs)
    assert order == ["label"]


def test_when_filters_get_the_kwargs() -> None:
    assert match(watcher(when=lambda name, **_: name == "ex1"), on_body(), kwargs)
    assert not match(watcher(when=lambda name, **_: name == "ex2"), on_body(), kwargs)


@pytest.mark.parametrize(
    ("field", "value", "matched"),
    [
        (("spec", "field"), None, True),
        (("spec", "missing"), None, False),
        (("spec", "field"), PRESENT, True),
        (("spec", "field"), ABSENT, False),
        (("spec", "missing"), ABSENT, True),
        (("spec", "field"), "value", True),
        (("spec", "field"), "other", False),
        (("spec", "flag"), False, True),
        (("spec", "flag"), None, True),  # present, though falsy
        (("spec", "field"), lambda value, **_: value.startswith("v"), True),
        (("spec", "missing"), lambda value, **_: value is None, True),
    ],
)
def test_field_value_filters_check_the_current_body(field: Any, value: Any, matched: bool) -> None:
    assert match(watcher(field=field, value=value), on_body(), kwargs) is matched


def test_field_filters_on_updates_accept_either_the_old_or_the_new_value() -> None:
    handler = updater(field=("spec", "field"), value="a")
    assert match(handler, on_update({"spec": {"field": "a"}}, {"spec": {"field": "b"}}), kwargs)
    assert match(handler, on_update({"spec": {"field": "b"}}, {"spec": {"field": "a"}}), kwargs)
    assert not match(handler, on_update({"spec": {"field": "b"}}, {"spec": {"field": "c"}}), kwargs)


def test_update_handlers_need_their_field_to_change() -> None:
    handler = updater(field=("spec", "field"))
    unchanged = on_update({"spec": {"field": "a", "x": 1}}, {"spec": {"field": "a", "x": 2}})
    changed = on_update({"spec": {"field": "a"}}, {"spec": {"field": "b"}})
    added = on_update({"spec": {}}, {"spec": {"field": "b"}})
    assert not match(handler, unchanged, kwargs)
    assert match(handler, changed, kwargs)
    assert match(handler, added, kwargs)


def test_prematch_ignores_whether_the_field_changed() -> None:
    handler = updater(field=("spec", "field"))
    unchanged = on_update({"spec": {"field": "a", "x": 1}}, {"spec": {"field": "a", "x": 2}})
    assert prematch(handler, unchanged, kwargs)


@pytest.mark.parametrize(
    ("old_filter", "new_filter", "old", "new", "matched"),
    [
        ("x", "y", "x", "y", True),
        ("x", "y", "x", "z", False),
        (None, "y", "anything", "y", True),
        ("x", None, "x", "anything", True),
        (ABSENT, PRESENT, None, "y", True),
        (ABSENT, PRESENT, "x", "y", False),
        (PRESENT, ABSENT, "x", None, True),
        (lambda value, **_: value == "x", lambda value, **_: value is None, "x", None, True),
    ],
)
def test_old_new_filters_check_each_side_of_the_transition(
    old_filter: Any, new_filter: Any, old: Any, new: Any, matched: bool
) -> None:
    handler = updater(field=("spec", "field"), old=old_filter, new=new_filter)
    old_essence = {"spec": {"field": old}} if old is not None else {"spec": {}}
    new_essence = {"spec": {"field": new}} if new is not None else {"spec": {}}
    assert match(handler, on_update(old_essence, new_essence), kwargs) is matched


def test_combinators_follow_python_semantics() -> None:
    yes, no = (lambda **_: True), (lambda **_: False)
    assert all_([yes, yes])()
    assert not all_([yes, no])()
    assert all_([])()
    assert any_([no, yes])()
    assert not any_([no, no])()
    assert not any_([])()
    assert none_([no, no])()
    assert not none_([no, yes])()
    assert not_(no)()
    assert not not_(yes)()


def test_combinators_pass_the_value_and_kwargs_through() -> None:
    starts = lambda value, **_: value.startswith("de")  # noqa: E731
    ends = lambda value, name, **_: value.endswith("mo") and name == "ex1"  # noqa: E731
    handler = watcher(labels={"app": all_([starts, ends])}, when=not_(lambda name, **_: False))
    assert match(handler, on_body(), kwargs)


def test_combinators_accept_generators_and_reuse_them() -> None:
    combined = any_(fn for fn in [lambda **_: False, lambda **_: True])
    assert combined()
    assert combined()


@pytest.mark.parametrize(
    "bad", [lambda value: True, "not callable", [lambda: True], lambda **_: True]
)
def test_combinators_reject_bad_callbacks_at_declaration(bad: Any) -> None:
    with pytest.raises(TypeError):
        all_(bad)


def test_callbacks_without_kwargs_are_rejected_naming_the_culprit() -> None:
    def strict(value: Any) -> bool:
        return True

    with pytest.raises(TypeError, match=r"my_handler: .*strict\(\) must accept \*\*kwargs"):
        check_callback(strict, "my_handler")
    with pytest.raises(TypeError, match=r"len\(\) must accept"):
        check_callback(len, "fn")
    with pytest.raises(TypeError, match="is not callable"):
        check_callback("text", "fn")


def test_callable_objects_with_kwargs_are_accepted() -> None:
    class Checker:
        def __call__(self, value: object = None, **_: Any) -> bool:
            return value == "demo"

    check_callback(Checker(), "fn")  # raises if refused
    handler = watcher(labels={"app": all_([Checker()])}, when=not_(Checker()))
    assert match(handler, on_body(), kwargs)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ({"x": None}, ValueError, "`None` in labels= is not supported"),
        ({"x": 1}, TypeError, "must be a string, a marker, or a callback"),
        ({1: "x"}, TypeError, "keys must be strings"),
        (["x"], TypeError, "must be a mapping"),
        ({"x": lambda value: True}, TypeError, "must accept"),
    ],
)
def test_meta_filters_are_validated_at_declaration(value: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        check_meta_filter("labels", value, "fn")


def test_valid_meta_filters_are_copied() -> None:
    given = {"a": "b", "c": PRESENT}
    checked = check_meta_filter("labels", given, "fn")
    given["a"] = "changed"
    assert checked == {"a": "b", "c": PRESENT}
    assert check_meta_filter("labels", None, "fn") is None


@pytest.mark.parametrize(
    ("field", "filters", "message"),
    [
        (None, {"value": "x"}, "need a field="),
        (None, {"old": "x", "new": None}, "need a field="),
        ("spec.x", {"value": "x", "old": "y"}, "either value= or old=/new="),
        (123, {}, "dotted string"),
        ("spec.x", {"value": lambda value: True}, "must accept"),
    ],
)
def test_field_filters_are_validated_at_declaration(
    field: Any, filters: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        check_field_filters(field, filters, "fn")


def test_field_declarations_parse_to_paths() -> None:
    assert check_field_filters("spec.x", {"value": None}, "fn") == ("spec", "x")
    assert check_field_filters(None, {"value": None}, "fn") is None


def test_server_side_selector_keeps_only_terms_shared_by_all_handlers() -> None:
    handlers = [
        watcher(labels={"app": "demo", "tier": PRESENT, "legacy": ABSENT}),
        watcher(labels={"app": "demo", "tier": "web", "legacy": ABSENT, "x": lambda v, **_: True}),
    ]
    selector = server_side_selector(handlers)
    assert selector == LabelSelector(
        equal=frozenset({("app", "demo")}),
        present=frozenset({"tier"}),
        absent=frozenset({"legacy"}),
    )
    assert str(selector) == "app=demo,!legacy,tier"


def test_server_side_selector_is_none_when_any_handler_lacks_label_filters() -> None:
    assert server_side_selector([watcher(labels={"app": "demo"}), watcher()]) is None
    assert server_side_selector([watcher(labels={"app": lambda v, **_: True})]) is None
    assert server_side_selector([]) is None


def test_server_side_selector_skips_values_the_api_would_reject() -> None:
    handlers = [watcher(labels={"app": "has spaces", "bad key!": "x", "ok": "1"})]
    assert str(server_side_selector(handlers)) == "ok=1"


def test_label_selectors_tell_whether_an_object_is_selected() -> None:
    selector = LabelSelector(frozenset({("app", "demo")}), frozenset({"tier"}), frozenset({"old"}))
    assert selector.matches({"app": "demo", "tier": "web"})
    assert not selector.matches({"app": "demo"})
    assert not selector.matches({"app": "demo", "tier": "web", "old": "1"})
    assert not selector.matches({"app": "other", "tier": "web"})
