"""Virtual time for anyop's own tests: :func:`anyop.testing.virtual_time`, plus a patch of
AnyIO's asyncio ``wait_all_tasks_blocked`` that suits a fake clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio._backends._asyncio
import pytest
import sniffio
import trio
import trio.lowlevel

from anyop.testing.fake_time import virtual_time

__all__ = ["now", "run_virtual", "virtual_backend"]


async def _wait_all_tasks_blocked() -> None:
    """AnyIO's asyncio ``wait_all_tasks_blocked``, with checkpoints instead of its 0.1 s sleeps:
    the fake clock would jump over those to any earlier deadline (Trio wakes the waiter first)."""
    this, clean_turns = asyncio.current_task(), 0
    while clean_turns < 2:  # twice: a timer that is due wakes its task in the turn after
        await asyncio.sleep(0)
        waiters = [task._fut_waiter for task in asyncio.all_tasks() if task is not this]  # type: ignore[attr-defined]
        blocked = all(waiter is not None and not waiter.done() for waiter in waiters)
        clean_turns = clean_turns + 1 if blocked else 0


def virtual_backend(
    backend: str, monkeypatch: pytest.MonkeyPatch, *, autojump_threshold: float = 0.0
) -> tuple[str, dict[str, Any]]:
    """The ``anyio_backend`` value for a test on virtual time (see :func:`virtual_time`)."""
    if backend == "asyncio":
        asyncio_backend = anyio._backends._asyncio.AsyncIOBackend
        blocked = staticmethod(_wait_all_tasks_blocked)
        monkeypatch.setattr(asyncio_backend, "wait_all_tasks_blocked", blocked)
    return virtual_time(backend, autojump_threshold=autojump_threshold)


_clock: Callable[[], float] = time.monotonic
"""The clock of the event loop that last asked :func:`now` from within it."""


def now() -> float:
    """The running event loop's time, virtual or not; from a thread (a sync handler), the time
    of the loop that last asked from within it (ask once in the test before handlers run)."""
    global _clock
    try:
        if sniffio.current_async_library() == "trio":
            clock = trio.lowlevel.current_clock().current_time
        else:
            clock = asyncio.get_running_loop().time
    except (sniffio.AsyncLibraryNotFoundError, RuntimeError):  # a thread
        return _clock()
    _clock = clock
    return clock()


def run_virtual(
    fn: Callable[..., Any], *args: Any, backend: str, autojump_threshold: float = 0.0
) -> Any:
    """``fn(*args)`` in an event loop of its own on virtual time (see :func:`virtual_time`)."""
    name, options = virtual_time(backend, autojump_threshold=autojump_threshold)
    if name == "trio":
        return trio.run(fn, *args, **options)  # AnyIO before 4.14 gives Trio no options
    return anyio.run(fn, *args, backend=name, backend_options=options)
