"""Reconcilers' pure parts: the declaration, the verdicts, the backoff, the children index,
read-your-own-writes records, the finalizer's patch and the children's bodies."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import anyop
from anyop.engine.reconciling import children as children_module
from anyop.engine.reconciling.child_writes import Written, echoes, seen, written
from anyop.engine.reconciling.children import ChildrenIndex, controller_uid, not_older
from anyop.engine.reconciling.decisions import (
    backoff_delay,
    finalizer_patch,
    judge,
    label_selector,
    owned_body,
)
from anyop.errors import ConfigError
from anyop.handlers.records import ReconcilingHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import ReconcilingSettings

SETTINGS = ReconcilingSettings(backoff_base=1.0, backoff_cap=10.0)


def child(uid: str, parent: str | None, version: str = "1", **meta: Any) -> dict[str, Any]:
    refs = [{"uid": parent, "controller": True}] if parent else []
    metadata = {"uid": uid, "resourceVersion": version, "ownerReferences": refs, **meta}
    return {"metadata": metadata}


# -- the declaration ----------------------------------------------------------------------------


def test_reconcile_registers_a_reconciler_with_its_owned_resources_and_options() -> None:
    registry = OperatorRegistry()

    @anyop.reconcile(
        "kopfexamples",
        owns=["configmaps", "secrets"],
        labels={"app": "x"},
        resync=30,
        finalizer=True,
        status_changes=True,
        registry=registry,
        id="keep",
    )
    def keep(**_: Any) -> None: ...

    [handler] = registry.reconciling.handlers
    assert isinstance(handler, ReconcilingHandler)
    assert str(handler) == "Reconciler 'keep'"
    assert handler.owned_names == ("configmaps", "secrets")
    assert [s.any_name for s in handler.owns] == ["configmaps", "secrets"]
    assert handler.child_labels == {"app": "x"}
    assert (handler.resync, handler.finalizer, handler.status_changes) == (30, True, True)
    assert registry.reconciling.selectors() <= registry.watched_selectors()


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"owns": "configmaps"}, "owns= must be a list of names"),
        ({"owns": ["configmaps", 3]}, "owns= has a bad name: 3"),
        ({"owns": ["configmaps", "configmaps"]}, "owns= names a resource twice"),
        ({"labels": {"app": 1}}, "labels= must map names to strings"),
        ({"resync": 0}, "resync= must be positive"),
        ({"resync": "often"}, "resync= has a wrong type"),
        ({"finalizer": "yes"}, "finalizer= has a wrong type"),
        ({"status_changes": 1}, "status_changes= has a wrong type"),
        ({"retries": 3}, "unknown options ['retries']"),
    ],
)
def test_reconcile_refuses_bad_options_naming_the_function(
    options: dict[str, Any], complaint: str
) -> None:
    def culprit(**_: Any) -> None: ...

    with pytest.raises(ConfigError, match=r"@anyop\.reconcile\(\) on .*culprit") as info:
        anyop.reconcile("kopfexamples", registry=OperatorRegistry(), **options)(culprit)
    assert complaint in str(info.value)


def test_requeue_refuses_negative_or_non_numeric_delays() -> None:
    assert anyop.Requeue(after=2).after == 2
    for bad in (-1, "5", True, float("nan")):
        with pytest.raises(ValueError, match="Requeue"):
            anyop.Requeue(after=bad)  # type: ignore[arg-type]


# -- verdicts and backoff -------------------------------------------------------------------------


def test_backoff_doubles_per_failure_up_to_the_cap_and_jitter_takes_up_to_half() -> None:
    delays = [backoff_delay(n, SETTINGS, jitter=0.0) for n in range(1, 7)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert backoff_delay(3, SETTINGS, jitter=1.0) == 2.0
    assert backoff_delay(10_000, SETTINGS, jitter=0.0) == 10.0


def verdict(outcome: object, failures: int = 0, resync: float | None = None) -> Any:
    name = "Reconciler 'r'"
    return judge(name, outcome, failures=failures, resync=resync, settings=SETTINGS, jitter=0.0)


def test_none_succeeds_and_waits_for_changes_or_the_resync() -> None:
    assert verdict(None).delay is None
    done = verdict(None, resync=30)
    assert (done.succeeded, done.delay, done.throttled, done.result) == (True, 30, False, "success")
    assert done.message == "Reconciler 'r' succeeded."
    assert done.level == logging.DEBUG  # a routine call: only with --verbose


def test_a_requeue_calls_again_after_its_delay_unless_something_changes_sooner() -> None:
    done = verdict(anyop.Requeue(after=5))
    assert (done.succeeded, done.delay, done.throttled) == (True, 5, False)
    assert done.result == "requeue_after"


def test_errors_back_off_temporary_ones_after_their_delay_permanent_ones_wait() -> None:
    crash = verdict(RuntimeError("boom"), failures=3)
    assert (crash.delay, crash.throttled, crash.exc_info) == (4.0, True, True)
    assert crash.message == "Reconciler 'r' failed with an exception. Will retry."
    later = verdict(anyop.TemporaryError("not yet", delay=7), failures=1)
    assert (later.delay, later.throttled, later.level) == (7, True, logging.WARNING)
    assert later.message == "Reconciler 'r' failed temporarily: not yet"
    soon = verdict(anyop.TemporaryError("soon", delay=None), failures=2)
    assert soon.delay == 2.0
    stop = verdict(anyop.PermanentError("never"), failures=1)
    assert (stop.delay, stop.throttled, stop.result) == (None, False, "error")
    assert all(not v.succeeded for v in (crash, later, soon, stop))


def test_any_other_result_is_an_error_that_says_what_to_return() -> None:
    wrong = verdict({"replicas": 3})
    assert not wrong.succeeded
    assert "returned {'replicas': 3}" in wrong.message
    assert "anyop.Requeue(after=...) or None" in wrong.message


# -- the children index ---------------------------------------------------------------------------


def test_children_are_indexed_by_their_controller_and_a_change_names_its_parents() -> None:
    index = ChildrenIndex(["configmaps", "secrets"])
    assert index.update("configmaps", child("c1", "p1"), deleted=False) == {"p1"}
    assert index.update("configmaps", child("c2", None), deleted=False) == set()
    assert index.children("p1") == {"configmaps": [child("c1", "p1")], "secrets": []}
    assert index.update("configmaps", child("c1", "p2", "2"), deleted=False) == {"p1", "p2"}
    assert index.children("p1")["configmaps"] == []
    assert index.update("configmaps", child("c1", "p2", "3"), deleted=True) == {"p2"}
    assert index.children("p2") == {"configmaps": [], "secrets": []}
    assert index.child("configmaps", "c1") is None


def test_a_child_owned_but_not_controlled_belongs_to_no_parent() -> None:
    body = {"metadata": {"uid": "c", "ownerReferences": [{"uid": "p", "controller": False}]}}
    assert controller_uid(body) is None


def test_a_live_read_replaces_what_the_index_shows_but_not_with_older_states() -> None:
    index = ChildrenIndex(["configmaps"])
    index.update("configmaps", child("old", "p"), deleted=False)
    index.update("configmaps", child("kept", "p", "9"), deleted=False)
    index.replace("p", "configmaps", [child("kept", "p", "5"), child("new", "p", "7")])
    found = {
        c["metadata"]["uid"]: c["metadata"]["resourceVersion"]
        for c in index.children("p")["configmaps"]
    }
    assert found == {"kept": "9", "new": "7"}


def test_resource_versions_compare_as_numbers_where_they_are() -> None:
    assert not_older("10", "9")
    assert not not_older("9", "10")
    assert not_older("abc", "abc")
    assert not not_older("abd", "abc")


# -- read-your-own-writes -------------------------------------------------------------------------


def test_a_write_is_seen_once_the_index_shows_its_version_or_its_deletion() -> None:
    index = ChildrenIndex(["configmaps"])
    create = written("configmaps", child("c1", "p", "5"))
    assert create == Written("configmaps", "c1", "5")
    assert not seen(create, index)
    index.update("configmaps", child("c1", "p", "4"), deleted=False)
    assert not seen(create, index)  # an older state of it
    index.update("configmaps", child("c1", "p", "6"), deleted=False)
    assert seen(create, index)
    status = {"kind": "Status", "details": {"uid": "c1"}}
    deletion = written("configmaps", status, deleted=True)
    assert not seen(deletion, index)
    index.update("configmaps", child("c1", "p", "7", deletionTimestamp="now"), deleted=False)
    assert seen(deletion, index)
    index.update("configmaps", child("c1", "p", "8"), deleted=True)
    assert seen(deletion, index)


def test_a_created_child_deleted_since_by_anyone_is_seen() -> None:
    index = ChildrenIndex(["configmaps"])
    create = written("configmaps", child("c1", "p", "5"))
    index.update("configmaps", child("c1", "p", "9"), deleted=True)  # before the create's answer
    assert seen(create, index)  # its deletion came after every earlier state of it
    assert not seen(written("configmaps", child("c2", "p", "5")), index)


def test_the_index_remembers_only_the_latest_deletions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(children_module, "GONE_KEPT", 2)
    index = ChildrenIndex(["configmaps"])
    for uid in ("c1", "c2", "c3"):
        index.update("configmaps", child(uid, "p", "5"), deleted=True)
    assert [index.gone("configmaps", uid) for uid in ("c1", "c2", "c3")] == [False, True, True]


# -- the finalizer and the children's bodies ------------------------------------------------------


def test_the_finalizer_patch_adds_or_removes_only_ours_at_the_objects_version() -> None:
    body = {"metadata": {"finalizers": ["other"], "resourceVersion": "3"}}
    added = finalizer_patch(body, "mine", keep=True)
    assert added == {"metadata": {"finalizers": ["other", "mine"], "resourceVersion": "3"}}
    assert finalizer_patch(body, "mine", keep=False) is None
    held = {"metadata": {"finalizers": ["other", "mine"], "resourceVersion": "4"}}
    assert finalizer_patch(held, "mine", keep=True) is None
    released = finalizer_patch(held, "mine", keep=False)
    assert released == {"metadata": {"finalizers": ["other"], "resourceVersion": "4"}}


def test_a_created_child_gets_the_parents_namespace_its_controller_and_the_labels() -> None:
    parent = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
    }
    given = {"metadata": {"name": "c", "labels": {"mine": "1"}}, "data": {}}
    body = owned_body(given, parent, labels={"app": "x"})
    assert body["metadata"]["namespace"] == "ns"
    assert body["metadata"]["labels"] == {"mine": "1", "app": "x"}
    [ref] = body["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "name": "p",
        "uid": "u1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert given == {"metadata": {"name": "c", "labels": {"mine": "1"}}, "data": {}}  # a copy
    assert owned_body(body, parent, labels=None)["metadata"]["ownerReferences"] == [ref]
    foreign = {"metadata": {"ownerReferences": [{"uid": "u2", "controller": True}]}}
    with pytest.raises(ValueError, match="another controller"):
        owned_body(foreign, parent, labels=None)


def test_the_childrens_label_selector_is_sorted_and_empty_means_all() -> None:
    assert label_selector({"b": "2", "a": "1"}) == "a=1,b=2"
    assert label_selector(None) is None
    assert label_selector({}) is None


def test_only_the_event_that_shows_a_write_itself_is_its_echo() -> None:
    writes = [Written("configmaps", "c1", "5"), Written("configmaps", "c2", "", deleted=True)]
    assert echoes(writes, "configmaps", child("c1", "p", "5"), deleted=False)
    assert not echoes(writes, "configmaps", child("c1", "p", "6"), deleted=False)  # edited
    assert not echoes(writes, "configmaps", child("c1", "p", "6"), deleted=True)  # deleted
    assert echoes(writes, "configmaps", child("c2", "p", "7"), deleted=True)
    assert not echoes(writes, "secrets", child("c1", "p", "5"), deleted=False)
    assert not echoes(writes, "configmaps", child("c3", "p", "5"), deleted=False)
