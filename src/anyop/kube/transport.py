"""anyop's HTTP transport for httpx: keep-alive HTTP/1.1 on AnyIO, parsed by httptools.

httpx stays the API; :class:`KubeTransport` replaces its default transport (httpcore), whose pool
bookkeeping costs about five times the client CPU per request of the whole exchange here
(``python -m bench.http_transport``). It works the same on Trio and on asyncio.

Proxies are out of scope: when a proxy is configured, anyop uses httpx's default transport.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx

from anyop.kube.http11 import Http11Connection, SocketOption, encode_head, open_connection
from anyop.kube.pool import (
    DEFAULT_PORTS,
    DEFAULT_SOCKET_OPTIONS,
    DISCONNECTS,
    IDEMPOTENT_METHODS,
    Origin,
    OriginPool,
    resendable,
)

__all__ = [
    "BODY_EXTENSION",
    "DEFAULT_SOCKET_OPTIONS",
    "IDEMPOTENT_METHODS",
    "KubeTransport",
    "Origin",
    "RawResponse",
    "aiter_raw",
    "may_resend",
]

BODY_EXTENSION = "anyop.body"
"""The response extension that holds a :class:`KubeTransport` body (see :func:`aiter_raw`)."""

RawResponse = tuple[int, list[tuple[bytes, bytes]], bytes]
"""What :meth:`KubeTransport.fetch` returns: the status, the raw header fields, the whole body."""

_NO_TIMEOUTS: Mapping[str, float | None] = {}


def may_resend(request: httpx.Request, error: Exception, *, reused: bool, answered: bool) -> bool:
    """Decide whether an httpx request that failed may go out once more, on a new connection.

    See :func:`anyop.kube.pool.resendable`: only a reused connection's disconnect before any
    answer, for an idempotent method whose body is in memory.

    Args:
        request: The request that failed.
        error: What went wrong.
        reused: The connection had carried an earlier exchange.
        answered: Some bytes of a response had arrived.
    """
    replayable = isinstance(request.stream, httpx.ByteStream)
    return resendable(
        request.method.encode(), error, replayable=replayable, reused=reused, answered=answered
    )


_WATCHING = frozenset({"true", "1"})
"""Values of the ``watch`` query parameter that make a request a watch."""


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
        pool: OriginPool,
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
        self._pools: dict[Origin, OriginPool] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response as soon as the head has arrived.

        Raises:
            httpx.TransportError: A subclass saying what failed: ``PoolTimeout``,
                ``ConnectError``, ``ConnectTimeout``, ``WriteError``, ``WriteTimeout``,
                ``ReadError``, ``ReadTimeout`` or ``RemoteProtocolError``.
        """
        pool = self._pool(_origin_of(request))
        timeouts: Mapping[str, Any] = request.extensions.get("timeout", _NO_TIMEOUTS)
        method = request.method.encode()
        head = encode_head(method, request.url.raw_path, request.headers.raw)
        stream = request.stream
        body: bytes | httpx.AsyncByteStream = (
            b"".join(stream) if isinstance(stream, httpx.ByteStream) else stream  # type: ignore[assignment]
        )
        chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
        await pool.acquire(timeouts.get("pool"))
        try:
            conn = await self._exchange(
                pool, method, head, body=body, timeouts=timeouts, chunked=chunked
            )
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

    async def fetch(
        self,
        origin: Origin,
        method: bytes,
        *,
        head: bytes,
        body: bytes = b"",
        connect_timeout: float | None = None,
    ) -> RawResponse:
        """Exchange one request and read its whole response, without httpx's objects.

        The fast path of :class:`~anyop.kube.sessions.SessionPool` for plain API requests:
        building an ``httpx.Request`` (URL parsing, header merging) and an ``httpx.Response``
        costs about a quarter of the client's CPU per request. No per-phase timeouts apply:
        the caller bounds the whole exchange with a cancel scope. The connect timeout is
        ``connect_timeout``, else the transport's. Content codings are left for the caller to
        undo.

        Args:
            origin: Where to send it (its ``watch`` must be false).
            method: The request method, as in ``head``.
            head: The request line and headers, already checked for line breaks (see
                :func:`~anyop.kube.http11.encode_head`), with ``Content-Length`` if there is
                a body.
            body: The whole body.
            connect_timeout: Seconds that a new connection's TCP connect and TLS handshake
                may take (``settings.networking.connect_timeout``).

        Raises:
            httpx.TransportError: ``ConnectError``, ``ConnectTimeout``, ``WriteError``,
                ``ReadError`` or ``RemoteProtocolError``; the connection is closed.
        """
        pool = self._pool(origin)
        timeouts = _NO_TIMEOUTS if connect_timeout is None else {"connect": connect_timeout}
        await pool.acquire(None)
        try:
            conn = await self._exchange(
                pool, method, head, body=body, timeouts=timeouts, whole=True
            )
        except BaseException:
            pool.release()
            raise
        response = (conn.status, conn.headers, conn.take_body())
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

    def _check_in(self, pool: OriginPool, conn: Http11Connection) -> None:
        """Return a connection whose response has ended: park it for reuse, or close it."""
        if conn.reusable and not self._closed:
            conn.park(time.monotonic())
            pool.idle.append(conn)
            pool.release()
        else:
            self._discard(pool, conn)

    def _discard(self, pool: OriginPool, conn: Http11Connection) -> None:
        """Close a connection that must not be reused and free its slot."""
        try:
            conn.close()
        finally:
            pool.release()

    def _pool(self, origin: Origin) -> OriginPool:
        pool = self._pools.get(origin)
        if pool is None:
            if self._closed:
                raise RuntimeError("The KubeTransport is closed")
            if origin.scheme not in DEFAULT_PORTS:
                raise httpx.UnsupportedProtocol(f"Unsupported URL scheme: {origin.scheme!r}")
            pool = self._pools[origin] = OriginPool(origin, None if origin.watch else self._limit)
        return pool

    async def _checkout(self, pool: OriginPool, timeouts: Mapping[str, Any]) -> Http11Connection:
        """Return an idle connection (the most recently used one) or a new one."""
        if pool.idle:
            now = time.monotonic()
            while pool.idle:
                conn = pool.idle.pop()
                if not conn.is_stale(now):
                    return conn
                conn.close()
        return await self._connect(pool, timeouts)

    async def _connect(self, pool: OriginPool, timeouts: Mapping[str, Any]) -> Http11Connection:
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
        self,
        pool: OriginPool,
        method: bytes,
        head: bytes,
        *,
        body: bytes | httpx.AsyncByteStream,
        timeouts: Mapping[str, Any],
        chunked: bool = False,
        whole: bool = False,
    ) -> Http11Connection:
        """Send the request and read the response head (``whole``: all of the response).

        A failed request is sent once more, on a new connection, if :func:`resendable` allows.
        """
        conn = await self._checkout(pool, timeouts)
        try:
            await _send_and_receive(
                conn, head, body, timeouts=timeouts, chunked=chunked, whole=whole
            )
        except DISCONNECTS as exc:
            conn.close()
            replayable = isinstance(body, bytes)
            if not resendable(
                method, exc, replayable=replayable, reused=conn.reused, answered=conn.received
            ):
                raise
        except BaseException:
            conn.close()
            raise
        else:
            return conn
        conn = await self._connect(pool, timeouts)
        try:
            await _send_and_receive(
                conn, head, body, timeouts=timeouts, chunked=chunked, whole=whole
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def _response(
        self, pool: OriginPool, conn: Http11Connection, read_timeout: float | None
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


def _origin_of(request: httpx.Request) -> Origin:
    url = request.url
    scheme = url.scheme
    watch = url.params.get("watch") in _WATCHING
    sni: str | None = request.extensions.get("sni_hostname")
    return Origin(scheme, url.host, url.port or DEFAULT_PORTS.get(scheme, 0), sni, watch)


async def _send_and_receive(
    conn: Http11Connection,
    head: bytes,
    body: bytes | httpx.AsyncByteStream,
    *,
    timeouts: Mapping[str, Any],
    chunked: bool,
    whole: bool,
) -> None:
    """Send the whole request on ``conn``, then receive the response head (``whole``: all)."""
    write_timeout = timeouts.get("write")
    if isinstance(body, bytes):
        await conn.send_request(head, body, write_timeout)
    else:
        await conn.send_request(head, b"", write_timeout)
        await conn.send_stream(body, chunked, write_timeout)
    read_timeout = timeouts.get("read")
    if whole:
        while not conn.complete:
            await conn.receive(read_timeout)
    else:
        while not conn.head_received:
            await conn.receive(read_timeout)
