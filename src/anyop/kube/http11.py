"""One HTTP/1.1 client connection on a non-blocking socket, with TLS, parsed by httptools.

:class:`Http11Connection` exchanges one request and response at a time and raises httpx's
exceptions. It connects a socket of its own (resolution, then happy eyeballs over the addresses);
sends go straight to the kernel, and only waits go through AnyIO. On asyncio that
costs about half the CPU of AnyIO's socket stream (a loop iteration per send, reading paused and
resumed per receive); on Trio the same. TLS runs on :class:`ssl.SSLObject`, so one receive
decrypts every record that came: a watch hands httpx few large chunks, not many 4 KiB ones.
Closing skips TLS's close_notify, and a peer's close without one is a plain end of stream (Go
servers close so): HTTP's framing tells a complete response from a cut one.
"""

from __future__ import annotations

import enum
import select
import socket
import ssl
from collections.abc import AsyncIterable, Sequence
from typing import Protocol

import anyio
import httptools
import httpx

from anyop.kube.sockets import SocketOption, connect_socket

__all__ = [
    "Http11Connection",
    "SocketOption",
    "encode_chunk",
    "encode_fields",
    "encode_head",
    "open_connection",
]

RECEIVE_SIZE = 65536
# A send this small into an idle connection's empty socket buffer (at least 4 KiB on Linux,
# even under memory pressure) completes at once: it needs no write deadline.
_SMALL_SEND = 2048
_NO_BODY_STATUSES = frozenset({204, 304})
_LAST_CHUNK = b"0\r\n\r\n"
_VERSIONS = {"1.1": b"HTTP/1.1", "1.0": b"HTTP/1.0"}


def encode_head(method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """Return the request line and headers of an HTTP/1.1 request, ending in an empty line.

    Args:
        method: The request method, such as ``b"GET"``.
        target: The request target: the path and the query.
        headers: The header fields, as given (httpx already adds ``Host``).

    Raises:
        httpx.LocalProtocolError: A line break in a header (httpx lets them through) or in the
            request line, which would smuggle in headers of its own.
    """
    line = method + b" " + target + b" HTTP/1.1\r\n"
    if line.count(b"\n") != 1 or line.count(b"\r") != 1:
        raise httpx.LocalProtocolError("A line break in a request line")
    return line + encode_fields(headers) + b"\r\n"


def encode_fields(headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """Return header fields as lines, each ending in CRLF.

    Raises:
        httpx.LocalProtocolError: A line break in a name or a value.
    """
    block = b"".join([name + b": " + value + b"\r\n" for name, value in headers])
    if block.count(b"\n") != len(headers) or block.count(b"\r") != len(headers):
        raise httpx.LocalProtocolError("A line break in a request header")
    return block


def encode_chunk(data: bytes) -> bytes:
    """Return ``data`` framed as one chunk of a chunked request body (no data: nothing)."""
    return b"%x\r\n%b\r\n" % (len(data), data) if data else b""


class _Wire(Protocol):
    async def send(self, data: bytes, /) -> None: ...

    async def receive(self, max_bytes: int, /) -> bytes: ...


class _SocketWire:
    """A connected non-blocking socket: the kernel takes sends and gives receives at once.

    Args:
        sock: The socket, non-blocking; the wire owns it.
    """

    __slots__ = ("_sent", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._sent = False

    async def send(self, data: bytes, /) -> None:
        """Send all of ``data``, waiting only while the kernel's buffer is full."""
        self._sent = True
        view = memoryview(data)
        while view:
            try:
                view = view[self.sock.send(view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.sock)

    async def receive(self, max_bytes: int, /) -> bytes:
        """Return the next bytes, waiting until some arrive.

        Raises:
            anyio.EndOfStream: The peer closed its side.
        """
        if self._sent:  # An answer to what was just sent cannot be there yet: wait first.
            self._sent = False
            await anyio.wait_readable(self.sock)
        while True:
            try:
                data = self.sock.recv(max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    def close(self) -> None:
        """Close the socket, waking any task that waits on it."""
        if self.sock.fileno() >= 0:
            anyio.notify_closing(self.sock)
            self.sock.close()


class _TlsWire:
    """TLS on a socket; a receive returns all plaintext of the records that came with it.

    Args:
        tcp: The connected socket.
        tls: The client side of the TLS session, wrapping ``incoming`` and ``outgoing``.
        incoming: Bytes from the peer, not yet decrypted.
        outgoing: Bytes for the peer, already encrypted.
    """

    __slots__ = ("_eof", "_incoming", "_outgoing", "_tcp", "_tls")

    def __init__(
        self,
        tcp: _SocketWire,
        tls: ssl.SSLObject,
        *,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
    ) -> None:
        self._tcp = tcp
        self._tls = tls
        self._incoming = incoming
        self._outgoing = outgoing
        self._eof = False

    async def handshake(self) -> None:
        """Run the TLS handshake.

        Raises:
            ssl.SSLError: The handshake failed (e.g. the certificate did not verify).
            anyio.EndOfStream: The peer closed during the handshake.
        """
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush()
                self._incoming.write(await self._tcp.receive(RECEIVE_SIZE))
            else:
                await self._flush()
                return

    async def send(self, data: bytes, /) -> None:
        """Encrypt and send ``data``."""
        self._tls.write(data)
        await self._tcp.send(self._outgoing.read())

    async def receive(self, max_bytes: int, /) -> bytes:
        """Return the plaintext of every complete record received next (``max_bytes`` of TLS).

        Raises:
            anyio.EndOfStream: The peer closed (with or without close_notify).
        """
        while not self._eof:
            self._incoming.write(await self._tcp.receive(max_bytes))
            plaintext = self._decrypt()
            if self._outgoing.pending:  # TLS's own replies, such as to a key update
                await self._flush()
            if plaintext:
                return plaintext
        raise anyio.EndOfStream

    def _decrypt(self) -> bytes:
        chunks = []
        try:
            # A complete record leaves nothing pending: no SSLWantReadError to raise and catch.
            while self._incoming.pending or self._tls.pending():
                data = self._tls.read(RECEIVE_SIZE)
                if not data:  # close_notify
                    self._eof = True
                    break
                chunks.append(data)
        except ssl.SSLWantReadError:  # the rest of a record is still on its way
            pass
        except ssl.SSLZeroReturnError:
            self._eof = True
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _flush(self) -> None:
        if self._outgoing.pending:
            await self._tcp.send(self._outgoing.read())


class _Phase(enum.Enum):
    """Where the connection is in the current exchange."""

    IDLE = enum.auto()
    AWAITING_HEAD = enum.auto()
    READING_BODY = enum.auto()
    COMPLETE = enum.auto()


class Http11Connection:
    """A keep-alive HTTP/1.1 connection that exchanges one request and response at a time.

    The connection is the httptools parser's callback object: its ``on_*`` methods collect the
    response head and body as bytes arrive.

    Args:
        tcp: The connected socket (closed with the connection).
        wire: What to send and receive on: ``tcp`` itself, or TLS over it.
        expiry: Seconds an idle connection may stay in a pool.
    """

    __slots__ = (
        "_body",
        "_closed",
        "_head_only",
        "_parser",
        "_phase",
        "_poller",
        "_tcp",
        "_wire",
        "expires_at",
        "expiry",
        "headers",
        "keep_alive",
        "reason",
        "received",
        "reused",
        "status",
        "version",
    )

    def __init__(self, tcp: _SocketWire, wire: _Wire, expiry: float) -> None:
        self._tcp = tcp
        self._wire = wire
        self._parser = httptools.HttpResponseParser(self)
        self._poller = _poller_for(tcp.sock)
        self._closed = False
        self._phase = _Phase.IDLE
        self._body: list[bytes] = []
        self._head_only = False
        self.expiry = expiry
        self.expires_at = 0.0
        self.reused = False
        self.received = False
        self.keep_alive = True
        self.status = 0
        self.reason = b""
        self.version = b"HTTP/1.1"
        self.headers: list[tuple[bytes, bytes]] = []

    # -- state ------------------------------------------------------------------------------

    @property
    def head_received(self) -> bool:
        """Whether the response's status line and headers have arrived."""
        return self._phase is _Phase.READING_BODY or self._phase is _Phase.COMPLETE

    @property
    def complete(self) -> bool:
        """Whether the whole response, body included, has arrived."""
        return self._phase is _Phase.COMPLETE

    @property
    def reusable(self) -> bool:
        """Whether another request may follow on this connection."""
        return self._phase is _Phase.COMPLETE and self.keep_alive

    def take_body(self) -> bytes:
        """Return (and forget) the body bytes parsed so far."""
        body = self._body
        if not body:
            return b""
        self._body = []
        return body[0] if len(body) == 1 else b"".join(body)

    def is_stale(self, now: float) -> bool:
        """Whether an idle connection must not be reused: expired, closed, or closed by the peer.

        An idle HTTP/1.1 connection has nothing to read: readable means EOF (or garbage).
        """
        if self._closed or now >= self.expires_at:
            return True
        return self._poller is not None and bool(self._poller.poll(0))

    def park(self, now: float) -> None:
        """Mark the connection idle from ``now`` (``now`` is :func:`time.monotonic`)."""
        self.expires_at = now + self.expiry
        self.reused = True
        self._phase = _Phase.IDLE

    # -- I/O --------------------------------------------------------------------------------

    async def send_request(self, head: bytes, body: bytes, write_timeout: float | None) -> None:
        """Start an exchange: send the request head and a complete body.

        Args:
            head: The request line and headers, from :func:`encode_head`; a ``HEAD`` request
                expects a response without a body.
            body: The whole body (may be empty).
            write_timeout: Seconds each send may take.

        Raises:
            httpx.WriteTimeout: A send took too long.
            httpx.WriteError: The connection broke.
        """
        self._begin(head.startswith(b"HEAD "))
        if len(head) + len(body) <= _SMALL_SEND:
            await self.send(head + body, None)
        elif len(body) < RECEIVE_SIZE:
            await self.send(head + body, write_timeout)
        else:
            await self.send(head, write_timeout)
            await self.send(body, write_timeout)

    async def send_stream(
        self, stream: AsyncIterable[bytes], chunked: bool, write_timeout: float | None
    ) -> None:
        """Send a streamed request body (after the head), framed in chunks if ``chunked``.

        Raises:
            httpx.WriteTimeout: A send took too long.
            httpx.WriteError: The connection broke.
        """
        async for data in stream:
            if data:
                await self.send(encode_chunk(data) if chunked else data, write_timeout)
        if chunked:
            await self.send(_LAST_CHUNK, write_timeout)

    async def send(self, data: bytes, write_timeout: float | None) -> None:
        """Send bytes within ``write_timeout`` seconds.

        Raises:
            httpx.WriteTimeout: The send took too long.
            httpx.WriteError: The connection broke.
        """
        try:
            if write_timeout is None:
                await self._wire.send(data)
                return
            with anyio.CancelScope(deadline=anyio.current_time() + write_timeout) as scope:
                await self._wire.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise httpx.WriteError(_describe(exc, "The connection broke while sending")) from exc
        if scope.cancelled_caught:
            raise httpx.WriteTimeout(f"Sending took longer than {write_timeout} s")

    async def receive(self, read_timeout: float | None) -> None:
        """Receive once (waiting at most ``read_timeout`` seconds) and parse what came.

        Raises:
            httpx.ReadTimeout: Nothing arrived in time.
            httpx.ReadError: The connection broke.
            httpx.RemoteProtocolError: The server closed early or sent something that is
                not HTTP/1.1.
        """
        try:
            if read_timeout is None:
                data = await self._wire.receive(RECEIVE_SIZE)
            else:
                with anyio.CancelScope(deadline=anyio.current_time() + read_timeout) as scope:
                    data = await self._wire.receive(RECEIVE_SIZE)
                if scope.cancelled_caught:
                    raise httpx.ReadTimeout(f"Nothing arrived within {read_timeout} s")
        except anyio.EndOfStream:
            self._end_of_stream()
            return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise httpx.ReadError(_describe(exc, "The connection broke while reading")) from exc
        self.received = True
        self._feed(data)

    def close(self) -> None:
        """Close the connection at once (no TLS close_notify: nothing waits for the peer)."""
        self.keep_alive = False
        self._closed = True
        self._tcp.close()

    # -- parsing ----------------------------------------------------------------------------

    def _begin(self, head_only: bool) -> None:
        self._phase = _Phase.AWAITING_HEAD
        self._head_only = head_only
        self.received = False
        self.headers = []

    def _feed(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            raise httpx.RemoteProtocolError("The server switched protocols: unsupported") from exc
        except httptools.HttpParserError as exc:
            raise httpx.RemoteProtocolError(f"Malformed HTTP/1.1 response: {exc}") from exc
        if self._head_only and self._phase is _Phase.COMPLETE:
            # httptools cannot be told that a HEAD response has no body: start afresh.
            self._parser = httptools.HttpResponseParser(self)

    def _end_of_stream(self) -> None:
        self.keep_alive = False
        if self._phase is _Phase.READING_BODY and self._body_ends_at_eof():
            self._phase = _Phase.COMPLETE
        elif self._phase is not _Phase.COMPLETE:
            raise httpx.RemoteProtocolError(
                "Server disconnected in the middle of a response."
                if self.received
                else "Server disconnected without sending a response."
            )

    def _body_ends_at_eof(self) -> bool:
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def on_message_begin(self) -> None:
        """httptools: a response starts; one that nobody asked for spoils the connection."""
        if self._phase is not _Phase.AWAITING_HEAD:
            self.keep_alive = False

    def on_status(self, reason: bytes) -> None:
        """httptools: the status line's reason phrase."""
        if self._phase is _Phase.AWAITING_HEAD:
            self.reason = reason

    def on_header(self, name: bytes, value: bytes) -> None:
        """httptools: one header field."""
        if self._phase is _Phase.AWAITING_HEAD:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        """httptools: the head is complete (an interim 1xx response is skipped)."""
        if self._phase is not _Phase.AWAITING_HEAD:
            return
        status = self._parser.get_status_code()
        if status < 200:
            self.headers = []
            return
        self.status = status
        self.version = _VERSIONS.get(self._parser.get_http_version(), b"HTTP/1.0")
        self._phase = _Phase.READING_BODY
        if self._head_only or status in _NO_BODY_STATUSES:
            self._finish()

    def on_body(self, body: bytes) -> None:
        """httptools: a piece of the body."""
        if self._phase is _Phase.READING_BODY:
            self._body.append(body)

    def on_message_complete(self) -> None:
        """httptools: the response is complete."""
        if self._phase is _Phase.READING_BODY:
            self._finish()

    def _finish(self) -> None:
        self.keep_alive = self.keep_alive and self._parser.should_keep_alive()
        self._phase = _Phase.COMPLETE


def _poller_for(sock: socket.socket) -> select.poll | None:
    """A poller of the socket's readability; ``None`` where there is none (Windows)."""
    if not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return poller


def _describe(exc: BaseException, fallback: str) -> str:
    cause = exc.__cause__ if isinstance(exc, anyio.BrokenResourceError) else exc
    return f"{fallback}: {cause!r}" if cause is not None else fallback


async def open_connection(
    host: str,
    port: int,
    *,
    tls: tuple[ssl.SSLContext, str] | None,
    connect_timeout: float | None,
    socket_options: Sequence[SocketOption],
    expiry: float,
) -> Http11Connection:
    """Connect to ``host:port`` (TCP, then TLS if asked) and return an idle connection.

    Args:
        host: The host name or IP address.
        port: The TCP port.
        tls: The TLS settings and the server name to send and verify; ``None`` for plain TCP.
        connect_timeout: Seconds that the TCP connect and the TLS handshake may take together.
        socket_options: ``setsockopt`` arguments applied to the new socket.
        expiry: Seconds the connection may idle in a pool.

    Raises:
        httpx.ConnectTimeout: Connecting took too long.
        httpx.ConnectError: The connection or the TLS handshake failed, or the server chose
            a protocol other than HTTP/1.1 via ALPN.
    """
    with anyio.move_on_after(connect_timeout) as scope:
        tcp = await _connect(host, port, socket_options)
        try:
            wire = tcp if tls is None else await _secure(tcp, *tls)
        except BaseException:
            tcp.close()
            raise
    if scope.cancelled_caught:
        raise httpx.ConnectTimeout(f"Connecting to {host}:{port} took over {connect_timeout} s")
    return Http11Connection(tcp, wire, expiry)


async def _connect(host: str, port: int, options: Sequence[SocketOption]) -> _SocketWire:
    """Connect a socket of our own (see :func:`~anyop.kube.sockets.connect_socket`)."""
    try:
        sock = await connect_socket(host, port, options)
    except OSError as exc:
        raise httpx.ConnectError(f"Cannot connect to {host}:{port}: {exc!r}") from exc
    return _SocketWire(sock)


async def _secure(tcp: _SocketWire, ssl_context: ssl.SSLContext, server_name: str) -> _TlsWire:
    """Run the TLS handshake on ``tcp``; return the secured wire."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl_context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    wire = _TlsWire(tcp, tls, incoming=incoming, outgoing=outgoing)
    try:
        await wire.handshake()
    except (OSError, anyio.EndOfStream) as exc:
        raise httpx.ConnectError(_describe(exc, f"TLS with {server_name} failed")) from exc
    alpn = tls.selected_alpn_protocol()
    if alpn not in (None, "http/1.1"):
        raise httpx.ConnectError(f"The server chose {alpn!r} via ALPN; only http/1.1 is spoken")
    return wire
