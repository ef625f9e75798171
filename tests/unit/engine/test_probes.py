"""When a watch makes the liveness probe fail: a pure decision."""

from __future__ import annotations

from anyop.engine.operator.health import watch_problem
from anyop.kube.watchstate import Phase, WatchState


def state(**fields: object) -> WatchState:
    return WatchState(**fields)  # type: ignore[arg-type]


def test_a_watch_without_failures_is_healthy_however_quiet() -> None:
    assert watch_problem(state(last_event_time=0.0), now=1000.0, stall_after=70) is None


def test_a_fresh_failure_is_not_a_problem_yet() -> None:
    failing = state(failures=1, last_event_time=990.0, last_error="boom")
    assert watch_problem(failing, now=1000.0, stall_after=70) is None


def test_failing_and_silent_past_the_deadline_is_a_problem() -> None:
    failing = state(
        phase=Phase.BACKING_OFF, failures=3, last_event_time=900.0, last_error="ConnectTimeout"
    )
    problem = watch_problem(failing, now=1000.0, stall_after=70)
    assert problem == "failing 3 times, nothing received for 100 s: ConnectTimeout"


def test_an_open_stream_is_healthy_even_after_failures() -> None:
    reconnected = state(failures=1, last_event_time=900.0, streaming=True)
    assert watch_problem(reconnected, now=1000.0, stall_after=70) is None


def test_a_watch_that_never_listed_and_fails_is_a_problem() -> None:
    never = state(failures=2, last_error="Forbidden")
    assert (
        watch_problem(never, now=5.0, stall_after=70) == "failing 2 times, never listed: Forbidden"
    )
