"""The loop-lag watchdog: its decisions without sleeping, the frame it names, its thread."""

from __future__ import annotations

import string
import sys
import threading
from types import FrameType

import anyio
import pydantic
import pytest

from anyop.engine.operator.loop_watchdog import (
    MAX_INTERVAL,
    Blocked,
    Running,
    Verdict,
    culprit,
    heartbeat_interval,
    judge,
    recovery_message,
    warning_message,
    watch_loop_lag,
)
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings


def looks(beats: list[float], nows: list[float], threshold: float = 5.0) -> list[Verdict]:
    """The verdicts of the thread's looks: the heartbeat's stamp and the time at each."""
    lag: Running | Blocked = Running()
    verdicts = []
    for beat, now in zip(beats, nows, strict=True):
        verdict = judge(lag, beat=beat, now=now, threshold=threshold)
        verdicts.append(verdict)
        lag = verdict.lag
    return verdicts


# -- the decisions -------------------------------------------------------------------------------


def test_a_loop_that_beats_within_the_threshold_is_never_reported() -> None:
    verdicts = looks(beats=[0.0, 0.25, 0.5, 4.0], nows=[0.25, 0.5, 4.0, 9.0])
    assert [(v.warn, v.recovered) for v in verdicts] == [(None, None)] * 4


def test_a_block_is_warned_about_once_and_its_end_said_once_with_the_time_in_all() -> None:
    beats = [10.0, 10.0, 10.0, 10.0, 17.5, 17.75]
    nows = [10.25, 14.0, 15.25, 16.0, 17.75, 18.0]
    verdicts = looks(beats, nows)
    assert [v.warn for v in verdicts] == [None, None, 5.25, None, None, None]
    assert [v.recovered for v in verdicts] == [None, None, None, None, 7.5, None]
    assert verdicts[-1].lag == Running()


def test_a_second_block_is_warned_about_again() -> None:
    beats = [0.0, 0.0, 1.0, 1.0, 9.0]
    nows = [6.0, 7.0, 7.0, 6.5, 9.5]
    verdicts = looks(beats, nows)
    assert [v.warn for v in verdicts] == [6.0, None, None, 5.5, None]
    assert [v.recovered for v in verdicts] == [None, None, 1.0, None, 8.0]


def test_the_heartbeat_is_a_quarter_of_the_threshold_and_at_most_a_quarter_second() -> None:
    assert heartbeat_interval(5.0) == MAX_INTERVAL == 0.25
    assert heartbeat_interval(0.4) == 0.1


def test_the_messages_say_how_long_where_and_what_to_do() -> None:
    text = warning_message(5.04, "app.py:12 in create_fn")
    assert text.startswith("The event loop has been blocked for 5.0 s; it is running: app.py:12")
    assert "use a sync handler or anyio.to_thread" in text
    assert recovery_message(7.46) == "The event loop runs again after it was blocked for 7.5 s."


# -- the frame it names --------------------------------------------------------------------------


def test_the_culprit_is_the_innermost_frame_outside_the_standard_library() -> None:
    named: list[str] = []

    class Spy:
        def __format__(self, spec: str) -> str:
            stdlib_frame = sys._getframe(1)  # string.Formatter's, called from this test
            assert stdlib_frame.f_code.co_filename == string.__file__
            named.append(culprit(stdlib_frame))
            return ""

    line = sys._getframe().f_lineno + 1
    string.Formatter().format("{}", Spy())
    assert named == [
        f"{__file__}:{line} in test_the_culprit_is_the_innermost_frame_outside_the_standard_library"
    ]


def test_the_culprit_of_a_thread_without_frames_is_said_to_be_unknown() -> None:
    none: FrameType | None = None
    assert culprit(none) == "an unknown place (the loop's thread has no frame)"


# -- the shell's thread, the setting, the metrics ------------------------------------------------


def watchdogs() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "anyop loop watchdog"]


@pytest.mark.anyio
async def test_the_thread_runs_while_the_watchdog_does_and_is_joined_when_it_is_cancelled() -> None:
    before = len(watchdogs())
    async with anyio.create_task_group() as tg:
        await tg.start(watch_loop_lag, 5.0)
        assert len(watchdogs()) == before + 1
        tg.cancel_scope.cancel()
    assert len(watchdogs()) == before


@pytest.mark.anyio
async def test_no_threshold_starts_no_thread() -> None:
    before = len(watchdogs())
    async with anyio.create_task_group() as tg:
        await tg.start(watch_loop_lag, None)
        assert len(watchdogs()) == before


def test_the_threshold_is_five_seconds_by_default_and_none_disables_it() -> None:
    assert OperatorSettings().execution.loop_lag_threshold == 5.0
    settings = OperatorSettings.model_validate({"execution": {"loop_lag_threshold": None}})
    assert settings.execution.loop_lag_threshold is None


@pytest.mark.parametrize("wrong", [0, -1, "soon"])
def test_a_threshold_that_is_not_a_positive_number_is_refused_naming_the_field(
    wrong: object,
) -> None:
    settings = OperatorSettings()
    with pytest.raises(pydantic.ValidationError, match="loop_lag_threshold"):
        settings.execution.loop_lag_threshold = wrong  # type: ignore[assignment]


def test_a_block_is_counted_in_the_metrics_with_its_seconds() -> None:
    metrics = Metrics()
    metrics.loop_blocked(2.5)
    metrics.loop_blocked(1.0)
    text = metrics.render().decode()
    assert "anyop_event_loop_blocks_total 2.0" in text
    assert "anyop_event_loop_blocked_seconds_total 3.5" in text
