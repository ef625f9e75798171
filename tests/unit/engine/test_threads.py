"""anyop's pool of daemon threads for sync user code."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator

import anyio
import pytest

from anyop.engine.executor import DaemonThreads

pytestmark = pytest.mark.anyio

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


@pytest.fixture
def pool() -> Iterator[DaemonThreads]:
    """A pool of its own, closed after the test: its idle threads exit at once."""
    threads = DaemonThreads()
    yield threads
    threads.close()


async def test_results_errors_and_context_variables_cross_over(pool: DaemonThreads) -> None:
    assert await pool.run(lambda: 42) == 42
    with pytest.raises(ZeroDivisionError):
        await pool.run(lambda: 1 / 0)
    VAR.set("from the loop")
    assert await pool.run(VAR.get) == "from the loop"


async def test_threads_are_daemon_threads_and_reused_when_idle(pool: DaemonThreads) -> None:
    names = [await pool.run(lambda: threading.current_thread()) for _ in range(5)]
    assert pool.started == 1
    assert all(thread.daemon for thread in names)


async def test_the_pool_grows_when_all_threads_are_busy_and_the_limiter_bounds_it(
    pool: DaemonThreads,
) -> None:
    release, three_run = threading.Event(), threading.Event()
    running: list[int] = []
    peak = 0
    lock = threading.Lock()

    def busy() -> None:
        nonlocal peak
        with lock:
            running.append(1)
            peak = max(peak, len(running))
            if len(running) == 3:
                three_run.set()
        release.wait(10)
        with lock:
            running.pop()

    limiter = anyio.CapacityLimiter(3)
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(lambda: pool.run(busy, limiter=limiter))
        assert await anyio.to_thread.run_sync(three_run.wait, 10)
        await anyio.wait_all_tasks_blocked()  # the other three wait for the limiter
        release.set()
    assert peak == 3
    assert pool.started == 3


async def test_a_cancelled_call_leaves_its_thread_running_on_its_own(pool: DaemonThreads) -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def stuck() -> None:
        started.set()
        release.wait(10)
        finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.run, stuck)
        assert await anyio.to_thread.run_sync(started.wait, 10)
        tg.cancel_scope.cancel()
    assert not finished.is_set()
    release.set()
    assert await anyio.to_thread.run_sync(finished.wait, 10)
