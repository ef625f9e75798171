"""The fake API over a real loopback socket: plain HTTP/1.1 with keep-alive and chunked watches.

For clients that cannot take an in-process transport: ``anyop run`` in a subprocess, kubectl,
any HTTP client, through the kubeconfig that :class:`~anyop.testing.fake.cluster.FakeCluster`
writes. Runs in the caller's task group on Trio or asyncio.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator

import anyio
import h11
import httpx
from anyio.abc import ByteStream, Listener, SocketAttribute, TaskStatus
from anyio.streams.tls import TLSListener

from anyop.testing.fake.api import ApiResponse
from anyop.testing.fake.faults import ConnectionDropped
from anyop.testing.fake.http_reasons import reason_phrase
from anyop.testing.fake.inprocess_transport import Responder, api_request_of
from anyop.testing.fake.statuses import status_body

__all__ = ["serve_loopback"]

logger = logging.getLogger(__name__)

_MAX_RECEIVE = 65536


async def serve_loopback(
    respond: Responder,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    ssl_context: ssl.SSLContext | None = None,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the fake API on ``host:port`` until cancelled (over TLS with ``ssl_context``).

    Use it as ``port = await tg.start(serve_loopback, respond)``: it reports the bound port
    once it accepts connections.
    """
    tcp = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound = int(tcp.extra(SocketAttribute.local_port))
    listener: Listener[ByteStream] = tcp
    if ssl_context is not None:
        listener = TLSListener(tcp, ssl_context, standard_compatible=False)
    async with listener:
        task_status.started(bound)

        async def serve_one(stream: ByteStream) -> None:
            await _serve_connection(stream, respond)

        await listener.serve(serve_one)


async def _serve_connection(stream: ByteStream, respond: Responder) -> None:
    conn = h11.Connection(h11.SERVER)
    async with stream:
        while True:
            try:
                received = await _receive_request(stream, conn)
            except (h11.RemoteProtocolError, anyio.BrokenResourceError):
                return
            if received is None:
                return
            request, body = received
            headers = dict(request.headers)
            content_type = headers.get(b"content-type", b"application/json").decode()
            target = httpx.URL(request.target.decode())
            method = request.method.decode()
            agent = headers.get(b"user-agent", b"").decode(errors="replace")
            accept = headers.get(b"accept", b"").decode(errors="replace")
            cached = headers.get(b"if-none-match", b"").decode(errors="replace")
            api_request = api_request_of(
                method,
                target,
                content_type=content_type,
                body=body,
                user_agent=agent,
                accept=accept,
                if_none_match=cached,
            )
            try:
                answer = await respond(api_request)
            except ConnectionDropped:
                return
            except Exception as exc:  # a bug of the fake: one request fails, not the server
                logger.exception("FakeCluster failed to answer %s %s", method, target.path)
                answer = _internal_error(exc)
            try:
                await _send_answer(stream, conn, answer)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.LocalProtocolError):
                return
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()


def _internal_error(exc: Exception) -> ApiResponse:
    message = f"FakeCluster failed to answer: {type(exc).__name__}: {exc}"
    return ApiResponse(500, status_body(500, "InternalError", message))


async def _receive_request(
    stream: ByteStream, conn: h11.Connection
) -> tuple[h11.Request, bytes] | None:
    request: h11.Request | None = None
    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive(_MAX_RECEIVE)
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                data = b""
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage) and request is not None:
            return request, body
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None


async def _send_answer(
    stream: ByteStream, conn: h11.Connection, answer: ApiResponse | AsyncIterator[bytes]
) -> None:
    if isinstance(answer, ApiResponse):
        content, head = answer.encoded()
        reason = reason_phrase(answer.status).encode()
        status_line = h11.Response(status_code=answer.status, headers=head, reason=reason)
        await stream.send(conn.send(status_line))
        await stream.send(conn.send(h11.Data(data=content)))
        await stream.send(conn.send(h11.EndOfMessage()))
        return
    head = [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]
    await stream.send(conn.send(h11.Response(status_code=200, headers=head, reason=b"OK")))
    try:
        async for line in answer:
            await stream.send(conn.send(h11.Data(data=line)))
    finally:
        close = getattr(answer, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()
    await stream.send(conn.send(h11.EndOfMessage()))
