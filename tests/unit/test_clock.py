"""The operator's wall clock (``anyop.clock``): read once per event loop, then kept by the loop's
monotonic clock, so a step of the system's clock does not move it (RELIABILITY.md §5 row 41)."""

from __future__ import annotations

import datetime

import anyio
import hypothesis
import pytest
import time_machine
from hypothesis import strategies as st

from anyop.clock import seconds_until, system_now, utcnow

HOUR = datetime.timedelta(hours=1)
SLACK = datetime.timedelta(seconds=5)


def test_outside_an_event_loop_it_is_the_systems_clock() -> None:
    with time_machine.travel(datetime.datetime(2031, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)):
        assert abs(utcnow() - system_now()) < SLACK
        assert utcnow().year == 2031
    assert utcnow().tzinfo is not None


@pytest.mark.anyio
@pytest.mark.parametrize("jump", [HOUR, -HOUR], ids=["forward", "back"])
async def test_a_step_of_the_systems_clock_does_not_move_it(jump: datetime.timedelta) -> None:
    before = utcnow()
    with time_machine.travel(system_now() + jump):  # the system's clock steps by an hour
        assert abs(system_now() - (before + jump)) < SLACK
        during = utcnow()
        await anyio.sleep(0.01)
        later = utcnow()
    assert datetime.timedelta(0) <= during - before < SLACK  # no step: still monotonic
    assert later >= during
    assert abs(utcnow() - system_now()) < SLACK  # the system's clock is back where it was


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_new_event_loop_reads_the_systems_clock_anew(backend: str) -> None:
    # A correction of the system's clock is followed by the next loop (the next process).
    stepped = system_now() + HOUR
    with time_machine.travel(stepped):
        seen = anyio.run(_now, backend=backend)
    assert abs(seen - stepped) < SLACK


async def _now() -> datetime.datetime:
    return utcnow()


@pytest.mark.anyio
@pytest.mark.fake_time
async def test_on_virtual_time_it_moves_with_the_virtual_clock() -> None:
    before = utcnow()
    await anyio.sleep(3600)  # an hour of virtual time, none of wall time
    elapsed = utcnow() - before
    assert HOUR <= elapsed < HOUR + SLACK


@pytest.mark.anyio
@pytest.mark.fake_time
async def test_the_time_the_machine_slept_is_added_within_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyop.clock

    asleep = anyop.clock.suspended()
    before = utcnow()
    # The machine slept an hour: the loop's monotonic clock did not move, the wall clock did.
    monkeypatch.setattr(anyop.clock, "suspended", lambda: asleep + 3600)
    assert utcnow() - before < SLACK  # not asked yet: at most once per second of the loop's
    await anyio.sleep(anyop.clock.CHECK_EVERY)  # virtual
    after = utcnow()
    assert after - before == HOUR + datetime.timedelta(seconds=anyop.clock.CHECK_EVERY)


@pytest.mark.anyio
@pytest.mark.fake_time
@pytest.mark.parametrize("noise", [-3e-6, 2e-6, 0.2, -0.2])
async def test_the_noise_of_reading_two_clocks_never_moves_it(
    monkeypatch: pytest.MonkeyPatch, noise: float
) -> None:
    import anyop.clock

    asleep = anyop.clock.suspended()
    before = utcnow()
    monkeypatch.setattr(anyop.clock, "suspended", lambda: asleep + noise)
    await anyio.sleep(60)  # virtual: exactly a minute
    assert utcnow() - before == datetime.timedelta(minutes=1)


def _wake(anchor: int, written: float, delay: float, elapsed: float) -> tuple[float, bool]:
    """When the engine wakes for a retry written at loop time ``written`` with ``delay``, if it
    looks at loop time ``written + elapsed * delay``; and whether the clock says it has come."""
    # Each reading of the clock is rounded to a microsecond, whatever the loop's and the
    # system's fractions (``anchor``, in microseconds).
    wall = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    wall += datetime.timedelta(microseconds=anchor)

    def at(loop_time: float) -> datetime.datetime:  # what utcnow() says at that loop time
        return wall + datetime.timedelta(seconds=loop_time)

    delayed = at(written) + datetime.timedelta(seconds=delay)
    now = written + elapsed * delay
    woken = now + seconds_until(delayed, at(now))
    return woken, at(woken) >= delayed


@hypothesis.given(
    anchor=st.integers(0, 10**6 - 1),
    written=st.floats(0, 1e6),
    delay=st.floats(1e-3, 1e5),
    elapsed=st.floats(0, 1),
)
def test_a_wait_for_a_written_time_ends_when_the_clock_says_it_has_come(
    anchor: int, written: float, delay: float, elapsed: float
) -> None:
    woken, come = _wake(anchor, written, delay, elapsed)
    assert come  # no second wait for a microsecond
    assert woken >= written + delay - 1.5e-6  # to the resolution of the times written


@hypothesis.given(
    anchor=st.integers(0, 10**6 - 1),
    written=st.floats(0, 1e6),
    delay=st.integers(1, 10**11).map(lambda microseconds: microseconds / 1e6),
    elapsed=st.floats(0, 0.999),
)
def test_a_retry_slept_for_is_never_woken_before_its_delay(
    anchor: int, written: float, delay: float, elapsed: float
) -> None:
    # TemporaryError(delay=60): a whole number of microseconds, slept for from a look at the
    # clock at least a microsecond (its resolution) before it is due.
    hypothesis.assume(elapsed * delay <= delay - 1e-6)
    woken, _ = _wake(anchor, written, delay, elapsed)
    assert woken >= written + delay
