"""A count of the API requests in flight, for backpressure: wait until fewer are.

:class:`~anyop.kube.sessions.SessionPool` counts every request from its first attempt until its
answer (or its last failure), retries and waits for a connection included; watches do not count.
The engine starts no new handling cycles while too many are in flight, so a backlog of objects
waits as bodies, not as half-done cycles (see ``queueing.max_requests_in_flight``).

A cycle the engine has just started has sent nothing yet, so it would not count: a queue of
thousands could start thousands before the first request is counted. The engine therefore
*reserves* a place for each cycle it starts (:meth:`InFlight.reserve`). The cycle's first request
takes the reserved place over (:func:`claiming`), and the cycle's end gives it back if no request
did. While the cycle's handlers run, the place does not count (:func:`unclaimed`): handlers that
take long without calling the API hold nothing up. The load (:attr:`InFlight.load`) is the
requests in flight plus the places reserved.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType

import anyio

__all__ = ["InFlight", "Reservation", "claiming", "unclaimed"]


class Reservation:
    """A place in flight held for a request that is not sent yet (see :meth:`InFlight.reserve`).

    It is given up for good once a request takes it or it is released, and for a while when it
    is paused (the user's code runs: see :func:`unclaimed`).
    """

    __slots__ = ("_held", "_in_flight")

    def __init__(self, in_flight: InFlight) -> None:
        self._in_flight: InFlight | None = in_flight
        """The count it is a place of, until a request takes it or it is released."""
        self._held = True
        """Whether it counts now (not paused)."""

    @property
    def held(self) -> bool:
        """Whether the place counts now."""
        return self._held

    @property
    def owner(self) -> InFlight | None:
        """The count it is a place of, until a request takes it or it is released."""
        return self._in_flight

    def take(self, in_flight: InFlight) -> bool:
        """Turn the place into a request of ``in_flight`` (only once, only of that count)."""
        if self._in_flight is not in_flight:
            return False
        self._in_flight = None
        if self._held:
            self._held = False
            in_flight.reserved -= 1
        return True

    def pause(self) -> None:
        """Stop counting the place for now (the user's code runs, however long it takes)."""
        if self._held and self._in_flight is not None:
            self._held = False
            self._in_flight.reserved -= 1
            self._in_flight.fell()

    def resume(self) -> None:
        """Count the place again, unless a request took it or it was released meanwhile."""
        if not self._held and self._in_flight is not None:
            self._held = True
            self._in_flight.reserved += 1

    def release(self) -> None:
        """Give the place back for good (no request took it); nothing if one did."""
        self.pause()
        self._in_flight = None


_CLAIM: ContextVar[Reservation | None] = ContextVar("anyop_in_flight_claim", default=None)


@contextmanager
def claiming(reservation: Reservation | None) -> Iterator[None]:
    """Let the first request sent in this block (in this task, or tasks it starts) take the
    reserved place; give it back at the end if none did."""
    if reservation is None:
        yield
        return
    token = _CLAIM.set(reservation)
    try:
        yield
    finally:
        _CLAIM.reset(token)
        reservation.release()


@contextmanager
def unclaimed() -> Iterator[None]:
    """Within the block, the reserved place (if any) does not count, and no request takes it:
    the user's code runs here, which may take long without calling the API."""
    claim = _CLAIM.get()
    if claim is None:
        yield
        return
    claim.pause()
    token = _CLAIM.set(None)
    try:
        yield
    finally:
        _CLAIM.reset(token)
        claim.resume()


class InFlight:
    """How many requests are in flight, and a way to wait until fewer than some number are.

    Use ``with in_flight:`` around a request. Nothing here does I/O.
    """

    __slots__ = ("_below", "count", "reserved")

    def __init__(self) -> None:
        self.count = 0
        """The requests in flight."""
        self.reserved = 0
        """The places held for requests about to be sent (:meth:`reserve`)."""
        self._below: dict[int, anyio.Event] = {}

    @property
    def load(self) -> int:
        """The requests in flight and the places reserved for more."""
        return self.count + self.reserved

    def reserve(self) -> Reservation:
        """Hold a place for a request about to be sent (by a cycle that is starting)."""
        self.reserved += 1
        return Reservation(self)

    def holds_place_here(self) -> bool:
        """Whether the running code holds a place of this count, counted now (a cycle started
        off the queue that has sent no request yet): its own place is room for it."""
        claim = _CLAIM.get()
        return claim is not None and claim.held and claim.owner is self

    def __enter__(self) -> None:
        claim = _CLAIM.get()
        if claim is not None:
            claim.take(self)  # the load stays the same: the reserved place is now a request
        self.count += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.count -= 1
        self.fell()

    def fell(self) -> None:
        """Wake those waiting for the load to fall below what it is now plus one."""
        if self._below:
            # The load falls one at a time, so the waiters for "below load + 1" are the only
            # ones whose wait has just ended.
            event = self._below.pop(self.load + 1, None)
            if event is not None:
                event.set()

    async def below(self, level: int) -> None:
        """Return once the load is below ``level`` (at once if it is now).

        It is not a checkpoint when it returns at once.
        """
        while self.load >= level:
            event = self._below.get(level)
            if event is None:
                event = self._below[level] = anyio.Event()
            await event.wait()
