"""What a struck request gets: the async shell around :mod:`anyop.testing.fake.faults`.

A latency sleeps (virtual time on a fake clock) and lets the request through; the other faults
replace the answer: a cut connection, a stalled watch, a watch that ends at once or whose only
line is an ``ERROR`` event, or an error ``Status``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel

from anyop.testing.fake.api import ApiRequest, ApiResponse, is_watch
from anyop.testing.fake.faults import ConnectionDropped, Fault, FaultKind
from anyop.testing.fake.routes import Route, parse_path
from anyop.testing.fake.statuses import conflict, expired, status_body, too_large_version
from anyop.testing.fake.watches import event_line

__all__ = ["ShortWatch", "StalledWatch", "answer_of_fault"]

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


class ShortWatch:
    """A watch answered 200 that sends these lines (maybe none) and ends."""

    def __init__(self, *lines: bytes) -> None:
        self._lines = list(lines)

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
    fault: Fault, request: ApiRequest, *, current: int = 0
) -> ApiResponse | AsyncIterator[bytes] | None:
    """The answer instead of the API's, or ``None`` to answer normally (after a latency);
    ``current`` is the store's resourceVersion (for a too-large version's message).

    Raises:
        ConnectionDropped: For a dropped connection.
    """
    watch = is_watch(request)
    if watch and fault.in_stream and (status := _status_of(fault, request, current)):
        return ShortWatch(event_line("ERROR", status))
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
        case FaultKind.EXPIRE | FaultKind.TOO_LARGE:
            return ApiResponse(fault.code, _version_refused(fault, request, current))
        case FaultKind.EMPTY_WATCH:
            return ShortWatch()
        case FaultKind.FORBIDDEN:
            return ApiResponse(403, _forbidden(fault, request, watch=watch))
        case FaultKind.CONFLICT:
            route = parse_path(request.path)
            if not isinstance(route, Route):
                route = Route("", "", "")
            return ApiResponse(409, conflict(route.plural, route.group, route.name or "").body)
    return None


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _forbidden(fault: Fault, request: ApiRequest, *, watch: bool) -> dict[str, Any]:
    """403 Forbidden as kube-apiserver's authorizer words it, for the request's verb."""
    route = parse_path(request.path)
    if not isinstance(route, Route):
        route = Route("", "", request.path)
    if request.method == "GET":
        verb = "watch" if watch else "get" if route.name else "list"
    elif request.method == "DELETE" and not route.name:
        verb = "deletecollection"
    else:
        verb = _VERBS.get(request.method, request.method.lower())
    resource = f"{route.plural}.{route.group}" if route.group else route.plural
    what = f'resource "{route.plural}"'
    if route.subresource:
        what = f'resource "{route.plural}/{route.subresource}"'
    where = f' in the namespace "{route.namespace}"' if route.namespace else " at the cluster scope"
    subject = f'{resource} "{route.name}"' if route.name else resource
    message = (
        f'{subject} is forbidden: User "{fault.user}" cannot {verb} {what} '
        f'in API group "{route.group}"{where}'
    )
    details: dict[str, Any] = {"group": route.group, "kind": route.plural}
    if route.name:
        details["name"] = route.name
    return status_body(403, "Forbidden", message, details=details)


def _status_of(fault: Fault, request: ApiRequest, current: int) -> dict[str, Any] | None:
    """The ``Status`` of an expiry, a too-large version or a server error (``None`` for other
    faults), as kube-apiserver shapes it in a watch's ``ERROR`` event and in an answer."""
    match fault.kind:
        case FaultKind.EXPIRE | FaultKind.TOO_LARGE:
            return _version_refused(fault, request, current)
        case FaultKind.SERVER_ERROR if fault.code == 500:
            cause = f"injected fault {fault.code}"
            message = f"Internal error occurred: {cause}"
            return status_body(
                500, "InternalError", message, details={"causes": [{"message": cause}]}
            )
        case FaultKind.SERVER_ERROR:
            reason = _REASONS.get(fault.code, "InternalError")
            message = f"{reason}: injected fault {fault.code}"
            return status_body(fault.code, reason, message, details={})
    return None


def _version_refused(fault: Fault, request: ApiRequest, current: int) -> dict[str, Any]:
    """410 Expired, or 504 "Too large resource version" as from a watch cache that lags behind
    the version asked for (one less than it, at most ``current``)."""
    if fault.kind is FaultKind.EXPIRE:
        return expired(_EXPIRED).body
    asked = request.query.get("resourceVersion", "")
    requested = int(asked) if asked.isdigit() and int(asked) > 0 else current + 1
    return too_large_version(requested, min(current, requested - 1)).body


def _throttled(fault: Fault) -> ApiResponse:
    """429 TooManyRequests, with ``Retry-After`` where the fault puts it."""
    message = "Too many requests, please try again later."
    seconds = fault.retry_after
    details = {"retryAfterSeconds": seconds} if fault.retry_after_details else {}
    headers = {"Retry-After": str(seconds)} if fault.retry_after_header else {}
    body = status_body(429, "TooManyRequests", message, details=details)
    return ApiResponse(429, body, headers=headers)
