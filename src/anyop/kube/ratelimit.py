"""A client-side token bucket, shared by every request of one operator.

The API server protects itself with priority and fairness (429s); a polite client also limits
itself, so that a burst of work (a relist of 5,000 objects, a restart) does not turn into a 429
storm. The bucket holds ``burst`` tokens and refills at ``qps`` tokens per second; every request
takes one. Waiters are served in the order they arrived.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from anyop.settings import NetworkingSettings

__all__ = ["RateLimiter"]


class RateLimiter:
    """A token bucket on AnyIO's clock: ``burst`` requests at once, then ``qps`` per second.

    Args:
        qps: The sustained rate; ``None`` means unlimited (then :meth:`acquire` never waits).
        burst: How many tokens the bucket holds, i.e. how many requests may go at once.
        clock: Returns the current time in seconds; AnyIO's clock by default, so Trio's
            ``MockClock`` drives it in tests.

    Guarantees:
        * Over any interval of length ``t``, at most ``burst + qps * t`` acquisitions return.
        * Waiters are released in the order they called :meth:`acquire` (each reserves its
          token on arrival, so a later caller never overtakes an earlier one).
        * A waiter cancelled before its turn gives its token back.
    """

    def __init__(
        self, qps: float | None, burst: int = 1, *, clock: Callable[[], float] | None = None
    ) -> None:
        if qps is not None and qps <= 0:
            raise ValueError(f"qps must be positive or None, got {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst!r}")
        self.qps = qps
        self.burst = burst
        self._clock = clock or anyio.current_time
        self._tokens = float(burst)
        self._updated: float | None = None

    @classmethod
    def from_settings(cls, networking: NetworkingSettings) -> RateLimiter:
        """The limiter of ``settings.networking.qps`` and ``.burst``."""
        return cls(networking.qps, networking.burst)

    def reserve(self, now: float) -> float:
        """Take one token at ``now``; return how long the caller must wait before using it.

        Pure bookkeeping, no waiting: the debt is remembered, so the next reservation waits
        longer.
        """
        if self.qps is None:
            return 0.0
        elapsed = 0.0 if self._updated is None else max(0.0, now - self._updated)
        self._updated = now if self._updated is None else max(now, self._updated)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def release(self) -> None:
        """Give back a token that was reserved but not used."""
        self._tokens = min(float(self.burst), self._tokens + 1)

    async def acquire(self) -> None:
        """Wait until a request may be sent (at once if tokens are left or there is no limit)."""
        if self.qps is None:
            return
        wait = self.reserve(self._clock())
        if wait <= 0:
            return
        try:
            await anyio.sleep(wait)
        except BaseException:
            self.release()
            raise
