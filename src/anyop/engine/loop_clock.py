"""The running event loop's clock, for :mod:`anyop.clock` (installed when anyop is imported)."""

from __future__ import annotations

import asyncio
from typing import Any

import sniffio

from anyop import clock

__all__ = ["running_loop_time"]


def running_loop_time() -> tuple[Any, float] | None:
    """The running event loop (Trio's clock object, or the asyncio loop) and its time now;
    ``None`` outside a loop (a thread, sync code).

    The time is what :func:`anyio.current_time` says, read from the loop directly: the engine
    asks for it several times per object handled.
    """
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None
    if library == "trio":
        import trio

        return trio.lowlevel.current_clock(), trio.current_time()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop, loop.time()


clock.use_loop_clock(running_loop_time)
