"""What a struck request gets: the async shell around :mod:`anyop.testing.fake.faults`.

A latency sleeps (virtual time on a fake clock) and lets the request through; the other faults
replace the answer: a cut connection, a stalled watch, or an error ``Status``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel

from anyop.testing.fake.api import ApiRequest, ApiResponse, is_watch
from anyop.testing.fake.faults import ConnectionDropped, Fault, FaultKind
from anyop.testing.fake.routes import Route, parse_path
from anyop.testing.fake.statuses import conflict, expired, status_body
from anyop.testing.fake.watches import event_line

__all__ = ["StalledWatch", "answer_of_fault"]

_EXPIRED = "The resourceVersion for the provided watch is too old."
_REASONS = {500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


class StalledWatch:
    """A watch that sends nothing and ends after ``timeout`` seconds, as a stuck connection."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._closed = anyio.Event()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        with anyio.move_on_after(self._timeout):
            await self._closed.wait()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """End the watch."""
        self._closed.set()


class ExpiredWatch:
    """A watch whose only line is an ``ERROR`` event with 410 Expired."""

    def __init__(self) -> None:
        self._lines = [event_line("ERROR", expired(_EXPIRED).body)]

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        await anyio.lowlevel.checkpoint()
        if not self._lines:
            raise StopAsyncIteration
        return self._lines.pop(0)

    async def aclose(self) -> None:
        """End the watch."""
        self._lines.clear()


async def answer_of_fault(
    fault: Fault, request: ApiRequest
) -> ApiResponse | AsyncIterator[bytes] | None:
    """The answer instead of the API's, or ``None`` to answer normally (after a latency).

    Raises:
        ConnectionDropped: For a dropped connection.
    """
    watch = is_watch(request)
    match fault.kind:
        case FaultKind.LATENCY:
            await anyio.sleep(fault.delay)
            return None
        case FaultKind.DROP:
            raise ConnectionDropped()
        case FaultKind.STALL if watch:
            timeout = request.query.get("timeoutSeconds", "")
            return StalledWatch(float(timeout) if timeout.isdigit() else 1800.0)
        case FaultKind.STALL:
            await anyio.sleep_forever()
        case FaultKind.THROTTLE:
            return _throttled(fault)
        case FaultKind.SERVER_ERROR:
            reason = _REASONS.get(fault.code, "InternalError")
            message = (
                f"an error on the server (injected fault {fault.code}) has prevented the request"
            )
            return ApiResponse(fault.code, status_body(fault.code, reason, message, details={}))
        case FaultKind.EXPIRE if watch:
            return ExpiredWatch()
        case FaultKind.EXPIRE:
            return ApiResponse(410, expired(_EXPIRED).body)
        case FaultKind.CONFLICT:
            route = parse_path(request.path)
            if not isinstance(route, Route):
                route = Route("", "", "")
            return ApiResponse(409, conflict(route.plural, route.group, route.name or "").body)
    return None


def _throttled(fault: Fault) -> ApiResponse:
    """429 TooManyRequests, with ``Retry-After`` where the fault puts it."""
    message = "Too many requests, please try again later."
    seconds = fault.retry_after
    details = {"retryAfterSeconds": seconds} if fault.retry_after_details else {}
    headers = {"Retry-After": str(seconds)} if fault.retry_after_header else {}
    body = status_body(429, "TooManyRequests", message, details=details)
    return ApiResponse(429, body, headers=headers)
