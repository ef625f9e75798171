"""A daemon or timer run's states: the transition table, and what each state answers."""

from __future__ import annotations

import itertools

import pytest

from anyop.engine.daemons.daemon_runs import TRANSITIONS, Run, RunEvent, RunState, transition

S, E = RunState, RunEvent

# (state, event) -> state after it; a missing pair is a bug of the engine.
TABLE = [
    (S.WAITING, E.START, S.RUNNING),
    (S.WAITING, E.STOP, S.EXITED),
    (S.WAITING, E.EXIT, S.EXITED),
    (S.RUNNING, E.REST, S.WAITING),
    (S.RUNNING, E.STOP, S.STOPPING),
    (S.RUNNING, E.EXIT, S.EXITED),
    (S.STOPPING, E.STOP, S.STOPPING),
    (S.STOPPING, E.CANCEL, S.CANCELLED),
    (S.STOPPING, E.ABANDON, S.ABANDONED),
    (S.STOPPING, E.EXIT, S.EXITED),
    (S.CANCELLED, E.STOP, S.CANCELLED),
    (S.CANCELLED, E.CANCEL, S.CANCELLED),
    (S.CANCELLED, E.ABANDON, S.ABANDONED),
    (S.CANCELLED, E.EXIT, S.EXITED),
    (S.ABANDONED, E.STOP, S.ABANDONED),
    (S.ABANDONED, E.CANCEL, S.ABANDONED),
    (S.ABANDONED, E.EXIT, S.EXITED),
    (S.EXITED, E.STOP, S.EXITED),
    (S.EXITED, E.EXIT, S.EXITED),
]


@pytest.mark.parametrize(("state", "event", "after"), TABLE)
def test_a_transition_leads_where_the_table_says(state: S, event: E, after: S) -> None:
    assert transition(state, event) is after


def test_the_table_is_the_whole_of_the_transitions() -> None:
    assert {(state, event): after for state, event, after in TABLE} == dict(TRANSITIONS)


@pytest.mark.parametrize(
    ("state", "event"),
    [
        (state, event)
        for state, event in itertools.product(S, E)
        if (state, event) not in {(s, e) for s, e, _ in TABLE}
    ],
)
def test_any_other_event_is_refused_with_both_names(state: S, event: E) -> None:
    with pytest.raises(ValueError, match=f"{state.value} cannot {event.value}"):
        transition(state, event)


def test_no_event_leaves_the_exited_state() -> None:
    assert {after for (state, _), after in TRANSITIONS.items() if state is S.EXITED} == {S.EXITED}


def test_a_run_can_start_only_while_waiting_and_rest_only_while_running() -> None:
    assert {state for state, event in TRANSITIONS if event is E.START} == {S.WAITING}
    assert {state for state, event in TRANSITIONS if event is E.REST} == {S.RUNNING}


# state -> (alive, busy, cancelled, exited)
ANSWERS = {
    S.WAITING: (True, False, False, False),
    S.RUNNING: (True, True, False, False),
    S.STOPPING: (True, True, False, False),
    S.CANCELLED: (True, True, True, False),
    S.ABANDONED: (False, True, True, False),
    S.EXITED: (False, False, False, True),
}


@pytest.mark.parametrize("state", list(S))
def test_what_a_run_answers_in_each_state(state: S) -> None:
    run = Run(handler=None)  # type: ignore[arg-type]  # the handler is not read here
    run.state = state
    assert (run.alive, run.busy, run.cancelled, run.exited) == ANSWERS[state]


@pytest.mark.anyio
async def test_a_run_that_exits_wakes_who_waits_for_it() -> None:
    run = Run(handler=None)  # type: ignore[arg-type]
    run.happen(E.START)
    run.happen(E.STOP)
    assert not await run.exits_within(0)
    run.happen(E.EXIT)
    assert await run.exits_within(0)
    assert run.state is S.EXITED
