"""The decorators: what they register, and what they refuse at declaration."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest

import anyop.on as on
from anyop.errors import ConfigError
from anyop.handlers.causes import Activity, Reason, WebhookType
from anyop.handlers.filters import ABSENT, PRESENT
from anyop.handlers.outcomes import ErrorsMode
from anyop.handlers.records import (
    ActivityHandler,
    DaemonHandler,
    ResourceChangingHandler,
    ResourceIndexingHandler,
    ResourceWatchingHandler,
    ResourceWebhookHandler,
    TimerHandler,
)
from anyop.handlers.registry import (
    OperatorRegistry,
    SubRegistry,
    current_handler,
    current_subregistry,
    get_default_registry,
    set_default_registry,
)
from anyop.handlers.selectors import EVERYTHING, Selector


@pytest.fixture
def registry() -> Iterator[OperatorRegistry]:
    """A fresh default registry, restored afterwards."""
    previous = get_default_registry()
    fresh = OperatorRegistry()
    set_default_registry(fresh)
    yield fresh
    set_default_registry(previous)


def create_fn(**_: Any) -> None:
    return None


untyped_on: Any = on  # for the deliberately wrong calls that type checkers would refuse


def test_decorators_return_the_function_unchanged(registry: OperatorRegistry) -> None:
    assert on.create("kopfexamples")(create_fn) is create_fn


def test_create_registers_a_changing_handler_with_kopf_defaults(registry: OperatorRegistry) -> None:
    on.create("kopf.dev", "v1", "kopfexamples")(create_fn)
    (handler,) = registry.changing.handlers
    assert isinstance(handler, ResourceChangingHandler)
    assert handler.id == "create_fn"
    assert handler.fn is create_fn
    assert handler.reason is Reason.CREATE
    assert handler.selector == Selector("kopf.dev", "v1", "kopfexamples")
    assert (handler.errors, handler.timeout, handler.retries, handler.backoff) == (None,) * 4
    assert not handler.requires_finalizer
    assert not handler.initial
    assert str(handler) == "Handler 'create_fn'"


def test_resource_decorators_register_the_right_records(registry: OperatorRegistry) -> None:
    on.resume("kex", deleted=True)(create_fn)
    on.update("kex", field="spec.x", old="a", new="b")(create_fn)
    on.delete("kex")(create_fn)
    on.delete("kex", optional=True, id="optional_delete")(create_fn)
    on.field("kex", field="spec.x")(create_fn)
    resume, update, delete, optional, field = registry.changing.handlers
    assert resume.initial
    assert resume.deleted
    assert resume.reason is None
    assert update.reason is Reason.UPDATE
    assert update.field_needs_change
    assert (update.old, update.new) == ("a", "b")
    assert delete.requires_finalizer
    assert not optional.requires_finalizer
    assert field.reason is None
    assert field.field_needs_change
    assert field.field == ("spec", "x")


def test_spawning_watching_indexing_and_webhook_decorators(registry: OperatorRegistry) -> None:
    on.event("pods")(create_fn)
    on.index("pods")(create_fn)
    on.daemon("kex", initial_delay=1.5, cancellation_backoff=1, cancellation_timeout=0.5)(create_fn)
    on.timer("kex", interval=5, sharp=True, idle=2, initial_delay=lambda **_: 3.0)(create_fn)
    on.validate("kex", operations={"CREATE"}, subresource="*", persistent=True)(create_fn)
    on.mutate("kex", operation="UPDATE", side_effects=True, ignore_failures=True)(create_fn)
    assert isinstance(registry.watching.handlers[0], ResourceWatchingHandler)
    assert isinstance(registry.indexing.handlers[0], ResourceIndexingHandler)
    daemon, timer = registry.spawning.handlers
    assert isinstance(daemon, DaemonHandler)
    assert daemon.initial_delay == 1.5
    assert (daemon.cancellation_backoff, daemon.cancellation_timeout) == (1, 0.5)
    assert isinstance(timer, TimerHandler)
    assert (timer.interval, timer.sharp, timer.idle) == (
        5,
        True,
        2,
    )
    assert callable(timer.initial_delay)
    assert daemon.requires_finalizer
    assert timer.requires_finalizer
    assert (str(daemon), str(timer)) == ("Daemon 'create_fn'", "Timer 'create_fn'")
    validator, mutator = registry.webhooks.handlers
    assert isinstance(validator, ResourceWebhookHandler)
    assert validator.reason is WebhookType.VALIDATING
    assert validator.operations == {"CREATE"}
    assert validator.subresource == "*"
    assert validator.persistent
    assert mutator.reason is WebhookType.MUTATING
    assert mutator.operations == {"UPDATE"}
    assert mutator.side_effects
    assert mutator.ignore_failures
    assert str(registry.indexing.handlers[0]) == "Indexer 'create_fn'"


def test_activity_decorators(registry: OperatorRegistry) -> None:
    on.startup(errors=ErrorsMode.PERMANENT, retries=3)(create_fn)
    on.cleanup()(create_fn)
    on.login(id="my_login")(create_fn)
    on.probe(param=1)(create_fn)
    startup, cleanup, login, probe = registry.activities.handlers
    assert all(isinstance(h, ActivityHandler) for h in registry.activities.handlers)
    assert (startup.activity, startup.errors, startup.retries) == (
        Activity.STARTUP,
        ErrorsMode.PERMANENT,
        3,
    )
    assert cleanup.activity is Activity.CLEANUP
    assert probe.param == 1
    assert (login.activity, login.id) == (Activity.AUTHENTICATION, "my_login")
    assert str(login) == "Activity 'my_login'"


def test_registry_option_overrides_the_default(registry: OperatorRegistry) -> None:
    other = OperatorRegistry()
    on.create("kex", registry=other)(create_fn)
    on.startup(registry=other)(create_fn)
    assert other.changing.handlers
    assert other.activities.handlers
    assert not registry.changing.handlers
    assert not registry.activities.handlers


def test_ids_come_from_qualnames_ids_fields_and_lambdas(registry: OperatorRegistry) -> None:
    class Namespace:
        @staticmethod
        def method(**_: Any) -> None:
            return None

    on.create("kex")(Namespace.method)
    on.create("kex", id="explicit")(create_fn)
    on.create("kex", field="spec.field")(create_fn)
    on.create("kex", id="explicit", field=["spec", "other"])(create_fn)
    on.create("kex")(functools.partial(create_fn, extra=1))
    on.create("kex")(lambda **_: None)
    on.index("kex", field="spec.field")(create_fn)
    ids = [h.id for h in registry.changing.handlers]
    assert ids[:5] == [
        "test_ids_come_from_qualnames_ids_fields_and_lambdas.<locals>.Namespace.method",
        "explicit",
        "create_fn/spec.field",
        "explicit/spec.other",
        "create_fn",
    ]
    assert ids[5] == f"lambda:{__file__}:{ids[5].rsplit(':', 1)[1]}"
    assert registry.indexing.handlers[0].id == "create_fn"  # indexes are never field-suffixed


def test_filters_are_stored_on_the_records(registry: OperatorRegistry) -> None:
    def when(**_: Any) -> bool:
        return True

    on.create("kex", labels={"a": "b", "c": PRESENT}, annotations={"d": ABSENT}, when=when)(
        create_fn
    )
    (handler,) = registry.changing.handlers
    assert handler.labels == {"a": "b", "c": PRESENT}
    assert handler.annotations == {"d": ABSENT}
    assert handler.when is when


def test_everything_and_callable_selectors(registry: OperatorRegistry) -> None:
    on.event(EVERYTHING, labels={"x": PRESENT})(create_fn)
    on.event(lambda resource: resource.group == "apps")(create_fn)
    everything, callable_selector = registry.watching.handlers
    assert everything.selector is not None
    assert everything.selector.any_name is EVERYTHING
    assert callable_selector.selector is not None
    assert callable_selector.selector.fn is not None


@pytest.mark.parametrize(
    ("decorate", "error", "message"),
    [
        (
            lambda fn: on.create("kex")(fn),
            TypeError,
            r"\.strict: strict\(\) must accept \*\*kwargs",
        ),
        (lambda fn: on.daemon("kex")(fn), TypeError, "must accept"),
        (lambda fn: on.startup()(fn), TypeError, "must accept"),
    ],
)
def test_handlers_without_kwargs_are_refused_naming_them(
    registry: OperatorRegistry, decorate: Any, error: type, message: str
) -> None:
    def strict(spec: Any) -> None:
        return None

    with pytest.raises(error, match=message):
        decorate(strict)
    assert not registry.changing.handlers


@pytest.mark.parametrize(
    ("decorator", "error", "message"),
    [
        (lambda: untyped_on.create("kex", labels={"x": None}), ValueError, "`None` in labels="),
        (
            lambda: untyped_on.create("kex", annotations={"x": None}),
            ValueError,
            "`None` in annotations=",
        ),
        (lambda: untyped_on.create("kex", labels={"x": 1}), TypeError, "must be a string"),
        (lambda: untyped_on.create("kex", old="x"), TypeError, "unknown options \\['old'\\]"),
        (lambda: untyped_on.delete("kex", new="x"), TypeError, "unknown options \\['new'\\]"),
        (lambda: untyped_on.resume("kex", field="spec.x", old="x"), TypeError, "unknown options"),
        (lambda: untyped_on.event("kex", errors=ErrorsMode.IGNORED), TypeError, "unknown options"),
        (
            lambda: untyped_on.create("kex", frobnicate=True),
            TypeError,
            "unknown options \\['frobnicate'\\]",
        ),
        (lambda: untyped_on.update("kex", value="x"), TypeError, "need a field="),
        (
            lambda: untyped_on.update("kex", field="s.x", value="x", old="y"),
            TypeError,
            "either value=",
        ),
        (lambda: untyped_on.field("kex"), TypeError, "field= is required"),
        (lambda: untyped_on.create("kex", field=5), TypeError, "dotted string"),
        (
            lambda: untyped_on.create("kex", errors="PERMANENT"),
            TypeError,
            "errors= has a wrong type",
        ),
        (lambda: untyped_on.create("kex", timeout="10"), TypeError, "timeout= has a wrong type"),
        (lambda: untyped_on.create("kex", retries=1.5), TypeError, "retries= has a wrong type"),
        (lambda: untyped_on.create("kex", retries=True), TypeError, "retries= has a wrong type"),
        (lambda: untyped_on.create("kex", backoff=-1), ValueError, "backoff= must be >= 0"),
        (lambda: untyped_on.create("kex", id=""), ValueError, "id= must not be empty"),
        (lambda: untyped_on.create("kex", id=5), TypeError, "id= has a wrong type"),
        (lambda: untyped_on.create("kex", when="yes"), TypeError, "is not callable"),
        (lambda: untyped_on.create("kex", when=lambda spec: True), TypeError, "must accept"),
        (lambda: untyped_on.create("kex", registry={}), TypeError, "registry= is not a registry"),
        (lambda: untyped_on.create(), TypeError, "without any name"),
        (lambda: untyped_on.create("kex", kind="KopfExample"), TypeError, "Ambiguous"),
        (lambda: untyped_on.create(plural=5), TypeError, "plural= has a wrong type"),
        (lambda: untyped_on.timer("kex", interval=0), ValueError, "interval= must be positive"),
        (lambda: untyped_on.daemon("kex", initial_delay="soon"), TypeError, "initial_delay="),
        (
            lambda: untyped_on.validate("kex", operations={"PATCH"}),
            ValueError,
            "unknown operations",
        ),
        (
            lambda: untyped_on.validate("kex", operations="CREATE"),
            TypeError,
            "must be a collection",
        ),
        (
            lambda: untyped_on.mutate("kex", operation="CREATE", operations=["UPDATE"]),
            TypeError,
            "not both",
        ),
    ],
)
def test_declaration_mistakes_fail_fast_with_clear_errors(
    registry: OperatorRegistry, decorator: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        decorator()(create_fn)
    assert isinstance(info.value, ConfigError)
    assert "create_fn" in str(info.value)
    assert not registry.changing.handlers
    assert not registry.spawning.handlers


def test_subhandlers_need_a_running_resource_changing_parent(registry: OperatorRegistry) -> None:
    with pytest.raises(TypeError, match="inside a running resource-changing handler"):
        on.subhandler(id="item1")(create_fn)


def run_as_parent(parent: Any, declare: Any) -> SubRegistry:
    """Run ``declare`` as the engine runs a handler: with the parent and a sub-registry set."""
    subregistry = SubRegistry()
    handler_token = current_handler.set(parent)
    registry_token = current_subregistry.set(subregistry)
    try:
        declare()
    finally:
        current_subregistry.reset(registry_token)
        current_handler.reset(handler_token)
    return subregistry


def test_subhandlers_get_ids_under_their_parent(registry: OperatorRegistry) -> None:
    parent = ResourceChangingHandler(id="create_fn", fn=create_fn, reason=Reason.CREATE)

    def declare() -> None:
        for item in ["item1", "item2"]:

            @on.subhandler(id=item, retries=3)
            def handle_item(item: str = item, **_: Any) -> None:
                return None

        on.register(create_fn, id="registered")
        on.register(create_fn)

    subregistry = run_as_parent(parent, declare)
    ids = [h.id for h in subregistry.handlers]
    assert ids == [
        "create_fn/item1",
        "create_fn/item2",
        "create_fn/registered",
        "create_fn/create_fn",
    ]
    assert subregistry.handlers[0].retries == 3
    assert all(h.selector is None and h.reason is None for h in subregistry.handlers)


def test_subhandler_old_new_filters_need_an_update_parent(registry: OperatorRegistry) -> None:
    creator = ResourceChangingHandler(id="c", fn=create_fn, reason=Reason.CREATE)
    updater = ResourceChangingHandler(
        id="u", fn=create_fn, reason=Reason.UPDATE, field_needs_change=True
    )
    with pytest.raises(TypeError, match="only work under update handlers"):
        run_as_parent(creator, lambda: on.subhandler(field="spec.x", old="a")(create_fn))
    subregistry = run_as_parent(updater, lambda: on.subhandler(field="spec.x", old="a")(create_fn))
    (handler,) = subregistry.handlers
    assert handler.field_needs_change
    assert handler.old == "a"
    assert handler.id == "u/create_fn"  # as in Kopf: sub-handler ids get no field suffix


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_failure": "later"}, "must be 'release' or 'keep'"),
        ({"on_failure": "keep", "retries": 3}, "retries= and timeout= would give up"),
    ],
)
def test_a_wrong_on_failure_is_refused_at_declaration(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        on.delete("kopfexamples", registry=OperatorRegistry(), **options)(lambda **_: None)
