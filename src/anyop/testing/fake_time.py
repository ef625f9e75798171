"""Virtual time on both backends: an hour of timers, retries and Lease durations in a moment.

On Trio, that is ``trio.testing.MockClock(autojump_threshold=...)``; on asyncio, anyop brings
:class:`FakeTimeLoop`, an event loop whose clock stands still while anything can run and jumps
to the next deadline once every task waits. :func:`virtual_time` gives either as the value of
AnyIO's ``anyio_backend`` fixture::

    @pytest.fixture(params=["asyncio", "trio"])
    def anyio_backend(request):
        return anyop.testing.virtual_time(request.param)

With FakeCluster (no sockets, no threads), ``autojump_threshold=0`` is right: the clock jumps as
soon as every task waits. Where the operator's work leaves the event loop (sync handlers in
threads, webhooks called over real sockets), a small threshold (say ``0.05``) lets the clock
wait that long in real time for the thread or the socket before it jumps.

Caveats:
    Anything that takes longer than the threshold outside the event loop sees the clock jump
    past its deadlines, as it would under Trio's ``MockClock``.

    ``anyio.run(fn, backend="trio", backend_options=...)`` gives Trio no options before AnyIO
    4.14: there, call ``trio.run(fn, **options)``. The ``anyio_backend`` fixture passes them
    on every AnyIO that anyop supports.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any

__all__ = ["FakeTimeLoop", "virtual_time"]


class _JumpingSelector(selectors.DefaultSelector):
    """Waits at most the threshold for the OS while a timer is pending; then moves the loop's
    clock to that timer."""

    def __init__(self, loop: FakeTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer at all: wait for the OS (a thread that calls back)
            return super().select(None)
        wait = min(timeout, self._loop.autojump_threshold)
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(wait)
        if not ready:
            self._loop.now += timeout
        return ready


class FakeTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose time starts at 0 and moves only when every task waits.

    Args:
        autojump_threshold: Real seconds to wait for the OS (threads, sockets) before the clock
            jumps to the next deadline; ``0``: jump at once.
    """

    def __init__(self, autojump_threshold: float = 0.0) -> None:
        self.now = 0.0
        """The loop's time: virtual seconds since it was made."""
        self.autojump_threshold = autojump_threshold
        super().__init__(_JumpingSelector(self))
        if not autojump_threshold >= 0:  # not NaN either
            self.close()
            raise ValueError(f"autojump_threshold must be 0 or more, not {autojump_threshold!r}.")

    def time(self) -> float:
        """The virtual time (see :attr:`now`)."""
        return self.now


def virtual_time(backend: str, *, autojump_threshold: float = 0.0) -> tuple[str, dict[str, Any]]:
    """The ``anyio_backend`` value that runs a test on virtual time on ``backend``.

    Args:
        backend: ``"asyncio"`` or ``"trio"``.
        autojump_threshold: See :class:`FakeTimeLoop` and Trio's ``MockClock``.

    Raises:
        ValueError: For another backend.
    """
    if backend == "trio":
        import trio.testing

        return "trio", {"clock": trio.testing.MockClock(autojump_threshold=autojump_threshold)}
    if backend == "asyncio":
        threshold = autojump_threshold
        return "asyncio", {"loop_factory": lambda: FakeTimeLoop(autojump_threshold=threshold)}
    raise ValueError(f"Virtual time is for 'asyncio' or 'trio', not {backend!r}.")
