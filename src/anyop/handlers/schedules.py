"""When daemons and timers run and how long stopping them may take: pure decisions.

All times here are on the monotonic clock (:func:`anyio.current_time`), never the wall clock, so a
clock jump neither fires a timer early nor holds it back.
"""

from __future__ import annotations

import dataclasses
import math

from anyop.handlers.records import DaemonHandler, ResourceSpawningHandler, TimerHandler

__all__ = ["REAP_TIMEOUT", "Termination", "timer_due", "timer_pause"]

REAP_TIMEOUT = 5.0
"""Seconds that tasks left over at the operator's exit get before they are cancelled."""


def timer_pause(handler: TimerHandler, *, started: float, now: float) -> float | None:
    """Seconds from ``now`` until the next run of a timer that has just succeeded.

    Args:
        handler: The timer.
        started: When the run that has just ended started.
        now: Now.

    Returns:
        ``interval`` measured from the end of the run, or (``sharp``) what is left until the
        next point of the grid of ``interval`` seconds since ``started``; ``None`` without an
        interval (a one-shot timer, or an idle-only timer that waits for the next change).
    """
    interval = handler.interval
    if interval is None:
        return None
    if not handler.sharp:
        return interval
    elapsed = max(0.0, now - started)
    if elapsed and elapsed % interval == 0:
        return 0.0
    return interval - elapsed % interval


def timer_due(
    handler: TimerHandler, *, not_before: float, reset: float, ran_for: float | None
) -> float:
    """When a timer that is not running runs next (``math.inf``: not before its object changes).

    Args:
        handler: The timer.
        not_before: The end of its current wait: the initial delay, a retry's delay, or the
            pause after a success. A change of the object does not shorten it.
        reset: When the object's essence last changed (or was first seen).
        ran_for: The ``reset`` that the timer last succeeded after, if any.

    Returns:
        ``not_before`` without ``idle``. With ``idle``, not before the object has stayed
        unchanged for ``idle`` seconds either; and an idle-only timer (no ``interval``) runs
        once per quiet period: after a success it waits for the next change.
    """
    if handler.idle is None:
        return not_before
    if handler.interval is None and ran_for == reset:
        return math.inf
    return max(not_before, reset + handler.idle)


@dataclasses.dataclass(frozen=True)
class Termination:
    """How a daemon or timer is stopped.

    Attributes:
        backoff: Seconds between setting ``stopped`` and cancelling (``None``: cancel at once
            if a timeout is set).
        timeout: Seconds to wait for it after cancelling before abandoning it (``None``: never
            cancel or abandon; wait, logging every ``polling`` seconds).
        polling: Seconds between "still exiting" log lines while waiting without a timeout.
    """

    backoff: float | None
    timeout: float | None
    polling: float

    @classmethod
    def of(cls, handler: ResourceSpawningHandler, *, polling: float) -> Termination:
        """The termination of a handler; timers are never cancelled, only waited for.

        Args:
            handler: The daemon or timer.
            polling: ``settings.background.cancellation_polling``, unless the daemon has its own.
        """
        if isinstance(handler, DaemonHandler):
            own = handler.cancellation_polling
            return cls(
                backoff=handler.cancellation_backoff,
                timeout=handler.cancellation_timeout,
                polling=own if own is not None else polling,
            )
        return cls(backoff=None, timeout=None, polling=polling)

    @property
    def bounded(self) -> bool:
        """Whether it ends (exited or abandoned) within :attr:`budget` seconds."""
        return self.timeout is not None

    @property
    def budget(self) -> float:
        """The longest it can take if :attr:`bounded`: backoff plus timeout."""
        return (self.backoff or 0.0) + (self.timeout or 0.0)
