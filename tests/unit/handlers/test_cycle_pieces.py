"""The pure pieces of one handling cycle, put together as the engine will put them."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import anyop.on as on
from anyop.handlers.causes import ChangingCause, Reason, detect_changing_cause
from anyop.handlers.lifecycles import asap
from anyop.handlers.outcomes import Failed, Succeeded, decide, deliver_results
from anyop.handlers.progression import Progress, processed_message
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.patches import Patch, split_status
from anyop.kube.resources import Resource
from anyop.storage.defaults import Persistence, kopf_compatible_storages, status_storages
from anyop.storage.diffbase import read_diffbase

NOW = datetime.datetime(2024, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
KEX = Resource("kopf.dev", "v1", "kopfexamples", subresources=frozenset({"status"}))
BODY: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "ex1", "namespace": "ns", "resourceVersion": "1", "labels": {"a": "b"}},
    "spec": {"field": "value"},
}


def no_kwargs() -> Mapping[str, Any]:
    return {}


def create_fn(**_: Any) -> None:
    return None


def detect(persistence: Persistence, registry: OperatorRegistry, body: Any) -> ChangingCause:
    stored = read_diffbase(persistence.diffbase, body)
    extra = registry.extra_fields(KEX)
    built = persistence.diffbase.build(body=body, extra_fields=extra)
    new = persistence.progress.clear(essence=built)
    old = None if stored.essence is None else persistence.progress.clear(essence=stored.essence)
    return detect_changing_cause(
        resource=KEX,
        event_type="ADDED",
        body=body,
        old=old,
        new=new,
        finalizer=persistence.finalizer,
        corrupt_diffbase=stored.corrupt,
    )


def run_cycle(persistence: Persistence, registry: OperatorRegistry, body: Any) -> Patch:
    """One cycle: cause -> handlers -> outcomes -> one patch (the handlers all succeed)."""
    cause = detect(persistence, registry, body)
    handlers = registry.changing.select(cause, no_kwargs)
    owned = registry.changing.for_resource(KEX)
    progress = Progress.from_storage(
        body=body, storage=persistence.progress, handlers=owned, now=NOW
    )
    progress = progress.with_purpose(cause.reason).with_handlers(handlers, now=NOW)
    patch = Patch()
    outcomes = {}
    for handler in asap(progress.awakened(handlers, now=NOW), state=progress):
        decision = decide(handler, progress[handler.id], Succeeded({"message": "hello"}), now=NOW)
        outcomes[handler.id] = decision.outcome
    progress = progress.with_outcomes(outcomes, now=NOW)
    progress.store(body=body, patch=patch, storage=persistence.progress)
    deliver_results(outcomes, patch)
    if progress.done:
        assert processed_message(cause.reason, progress.counts) == (
            "Creation is processed: 1 succeeded; 0 failed."
        )
        progress.purge(body=body, patch=patch, storage=persistence.progress, handlers=owned)
        persistence.diffbase.store(body=body, patch=patch, essence=cause.new)
    return patch


def test_a_simple_creation_is_one_status_request_with_status_storages() -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry)(lambda **_: None)
    patch = run_cycle(status_storages(), registry, BODY)
    main, status = split_status(patch)
    assert not main
    assert status["status"]["anyop"] == {
        "last-handled-configuration": '{"spec":{"field":"value"},"metadata":{"labels":{"a":"b"}}}'
    }
    assert len(status["status"]) == 2  # the result and anyop's own state, in one request


def test_a_simple_creation_with_kopf_storages_writes_kopf_annotations() -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry)(create_fn)
    patch = run_cycle(kopf_compatible_storages(), registry, BODY)
    assert patch == {
        "metadata": {
            "annotations": {
                "kopf.zalando.org/last-handled-configuration": (
                    '{"spec":{"field":"value"},"metadata":{"labels":{"a":"b"}}}\n'
                )
            }
        },
        "status": {"create_fn": {"message": "hello"}},
    }


def test_an_object_handled_by_kopf_is_taken_over_without_recreation() -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry)(lambda **_: None)
    on.update("kopfexamples", registry=registry)(lambda **_: None)
    persistence = kopf_compatible_storages()
    patch = run_cycle(persistence, registry, BODY)
    handled = dict(BODY, metadata={**BODY["metadata"], **patch["metadata"]})
    assert detect(persistence, registry, handled).reason is Reason.NOOP
    changed = dict(handled, spec={"field": "changed"})
    assert detect(persistence, registry, changed).reason is Reason.UPDATE


def test_an_object_with_a_corrupt_kopf_diffbase_is_resumed_not_recreated() -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry)(lambda **_: None)
    persistence = kopf_compatible_storages()
    key = "kopf.zalando.org/last-handled-configuration"
    corrupt = dict(BODY, metadata={**BODY["metadata"], "annotations": {key: "{garbage"}})
    cause = detect(persistence, registry, corrupt)
    assert cause.reason is Reason.RESUME
    assert registry.changing.select(cause, no_kwargs) == []


def test_a_failing_handler_keeps_its_progress_and_retries_later() -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, backoff=30)(create_fn)
    persistence = kopf_compatible_storages()
    cause = detect(persistence, registry, BODY)
    (handler,) = registry.changing.select(cause, no_kwargs)
    progress = Progress(purpose=cause.reason).with_handlers([handler], now=NOW)
    decision = decide(handler, progress[handler.id], Failed(RuntimeError("boom")), now=NOW)
    progress = progress.with_outcomes({handler.id: decision.outcome}, now=NOW)
    patch = Patch()
    progress.store(body=BODY, patch=patch, storage=persistence.progress)
    assert not progress.done
    assert progress.delay(NOW) == 30.000002  # two microseconds more: never woken before it is due
    assert patch.meta.annotations == {
        "kopf.zalando.org/create_fn": (
            '{"started":"2024-01-01T12:00:00.000000","delayed":"2024-01-01T12:00:30.000000",'
            '"purpose":"create","retries":1,"success":false,"failure":false,"message":"boom"}'
        )
    }


def test_a_kopf_diffbase_with_empty_stanzas_is_no_change() -> None:
    # Kopf left "annotations": {} in some diff-bases; taking such objects over is a resume.
    persistence = kopf_compatible_storages()
    stored = '{"spec":{"field":"value"},"metadata":{"annotations":{},"labels":{"a":"b"}}}\n'
    key = "kopf.zalando.org/last-handled-configuration"
    body = {**BODY, "metadata": {**BODY["metadata"], "annotations": {key: stored}}}
    registry = OperatorRegistry()
    on.update("kopfexamples", registry=registry)(create_fn)
    cause = detect(persistence, registry, body)
    assert cause.reason is Reason.NOOP
    assert cause.diff == ()
