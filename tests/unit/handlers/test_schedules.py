"""Timer schedules and termination budgets: pure decisions."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.handlers.records import DaemonHandler, TimerHandler
from anyop.handlers.schedules import Termination, idle_left, timer_pause


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


def test_idle_left_counts_from_the_last_reset() -> None:
    assert idle_left(timer(idle=10.0), reset=100.0, now=104.0) == 6.0
    assert idle_left(timer(idle=10.0), reset=100.0, now=120.0) == 0.0
    assert idle_left(timer(), reset=100.0, now=100.0) == 0.0


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
