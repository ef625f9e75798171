"""Where the operator's sync user code runs: the user's executor, or anyop's daemon threads.

The threads are those of :mod:`anyop.threads`: the running operator's pool of daemon threads.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import anyio

from anyop.threads import IDLE_TIMEOUT, DaemonThreads, current_threads

__all__ = ["IDLE_TIMEOUT", "DaemonThreads", "current_execution", "run_sync"]

current_execution: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "anyop_current_execution", default=None
)
"""The running operator's ``settings.execution``: its ``executor``, when set, runs sync code.

Read at each call, so that an executor set by a startup handler is used from then on; a call
already running stays where it started.
"""


async def run_sync(fn: Callable[[], Any], *, limiter: anyio.CapacityLimiter | None = None) -> Any:
    """Call ``fn()`` in the operator's executor if its settings have one, else in the operator's
    pool of daemon threads (see :class:`~anyop.threads.DaemonThreads`)."""
    execution = current_execution.get()
    executor = execution.executor if execution is not None else None
    return await current_threads.get().run(fn, limiter=limiter, executor=executor)
