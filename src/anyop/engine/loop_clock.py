"""The running event loop's clock, for :mod:`anyop.clock` (installed when anyop is imported)."""

from __future__ import annotations

from typing import Any

import anyio
import sniffio

from anyop import clock

__all__ = ["running_loop_time"]


def running_loop_time() -> tuple[Any, float] | None:
    """The running event loop (Trio's clock object, or the asyncio loop) and its time now;
    ``None`` outside a loop (a thread, sync code)."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None
    if library == "trio":
        import trio.lowlevel

        loop: Any = trio.lowlevel.current_clock()
    else:
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
    return loop, anyio.current_time()


clock.use_loop_clock(running_loop_time)
