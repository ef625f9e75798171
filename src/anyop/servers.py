"""Serving ASGI apps with Hypercorn inside the caller's task group, on Trio or asyncio.

The listening socket is bound here, before Hypercorn starts, so the bound address (port 0 picks a
free one) is known at once on both backends and is what ``await tg.start(serve_asgi, ...)``
returns. Stopping is a cancellation of the serving task: Hypercorn gets a graceful shutdown bounded
in time, then whatever is left is cancelled.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import sniffio

from anyop.asyncio_server import CUT_WAIT, serve_hypercorn_asyncio

__all__ = [
    "ASGIApp",
    "BoundAddress",
    "TLSFiles",
    "lifespan_ready",
    "serve_asgi",
]

logger = logging.getLogger("anyop.servers")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class BoundAddress:
    """Where a server listens."""

    host: str
    port: int
    tls: bool = False

    def url(self, path: str = "") -> str:
        """The URL of a path on this server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"


@dataclass(frozen=True)
class TLSFiles:
    """A serving certificate, and optionally the CA that client certificates must chain to."""

    certfile: Path
    keyfile: Path
    client_ca: Path | None = None
    password: str | None = None


async def lifespan_ready(receive: Receive, send: Send) -> None:
    """Answer the ASGI lifespan protocol (Hypercorn's Trio worker requires an answer)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _config(
    fd: int, tls: TLSFiles | None, *, graceful: float, context: ssl.SSLContext | None
) -> Any:
    from hypercorn.config import Config

    class _Config(Config):
        """Serves with a ready-made SSL context, if one is given (it can be reloaded live)."""

        @property
        def ssl_enabled(self) -> bool:
            return context is not None or bool(super().ssl_enabled)

        def create_ssl_context(self) -> ssl.SSLContext | None:
            return context if context is not None else super().create_ssl_context()

    config = _Config()
    config.bind = [f"fd://{fd}"]
    config.accesslog = None
    config.errorlog = logger
    config.graceful_timeout = graceful
    config.keep_alive_timeout = 75
    if tls is not None:
        config.certfile = str(tls.certfile)
        config.keyfile = str(tls.keyfile)
        config.keyfile_password = tls.password
        if tls.client_ca is not None:
            config.ca_certs = str(tls.client_ca)
            config.verify_mode = ssl.CERT_REQUIRED
    return config


async def _hypercorn(app: ASGIApp, config: Any, shutdown: anyio.Event) -> None:
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as trio_serve

        await trio_serve(app, config, shutdown_trigger=shutdown.wait)  # type: ignore[arg-type]
    else:
        await serve_hypercorn_asyncio(app, config, shutdown)


def _disconnecting_at(shutdown: anyio.Event, app: ASGIApp) -> ASGIApp:
    """``app``, whose requests see the client disconnect once the server stops.

    A request whose client sent half of its body would otherwise keep its connection busy until
    the graceful timeout ends and the connection is cut. Seeing ``http.disconnect``, the app
    ends the request at once.
    """

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def receive_until_shutdown() -> MutableMapping[str, Any]:
            received: list[MutableMapping[str, Any]] = []
            if not shutdown.is_set():
                async with anyio.create_task_group() as tg:

                    async def get() -> None:
                        received.append(await receive())
                        tg.cancel_scope.cancel()

                    async def stop() -> None:
                        await shutdown.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(get)
                    tg.start_soon(stop)
            return received[0] if received else {"type": "http.disconnect"}

        await app(scope, receive_until_shutdown, send)

    return wrapped


async def serve_asgi(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    tls: TLSFiles | None = None,
    context: ssl.SSLContext | None = None,
    read_timeout: int | None = None,
    graceful_timeout: float = 2.0,
    task_status: anyio.abc.TaskStatus[BoundAddress] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve an ASGI app until cancelled.

    Args:
        app: The ASGI application; it must answer the lifespan protocol.
        host: The address to listen on.
        port: The port; ``0`` picks a free one.
        tls: Serve HTTPS with these files (and require client certificates if a CA is given).
        context: Serve HTTPS with this context instead (it may be changed while serving, e.g.
            to load a renewed certificate).
        read_timeout: Close connections that send nothing for this many seconds.
        graceful_timeout: On cancellation, how long in-flight requests may still finish.
        task_status: Receives the bound address once the socket listens.

    Raises:
        OSError: The address cannot be bound (e.g. the port is in use).
    """
    sock = _listening_socket(host, port)
    secure = tls is not None or context is not None
    bound = BoundAddress(host, int(sock.getsockname()[1]), tls=secure)
    config = _config(
        sock.detach(), tls, graceful=graceful_timeout, context=context
    )  # Hypercorn owns the socket
    config.read_timeout = read_timeout
    shutdown, finished = anyio.Event(), anyio.Event()
    hard_stop = anyio.CancelScope(shield=True)  # Hypercorn stops by its trigger, not by our cancel

    async def run() -> None:
        try:
            with hard_stop:
                await _hypercorn(_disconnecting_at(shutdown, app), config, shutdown)
        except Exception as error:
            if not hard_stop.cancel_called:
                raise
            # Stopped by force in the middle of its own shutdown: what it raises then is the
            # stop, not a failure.
            logger.debug("The server was stopped by force during its shutdown: %r", error)
        finally:
            finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        task_status.started(bound)
        try:
            await finished.wait()
        finally:
            shutdown.set()
            with anyio.move_on_after(graceful_timeout + 1 + 2 * CUT_WAIT, shield=True):
                await finished.wait()
            hard_stop.cancel()
