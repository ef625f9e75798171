"""The count of requests in flight, and waits for it to fall below a level."""

from __future__ import annotations

import anyio
import pytest

from anyop.kube.inflight import InFlight, claiming, unclaimed

pytestmark = pytest.mark.anyio


async def test_below_returns_at_once_when_few_are_in_flight() -> None:
    in_flight = InFlight()
    with in_flight, in_flight:
        assert in_flight.count == 2
        with anyio.fail_after(1):
            await in_flight.below(3)
    assert in_flight.count == 0


async def test_below_waits_until_the_count_falls_under_the_level() -> None:
    in_flight = InFlight()
    woken: list[tuple[int, int]] = []

    async def waiter(level: int) -> None:
        await in_flight.below(level)
        woken.append((level, in_flight.count))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                in_flight.__enter__()
            tg.start_soon(waiter, 2)
            tg.start_soon(waiter, 3)
            tg.start_soon(waiter, 2)
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            in_flight.__exit__(None, None, None)  # 2 in flight: the level-3 waiter goes
            await anyio.wait_all_tasks_blocked()
            assert woken == [(3, 2)]
            in_flight.__exit__(None, None, None)  # 1 in flight: both level-2 waiters go
    assert sorted(woken) == [(2, 1), (2, 1), (3, 2)]


async def test_a_failed_request_leaves_the_count() -> None:
    in_flight = InFlight()
    with pytest.raises(RuntimeError), in_flight:
        raise RuntimeError("refused")
    assert in_flight.count == 0


async def test_a_reserved_place_counts_until_its_first_request_takes_it() -> None:
    in_flight = InFlight()
    reservation = in_flight.reserve()
    assert (in_flight.count, in_flight.load) == (0, 1)
    with claiming(reservation):
        with in_flight:  # the first request takes the place: the load stays 1
            assert (in_flight.count, in_flight.load) == (1, 1)
            with in_flight:  # a second one is a request of its own
                assert in_flight.load == 2
        assert in_flight.load == 0
    assert not reservation.held
    assert in_flight.load == 0


async def test_a_place_no_request_took_is_given_back_and_wakes_the_waiters() -> None:
    in_flight = InFlight()
    reservation = in_flight.reserve()
    woken = anyio.Event()

    async def waiter() -> None:
        await in_flight.below(1)
        woken.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert not woken.is_set()
            with claiming(reservation):
                pass  # the cycle sent nothing
            await woken.wait()
    assert in_flight.load == 0


async def test_a_place_is_taken_only_by_a_request_of_its_own_count() -> None:
    ours, theirs = InFlight(), InFlight()
    with claiming(ours.reserve()), theirs:
        assert (ours.load, theirs.load) == (1, 1)
    assert ours.load == 0


async def test_the_place_does_not_count_while_the_users_code_runs() -> None:
    in_flight = InFlight()
    reservation = in_flight.reserve()
    with claiming(reservation):
        with unclaimed():  # a handler: however long it takes, it holds nothing up
            assert in_flight.load == 0
            with in_flight:  # its own request is its own, and does not take the place
                assert in_flight.load == 1
        assert in_flight.load == 1  # the engine's steps after it hold the place again
        with in_flight:  # the cycle's write takes it
            assert in_flight.load == 1
        with unclaimed():
            pass
        assert in_flight.load == 0  # taken: not held again
    assert in_flight.load == 0


async def test_a_task_started_in_the_cycle_cannot_hold_the_place_after_it() -> None:
    in_flight = InFlight()
    reservation = in_flight.reserve()
    with claiming(reservation):
        outlived = unclaimed()  # as a daemon started in the cycle (the same claim in context)
        outlived.__enter__()
    assert in_flight.load == 0
    outlived.__exit__(None, None, None)  # after the cycle's end: nothing is held again
    assert in_flight.load == 0
