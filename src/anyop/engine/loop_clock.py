"""The running event loop's clock, for :mod:`anyop.clock` (installed when anyop is imported)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from anyop import clock

__all__ = ["running_loop_time"]


def running_loop_time() -> tuple[Any, float] | None:
    """The running event loop (the asyncio loop, or Trio's clock object) and its time now;
    ``None`` outside a loop (a thread, sync code).

    The time is what :func:`anyio.current_time` says, read from the loop directly: the engine
    asks for it several times per object handled. An asyncio loop is looked for first (it
    is the cheaper question), then Trio, if it was imported at all.
    """
    loop = asyncio._get_running_loop()
    if loop is not None:
        return loop, loop.time()
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        return trio.lowlevel.current_clock(), trio.current_time()
    except RuntimeError:  # no Trio run in this thread
        return None


clock.use_loop_clock(running_loop_time)
