"""The ``stopped`` kwarg: truthiness, reasons, and waits that end early."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from anyop.engine.daemons.stop_flags import (
    AsyncDaemonStopped,
    DaemonStopped,
    DaemonStopper,
    SyncDaemonStopped,
)
from anyop.handlers.stop_reasons import DaemonStoppingReason

pytestmark = pytest.mark.anyio


async def test_a_fresh_flag_is_false_with_no_reason() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=False)
    assert not stopped
    assert not stopped.is_set()
    assert stopped.reason == DaemonStoppingReason.NONE


async def test_setting_adds_reasons_and_the_signalled_flag() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=True)
    stopper.set(DaemonStoppingReason.RESOURCE_DELETED)
    stopper.set(DaemonStoppingReason.DAEMON_CANCELLED)
    assert stopped
    assert stopped.is_set()
    assert stopped.reason == (
        DaemonStoppingReason.RESOURCE_DELETED
        | DaemonStoppingReason.DAEMON_SIGNALLED
        | DaemonStoppingReason.DAEMON_CANCELLED
    )
    assert "RESOURCE_DELETED" in repr(stopped)


async def test_the_flavours_match_the_function_kind() -> None:
    stopper = DaemonStopper()
    assert isinstance(stopper.checker(sync=True), SyncDaemonStopped)
    assert isinstance(stopper.checker(sync=False), AsyncDaemonStopped)
    assert isinstance(stopper.checker(sync=False), DaemonStopped)
    with pytest.raises(NotImplementedError):
        DaemonStopped(stopper).wait(0)


@pytest.mark.fake_time
async def test_an_async_wait_times_out_false_and_ends_early_when_set() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=False)
    assert isinstance(stopped, AsyncDaemonStopped)
    assert await stopped.wait(0.01) is False
    with anyio.fail_after(10):  # fake seconds: the 30 s wait ends early or fails the test
        async with anyio.create_task_group() as tg:
            tg.start_soon(stopped.wait, 30)
            await anyio.wait_all_tasks_blocked()
            stopper.set(DaemonStoppingReason.OPERATOR_EXITING)
    assert await stopped.wait(30) is True


async def test_a_sync_wait_in_a_thread_ends_early_when_set_from_the_loop() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=True)
    assert isinstance(stopped, SyncDaemonStopped)
    assert stopped.wait(0.01) is False
    results: list[tuple[bool, float]] = []
    waiting = threading.Event()

    def sleeper() -> None:
        t0 = time.monotonic()
        waiting.set()
        results.append((stopped.wait(30), time.monotonic() - t0))

    thread = threading.Thread(target=sleeper)
    thread.start()
    assert await anyio.to_thread.run_sync(waiting.wait, 10)
    stopper.set(DaemonStoppingReason.FILTERS_MISMATCH)
    await anyio.to_thread.run_sync(thread.join)
    assert results[0][0] is True
    assert results[0][1] < 5


async def test_every_async_waiter_wakes_and_none_is_left_behind() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=False)
    woken: list[bool] = []

    async def waiter(seconds: float | None) -> None:
        woken.append(await stopped.wait(seconds))

    async with anyio.create_task_group() as tg:
        for seconds in (None, None, 30, 60):
            tg.start_soon(waiter, seconds)
        await anyio.wait_all_tasks_blocked()
        stopper.set(DaemonStoppingReason.RESOURCE_DELETED)
    assert woken == [True] * 4
    assert not stopper._waiters  # each wait took its waiter away


@pytest.mark.fake_time
async def test_a_cancelled_async_wait_leaves_and_the_flag_still_sets() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=False)
    for _ in range(3):
        assert await stopped.wait(0.001) is False  # timed out: cancelled by its own scope
    async with anyio.create_task_group() as tg:
        tg.start_soon(stopped.wait)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
        # Set before the cancelled waiter has run: its waiter is there, and cancelled already.
        stopper.set(DaemonStoppingReason.OPERATOR_EXITING)
    assert not stopper._waiters
    assert await stopped.wait() is True


async def test_an_async_wait_on_a_set_flag_is_a_checkpoint() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=False)
    stopper.set(DaemonStoppingReason.OPERATOR_EXITING)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await stopped.wait()
        pytest.fail("a wait on a set flag went on in a cancelled scope")
    assert scope.cancelled_caught
