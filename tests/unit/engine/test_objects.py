"""Per-object workers: latest state wins, one cycle at a time, idle exit, delayed re-runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from anyop.engine.cycle.object_memories import Memories
from anyop.engine.cycle.object_slots import Backpressure, CycleResult, ObjectSlot, SlotState
from anyop.engine.object_groups import ObjectHosts
from anyop.engine.resource.workers import ObjectWorkers
from anyop.kube.inflight import InFlight, claiming

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

DEADLINE = 5  # fake seconds; only reached when something is broken


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
        self.called = anyio.Event()
        self.release: anyio.Event | None = None
        self.running = 0
        self.most_running = 0

    def hold(self) -> None:
        self.release = anyio.Event()

    async def until(self, count: int) -> None:
        """Wait until it has been called ``count`` times."""
        while len(self.seen) < count:
            await self.called.wait()

    async def __call__(self, slot: ObjectSlot, seen: Mapping[str, Any]) -> CycleResult:
        self.seen.append((slot.uid, version(seen)))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        self.entered.set()
        self.called.set()
        self.called = anyio.Event()
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
    assert slot.last is None  # an idle object keeps no body
    assert workers.busy == 0


async def test_a_gone_object_is_forgotten() -> None:
    cycle = Recorder(CycleResult(gone=True))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            slot = workers.dispatch(body("a", 1))
    assert slot.state is SlotState.GONE
    assert len(workers) == 0


@pytest.mark.parametrize("deleted", [True, False], ids=["deleted", "left-the-watch"])
async def test_the_memory_outlives_the_slot_until_the_object_is_deleted(deleted: bool) -> None:
    memories = Memories(lambda: {"n": 0})
    cycle = Recorder(CycleResult(gone=True, deleted=deleted))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0, memories=memories)
            slot = workers.dispatch(body("a", 1))
            slot.memo["n"] += 1
    assert len(workers) == 0
    assert ("a" in memories) is not deleted
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            again = ObjectWorkers(Recorder(), tg, idle_timeout=0, memories=memories)
            slot = again.dispatch(body("a", 2))  # the next round (after a pause), or it is back
    assert slot.memo == ({"n": 0} if deleted else {"n": 1})


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


async def test_an_idle_worker_exits_when_its_idle_timeout_is_up() -> None:
    cycle = Recorder(CycleResult())
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:  # ends once the worker has exited
            workers = ObjectWorkers(cycle, tg, idle_timeout=0.05)
            slot = workers.dispatch(body("a", 1))
            await anyio.wait_all_tasks_blocked()  # the worker waits for more, up to its timeout
            workers.dispatch(body("a", 2))  # the waiting worker takes it: its wait starts anew
    assert cycle.seen == [("a", 1), ("a", 2)]
    assert slot.state is SlotState.IDLE
    assert slot.wakeup is None


async def test_a_quiet_cycle_leaves_no_idle_worker() -> None:
    cycle = Recorder(CycleResult(quiet=True), CycleResult(quiet=True, delay=DEADLINE * 10))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=DEADLINE * 10)
            slot = workers.dispatch(body("a", 1))
            await anyio.wait_all_tasks_blocked()
            assert slot.state is SlotState.IDLE  # it wrote nothing: no worker waits
            assert (slot.scope, slot.last, slot.wakeup) == (None, None, None)
            workers.dispatch(body("a", 2))  # a new worker, as for any idle object
            await anyio.wait_all_tasks_blocked()
            assert slot.state is SlotState.BUSY  # a delay is kept even by a quiet cycle
            workers.close()
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


# -- backpressure -------------------------------------------------------------------------------


class Requesting:
    """A cycle that sends one request (it counts in flight) and holds it until released."""

    def __init__(self, in_flight: InFlight) -> None:
        self.in_flight = in_flight
        self.started: list[str] = []
        self.release = anyio.Event()
        self.most_running = 0
        self.running = 0

    async def __call__(self, slot: ObjectSlot, seen: Mapping[str, Any]) -> CycleResult:
        self.started.append(slot.uid)
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        for _ in range(5):  # the handler: a few turns of the loop before the request
            await anyio.lowlevel.checkpoint()
        with self.in_flight:
            await self.release.wait()
        self.running -= 1
        return CycleResult()


def started_in_order(started: list[str]) -> bool:
    """In the order queued, but for the order of the tasks started in one turn (Trio mixes it)."""
    return all(abs(index - int(uid[1:])) < 12 for index, uid in enumerate(started))


async def test_a_listing_starts_no_more_cycles_than_the_api_server_takes() -> None:
    in_flight = InFlight()
    cycle = Requesting(in_flight)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(
                cycle, tg, idle_timeout=0, backpressure=Backpressure(in_flight, 4)
            )
            for number in range(100):  # all at once, as a listing dispatches them
                workers.dispatch(body(f"o{number}", 1))
            assert workers.busy == 100  # all queued
            while in_flight.count < 4:
                await anyio.lowlevel.checkpoint()
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            # Each started worker holds its place until its request is sent: 4, not 4 a turn.
            assert len(cycle.started) == 4
            assert in_flight.load == 4
            assert started_in_order(cycle.started)
            cycle.release.set()
    assert len(cycle.started) == 100
    assert sorted(cycle.started) == sorted(f"o{number}" for number in range(100))
    assert started_in_order(cycle.started)
    assert cycle.most_running == 4
    assert in_flight.load == 0  # every place held was taken by a request, or given back


def backpressured(cycle: Recorder, tg: anyio.abc.TaskGroup, in_flight: InFlight) -> ObjectWorkers:
    """Workers that wait while one request is in flight."""
    return ObjectWorkers(cycle, tg, idle_timeout=0, backpressure=Backpressure(in_flight, 1))


async def test_queued_objects_start_as_requests_end() -> None:
    in_flight = InFlight()
    cycle = Recorder()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = backpressured(cycle, tg, in_flight)
            with in_flight:  # someone else's request: the API server is behind
                workers.dispatch(body("a", 1))
                workers.dispatch(body("a", 2))  # coalesces while queued
                workers.dispatch(body("b", 1))
                await anyio.wait_all_tasks_blocked()
                assert cycle.seen == []
                assert workers.slots["a"].state is SlotState.QUEUED
    assert cycle.seen == [("a", 2), ("b", 1)]


async def test_objects_seen_before_go_ahead_of_new_ones() -> None:
    in_flight = InFlight()
    cycle = Recorder()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = backpressured(cycle, tg, in_flight)
            workers.dispatch(body("old", 1))
            await anyio.wait_all_tasks_blocked()
            assert workers.slots["old"].state is SlotState.IDLE
            assert cycle.seen == [("old", 1)]
            with in_flight:
                for number in range(3):
                    workers.dispatch(body(f"new{number}", 1))
                workers.dispatch(body("old", 2))  # a fresh change of a known object
                await anyio.wait_all_tasks_blocked()
    assert cycle.seen[1:] == [("old", 2), ("new0", 1), ("new1", 1), ("new2", 1)]


async def test_queued_objects_wait_until_ready() -> None:
    cycle = Recorder()
    ready = anyio.Event()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(
                cycle, tg, idle_timeout=0, backpressure=Backpressure(InFlight(), 1), ready=ready
            )
            workers.dispatch(body("a", 1))
            await anyio.wait_all_tasks_blocked()
            assert cycle.seen == []
            ready.set()
    assert cycle.seen == [("a", 1)]


async def test_closing_drops_the_queue_at_once() -> None:
    in_flight = InFlight()
    cycle = Recorder()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = backpressured(cycle, tg, in_flight)
            in_flight.__enter__()  # a request that never ends
            workers.dispatch(body("a", 1))
            await anyio.wait_all_tasks_blocked()
            started = anyio.current_time()
            workers.close()
    assert anyio.current_time() - started < 1  # the queue's task did not hold the exit up
    assert cycle.seen == []


async def test_a_deleted_queued_object_is_skipped() -> None:
    in_flight = InFlight()
    cycle = Recorder()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = backpressured(cycle, tg, in_flight)
            with in_flight:
                workers.dispatch(body("a", 1))
                workers.dispatch(body("b", 1))
                workers.forget("a")
    assert cycle.seen == [("b", 1)]


async def test_without_hold_new_a_requeued_object_waits_for_room_and_runs_again() -> None:
    in_flight = InFlight()
    cycle = Recorder(CycleResult(requeue=True))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(
                cycle, tg, idle_timeout=0, backpressure=Backpressure(in_flight, 1), hold_new=False
            )
            with in_flight:  # the API server is behind: a new object starts (its daemons would)
                workers.dispatch(body("a", 1))
                await anyio.wait_all_tasks_blocked()
                assert cycle.seen == [("a", 1)]
                assert workers.slots["a"].state is SlotState.QUEUED  # no worker while it waits
                workers.dispatch(body("b", 1))  # a new object is not held back
                await anyio.wait_all_tasks_blocked()
                assert cycle.seen == [("a", 1), ("b", 1)]
            await anyio.wait_all_tasks_blocked()
            # mypy keeps its narrowing to QUEUED (above) across the awaits
            assert workers.slots["a"].state is SlotState.IDLE  # type: ignore[comparison-overlap]
    assert cycle.seen == [("a", 1), ("b", 1), ("a", 1)]


async def test_a_requeued_object_runs_with_a_newer_body_if_one_came() -> None:
    in_flight = InFlight()
    cycle = Recorder(CycleResult(requeue=True))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = backpressured(cycle, tg, in_flight)
            cycle.hold()
            workers.dispatch(body("a", 1))
            await cycle.entered.wait()
            with in_flight:  # the API server falls behind: the requeued object waits
                assert cycle.release is not None
                cycle.release.set()
                cycle.release = None
                await anyio.wait_all_tasks_blocked()
                assert workers.slots["a"].state is SlotState.QUEUED
                workers.dispatch(body("a", 2))  # a newer event replaces its body
                await anyio.wait_all_tasks_blocked()
                assert cycle.seen == [("a", 1)]
    assert cycle.seen == [("a", 1), ("a", 2)]


async def test_a_requeue_without_backpressure_runs_the_cycle_again_at_once() -> None:
    cycle = Recorder(CycleResult(requeue=True))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0)
            workers.dispatch(body("a", 1))
    assert cycle.seen == [("a", 1), ("a", 1)]


async def test_events_during_a_throttling_delay_wait_for_its_end_then_the_latest_is_handled() -> (
    None
):
    cycle = Recorder(CycleResult(delay=0.3, throttled=True))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0.05)
            started = anyio.current_time()
            workers.dispatch(body("a", 1))
            await anyio.wait_all_tasks_blocked()  # handled; the delay runs
            workers.dispatch(body("a", 2))
            workers.dispatch(body("a", 3))
            await cycle.until(2)
            handled_again = anyio.current_time() - started
            workers.close()
    assert cycle.seen == [("a", 1), ("a", 3)]
    assert handled_again >= 0.3


async def test_events_after_an_unthrottled_delay_end_it_early() -> None:
    cycle = Recorder(CycleResult(delay=30))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=0.05)
            workers.dispatch(body("a", 1))
            await anyio.wait_all_tasks_blocked()  # handled; the delay runs
            workers.dispatch(body("a", 2))
            await cycle.until(2)
            workers.close()
    assert cycle.seen == [("a", 1), ("a", 2)]


async def test_a_cycle_that_fails_beyond_its_error_handling_stops_everything_with_kopfs_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(slot: ObjectSlot, seen: Mapping[str, Any]) -> CycleResult:
        raise RuntimeError("a framework bug")

    with pytest.raises(BaseExceptionGroup) as raised, anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            ObjectWorkers(broken, tg).dispatch(body("a", 1))
    assert raised.group_contains(RuntimeError, match="a framework bug")
    assert (
        "Event processing has failed with an unrecoverable error. This seems to be a framework bug."
        in caplog.messages
    )


async def test_cancelling_an_object_stops_its_cycle_and_its_group_and_it_is_handled_anew() -> None:
    cycle = Recorder()
    cycle.hold()
    daemon_cancelled = anyio.Event()

    async def daemon() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            daemon_cancelled.set()

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            hosts = ObjectHosts(tg)
            workers = ObjectWorkers(cycle, tg, idle_timeout=0, hosts=hosts)
            hosts.start("a", daemon, name="daemon")
            slot = workers.dispatch(body("a", 1))
            await cycle.entered.wait()
            workers.cancel("a")
            await daemon_cancelled.wait()
            await anyio.wait_all_tasks_blocked()
            assert slot.state is SlotState.IDLE  # not stuck busy: the next body starts anew
            cycle.release = None
            workers.dispatch(body("a", 2))
    assert cycle.seen == [("a", 1), ("a", 2)]


async def test_a_quiet_cycle_of_a_handed_over_object_leaves_no_slot_behind() -> None:
    cycle = Recorder(CycleResult(quiet=True), CycleResult(quiet=True))
    cycle.hold()
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(cycle, tg, idle_timeout=DEADLINE * 10)
            first = workers.dispatch(body("a", 1))
            await cycle.entered.wait()
            workers.release("a")  # handed over mid-cycle; the cycle then writes nothing
            assert cycle.release is not None
            cycle.release.set()
            await anyio.wait_all_tasks_blocked()
            assert "a" not in workers.slots  # gone as a hand-over, not left idle and leaving
            cycle.release = None
            again = workers.dispatch(body("a", 2))  # given back later: a fresh slot, handled
            await cycle.until(2)
    assert again is not first
    assert cycle.seen == [("a", 1), ("a", 2)]


async def test_workers_that_wait_for_the_worker_limit_hold_no_place_in_flight() -> None:
    in_flight = InFlight()
    cycle = Requesting(in_flight)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(
                cycle,
                tg,
                idle_timeout=0,
                limiter=anyio.CapacityLimiter(1),
                backpressure=Backpressure(in_flight, 4),
            )
            for number in range(10):
                workers.dispatch(body(f"o{number}", 1))
            while in_flight.count < 1:
                await anyio.lowlevel.checkpoint()
            await anyio.wait_all_tasks_blocked()
            # One runs (its request in flight); the others started wait for the limiter and
            # hold no place: other resources' objects are not kept waiting behind them.
            assert in_flight.load == 1
            cycle.release.set()
    assert len(cycle.started) == 10
    assert in_flight.load == 0


async def test_a_cycle_started_off_the_queue_has_its_own_place_as_room() -> None:
    in_flight = InFlight()
    backpressure = Backpressure(in_flight, 1)
    with claiming(backpressure.reserve()):
        assert backpressure.room == 0  # full: its own place
        assert backpressure.room_here == 1  # ...which is room for it
        with in_flight:
            assert backpressure.room_here == 0  # taken by its request
    assert backpressure.room == 1
