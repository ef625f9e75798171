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
  the time it slept (where the system counts it: Linux's ``CLOCK_BOOTTIME``) is added, so the
  times written after it are not behind those of other replicas.

Outside an event loop (a sync helper, a thread) it is the system's clock.

Caveats:
    A correction of the system's clock is followed only by the next event loop (the next
    process, in production): until then, the times written keep the offset the clock had when
    the loop started.
"""

from __future__ import annotations

import datetime
import math
import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["LoopClock", "seconds_until", "suspended", "system_now", "use_loop_clock", "utcnow"]

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

    The two clocks cannot be read at one instant: a reading whose window between its reads is
    under a millisecond is taken at once (its error is half of that, and the result is used
    rounded to whole seconds); otherwise, of three tries, the one with the narrowest window, so
    a pre-emption between the reads does not count as sleep.
    """
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is None:
        return 0.0
    best = (math.inf, 0.0)
    for _ in range(3):
        before = time.monotonic()
        booted = time.clock_gettime(boottime)
        after = time.monotonic()
        best = min(best, (after - before, booted - (before + after) / 2))
        if best[0] < _NARROW:
            break
    return best[1]


_NARROW = 1e-3
"""A window between two clocks' reads narrow enough to take the reading at once (seconds)."""


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
_anchors: weakref.WeakKeyDictionary[Any, tuple[float, datetime.datetime, float]] = (
    weakref.WeakKeyDictionary()
)
"""Per event loop: its time, the system's wall clock and :func:`suspended` when it first
asked."""


def use_loop_clock(clock: LoopClock) -> None:
    """Keep time by ``clock`` (:mod:`anyop.engine.loop_clock` installs AnyIO's when anyop is
    imported; this module itself stays free of any concurrency library)."""
    global _loop_clock
    _loop_clock = clock


def utcnow() -> datetime.datetime:
    """The operator's wall clock now (aware UTC): the system's when the event loop first asked,
    advanced by the loop's monotonic clock since."""
    running = _loop_clock()
    if running is None:
        return system_now()
    loop, now = running
    anchor = _anchors.get(loop)
    if anchor is None:
        anchor = _anchors[loop] = (now, system_now(), suspended())
    started, wall, asleep = anchor
    # The loop's clock stands still while the machine sleeps (a suspended laptop or VM): the
    # wall clock does not, and other replicas read the times written here against theirs.
    slept = _slept(asleep)
    return wall + datetime.timedelta(seconds=now - started + slept)
