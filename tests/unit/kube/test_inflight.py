"""The count of requests in flight, and waits for it to fall below a level."""

from __future__ import annotations

import anyio
import pytest

from anyop.kube.inflight import InFlight

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
