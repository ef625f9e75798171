"""A count of the API requests in flight, for backpressure: wait until fewer are.

:class:`~anyop.kube.sessions.SessionPool` counts every request from its first attempt until its
answer (or its last failure), retries and waits for a connection included; watches do not count.
The engine starts no new handling cycles while too many are in flight, so a backlog of objects
waits as bodies, not as half-done cycles (see ``queueing.max_requests_in_flight``).
"""

from __future__ import annotations

from types import TracebackType

import anyio

__all__ = ["InFlight"]


class InFlight:
    """How many requests are in flight, and a way to wait until fewer than some number are.

    Use ``with in_flight:`` around a request. Nothing here does I/O.
    """

    __slots__ = ("_below", "count")

    def __init__(self) -> None:
        self.count = 0
        self._below: dict[int, anyio.Event] = {}

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.count -= 1
        if self._below:
            # The count falls one at a time, so the waiters for "below count + 1" are the only
            # ones whose wait has just ended.
            event = self._below.pop(self.count + 1, None)
            if event is not None:
                event.set()

    async def below(self, level: int) -> None:
        """Return once fewer than ``level`` requests are in flight (at once if they are now).

        It is not a checkpoint when it returns at once.
        """
        while self.count >= level:
            event = self._below.get(level)
            if event is None:
                event = self._below[level] = anyio.Event()
            await event.wait()
