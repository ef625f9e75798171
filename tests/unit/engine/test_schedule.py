"""The timers' schedule: due order, moving the deadline, discarding, and no idle task."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest

from anyop.engine.schedule import Schedule

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

DEADLINE = 5  # fake seconds; only reached when something is broken


class Fired:
    """What a schedule fired, with the times it fired at."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.times: dict[str, float] = {}
        self.changed = anyio.Event()

    def __call__(self, item: str) -> None:
        self.items.append(item)
        self.times[item] = anyio.current_time()
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, count: int) -> None:
        while len(self.items) < count:
            await self.changed.wait()


@asynccontextmanager
async def opened(
    fire: Callable[[str], None],
) -> AsyncIterator[tuple[Schedule[str], anyio.abc.TaskGroup]]:
    """A schedule named "s" in a task group of its own, within the deadline."""
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            yield Schedule(tg, fire, name="s"), tg


def waking_tasks(name: str) -> int:
    return sum(1 for task in anyio.get_running_tasks() if task.name == name)


async def test_entries_fire_in_due_order_and_not_before_they_are_due() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, _):
        now = anyio.current_time()
        due = {"c": now + 0.15, "a": now + 0.05, "b": now + 0.1}
        for item, when in due.items():
            schedule.add(item, when)
        assert len(schedule) == 3
        await fired.until(3)
    assert fired.items == ["a", "b", "c"]
    assert all(fired.times[item] >= when for item, when in due.items())
    assert len(schedule) == 0


async def test_an_earlier_entry_wakes_the_task_sooner() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, _):
        late = schedule.add("late", anyio.current_time() + 3600)
        await anyio.wait_all_tasks_blocked()  # the task sleeps until the late one
        schedule.add("soon", anyio.current_time() + 0.05)
        await fired.until(1)
        assert fired.items == ["soon"]
        schedule.discard(late)
    assert fired.items == ["soon"]


async def test_discarded_entries_never_fire_and_the_last_one_ends_the_task() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, _):
        now = anyio.current_time()
        gone = schedule.add("gone", now + 0.05)
        kept = schedule.add("kept", now + 0.1)
        schedule.discard(gone)
        schedule.discard(gone)  # twice is harmless
        await fired.until(1)
        assert fired.items == ["kept"]
        schedule.discard(kept)  # already fired: nothing happens
        hour = schedule.add("hour", anyio.current_time() + 3600)
        await anyio.wait_all_tasks_blocked()
        assert waking_tasks("s") == 1
        schedule.discard(hour)
        await anyio.wait_all_tasks_blocked()
        assert waking_tasks("s") == 0
    # the group exits at once: no task waits for the hour
    assert fired.items == ["kept"]


async def test_nothing_scheduled_costs_no_task() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, _):
        assert waking_tasks("s") == 0
        schedule.add("x", anyio.current_time())
        await fired.until(1)
        await anyio.wait_all_tasks_blocked()
        assert waking_tasks("s") == 0
        schedule.add("y", anyio.current_time() + 0.02)  # a new task wakes it
        await fired.until(2)
    assert fired.items == ["x", "y"]


async def test_an_entry_added_right_after_the_last_was_discarded_still_fires() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, _):
        first = schedule.add("first", anyio.current_time() + 3600)
        schedule.discard(first)  # its task is cancelled before it ever ran
        schedule.add("second", anyio.current_time() + 0.02)
        await fired.until(1)
        await anyio.wait_all_tasks_blocked()
        assert waking_tasks("s") == 0
    assert fired.items == ["second"]


async def test_fire_may_schedule_again() -> None:
    fired = Fired()

    def again(item: str) -> None:
        fired(item)
        if len(fired.items) < 3:
            schedule.add(item, anyio.current_time() + 0.01)

    async with opened(again) as (schedule, _):
        schedule.add("tick", anyio.current_time())
        await fired.until(3)
    assert fired.items == ["tick"] * 3


async def test_a_discarded_entry_no_longer_holds_its_item() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, tg):
        entry = schedule.add("big", anyio.current_time() + 3600)
        schedule.add("other", anyio.current_time() + 3600)  # keeps the heap non-empty
        schedule.discard(entry)
        assert entry.item is None
        assert not entry.live
        assert len(schedule) == 1
        tg.cancel_scope.cancel()
    assert fired.items == []


async def test_discarded_entries_do_not_pile_up_in_the_heap() -> None:
    fired = Fired()
    async with opened(fired) as (schedule, tg):
        schedule.add("kept", anyio.current_time() + 3600)
        for i in range(1000):  # an idle timer re-planned on every change of its object
            schedule.discard(schedule.add(f"moved-{i}", anyio.current_time() + 3600))
        assert len(schedule) == 1
        assert len(schedule._heap) <= 2 * len(schedule) + 64
        soon = schedule.add("soon", anyio.current_time() + 0.02)
        await fired.until(1)
        assert fired.items == ["soon"]
        assert not soon.live
        tg.cancel_scope.cancel()
