"""The ``stopped`` kwarg: truthiness, reasons, and waits that end early."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from anyop.handlers.stopping import (
    AsyncDaemonStopped,
    DaemonStopped,
    DaemonStopper,
    DaemonStoppingReason,
    SyncDaemonStopped,
)

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


async def test_an_async_wait_times_out_false_and_ends_early_when_set() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=False)
    assert isinstance(stopped, AsyncDaemonStopped)
    assert await stopped.wait(0.01) is False
    async with anyio.create_task_group() as tg:
        tg.start_soon(stopped.wait, 30)
        await anyio.sleep(0.01)
        stopper.set(DaemonStoppingReason.OPERATOR_EXITING)
    assert await stopped.wait(30) is True


async def test_a_sync_wait_in_a_thread_ends_early_when_set_from_the_loop() -> None:
    stopper = DaemonStopper()
    stopped = stopper.checker(sync=True)
    assert isinstance(stopped, SyncDaemonStopped)
    assert stopped.wait(0.01) is False
    results: list[tuple[bool, float]] = []

    def sleeper() -> None:
        t0 = time.monotonic()
        results.append((stopped.wait(30), time.monotonic() - t0))

    thread = threading.Thread(target=sleeper)
    thread.start()
    await anyio.sleep(0.05)
    stopper.set(DaemonStoppingReason.FILTERS_MISMATCH)
    await anyio.to_thread.run_sync(thread.join)
    assert results[0][0] is True
    assert results[0][1] < 5
