"""Cause detection: what happened to an object, from the event, body and stored state."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.handlers.bodies import Body
from anyop.handlers.causes import (
    HANDLER_REASONS,
    REACTOR_REASONS,
    ChangingCause,
    Reason,
    WatchingCause,
    WebhookCause,
    detect_changing_cause,
    detect_watching_cause,
)
from anyop.handlers.diffs import EMPTY
from anyop.kube.resources import Resource

RESOURCE = Resource("kopf.dev", "v1", "kopfexamples", namespaced=True)
FINALIZER = "anyop.dev/finalizer"
OLD = {"spec": {"field": "old"}}
NEW = {"spec": {"field": "new"}}


def body(*, deleting: bool = False, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "ex1", "namespace": "ns", "finalizers": list(finalizers)}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": {"field": "new"}}


def detect(**kwargs: Any) -> ChangingCause:
    defaults: dict[str, Any] = {"event_type": "MODIFIED", "body": body(), "old": OLD, "new": NEW}
    return detect_changing_cause(resource=RESOURCE, finalizer=FINALIZER, **(defaults | kwargs))


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"event_type": "DELETED"}, Reason.GONE),
        (
            {"event_type": "DELETED", "body": body(deleting=True, finalizers=(FINALIZER,))},
            Reason.GONE,
        ),
        ({"body": body(deleting=True)}, Reason.FREE),
        ({"body": body(deleting=True, finalizers=("other/finalizer",))}, Reason.FREE),
        ({"body": body(deleting=True, finalizers=(FINALIZER,))}, Reason.DELETE),
        ({"body": body(deleting=True, finalizers=(FINALIZER,)), "old": None}, Reason.DELETE),
        ({"old": None}, Reason.CREATE),
        ({"old": None, "initial": True, "event_type": None}, Reason.CREATE),
        ({"old": NEW}, Reason.NOOP),
        ({"old": NEW, "initial": True, "event_type": None}, Reason.RESUME),
        ({}, Reason.UPDATE),
        ({"initial": True}, Reason.UPDATE),
        ({"old": None, "corrupt_diffbase": True}, Reason.RESUME),
    ],
)
def test_cause_detection_table(kwargs: dict[str, Any], reason: Reason) -> None:
    assert detect(**kwargs).reason is reason


def test_creation_never_mixes_in_resuming() -> None:
    cause = detect(old=None, initial=True)
    assert cause.initial is False
    assert cause.diff == (("add", (), None, NEW),)


def test_updates_carry_old_new_and_the_diff() -> None:
    cause = detect(initial=True)
    assert (cause.old, cause.new) == (OLD, NEW)
    assert cause.diff == (("change", ("spec", "field"), "old", "new"),)
    assert cause.initial is True  # resume handlers get mixed in


def test_a_corrupt_diffbase_is_a_resume_never_a_creation() -> None:
    cause = detect(old=None, corrupt_diffbase=True)
    assert cause.reason is Reason.RESUME
    assert cause.initial is True
    assert cause.old == cause.new == NEW
    assert cause.diff == EMPTY


def test_a_corrupt_diffbase_does_not_hide_a_deletion() -> None:
    deleting = body(deleting=True, finalizers=(FINALIZER,))
    assert detect(old=None, corrupt_diffbase=True, body=deleting).reason is Reason.DELETE


def test_deletion_keeps_the_initial_flag_for_resume_handlers_with_deleted_true() -> None:
    cause = detect(body=body(deleting=True, finalizers=(FINALIZER,)), initial=True)
    assert cause.deleted
    assert cause.initial


def test_reasons_are_strings_as_in_kopf() -> None:
    assert Reason.CREATE.value == "create"
    assert f"{Reason.UPDATE}" == "update"
    assert str(Reason.RESUME) == "resume"
    assert set(HANDLER_REASONS) | set(REACTOR_REASONS) == set(Reason)


def test_changing_causes_provide_their_kwargs_with_body_views() -> None:
    kwargs = detect().kwargs
    assert isinstance(kwargs["body"], Body)
    assert kwargs["spec"] == {"field": "new"}
    assert (kwargs["name"], kwargs["namespace"]) == ("ex1", "ns")
    assert kwargs["reason"] is Reason.UPDATE
    assert (kwargs["old"], kwargs["new"]) == (OLD, NEW)
    assert kwargs["resource"] is RESOURCE
    assert kwargs["labels"] == {}
    assert kwargs["uid"] is None


def test_narrowing_to_a_field_makes_old_new_diff_field_relative() -> None:
    cause = detect(old={"spec": {"field": {"a": 1}}}, new={"spec": {"field": {"a": 2}}})
    narrowed = cause.narrowed(("spec", "field"))
    assert (narrowed.old, narrowed.new) == ({"a": 1}, {"a": 2})
    assert narrowed.diff == (("change", ("a",), 1, 2),)
    assert cause.narrowed(()) is cause


def test_narrowing_a_creation_sees_the_field_added() -> None:
    narrowed = detect(old=None).narrowed(("spec", "field"))
    assert (narrowed.old, narrowed.new) == (None, "new")
    assert narrowed.diff == (("add", (), None, "new"),)


def test_watching_causes_wrap_raw_events() -> None:
    event = {"type": None, "object": body()}
    cause = detect_watching_cause(resource=RESOURCE, event=event)
    assert isinstance(cause, WatchingCause)
    assert cause.type is None
    assert cause.body is event["object"]
    assert cause.kwargs["event"] is event
    assert cause.kwargs["type"] is None


def test_webhook_causes_provide_admission_kwargs() -> None:
    cause = WebhookCause(resource=RESOURCE, body=body(), operation="CREATE", dryrun=True)
    kwargs = cause.kwargs
    assert (kwargs["operation"], kwargs["dryrun"], kwargs["subresource"]) == ("CREATE", True, None)
    assert "webhook" not in kwargs
    assert "reason" not in kwargs
