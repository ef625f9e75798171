"""``anyop.testing.virtual_time``: virtual time on both backends, with a threshold of real time
for work outside the event loop (threads, sockets)."""

from __future__ import annotations

import time

import anyio
import anyio.to_thread
import pytest
from tests.virtual import run_virtual

from anyop.testing import FakeTimeLoop, virtual_time


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_an_hour_passes_at_once(backend: str) -> None:
    async def main() -> float:
        started = anyio.current_time()
        await anyio.sleep(3600)
        return anyio.current_time() - started

    wall = time.monotonic()
    assert run_virtual(main, backend=backend) == pytest.approx(3600)
    assert time.monotonic() - wall < 2


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(("threshold", "in_time"), [(0.0, False), (0.5, True)])
def test_the_threshold_waits_for_a_thread_before_the_clock_jumps(
    backend: str, threshold: float, in_time: bool
) -> None:
    async def main() -> bool:
        started = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep, 1)  # a deadline a virtual second away
            await anyio.to_thread.run_sync(time.sleep, 0.05)  # 50 ms of real work
            done = anyio.current_time() - started
            tg.cancel_scope.cancel()
        return done < 1  # the thread was waited for, or the clock jumped past the deadline

    assert run_virtual(main, backend=backend, autojump_threshold=threshold) is in_time


def test_other_backends_and_negative_thresholds_are_refused() -> None:
    with pytest.raises(ValueError, match="'curio'"):
        virtual_time("curio")
    with pytest.raises(ValueError, match="-1"):
        FakeTimeLoop(autojump_threshold=-1)
