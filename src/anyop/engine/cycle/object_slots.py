"""What the operator keeps about one object between its events, and what one cycle returns.

The :class:`ObjectSlot` lives as long as the object is served; its worker
(:class:`~anyop.engine.resource.workers.ObjectWorkers`) and its cycles
(:class:`~anyop.engine.cycle.reconciler.Reconciler`) read and write it.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from anyop.engine.cycle.object_memories import ObjectMemory
from anyop.kube.inflight import InFlight, Reservation

__all__ = ["Backpressure", "CycleFn", "CycleResult", "Echo", "ObjectSlot", "Settled", "SlotState"]


class SlotState(enum.Enum):
    """Where an object's worker is."""

    IDLE = "idle"
    """No worker runs; the next event starts one."""
    QUEUED = "queued"
    """It waits for the API server to catch up before its worker starts (backpressure)."""
    BUSY = "busy"
    """A worker runs or waits for a scheduled retry."""
    GONE = "gone"
    """The object was deleted and handled for the last time."""


@dataclass(frozen=True, slots=True)
class CycleResult:
    """What one handling cycle tells its worker.

    Attributes:
        delay: Run another cycle after this many seconds even without events (a delayed retry,
            a daemon to check); ``None``: only on the next event.
        gone: The object is deleted for good, or left the watch: forget its slot.
        deleted: It is gone because it is deleted: forget its memory too.
        body: The freshest known body after the cycle (e.g. the echo of our own patch), to run
            the delayed cycle with when no newer event comes.
        requeue: The cycle left its write for later as the API server is behind: run it
            again, from the queue, once it catches up (only where there is backpressure).
        throttled: The cycle failed: new events do not end the ``delay`` early; the latest of
            them is handled once it is over (Kopf's throttling).
        quiet: The cycle wrote nothing and awaits no echo: with no ``delay``, the worker exits
            now rather than idling (a relist of thousands of unchanged objects then holds no
            worker, nor body, per object).
    """

    delay: float | None = None
    gone: bool = False
    deleted: bool = False
    body: Mapping[str, Any] | None = None
    requeue: bool = False
    throttled: bool = False
    quiet: bool = False


@dataclass(frozen=True, slots=True)
class Backpressure:
    """When new workers must wait: while ``level`` or more API requests are in flight, a place
    held for each worker started from the queue until its first request (or its cycle's end).

    Attributes:
        in_flight: The API client's count of requests in flight.
        level: How many in flight hold new workers back (``queueing.max_requests_in_flight``).
    """

    in_flight: InFlight
    level: int

    @property
    def room(self) -> int:
        """How many more requests may be in flight before new workers must wait."""
        return self.level - self.in_flight.load

    def reserve(self) -> Reservation:
        """Hold a place for the first request of a worker started now."""
        return self.in_flight.reserve()

    @property
    def room_here(self) -> int:
        """The room for the running cycle: its own place, if it holds one, is room for it."""
        return self.room + (1 if self.in_flight.holds_place_here() else 0)

    async def eased(self) -> None:
        """Return once new workers may start (at once, with no checkpoint, if they may now)."""
        await self.in_flight.below(self.level)


@dataclass(frozen=True, slots=True)
class Echo:
    """The response to our own latest patch, awaited in the watch-stream."""

    body: Mapping[str, Any]
    deadline: float


@dataclass(frozen=True, slots=True)
class Settled:
    """Our write's response whose echo needs no cause detection, and the essence it handled."""

    version: str
    essence: Any


@dataclass(eq=False, slots=True)
class ObjectSlot:
    """All the operator keeps about one live object between events."""

    uid: str
    pending: Mapping[str, Any] | None = None
    """The newest body not handled yet (replaced, not queued, by newer events)."""
    last: Mapping[str, Any] | None = None
    """The body the last cycle handled, or its echo, while its worker runs."""
    state: SlotState = SlotState.IDLE
    wakeup: anyio.Event | None = None
    """Set to end its worker's wait; it exists only while the worker waits (an idle object
    holds no event)."""
    scope: anyio.CancelScope | None = None
    """The scope of its worker while it runs (its deadline ends the cycles at the exit)."""
    memory: ObjectMemory = field(default_factory=ObjectMemory)
    """What outlives the slot: the memo, the resume mark, the daemons that are finished."""
    echo: Echo | None = None
    """Our latest patch's response while older states may still arrive (read-your-own-writes)."""
    written: str = ""
    """The resourceVersion of our latest write that landed: an older state is never handled as
    the object's current one, even after the echo's deadline (it is read afresh instead)."""
    settled: Settled | None = None
    """Our write's response whose echo needs no cause detection."""
    errors: int = 0
    """How many cycles in a row failed (the step of the throttling; 0 after a success)."""
    listed: bool = False
    """It came from a listing and no cause has finished since (its causes are resumes)."""
    deferred: bool = False
    """A cycle that would only write the finalizer left it for later, once."""
    released: bool = False
    """Our finalizer's release has landed: states from before it are not handled."""
    leaving: bool = False
    """It is handed over to another replica (sharding): its worker exits after this cycle."""
    reservation: Reservation | None = None
    """The place in flight held for its first request, from its start off the queue until
    its first cycle sends one or ends (backpressure)."""

    @property
    def memo(self) -> Any:
        """The object's memo."""
        return self.memory.memo

    def wake(self) -> None:
        """End the worker's wait, if it waits (for a new body, or for a delay to run out)."""
        if self.wakeup is not None:
            self.wakeup.set()


CycleFn = Callable[[ObjectSlot, Mapping[str, Any]], Awaitable[CycleResult]]
"""Handles the latest body of an object once (the reconciler)."""
