"""The operator's wall clock (``anyop.clock``): read once per event loop, then kept by the loop's
monotonic clock, so a step of the system's clock does not move it (RELIABILITY.md §5 row 41)."""

from __future__ import annotations

import datetime

import anyio
import pytest
import time_machine

from anyop.clock import system_now, utcnow

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
async def test_the_time_the_machine_slept_is_added(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyop.clock

    asleep = anyop.clock.suspended()
    before = utcnow()
    # The machine slept an hour: the loop's monotonic clock did not move, the wall clock did.
    monkeypatch.setattr(anyop.clock, "suspended", lambda: asleep + 3600)
    after = utcnow()
    assert HOUR <= after - before < HOUR + SLACK
