"""The operator's wall clock: read from the system once per event loop, then kept by the loop.

The engine writes wall-clock times into the objects it handles (a handler's ``started``, the
retry time ``delayed``, a Lease's ``renewTime``) and reads them back to decide when to act.
:func:`utcnow` reads the system's clock once, when an event loop first asks, and from then on
advances it by the event loop's own clock (:func:`anyio.current_time`, monotonic):

- A step of the system's clock while the operator runs (an hour forward or back, a manual fix,
  a VM resumed) does not move it: retries are not postponed by an hour nor run an hour early,
  and ``runtime`` never goes negative (RELIABILITY.md §5 row 41). What was written before such
  a step, by this process or a replica whose clock was off, is clamped when read
  (:func:`anyop.storage.progress_records.clamp_to_clock`).
- On virtual time (Trio's ``MockClock``, or a test loop with a fake clock) the wall clock moves
  with the virtual one, so a retry written 60 seconds ahead is due 60 virtual seconds later.
- While the machine is suspended (a laptop, a VM), the loop's monotonic clock stands still;
  the time it slept (where the system counts it: Linux's ``CLOCK_BOOTTIME``; read once per
  second of the loop's time) is added, so the times written after it are not behind those of
  other replicas.

Outside an event loop (a sync helper, a thread) it is the system's clock.

Caveats:
    A correction of the system's clock is followed only by the next event loop (the next
    process, in production): until then, the times written keep the offset the clock had when
    the loop started.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = [
    "CHECK_EVERY",
    "LoopClock",
    "seconds_until",
    "suspended",
    "system_now",
    "use_loop_clock",
    "utcnow",
]

LoopClock = Callable[[], "tuple[Any, float] | None"]
"""The running event loop (anything weak-referenceable that identifies it) and its time now, or
``None`` outside a loop."""


def system_now() -> datetime.datetime:
    """The system's wall clock now (aware UTC): for what others check against theirs (the
    validity of certificates and tokens), not for the engine's own times."""
    return datetime.datetime.now(datetime.UTC)


def _no_loop() -> tuple[Any, float] | None:
    return None


RESOLUTION = datetime.timedelta(microseconds=1)
"""The resolution of the times the engine writes and compares (a :class:`datetime.datetime`)."""


def suspended() -> float:
    """Seconds the machine has been suspended since it booted, where the system says
    (``CLOCK_BOOTTIME`` counts them, ``CLOCK_MONOTONIC`` does not); ``0.0`` elsewhere.

    The two clocks cannot be read at one instant: of three tries, the one with the narrowest
    window between its reads is taken, so a pre-emption between them does not count as sleep.
    """
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is None:
        return 0.0
    readings = []
    for _ in range(3):
        before = time.monotonic()
        booted = time.clock_gettime(boottime)
        after = time.monotonic()
        readings.append((after - before, booted - (before + after) / 2))
    return min(readings)[1]


def _slept(asleep: float) -> float:
    """Seconds suspended since :func:`suspended` said ``asleep``, rounded to whole seconds: the
    noise of reading two clocks (microseconds) never moves the wall clock, so virtual time
    stays exact."""
    return float(max(0, round(suspended() - asleep)))


def seconds_until(when: datetime.datetime, now: datetime.datetime) -> float:
    """Seconds to sleep from ``now`` until ``when`` so as never to wake before it (``0.0`` if it
    has come): two :data:`RESOLUTION` more than the difference, since each of the two times was
    rounded to it (by up to half of it) when it was read, and the wait is a float."""
    if when <= now:
        return 0.0
    return (when - now + 2 * RESOLUTION).total_seconds()


_loop_clock: LoopClock = _no_loop

CHECK_EVERY = 1.0
"""How often, in seconds of the loop's time, :func:`utcnow` asks whether the machine slept."""


@dataclasses.dataclass(slots=True)
class _Anchor:
    """An event loop's clock against the wall clock."""

    started: float
    """The loop's time when it first asked."""
    wall: datetime.datetime
    """The system's wall clock then."""
    asleep: float
    """:func:`suspended` then."""
    checked: float
    """The loop's time when :func:`suspended` was last read."""
    slept: float = 0.0
    """Whole seconds suspended since the start, as read then."""


_anchors: weakref.WeakKeyDictionary[Any, _Anchor] = weakref.WeakKeyDictionary()
"""Per event loop, its anchor."""
_last: tuple[weakref.ReferenceType[Any], _Anchor] | None = None
"""The last loop that asked and its anchor: most calls come from the same loop."""


def use_loop_clock(clock: LoopClock) -> None:
    """Keep time by ``clock`` (:mod:`anyop.engine.loop_clock` installs AnyIO's when anyop is
    imported; this module itself stays free of any concurrency library)."""
    global _loop_clock
    _loop_clock = clock


def _anchor_of(loop: Any, now: float) -> _Anchor:
    global _last
    if _last is not None and _last[0]() is loop:
        return _last[1]
    anchor = _anchors.get(loop)
    if anchor is None:
        anchor = _anchors[loop] = _Anchor(now, system_now(), suspended(), checked=now)
    _last = (weakref.ref(loop), anchor)
    return anchor


def utcnow() -> datetime.datetime:
    """The operator's wall clock now (aware UTC): the system's when the event loop first asked,
    advanced by the loop's monotonic clock since, and by the time the machine slept.

    Whether it slept is read at most once per :data:`CHECK_EVERY` of the loop's time (the
    engine asks for the time several times per object): what is written within that second
    after a wake-up may still lack the time slept.
    """
    running = _loop_clock()
    if running is None:
        return system_now()
    loop, now = running
    anchor = _anchor_of(loop, now)
    if not anchor.checked <= now < anchor.checked + CHECK_EVERY:
        # The loop's clock stands still while the machine sleeps (a suspended laptop or VM):
        # the wall clock does not, and other replicas read the times written here against
        # theirs.
        anchor.slept, anchor.checked = _slept(anchor.asleep), now
    return anchor.wall + datetime.timedelta(seconds=now - anchor.started + anchor.slept)
