"""Timer schedules and termination budgets: pure decisions."""

from __future__ import annotations

import math
from typing import Any

import pytest

from anyop.handlers.records import DaemonHandler, TimerHandler
from anyop.handlers.schedules import Termination, timer_due, timer_pause


def fn(**_: Any) -> None:
    pass


def timer(**options: Any) -> TimerHandler:
    return TimerHandler(fn=fn, id="t", **options)


def daemon(**options: Any) -> DaemonHandler:
    return DaemonHandler(fn=fn, id="d", **options)


@pytest.mark.parametrize(
    ("options", "started", "now", "expected"),
    [
        ({"interval": 5.0}, 0.0, 3.0, 5.0),  # from the end of the run
        ({"interval": 5.0, "sharp": True}, 0.0, 3.0, 2.0),  # to the grid point at 5
        ({"interval": 5.0, "sharp": True}, 0.0, 7.0, 3.0),  # a long run skips to 10
        ({"interval": 5.0, "sharp": True}, 0.0, 5.0, 0.0),  # exactly on the grid
        ({"interval": 5.0, "sharp": True}, 0.0, 0.0, 5.0),  # an instant run
        ({}, 0.0, 3.0, None),  # one-shot
        ({"idle": 3.0}, 0.0, 3.0, None),  # idle-only: waits for the next change
    ],
)
def test_timer_pause(
    options: dict[str, Any], started: float, now: float, expected: float | None
) -> None:
    assert timer_pause(timer(**options), started=started, now=now) == expected


def test_daemon_termination_uses_its_own_options() -> None:
    term = Termination.of(
        daemon(cancellation_backoff=1.0, cancellation_timeout=2.0, cancellation_polling=3.0),
        polling=60,
    )
    assert term == Termination(backoff=1.0, timeout=2.0, polling=3.0)
    assert term.bounded
    assert term.budget == 3.0


def test_termination_without_a_timeout_is_unbounded_and_polls_per_settings() -> None:
    term = Termination.of(daemon(cancellation_backoff=1.0), polling=60)
    assert not term.bounded
    assert term.polling == 60
    assert Termination.of(timer(interval=1.0), polling=5) == Termination(None, None, 5)


@pytest.mark.parametrize(
    ("options", "not_before", "reset", "ran_for", "expected"),
    [
        ({"interval": 5.0}, 105.0, 100.0, None, 105.0),  # no idle: the wait alone
        ({"interval": 5.0}, 105.0, 104.0, 100.0, 105.0),  # ... a change does not move it
        ({"idle": 10.0}, 100.0, 100.0, None, 110.0),  # creation counts as a change
        ({"idle": 10.0}, 100.0, 103.0, None, 113.0),  # a later change moves it
        ({"idle": 10.0}, 120.0, 103.0, None, 120.0),  # a longer wait (a retry's delay) wins
        ({"idle": 10.0}, 100.0, 100.0, 100.0, math.inf),  # idle-only: once per quiet period
        ({"idle": 10.0}, 120.0, 115.0, 100.0, 125.0),  # ... and again after the next change
        ({"idle": 10.0, "interval": 5.0}, 115.0, 100.0, 100.0, 115.0),  # idle+interval repeats
        ({"idle": 10.0, "interval": 5.0}, 115.0, 112.0, 100.0, 122.0),  # ... until a change
    ],
)
def test_timer_due(
    options: dict[str, Any], not_before: float, reset: float, ran_for: float | None,
    expected: float,
) -> None:  # fmt: skip
    handler = timer(**options)
    assert timer_due(handler, not_before=not_before, reset=reset, ran_for=ran_for) == expected
