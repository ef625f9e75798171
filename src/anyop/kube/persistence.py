"""Asking the API server until it answers: for the reads an operator cannot start without.

The client retries a failed request a few times (``networking.error_backoffs``); what still
fails then is, for these reads, asked again with a backoff of up to 30 s, logged each time,
where the failure may pass (throttled, a server error, no answer). Other errors (401, 403, a
malformed request) end the wait at once.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from anyop.errors import ApiError, TransportError
from anyop.kube.retries import Backoff
from anyop.kube.sessions import is_transient

__all__ = ["STARTUP_BACKOFF", "until_answered"]

T = TypeVar("T")

STARTUP_BACKOFF = Backoff(initial=1.0, cap=30.0)
"""The waits between the asks of a start-up read while the API server fails."""


async def until_answered(
    ask: Callable[[], Awaitable[T]],
    *,
    what: str,
    logger: logging.Logger,
    backoff: Backoff = STARTUP_BACKOFF,
) -> T:
    """``await ask()`` until it does not fail transiently; its result.

    Args:
        ask: The read.
        what: What it does, for the warnings (``Looking for the peering object 'x'``).
        logger: Where the warnings go.
        backoff: The waits between asks.

    Raises:
        ApiError: It failed otherwise than transiently (401, 403, 404...).
    """
    failures = 0
    while True:
        try:
            return await ask()
        except (ApiError, TransportError) as e:
            if not is_transient(e):
                raise
            failures += 1
            delay = backoff.delay(failures, random.random())
            logger.warning(f"{what} failed; retrying in {delay:.1f}s: {e}")
            await anyio.sleep(delay)
