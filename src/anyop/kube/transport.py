"""anyop's HTTP transport for httpx: keep-alive HTTP/1.1 on AnyIO, parsed by httptools.

httpx stays the API; :class:`KubeTransport` replaces its default transport (httpcore), whose pool
bookkeeping costs about five times the client CPU per request of the whole exchange here
(``python -m bench.http_transport``). It works the same on Trio and on asyncio.

Proxies are out of scope: when a proxy is configured, anyop uses httpx's default transport.
"""

from __future__ import annotations

import socket
import ssl
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from anyop.kube.http11 import Http11Connection, SocketOption, encode_head, open_connection

__all__ = [
    "BODY_EXTENSION",
    "DEFAULT_SOCKET_OPTIONS",
    "IDEMPOTENT_METHODS",
    "KubeTransport",
    "Origin",
    "aiter_raw",
    "may_resend",
]

BODY_EXTENSION = "anyop.body"
"""The response extension that holds a :class:`KubeTransport` body (see :func:`aiter_raw`)."""

IDEMPOTENT_METHODS = frozenset({b"GET", b"HEAD", b"OPTIONS", b"TRACE", b"PUT", b"DELETE"})
"""Methods that RFC 9110 calls idempotent: resending them after a lost response is safe."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_NO_TIMEOUTS: Mapping[str, float | None] = {}
_DISCONNECTS = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)


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


@dataclass(frozen=True)
class Origin:
    """Where a connection goes: the pool key.

    Attributes:
        scheme: ``http`` or ``https``.
        host: The host name or IP address to connect to.
        port: The TCP port.
        tls_hostname: The name to send via SNI and to verify, if not ``host``.
    """

    scheme: str
    host: str
    port: int
    tls_hostname: str | None = None


def may_resend(request: httpx.Request, error: Exception, *, reused: bool, answered: bool) -> bool:
    """Decide whether a request that failed on a connection may go out once more, on a new one.

    A server may close an idle kept-alive connection just as a request is sent on it. Resending
    is safe only if the server cannot have acted on the request: the connection was a reused
    one, the failure is a disconnect, no byte of an answer came back, the method is idempotent
    (RFC 9110: never POST or PATCH), and the body can be sent again (it is not a stream).

    Args:
        request: The request that failed.
        error: What went wrong.
        reused: The connection had carried an earlier exchange.
        answered: Some bytes of a response had arrived.
    """
    return (
        reused
        and not answered
        and isinstance(error, _DISCONNECTS)
        and isinstance(request.stream, httpx.ByteStream)
        and request.method.encode() in IDEMPOTENT_METHODS
    )


_WATCHING = frozenset({"true", "1"})
"""Values of the ``watch`` query parameter that make a request a watch."""


class _OriginPool:
    """Idle connections to one origin and a limit on those in use (a fair semaphore).

    A slot is held from the start of a request until its connection is parked or closed;
    waiters are woken in order, each by an AnyIO event.
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


class _ResponseBody(httpx.AsyncByteStream):
    """A response body that yields bytes as they arrive.

    The connection goes back to its pool once the body has been read to its end, and is
    closed if the body is closed before that. Iteration uses ``__anext__`` (no async
    generator), so an abandoned iteration leaves nothing for the event loop to finalize.
    """

    __slots__ = ("_conn", "_pending", "_pool", "_read_timeout", "_transport")

    def __init__(
        self,
        transport: KubeTransport,
        pool: _OriginPool,
        *,
        conn: Http11Connection | None,
        pending: bytes,
        read_timeout: float | None,
    ) -> None:
        self._transport = transport
        self._pool = pool
        self._conn = conn
        self._pending = pending
        self._read_timeout = read_timeout

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        while (conn := self._conn) is not None:
            try:
                await conn.receive(self._read_timeout)
            except BaseException:
                self._conn = None
                self._transport._discard(self._pool, conn)
                raise
            data = conn.take_body()
            if conn.complete:
                self._conn = None
                self._transport._check_in(self._pool, conn)
            if data:
                return data
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Close the body; an unfinished response's connection is closed, not reused."""
        self._pending = b""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._transport._discard(self._pool, conn)


def aiter_raw(response: httpx.Response) -> AsyncIterator[bytes]:
    """Return an iterator over the body chunks of a streamed response.

    For a :class:`KubeTransport` response it is the transport's own body, a plain iterator
    object over the raw bytes: reading it skips httpx's chain of async generators (less CPU per
    chunk), and a watch abandoned midway leaves nothing for Trio to finalize and warn about.
    Other responses are read with ``response.aiter_bytes()``, which also serves those that mock
    transports build from ``content=``. Closing the response stays the caller's part.

    Args:
        response: A response from ``client.stream(...)`` or ``client.send(..., stream=True)``.
    """
    body = response.extensions.get(BODY_EXTENSION)
    return body if isinstance(body, _ResponseBody) else response.aiter_bytes()


class KubeTransport(httpx.AsyncBaseTransport):
    """An httpx transport with a keep-alive pool per origin, on AnyIO (Trio or asyncio).

    Use it as ``httpx.AsyncClient(transport=KubeTransport(ssl_context))``. It speaks HTTP/1.1
    only (a server that picks another protocol via ALPN is refused), sends headers as httpx
    prepared them, and passes response bytes through raw (httpx undoes ``Content-Encoding``).
    The ``sni_hostname`` request extension names the server to verify, as in httpx.

    Args:
        ssl_context: TLS settings for ``https`` origins (CA, client certificate); ``None``
            builds ``ssl.create_default_context()`` on first use.
        max_connections_per_origin: At most this many requests to one origin are in flight
            (64 by default), each on a connection of its own; more wait in order (httpx's
            ``pool`` timeout). Watches (``?watch=true``) hold their connections for minutes:
            they have a pool of their own without a limit, so they never starve requests nor
            wait for each other. ``None`` for no limit.
        keepalive_expiry: Seconds an idle connection is kept for reuse. Below kube-apiserver's
            90 s idle timeout, so that the server rarely closes a connection as it is reused.
        connect_timeout: Seconds for the TCP connect and TLS handshake, for requests that
            carry no timeout of their own (httpx sets one on every request).
        socket_options: ``(level, option, value)`` for ``setsockopt`` on each new socket; by
            default ``TCP_NODELAY`` and TCP keepalive probes after 30 s idle.

    Guarantees:
        Read timeouts count from the last byte received, so a watch that stays silent for the
        read timeout ends with :class:`httpx.ReadTimeout`. Failures raise httpx's exceptions.
        A request is resent once on a fresh connection only as :func:`may_resend` allows; a
        POST or PATCH is never resent once it may have reached the server. A request that is
        cancelled or fails midway closes its connection: nothing half-read is reused.

    Caveats:
        Proxies are not supported (anyop uses httpx's default transport when one is set), nor
        HTTP/2 or protocol upgrades. A streamed response that is never read to its end nor
        closed keeps its connection and its slot: close responses (``async with
        client.stream(...)`` does). Close a response from the task that reads it, or cancel
        that read first: on asyncio a read waiting in another task is not woken by the close.
        Idle connections past their expiry are closed when the pool is next used or on
        :meth:`aclose`; no background task runs.
    """

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None = None,
        *,
        max_connections_per_origin: int | None = 64,
        keepalive_expiry: float = 60.0,
        connect_timeout: float | None = None,
        socket_options: Sequence[SocketOption] = DEFAULT_SOCKET_OPTIONS,
    ) -> None:
        self._ssl_context = ssl_context
        self._limit = max_connections_per_origin
        self._expiry = keepalive_expiry
        self._connect_timeout = connect_timeout
        self._socket_options = tuple(socket_options)
        self._pools: dict[tuple[str, str, int, str | None, bool], _OriginPool] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response as soon as the head has arrived.

        Raises:
            httpx.TransportError: A subclass saying what failed: ``PoolTimeout``,
                ``ConnectError``, ``ConnectTimeout``, ``WriteError``, ``WriteTimeout``,
                ``ReadError``, ``ReadTimeout`` or ``RemoteProtocolError``.
        """
        pool = self._pool_for(request)
        timeouts: Mapping[str, Any] = request.extensions.get("timeout", _NO_TIMEOUTS)
        await pool.acquire(timeouts.get("pool"))
        try:
            conn = await self._exchange(pool, request, timeouts)
        except BaseException:
            pool.release()
            raise
        try:
            response = self._response(pool, conn, timeouts.get("read"))
        except BaseException:
            self._discard(pool, conn)
            raise
        if conn.complete:  # The body has arrived with the head: reuse the connection now.
            self._check_in(pool, conn)
        return response

    async def aclose(self) -> None:
        """Close all idle connections; connections in use close when their responses end."""
        self._closed = True
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            while pool.idle:
                pool.idle.pop().close()

    # -- connections --------------------------------------------------------------------------

    def _check_in(self, pool: _OriginPool, conn: Http11Connection) -> None:
        """Return a connection whose response has ended: park it for reuse, or close it."""
        if conn.reusable and not self._closed:
            conn.park(time.monotonic())
            pool.idle.append(conn)
            pool.release()
        else:
            self._discard(pool, conn)

    def _discard(self, pool: _OriginPool, conn: Http11Connection) -> None:
        """Close a connection that must not be reused and free its slot."""
        try:
            conn.close()
        finally:
            pool.release()

    def _pool_for(self, request: httpx.Request) -> _OriginPool:
        url = request.url
        scheme = url.scheme
        sni: str | None = request.extensions.get("sni_hostname")
        watch = url.params.get("watch") in _WATCHING
        key = (scheme, url.host, url.port or _DEFAULT_PORTS.get(scheme, 0), sni, watch)
        pool = self._pools.get(key)
        if pool is None:
            if self._closed:
                raise RuntimeError("The KubeTransport is closed")
            if scheme not in _DEFAULT_PORTS:
                raise httpx.UnsupportedProtocol(f"Unsupported URL scheme: {scheme!r}")
            limit = None if watch else self._limit
            pool = self._pools[key] = _OriginPool(Origin(*key[:4]), limit)
        return pool

    async def _checkout(self, pool: _OriginPool, timeouts: Mapping[str, Any]) -> Http11Connection:
        """Return an idle connection (the most recently used one) or a new one."""
        if pool.idle:
            now = time.monotonic()
            while pool.idle:
                conn = pool.idle.pop()
                if not conn.is_stale(now):
                    return conn
                conn.close()
        return await self._connect(pool, timeouts)

    async def _connect(self, pool: _OriginPool, timeouts: Mapping[str, Any]) -> Http11Connection:
        origin = pool.origin
        tls = None
        if origin.scheme == "https":
            tls = (self._tls_context(), origin.tls_hostname or origin.host)
        return await open_connection(
            origin.host,
            origin.port,
            tls=tls,
            connect_timeout=timeouts.get("connect", self._connect_timeout),
            socket_options=self._socket_options,
            expiry=self._expiry,
        )

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
            self._ssl_context.set_alpn_protocols(["http/1.1"])
        return self._ssl_context

    # -- one exchange -------------------------------------------------------------------------

    async def _exchange(
        self, pool: _OriginPool, request: httpx.Request, timeouts: Mapping[str, Any]
    ) -> Http11Connection:
        """Send the request and read the response head; resend once if :func:`may_resend`."""
        conn = await self._checkout(pool, timeouts)
        try:
            await _send_and_read_head(conn, request, timeouts)
        except _DISCONNECTS as exc:
            conn.close()
            if not may_resend(request, exc, reused=conn.reused, answered=conn.received):
                raise
            conn = await self._connect(pool, timeouts)
        except BaseException:
            conn.close()
            raise
        else:
            return conn
        try:
            await _send_and_read_head(conn, request, timeouts)
        except BaseException:
            conn.close()
            raise
        return conn

    def _response(
        self, pool: _OriginPool, conn: Http11Connection, read_timeout: float | None
    ) -> httpx.Response:
        body = _ResponseBody(
            self,
            pool,
            conn=None if conn.complete else conn,
            pending=conn.take_body(),
            read_timeout=read_timeout,
        )
        return httpx.Response(
            conn.status,
            headers=conn.headers,
            stream=body,
            extensions={
                "http_version": conn.version,
                "reason_phrase": conn.reason,
                BODY_EXTENSION: body,
            },
        )


async def _send_and_read_head(
    conn: Http11Connection, request: httpx.Request, timeouts: Mapping[str, Any]
) -> None:
    """Send the whole request on ``conn``, then receive until the response head is complete."""
    head = encode_head(request.method.encode(), request.url.raw_path, request.headers.raw)
    stream = request.stream
    write_timeout = timeouts.get("write")
    if isinstance(stream, httpx.ByteStream):
        await conn.send_request(head, b"".join(stream), write_timeout)
    else:
        await conn.send_request(head, b"", write_timeout)
        chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
        await conn.send_stream(stream, chunked, write_timeout)  # type: ignore[arg-type]
    read_timeout = timeouts.get("read")
    while not conn.head_received:
        await conn.receive(read_timeout)
