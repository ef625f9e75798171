"""The renewal loop that a replica's Leases share: leadership (``lease_keeper``) and sharding
(``shard_keeper``).

Each step runs within ``renew_deadline``; a conflict or an API error is the keeper's to note,
and the loop goes on; after each step the keeper checks its fence (the gate stops serving when
renewals stopped landing); the next step starts a period after this one started. At the end
(cancellation) the keeper releases what it holds, shielded, within :data:`RELEASE_TIMEOUT`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import anyio

from anyop.errors import AnyopError, ConflictError

__all__ = ["RELEASE_TIMEOUT", "Renewing", "renew_until_cancelled"]

RELEASE_TIMEOUT = 5.0
"""Seconds the release of a replica's Lease may take at exit."""


class Renewing(Protocol):
    """A keeper of a Lease, as the renewal loop drives it."""

    async def step(self) -> None:
        """Read and write the Lease once."""

    def conflicted(self) -> None:
        """The Lease changed meanwhile (a 409): note it; the next step reads it anew."""

    def failed(self, error: AnyopError) -> None:
        """The step failed otherwise: say so; the next step tries again."""

    def check_fence(self) -> None:
        """Stop serving if the renewals stopped landing in time."""

    async def release(self) -> None:
        """Give the Lease up (at exit)."""


async def renew_until_cancelled(
    keeper: Renewing, *, renew_deadline: float, period: Callable[[], float]
) -> None:
    """Step the keeper every ``period()`` seconds until cancelled; release its Lease then."""
    try:
        while True:
            started = anyio.current_time()
            with anyio.move_on_after(renew_deadline):
                try:
                    await keeper.step()
                except ConflictError:
                    keeper.conflicted()
                except AnyopError as e:
                    keeper.failed(e)
            keeper.check_fence()
            await anyio.sleep(max(0.0, started + period() - anyio.current_time()))
    finally:
        with anyio.move_on_after(RELEASE_TIMEOUT, shield=True):
            await keeper.release()
