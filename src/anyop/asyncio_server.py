"""Hypercorn's HTTP connections on an asyncio stream server whose stop closes them, never cancels.

Hypercorn's own asyncio runner ends the connections still open after its graceful timeout by
cancelling their tasks. Python 3.11's stream server reports every connection task that ends
cancelled as an error of the event loop (``Exception in callback
StreamReaderProtocol.connection_made...``), and a runner stopped during that wait leaves a
gathered future whose exception nobody retrieves. Clients routinely hold connections at a stop
(a keep-alive connection, half a request, a TLS close that the peer never answers), so this
runner ends them by closing their transports:

1. Stop accepting; tell idle connections to close (Hypercorn's ``terminated`` event).
2. Wait up to the graceful timeout for the connections to end by themselves.
3. Shut down the sockets still open (no TLS close handshake): their transports read the end of
   the stream and close, and their tasks return.
4. A task that still runs after that (an application that ignores the disconnect) is cancelled
   and ends quietly: this module's own connection coroutine takes that cancellation as its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass, field
from typing import Any

import anyio

__all__ = ["serve_hypercorn_asyncio"]

logger = logging.getLogger("anyop.servers")

CUT_WAIT = 1.0
"""Seconds that cut connections get to end before their tasks are cancelled."""


@dataclass
class _Connections:
    """The open connections of one server: each task with its transport."""

    open: dict[asyncio.Task[Any], Any] = field(default_factory=dict)  # the transport's socket
    cancelled: set[asyncio.Task[Any]] = field(default_factory=set)
    empty: anyio.Event = field(default_factory=anyio.Event)
    stopping: bool = False

    def add(self, task: asyncio.Task[Any], sock: Any) -> None:
        """Track a connection; one that arrives during the stop (its TLS handshake ended
        late) is cut at once."""
        self.open[task] = sock
        if self.empty.is_set():
            self.empty = anyio.Event()
        if self.stopping:
            _cut(sock)

    def discard(self, task: asyncio.Task[Any]) -> None:
        """Forget a connection that ended."""
        self.open.pop(task, None)
        self.cancelled.discard(task)
        if not self.open:
            self.empty.set()

    def cut(self) -> None:
        """End every open connection's stream at once, without a TLS close handshake."""
        for sock in self.open.values():
            _cut(sock)

    def cancel(self) -> None:
        """Cancel the tasks still open; each ends as if its connection had closed."""
        for task in self.open:
            self.cancelled.add(task)
            task.cancel()

    async def wait_empty(self, seconds: float) -> bool:
        """Whether every connection ended within that many seconds."""
        if self.open:
            with anyio.move_on_after(seconds):
                await self.empty.wait()
        return not self.open


def _cut(sock: Any) -> None:
    """Shut a connection's socket down: its transport reads the end of the stream and closes.

    WARNING: not ``transport.abort()``: Hypercorn closes a connection's writer twice at times,
    and a TLS transport closed twice forgets its protocol, so its abort does nothing while the
    close waits for a peer that never answers (30 seconds).
    """
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


async def serve_hypercorn_asyncio(app: Any, config: Any, shutdown: anyio.Event) -> None:
    """Serve an ASGI app with Hypercorn's protocol on asyncio until ``shutdown`` is set.

    Guarantees:
        Returns within ``config.graceful_timeout`` plus two seconds of the shutdown, with no
        connection task left and none ended by a cancellation the loop would report.
    """
    from hypercorn.asyncio.lifespan import Lifespan
    from hypercorn.asyncio.worker_context import WorkerContext
    from hypercorn.utils import wrap_app

    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    loop = asyncio.get_running_loop()
    state: dict[str, Any] = {}
    lifespan = Lifespan(wrapped, config, loop, state)
    lifespan_task = loop.create_task(lifespan.handle_lifespan())
    await lifespan.wait_for_startup()
    context = WorkerContext(None)
    connections = _Connections()
    servers = await _start_servers(wrapped, config, context, state, connections)
    try:
        await shutdown.wait()
    finally:
        for server in servers:
            server.close()
        with anyio.CancelScope(shield=True):
            await _close_connections(context, connections, config.graceful_timeout)
            await _end_lifespan(lifespan, lifespan_task, grace=config.graceful_timeout)


async def _start_servers(
    app: Any, config: Any, context: Any, state: dict[str, Any], connections: _Connections
) -> list[asyncio.Server]:
    from hypercorn.asyncio.tcp_server import TCPServer

    loop = asyncio.get_running_loop()

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task, writer.get_extra_info("socket"))
        try:
            await TCPServer(app, loop, config, context, state, reader, writer).run()
        except TimeoutError:  # raised by Hypercorn's close only, so the TLS close timed out
            logger.debug("A client did not answer the closing of its TLS connection.")
        except asyncio.CancelledError:
            if task not in connections.cancelled:
                raise
            logger.debug("A connection that ignored its cut at the stop was cancelled.")
        finally:
            connections.discard(task)

    sockets = config.create_sockets()
    servers = []
    for sock in sockets.secure_sockets:
        started = asyncio.start_server(
            serve_one,
            sock=sock,
            ssl=config.create_ssl_context(),
            ssl_handshake_timeout=config.ssl_handshake_timeout,
        )
        servers.append(await started)
    for sock in sockets.insecure_sockets:
        servers.append(await asyncio.start_server(serve_one, sock=sock))
    return servers


async def _close_connections(context: Any, connections: _Connections, graceful: float) -> None:
    """End every connection (see the module's steps), within ``graceful`` + 2 s."""
    connections.stopping = True
    await context.terminated.set()
    if await connections.wait_empty(graceful):
        return
    logger.debug("Connections still open after the graceful timeout are cut.")
    connections.cut()
    if await connections.wait_empty(CUT_WAIT):
        return
    connections.cancel()
    await connections.wait_empty(CUT_WAIT)


async def _end_lifespan(lifespan: Any, task: asyncio.Task[None], *, grace: float) -> None:
    """Send the lifespan shutdown, then end the lifespan task and retrieve how it ended."""
    with anyio.move_on_after(grace):
        await lifespan.wait_for_shutdown()
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled() and task.exception() is not None:
        logger.error("The server's lifespan failed: %r", task.exception())
