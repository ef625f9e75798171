"""When a failed API request may be sent again, and how long to wait first. Pure.

The client asks two questions after a failure: may this request be repeated (:func:`may_retry`,
which needs :func:`is_idempotent` and the kind of :class:`Failure`), and how long to wait
(:meth:`RetryPolicy.delay`, which honours the server's ``Retry-After``). Watches back off on their
own schedule (:class:`Backoff`). Nothing here sleeps or talks to the network.

Which requests are idempotent (RELIABILITY.md §1.4), that is, safe to repeat after the first
attempt may have reached the server:

* ``GET``/``HEAD`` (reads, lists, watches): always.
* ``PUT`` (replace): yes. The body is absolute; with ``metadata.resourceVersion`` set, a repeat
  after a success answers 409 instead of writing twice.
* ``DELETE``: yes. A repeat after a success answers 404.
* ``PATCH``: merge, strategic-merge and server-side apply patches state absolute values, so yes.
  A JSON patch only if it is guarded by a ``test`` op or consists of ``replace``/``test`` ops:
  ``add``, ``remove``, ``move`` and ``copy`` can shift list items twice.
* ``POST`` (create, and everything else): no. A second create could make a second object or
  answer a confusing 409.

Requests that never reached the server (connection refused, connect timeouts) and 429 answers
(rejected before any processing) are safe to repeat whatever the method.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from anyop.errors import ApiError, api_error_for
from anyop.settings import NetworkingSettings

__all__ = [
    "Backoff",
    "Failure",
    "RetryPolicy",
    "error_of_response",
    "failure_of_status",
    "is_idempotent",
    "may_retry",
    "retry_after_of",
]

JITTER = 0.1
"""Waits are stretched by a random 0-10 % so that many clients do not come back at once."""

_ERROR_TEXT = 500  # characters of a non-JSON error body kept as the message
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_ABSOLUTE_PATCHES = frozenset(
    {
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    }
)


class Failure(enum.Enum):
    """How a request failed, as far as repeating it is concerned."""

    UNSENT = "unsent"
    """It never reached the server: connection refused, connect timeout, TLS handshake."""
    UNANSWERED = "unanswered"
    """It may have reached the server, but no answer came: reset, read timeout, broken body."""
    THROTTLED = "throttled"
    """429: the server rejected it before processing."""
    SERVER = "server"
    """5xx: the server or etcd failed; the request may or may not have had an effect."""
    FINAL = "final"
    """Any other error status: repeating it would give the same answer."""


def failure_of_status(status: int) -> Failure:
    """Classify an HTTP error status (>= 400)."""
    if status == 429:
        return Failure.THROTTLED
    if status >= 500:
        return Failure.SERVER
    return Failure.FINAL


def is_idempotent(method: str, content_type: str | None = None, body: Any = None) -> bool:
    """Tell whether sending this request twice has the same effect as sending it once.

    Args:
        method: The HTTP method.
        content_type: The request's ``Content-Type`` (needed for ``PATCH``).
        body: The request's decoded body (needed for JSON patches).
    """
    method = method.upper()
    if method in _SAFE_METHODS:
        return True
    if method != "PATCH":
        return False
    if content_type in _ABSOLUTE_PATCHES:
        return True
    if content_type == "application/json-patch+json" and isinstance(body, Sequence):
        ops = [op.get("op") for op in body if isinstance(op, Mapping)]
        return "test" in ops or all(op == "replace" for op in ops)
    return False


def may_retry(failure: Failure, *, idempotent: bool) -> bool:
    """Tell whether a request that failed so may be sent again."""
    match failure:
        case Failure.UNSENT | Failure.THROTTLED:
            return True
        case Failure.UNANSWERED | Failure.SERVER:
            return idempotent
        case _:
            return False


def retry_after_of(
    header: str | None, details: Mapping[str, Any] | None, now: datetime | None = None
) -> float | None:
    """Read how long the server asked us to wait, in seconds.

    Args:
        header: The ``Retry-After`` header: seconds, or an HTTP date.
        details: The ``details`` of a Kubernetes ``Status``, with ``retryAfterSeconds``.
        now: The current time, to turn an HTTP date into seconds (default: the UTC clock).

    Returns:
        The longer of the two when both are given, ``None`` when neither is (or both are
        garbage). Never negative.
    """
    found = [value for value in (_header_seconds(header, now), _details_seconds(details)) if value]
    return max(found) if found else None


def error_of_response(status: int, headers: Mapping[str, str], content: bytes) -> ApiError:
    """Turn an error answer into its typed :class:`~anyop.errors.ApiError`; never raises.

    A Kubernetes ``Status`` body gives the reason, message and details; any other body (an HTML
    page from a proxy, garbage) gives the start of its text as the message.

    Args:
        status: The HTTP status code.
        headers: The answer's headers (for ``Retry-After``).
        content: The answer's body.
    """
    document: Any = None
    with contextlib.suppress(ValueError, RecursionError):
        document = json.loads(content) if content else None
    status_doc: Mapping[str, Any] = document if isinstance(document, Mapping) else {}
    details = status_doc.get("details")
    details = details if isinstance(details, Mapping) else {}
    text = content[:_ERROR_TEXT].decode("utf-8", errors="replace").strip()
    message = str(status_doc.get("message") or text or f"HTTP {status}")
    return api_error_for(status)(
        message,
        status=status,
        reason=str(status_doc.get("reason") or ""),
        details=details,
        retry_after=retry_after_of(headers.get("Retry-After"), details),
    )


def _header_seconds(header: str | None, now: datetime | None) -> float | None:
    if not header:
        return None
    try:
        return max(0.0, float(header.strip()))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _details_seconds(details: Mapping[str, Any] | None) -> float | None:
    value = (details or {}).get("retryAfterSeconds")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, float(value))
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and after which delays a failed request is repeated.

    Attributes:
        backoffs: The waits before the 2nd, 3rd... attempt; there are ``len(backoffs) + 1``
            attempts in all.
        max_retry_after: The cap on a server-requested wait.
        enforce_retry_after: Wait exactly what the server asks (capped), instead of the longer of
            that and the backoff.
    """

    backoffs: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21)
    max_retry_after: float = 60
    enforce_retry_after: bool = False

    @classmethod
    def from_settings(cls, networking: NetworkingSettings) -> RetryPolicy:
        """The policy of ``settings.networking``."""
        return cls(
            backoffs=tuple(networking.error_backoffs),
            max_retry_after=networking.max_retry_after,
            enforce_retry_after=networking.enforce_retry_after,
        )

    @property
    def attempts(self) -> int:
        """How many attempts a request gets in all."""
        return len(self.backoffs) + 1

    def delay(self, attempt: int, retry_after: float | None, rand: float) -> float | None:
        """How long to wait after a failed attempt, or ``None`` when it was the last one.

        Args:
            attempt: The number of the attempt that failed, from 1.
            retry_after: What the server asked for, if anything.
            rand: A random number in [0, 1) for the jitter.

        Returns:
            The backoff, or the server's wait capped by ``max_retry_after`` (the longer of the
            two unless ``enforce_retry_after``), stretched by up to 10 % of jitter.
        """
        if attempt >= self.attempts:
            return None
        wait = self.backoffs[attempt - 1]
        if retry_after is not None:
            asked = min(retry_after, self.max_retry_after)
            wait = asked if self.enforce_retry_after else max(wait, asked)
        return wait * (1 + JITTER * rand)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with a cap and jitter, for loops that never give up (watches).

    Attributes:
        initial: The first wait.
        factor: How much each further wait grows.
        cap: The longest wait.
        jitter: The relative spread: a wait is multiplied by a number in ``[1-jitter, 1+jitter)``.
    """

    initial: float = 0.8
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.2

    def delay(self, failures: int, rand: float) -> float:
        """The wait after ``failures`` consecutive failures (from 1), given a random [0, 1)."""
        exponent = min(max(failures, 1) - 1, 64)
        wait = min(self.cap, self.initial * self.factor**exponent)
        return wait * (1 - self.jitter + 2 * self.jitter * rand)
