"""The ``stopped`` kwarg of daemons and timers: a flag the engine sets, with why it is set.

The engine holds a :class:`DaemonStopper` per running daemon or timer and sets it from the event
loop; the function sees a :class:`DaemonStopped` checker. Sync functions (in threads) get
:class:`SyncDaemonStopped` with a blocking ``wait()``; async ones get :class:`AsyncDaemonStopped`
with an awaitable ``wait()``. Both are true once the flag is set, so ``while not stopped:`` works.
"""

from __future__ import annotations

import enum
import threading
from typing import Any

import anyio

__all__ = [
    "AsyncDaemonStopped",
    "DaemonStopped",
    "DaemonStopper",
    "DaemonStoppingReason",
    "SyncDaemonStopped",
]


class DaemonStoppingReason(enum.Flag):
    """Why a daemon or timer is asked to stop (several reasons can add up).

    Attributes:
        NONE: It is not stopped.
        DONE: It exited on its own (returned or failed for good).
        FILTERS_MISMATCH: The object no longer matches its filters.
        RESOURCE_DELETED: The object is being deleted.
        OPERATOR_PAUSING: The operator pauses (another operator has priority).
        OPERATOR_EXITING: The operator exits.
        DAEMON_SIGNALLED: The stop flag was set (always, with one of the above).
        DAEMON_CANCELLED: The cancellation backoff passed and it was cancelled.
        DAEMON_ABANDONED: The cancellation timeout passed and it was left orphaned.
    """

    NONE = 0
    DONE = enum.auto()
    FILTERS_MISMATCH = enum.auto()
    RESOURCE_DELETED = enum.auto()
    OPERATOR_PAUSING = enum.auto()
    OPERATOR_EXITING = enum.auto()
    DAEMON_SIGNALLED = enum.auto()
    DAEMON_CANCELLED = enum.auto()
    DAEMON_ABANDONED = enum.auto()


class DaemonStopper:
    """The engine's side of the flag: set from the event loop, seen from any thread.

    Caveats:
        Create and set it in the event loop's thread (it holds an :class:`anyio.Event`).
    """

    def __init__(self) -> None:
        self._sync = threading.Event()
        self._async = anyio.Event()
        self.reason = DaemonStoppingReason.NONE

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.is_set()}, reason={self.reason!r}>"

    def is_set(self) -> bool:
        """Whether the flag is set."""
        return self._sync.is_set()

    def set(self, reason: DaemonStoppingReason) -> None:
        """Set the flag (again), adding ``reason`` and ``DAEMON_SIGNALLED`` to the reasons."""
        self.reason |= reason | DaemonStoppingReason.DAEMON_SIGNALLED
        self._sync.set()
        self._async.set()

    def checker(self, *, sync: bool) -> DaemonStopped:
        """The ``stopped`` kwarg for a sync (threaded) or an async function."""
        return SyncDaemonStopped(self) if sync else AsyncDaemonStopped(self)


class DaemonStopped:
    """The ``stopped`` kwarg: whether the daemon or timer should exit, and why.

    ``bool(stopped)`` and ``stopped.is_set()`` tell whether it should; ``stopped.reason`` tells
    why. Sync functions get a blocking ``stopped.wait(seconds)``, async ones an awaitable one;
    both return early (and true) once the flag is set.
    """

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

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds (forever if ``None``), less if the flag is set.

        Returns:
            Whether the flag is set.
        """
        return self._stopper._sync.wait(timeout)


class AsyncDaemonStopped(DaemonStopped):
    """The ``stopped`` kwarg of an async daemon or timer."""

    async def wait(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 (Kopf's API)
        """Sleep up to ``timeout`` seconds (forever if ``None``), less if the flag is set.

        Returns:
            Whether the flag is set.
        """
        with anyio.move_on_after(timeout):
            await self._stopper._async.wait()
        return self.is_set()
