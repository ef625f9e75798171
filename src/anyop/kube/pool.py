"""Connections to one origin: the pool key, a fair limit on those in use, and when to resend.

:class:`~anyop.kube.transport.KubeTransport` keeps an :class:`OriginPool` per origin. Nothing
here does I/O but waiting for a free slot.
"""

from __future__ import annotations

import socket
import sys
from collections import deque
from dataclasses import dataclass

import anyio
import httpx

from anyop.kube.http11 import Http11Connection, SocketOption

__all__ = [
    "DEFAULT_PORTS",
    "DEFAULT_SOCKET_OPTIONS",
    "IDEMPOTENT_METHODS",
    "DISCONNECTS",
    "Origin",
    "OriginPool",
    "resendable",
]

DEFAULT_PORTS = {"http": 80, "https": 443}
"""The port of each supported scheme when a URL names none."""

IDEMPOTENT_METHODS = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
"""Methods that RFC 9110 calls idempotent: resending them after a lost response is safe."""

DISCONNECTS = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
"""How a connection that the server closed while idle fails the next request sent on it."""


def _default_socket_options() -> tuple[SocketOption, ...]:
    options = [
        (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    ]
    # Probe after 30 s of silence (as Go's client-go dialer does), every 10 s, 3 times.
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    if sys.platform == "darwin":  # macOS calls the idle time TCP_KEEPALIVE (0x10).
        options.append((socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPALIVE", 0x10), 30))
    return tuple(options)


DEFAULT_SOCKET_OPTIONS = _default_socket_options()
"""``TCP_NODELAY``, and TCP keepalive probes after 30 s idle, every 10 s, 3 times, where known."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a connection goes: the pool key.

    Attributes:
        scheme: ``http`` or ``https``.
        host: The host name or IP address to connect to.
        port: The TCP port.
        tls_hostname: The name to send via SNI and to verify, if not ``host``.
        watch: The pool of watches (no limit on connections in use), not of requests.
    """

    scheme: str
    host: str
    port: int
    tls_hostname: str | None = None
    watch: bool = False


def resendable(
    method: bytes, error: Exception, *, replayable: bool, reused: bool, answered: bool
) -> bool:
    """Decide whether a request that failed on a connection may go out once more, on a new one.

    A server may close an idle kept-alive connection just as a request is sent on it. Resending
    is safe only if the server cannot have acted on the request: the connection was a reused
    one, the failure is a disconnect, no byte of an answer came back, the method is idempotent
    (RFC 9110: never POST or PATCH), and the body can be sent again (it is not a stream).

    Args:
        method: The request's method, such as ``b"GET"``.
        error: What went wrong.
        replayable: The body is in memory (or there is none), not a stream already consumed.
        reused: The connection had carried an earlier exchange.
        answered: Some bytes of a response had arrived.
    """
    return (
        reused
        and not answered
        and replayable
        and isinstance(error, DISCONNECTS)
        and method in IDEMPOTENT_METHODS
    )


class OriginPool:
    """Idle connections to one origin and a limit on those in use (a fair semaphore).

    A slot is held from the start of a request until its connection is parked or closed;
    waiters are woken in order, each by an AnyIO event.

    Args:
        origin: Where its connections go.
        limit: At most this many slots are taken at once; ``None`` for no limit.
    """

    __slots__ = ("idle", "in_use", "limit", "origin", "waiters")

    def __init__(self, origin: Origin, limit: int | None) -> None:
        self.origin = origin
        self.limit = limit
        self.in_use = 0
        self.idle: deque[Http11Connection] = deque()
        self.waiters: deque[_Waiter] = deque()

    async def acquire(self, pool_timeout: float | None) -> None:
        """Take a slot, waiting at most ``pool_timeout`` seconds for one.

        Raises:
            httpx.PoolTimeout: No slot became free in time.
        """
        if not self.waiters and (self.limit is None or self.in_use < self.limit):
            self.in_use += 1
            return
        waiter = _Waiter()
        self.waiters.append(waiter)
        try:
            if pool_timeout is None:
                await waiter.event.wait()  # no cancel scope to make for no deadline
            else:
                with anyio.move_on_after(pool_timeout):
                    await waiter.event.wait()
        except BaseException:
            self._forget(waiter)
            raise
        if not waiter.granted:
            self.waiters.remove(waiter)
            raise httpx.PoolTimeout(f"No connection to {self.origin.host} was free in time")

    def _forget(self, waiter: _Waiter) -> None:
        if waiter.granted:  # Woken, then cancelled: pass the slot on.
            self.release()
        else:
            self.waiters.remove(waiter)

    def release(self) -> None:
        """Give a slot back: to the longest waiter, if any."""
        if self.waiters:
            waiter = self.waiters.popleft()
            waiter.granted = True
            waiter.event.set()
        else:
            self.in_use -= 1


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False
