"""Progress of a cause's handlers across cycles, and the cycle's summary lines."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest

from anyop.handlers.causes import Reason
from anyop.handlers.diffs import diff
from anyop.handlers.lifecycles import (
    all_at_once,
    asap,
    get_default_lifecycle,
    one_by_one,
    randomized,
    set_default_lifecycle,
    shuffled,
)
from anyop.handlers.progression import (
    Counters,
    HandlerState,
    Outcome,
    Progress,
    diff_message,
    in_progress_message,
    processed_message,
    superseded_message,
    title,
)
from anyop.kube.patches import Patch
from anyop.storage.progress import AnnotationsProgressStorage, ParsedRecord

NOW = datetime.datetime(2024, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(seconds=30)


@dataclasses.dataclass(frozen=True)
class H:
    id: str


A, B, C = H("a"), H("b"), H("c")
STORAGE = AnnotationsProgressStorage(prefix="kopf.zalando.org")


def test_fresh_handlers_start_now_with_the_current_purpose() -> None:
    progress = Progress(purpose="create").with_handlers([A, B], now=NOW)
    assert progress["a"] == HandlerState(active=True, started=NOW, purpose="create")
    assert not progress.done
    assert progress.delays(NOW) == [0.0, 0.0]
    assert progress.awakened([A, B, C], now=NOW) == [A, B]


def test_no_handlers_means_done() -> None:
    assert Progress().done
    assert Progress().delay(NOW) is None


def test_outcomes_move_handlers_towards_done() -> None:
    progress = Progress(purpose="create").with_handlers([A, B], now=NOW)
    progress = progress.with_outcomes(
        {"a": Outcome(final=True), "b": Outcome(final=False, delay=30, exception=ValueError("x"))},
        now=NOW,
    )
    assert progress["a"].success
    assert progress["b"].sleeping(NOW)
    assert progress.delays(NOW) == [30.000002]  # two microseconds more: never woken early
    assert progress.delay(NOW + datetime.timedelta(seconds=10)) == 20.000002
    assert progress.awakened([A, B], now=NOW) == []
    assert progress.awakened([A, B], now=LATER) == [B]
    progress = progress.with_outcomes({"b": Outcome(final=True, exception=ValueError())}, now=LATER)
    assert progress.done
    assert progress.counts == Counters(success=1, failure=1, running=0)


def test_outcomes_for_unknown_handlers_are_a_programming_error() -> None:
    with pytest.raises(KeyError, match="without a state"):
        Progress().with_outcomes({"a": Outcome(final=True)}, now=NOW)


def test_stored_states_are_inactive_until_selected_again() -> None:
    body: dict[str, Any] = {"metadata": {"annotations": {}}}
    patch = Patch()
    Progress(purpose="update").with_handlers([A], now=NOW).store(
        body=body, patch=patch, storage=STORAGE
    )
    stored = {"metadata": {"annotations": dict(patch.meta.annotations)}}
    progress = Progress.from_storage(body=stored, storage=STORAGE, handlers=[A, B], now=LATER)
    assert list(progress) == ["a"]
    assert progress["a"].active is False
    assert progress["a"].started == NOW
    assert progress.done  # inactive states do not count
    assert progress.with_handlers([A], now=LATER)["a"].active


def test_unchanged_records_are_not_rewritten() -> None:
    record = ParsedRecord(started=NOW, purpose="create", retries=0, success=False, failure=False)
    body = {"metadata": {"annotations": {"kopf.zalando.org/a": record.to_json()}}}
    progress = Progress.from_storage(body=body, storage=STORAGE, handlers=[A], now=NOW)
    patch = Patch()
    progress.with_handlers([A], now=NOW).store(body=body, patch=patch, storage=STORAGE)
    assert not patch
    progress.with_outcomes({"a": Outcome(final=True)}, now=NOW).store(
        body=body, patch=patch, storage=STORAGE
    )
    assert "kopf.zalando.org/a" in patch.meta.annotations


def test_stored_records_follow_kopf_format() -> None:
    progress = Progress(purpose="create").with_handlers([A], now=NOW)
    progress = progress.with_outcomes(
        {"a": Outcome(final=False, delay=60, exception=ValueError("x"))}, now=NOW
    )
    patch = Patch()
    progress.store(body={}, patch=patch, storage=STORAGE)
    assert patch.meta.annotations["kopf.zalando.org/a"] == (
        '{"started":"2024-01-01T12:00:00.000000","delayed":"2024-01-01T12:01:00.000000",'
        '"purpose":"create","retries":1,"success":false,"failure":false,"message":"x"}'
    )


def test_purge_removes_own_handlers_known_states_and_subhandlers_only() -> None:
    annotations = {f"kopf.zalando.org/{key}": "{}" for key in ["a", "b", "a.sub1", "foreign"]}
    body = {"metadata": {"annotations": annotations}}
    progress = Progress({"b": HandlerState(started=NOW, subrefs=("a/sub1",))})
    patch = Patch()
    progress.purge(body=body, patch=patch, storage=STORAGE, handlers=[A])
    assert patch.meta.annotations == {
        "kopf.zalando.org/a": None,
        "kopf.zalando.org/b": None,
        "kopf.zalando.org/a.sub1": None,
    }


def test_purposes_separate_current_counts_from_superseded_extras() -> None:
    states = {
        "a": HandlerState(started=NOW, purpose="create", success=True),
        "b": HandlerState(started=NOW, purpose="create"),
        "c": HandlerState(started=NOW, purpose="update", failure=True),
    }
    progress = Progress(states).with_purpose("update")
    assert progress.extras == {"create": Counters(success=1, failure=0, running=1)}
    assert progress.counts == Counters(success=0, failure=1, running=0)
    repurposed = progress.with_purpose("update", handlers=[A, B])
    assert repurposed.extras == {}
    assert repurposed["a"].purpose == "update"


def test_state_runtime_and_wakeups() -> None:
    state = HandlerState(started=NOW, delayed=LATER)
    assert state.runtime(LATER) == datetime.timedelta(seconds=30)
    assert state.sleeping(NOW)
    assert not state.awakened(NOW)
    assert state.awakened(LATER)
    assert HandlerState(started=None).runtime(NOW) == datetime.timedelta(0)


def test_states_round_trip_through_records() -> None:
    state = HandlerState(
        started=NOW, stopped=LATER, purpose="create", retries=2, success=True, subrefs=("b", "a")
    )
    record = state.to_record()
    assert record.subrefs == ("a", "b")
    restored = HandlerState.from_record(record, now=LATER)
    assert (restored.started, restored.stopped, restored.retries) == (NOW, LATER, 2)
    assert restored.success
    assert not restored.active
    assert restored.origin == record


def test_records_without_a_start_get_the_current_time() -> None:
    restored = HandlerState.from_record(ParsedRecord(), now=NOW)
    assert restored.started == NOW
    assert restored.retries == 0
    assert not restored.finished


def test_summary_lines_use_kopf_wording() -> None:
    assert processed_message(Reason.CREATE, Counters(1, 0, 0)) == (
        "Creation is processed: 1 succeeded; 0 failed."
    )
    assert processed_message("update", Counters(1, 3, 0)) == (
        "Updating is processed: 1 succeeded; 3 failed."
    )
    assert processed_message(Reason.DELETE, Counters(2, 0, 0)).startswith("Deletion is processed")
    assert processed_message(Reason.RESUME, Counters(0, 0, 0)).startswith("Resuming is processed")
    assert in_progress_message(Reason.CREATE, {"spec": {}}) == (
        "Creation is in progress: {'spec': {}}"
    )
    assert diff_message(Reason.UPDATE, diff({"a": 1}, {"a": 2})) == (
        "Updating diff: (('change', ('a',), 1, 2),)"
    )
    assert superseded_message("create", Reason.UPDATE, Counters(0, 0, 1)) == (
        "Creation is superseded by updating: 0 succeeded; 0 failed; 1 left to the moment."
    )
    assert title("weird") == "'weird'"
    assert title(Reason.NOOP) == "'noop'"


def test_asap_picks_the_handler_with_the_fewest_retries() -> None:
    state = {"a": HandlerState(retries=2), "b": HandlerState(retries=1), "c": HandlerState()}
    assert asap([A, B, C], state=state) == [C]
    assert asap([A, B], state=state) == [B]
    assert asap([], state=state) == []


def test_other_lifecycles() -> None:
    handlers: list[Any] = [A, B, C]
    assert all_at_once(handlers, state={}) == [A, B, C]
    assert one_by_one(handlers, state={}) == [A]
    assert randomized(handlers, state={})[0] in handlers
    assert len(randomized(handlers)) == 1
    assert sorted(shuffled(handlers), key=lambda h: h.id) == [A, B, C]
    assert randomized([]) == []
    assert shuffled([]) == []


def test_default_lifecycle_is_asap_and_can_be_changed_and_restored() -> None:
    assert get_default_lifecycle() is asap
    set_default_lifecycle(all_at_once)
    try:
        assert get_default_lifecycle() is all_at_once
    finally:
        set_default_lifecycle(None)
    assert get_default_lifecycle() is asap
