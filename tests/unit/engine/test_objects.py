"""Per-object workers: latest state wins, one cycle at a time, idle exit, delayed re-runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from anyop.engine.objects import CycleResult, ObjectSlot, ObjectWorkers, SlotState

pytestmark = pytest.mark.anyio

DEADLINE = 5  # seconds; only reached when something is broken


def body(uid: str, version: int) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "resourceVersion": str(version)}}


def version(seen: Mapping[str, Any]) -> int:
    return int(seen["metadata"]["resourceVersion"])


class Recorder:
    """A cycle that records what it handled and can be held inside a cycle."""

    def __init__(self, *results: CycleResult) -> None:
        self.seen: list[tuple[str, int]] = []
        self.results = list(results)
        self.entered = anyio.Event()
        self.release: anyio.Event | None = None
        self.running = 0
        self.most_running = 0

    def hold(self) -> None:
        self.release = anyio.Event()

    async def __call__(self, slot: ObjectSlot, seen: Mapping[str, Any]) -> CycleResult:
        self.seen.append((slot.uid, version(seen)))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        self.entered.set()
        try:
            if self.release is not None:
                await self.release.wait()
        finally:
            self.running -= 1
        return self.results.pop(0) if self.results else CycleResult()


async def test_events_during_a_cycle_coalesce_into_the_latest_body() -> None:
    cycle = Recorder()
    cycle.hold()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            workers.dispatch(body("a", 1))
            await cycle.entered.wait()
            workers.dispatch(body("a", 2))
            workers.dispatch(body("a", 3))
            assert cycle.release is not None
            cycle.release.set()
    assert cycle.seen == [("a", 1), ("a", 3)]


async def test_cycles_of_one_object_are_serial_and_of_two_objects_concurrent() -> None:
    cycle = Recorder()
    cycle.hold()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            workers.dispatch(body("a", 1))
            workers.dispatch(body("b", 1))
            await anyio.wait_all_tasks_blocked()
            workers.dispatch(body("a", 2))
            assert cycle.running == 2
            assert cycle.release is not None
            cycle.release.set()
    assert sorted(cycle.seen) == [("a", 1), ("a", 2), ("b", 1)]
    assert cycle.most_running == 2


async def test_the_limiter_bounds_the_cycles_of_all_objects() -> None:
    cycle = Recorder()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, limiter=anyio.CapacityLimiter(1), idle_timeout=0)
            for uid in "abc":
                workers.dispatch(body(uid, 1))
    assert cycle.most_running == 1
    assert len(cycle.seen) == 3


async def test_an_idle_worker_exits_but_the_slot_stays() -> None:
    cycle = Recorder()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0, new_memo=dict)
            slot = workers.dispatch(body("a", 1))
    assert slot.state is SlotState.IDLE
    assert workers.slots == {"a": slot}
    assert slot.last == body("a", 1)
    assert workers.busy == 0


async def test_a_gone_object_is_forgotten() -> None:
    cycle = Recorder(CycleResult(gone=True))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            slot = workers.dispatch(body("a", 1))
    assert slot.state is SlotState.GONE
    assert len(workers) == 0


async def test_a_delayed_cycle_reruns_with_the_freshest_body_without_events() -> None:
    cycle = Recorder(CycleResult(delay=0.01, body=body("a", 7)))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            workers.dispatch(body("a", 1))
    assert cycle.seen == [("a", 1), ("a", 7)]


async def test_a_new_event_cuts_a_delay_short() -> None:
    cycle = Recorder(CycleResult(delay=DEADLINE * 10))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            workers.dispatch(body("a", 1))
            await cycle.entered.wait()
            await anyio.wait_all_tasks_blocked()
            workers.dispatch(body("a", 2))
    assert cycle.seen == [("a", 1), ("a", 2)]


async def test_closing_ends_waiting_workers_at_once_and_handles_nothing_new() -> None:
    cycle = Recorder(CycleResult(delay=DEADLINE * 10))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=DEADLINE * 10)
            workers.dispatch(body("a", 1))
            workers.dispatch(body("b", 1))
            await anyio.wait_all_tasks_blocked()
            workers.close()
            workers.dispatch(body("a", 2))
    assert sorted(cycle.seen) == [("a", 1), ("b", 1)]
