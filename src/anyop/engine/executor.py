"""Where the operator's sync user code runs: the user's executor, or anyop's daemon threads.

The threads are those of :mod:`anyop.threads`: the running operator's pool of daemon threads.
Sync handlers share ``settings.execution.max_workers`` threads (a capacity limiter); a call that
finds them all busy waits, and the operator says so: a warning with the number of waiting calls
(at most one per :data:`WAIT_WARNING_INTERVAL`), and the ``anyop_sync_calls_waiting`` gauge of
``/metrics`` (see :mod:`anyop.engine.operator.live_metrics`).
"""

from __future__ import annotations

import contextvars
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from anyop.threads import IDLE_TIMEOUT, DaemonThreads, current_threads

__all__ = [
    "IDLE_TIMEOUT",
    "WAIT_WARNING_INTERVAL",
    "DaemonThreads",
    "Throttle",
    "current_execution",
    "run_sync",
]

logger = logging.getLogger("anyop.engine")

WAIT_WARNING_INTERVAL = 60.0
"""Seconds between two warnings that sync calls wait for a free thread."""

current_execution: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "anyop_current_execution", default=None
)
"""The running operator's ``settings.execution``: its ``executor``, when set, runs sync code.

Read at each call, so that an executor set by a startup handler is used from then on; a call
already running stays where it started.
"""


@dataclass
class Throttle:
    """Whether a repeated warning is due: the first at once, then at most one per interval."""

    interval: float
    last: float | None = None

    def due(self, now: float) -> bool:
        """Whether to warn at ``now`` (and if so, count it as warned)."""
        if self.last is not None and now - self.last < self.interval:
            return False
        self.last = now
        return True


_throttles: weakref.WeakKeyDictionary[anyio.CapacityLimiter, Throttle] = weakref.WeakKeyDictionary()


async def run_sync(fn: Callable[[], Any], *, limiter: anyio.CapacityLimiter | None = None) -> Any:
    """Call ``fn()`` in the operator's executor if its settings have one, else in the operator's
    pool of daemon threads (see :class:`~anyop.threads.DaemonThreads`); warn (throttled) if
    ``limiter`` has no free thread for it."""
    execution = current_execution.get()
    executor = execution.executor if execution is not None else None
    if limiter is not None and limiter.available_tokens < 1:
        _warn_of_wait(limiter)
    return await current_threads.get().run(fn, limiter=limiter, executor=executor)


def _warn_of_wait(limiter: anyio.CapacityLimiter) -> None:
    throttle = _throttles.setdefault(limiter, Throttle(WAIT_WARNING_INTERVAL))
    if throttle.due(anyio.current_time()):
        stats = limiter.statistics()
        logger.warning(
            "%d sync call(s) wait for a free thread: all %d are busy. Raise "
            "settings.execution.max_workers, or make the slow handlers async.",
            stats.tasks_waiting + 1,
            stats.total_tokens,
        )
