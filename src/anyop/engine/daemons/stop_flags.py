"""The ``stopped`` kwarg of daemons and timers: a flag the engine sets, with why it is set.

The engine holds a :class:`DaemonStopper` per running daemon or timer and sets it from the event
loop; the function sees a :class:`DaemonStopped` checker. Sync functions (in threads) get
:class:`SyncDaemonStopped` with a blocking ``wait()``; async ones get :class:`AsyncDaemonStopped`
with an awaitable ``wait()``. Both are true once the flag is set, so ``while not stopped:`` works.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import anyio
import anyio.lowlevel
import sniffio

from anyop.handlers.stop_reasons import DaemonStoppingReason

__all__ = [
    "AsyncDaemonStopped",
    "DaemonStopped",
    "DaemonStopper",
    "SyncDaemonStopped",
    "SyncDaemonStopperChecker",
    "AsyncDaemonStopperChecker",
]


class DaemonStopper:
    """The engine's side of the flag: set from the event loop, seen from any thread.

    Its thread event is made only when a sync checker needs it, and what an async function waits
    on only while it waits (10,000 idle daemons, 10,000 events fewer).

    Caveats:
        Create and set it, and make its checkers, in the event loop's thread.
    """

    __slots__ = ("_set", "_sync", "_waiters", "reason")

    def __init__(self) -> None:
        self._set = False
        self._sync: threading.Event | None = None
        self._waiters: list[asyncio.Future[None] | anyio.Event] | None = None
        self.reason = DaemonStoppingReason.NONE

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.is_set()}, reason={self.reason!r}>"

    def is_set(self) -> bool:
        """Whether the flag is set."""
        return self._set

    def set(self, reason: DaemonStoppingReason) -> None:
        """Set the flag (again), adding ``reason`` and ``DAEMON_SIGNALLED`` to the reasons."""
        self._raise(reason | DaemonStoppingReason.DAEMON_SIGNALLED)

    def done(self) -> None:
        """Set the flag with ``DONE`` as its daemon or timer has exited, unless it is set.

        Threads and tasks that the function started and gave ``stopped`` to learn that it is
        gone, and stop too.
        """
        if not self._set:
            self._raise(DaemonStoppingReason.DONE)

    def _raise(self, reasons: DaemonStoppingReason) -> None:
        self.reason |= reasons
        self._set = True
        if self._sync is not None:
            self._sync.set()
        for waiter in self._waiters or ():
            if isinstance(waiter, anyio.Event):
                waiter.set()
            elif not waiter.done():
                waiter.set_result(None)

    def checker(self, *, sync: bool) -> DaemonStopped:
        """The ``stopped`` kwarg for a sync (threaded) or an async function."""
        if sync and self._sync is None:
            self._sync = threading.Event()
            if self._set:
                self._sync.set()
        return SyncDaemonStopped(self) if sync else AsyncDaemonStopped(self)

    def _waiter(self) -> asyncio.Future[None] | anyio.Event:
        """A waiter that the flag wakes when it is set; :meth:`_unwait` it after.

        On asyncio it is a bare future of the loop: an idle daemon that awaits
        ``stopped.wait()`` holds that and nothing more (an :class:`anyio.Event` there is an
        asyncio event, its deque and two more coroutine frames per daemon; docs/benchmarks.md).
        Other backends get an :class:`anyio.Event`.
        """
        waiter: asyncio.Future[None] | anyio.Event
        if sniffio.current_async_library() == "asyncio":
            waiter = asyncio.get_running_loop().create_future()
        else:
            waiter = anyio.Event()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        return waiter

    def _unwait(self, waiter: asyncio.Future[None] | anyio.Event) -> None:
        if self._waiters is not None:
            self._waiters.remove(waiter)


class DaemonStopped:
    """The ``stopped`` kwarg: whether the daemon or timer should exit, and why.

    ``bool(stopped)`` and ``stopped.is_set()`` tell whether it should; ``stopped.reason`` tells
    why. Sync functions get a blocking ``stopped.wait(seconds)``, async ones an awaitable one;
    both return early (and true) once the flag is set.
    """

    __slots__ = ("_stopper",)

    def __init__(self, stopper: DaemonStopper) -> None:
        self._stopper = stopper

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.is_set()}, reason={self.reason!r}>"

    def __bool__(self) -> bool:
        return self._stopper.is_set()

    def is_set(self) -> bool:
        """Whether the flag is set."""
        return self._stopper.is_set()

    @property
    def reason(self) -> DaemonStoppingReason:
        """Why it is stopped (``NONE`` while it is not)."""
        return self._stopper.reason

    def wait(self, timeout: float | None = None) -> Any:
        """Sleep up to ``timeout`` seconds, less if the flag is set (awaitable for async ones).

        Returns:
            Whether the flag is set (for async functions: an awaitable of it).
        """
        raise NotImplementedError  # the engine always gives one of the two flavours below


class SyncDaemonStopped(DaemonStopped):
    """The ``stopped`` kwarg of a sync daemon or timer (it runs in a thread)."""

    __slots__ = ()

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds (forever if ``None``), less if the flag is set.

        Returns:
            Whether the flag is set.
        """
        event = self._stopper._sync
        if event is None:  # a checker made for an async function, used in a thread
            raise RuntimeError("This stop flag belongs to an async function: use `await wait()`.")
        return event.wait(timeout)


class AsyncDaemonStopped(DaemonStopped):
    """The ``stopped`` kwarg of an async daemon or timer."""

    __slots__ = ()

    async def wait(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 (Kopf's API)
        """Sleep up to ``timeout`` seconds (forever if ``None``), less if the flag is set.

        Returns:
            Whether the flag is set.
        """
        stopper = self._stopper
        if stopper.is_set():
            await anyio.lowlevel.checkpoint()
            return True
        # Awaited here, not in a helper coroutine: an idle daemon stays in this frame.
        waiter = stopper._waiter()
        until_set = waiter.wait() if isinstance(waiter, anyio.Event) else waiter
        try:
            if timeout is None:  # no cancel scope for the common case: one fewer per daemon
                await until_set
            else:
                with anyio.move_on_after(timeout):
                    await until_set
        finally:
            stopper._unwait(waiter)
        return self.is_set()


SyncDaemonStopperChecker = SyncDaemonStopped
"""Kopf's name of :class:`SyncDaemonStopped`, the ``stopped`` kwarg of sync daemons and timers."""

AsyncDaemonStopperChecker = AsyncDaemonStopped
"""Kopf's name of :class:`AsyncDaemonStopped`, the ``stopped`` kwarg of async daemons and timers."""
