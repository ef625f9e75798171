"""Fake time for unit tests: ``@pytest.mark.fake_time`` runs a test on both backends with a clock
that stands still while anything can run, and jumps to the next deadline once every task waits.

On Trio that is ``trio.testing.MockClock(autojump_threshold=0)``; on asyncio, :class:`FakeTimeLoop`
does the same. A sleep of an hour then costs no wall time, and a timeout fires exactly when due.

Caveats:
    Only for tests whose waits are all in the event loop: a real thread, subprocess or socket
    does not count as running, so the clock jumps past its deadlines while the OS works.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any

import anyio._backends._asyncio
import pytest
import trio.testing


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fake_time: run on an autojumping fake clock (Trio's MockClock, or asyncio's)"
    )


class _JumpingSelector(selectors.DefaultSelector):
    """Polls instead of blocking with a timer pending, and moves the loop's clock to the timer."""

    def __init__(self, loop: FakeTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer at all: wait for the OS (a thread that calls back)
            return super().select(None)
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if not ready:
            self._loop.now += timeout
        return ready


class FakeTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose time starts at 0 and moves only when every task waits."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now


async def _wait_all_tasks_blocked() -> None:
    """AnyIO's asyncio ``wait_all_tasks_blocked``, with checkpoints instead of its 0.1 s sleeps:
    the fake clock would jump over those to any earlier deadline (Trio wakes the waiter first)."""
    this, clean_turns = asyncio.current_task(), 0
    while clean_turns < 2:  # twice: a timer that is due wakes its task in the turn after
        await asyncio.sleep(0)
        waiters = [task._fut_waiter for task in asyncio.all_tasks() if task is not this]  # type: ignore[attr-defined]
        blocked = all(waiter is not None and not waiter.done() for waiter in waiters)
        clean_turns = clean_turns + 1 if blocked else 0


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends, as in ``tests/conftest.py``; on fake time for tests marked ``fake_time``."""
    if request.node.get_closest_marker("fake_time") is None:
        return request.param
    if request.param == "trio":
        return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
    backend = anyio._backends._asyncio.AsyncIOBackend
    monkeypatch.setattr(backend, "wait_all_tasks_blocked", staticmethod(_wait_all_tasks_blocked))
    return ("asyncio", {"loop_factory": FakeTimeLoop})
