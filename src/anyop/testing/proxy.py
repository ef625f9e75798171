"""A TCP proxy that misbehaves on purpose: network faults between an operator and its API server.

TLS passes through untouched (the local control plane's certificate has a 127.0.0.1 SAN), so a
client only changes the port it connects to::

    async with anyio.create_task_group() as tg:
        proxy = FaultyProxy("127.0.0.1", apiserver_port)
        port = await tg.start(proxy.serve)
        ...                      # connect to https://127.0.0.1:<port>
        proxy.blackhole()        # keep every socket open, move no byte (a partition)
        proxy.restore()
        proxy.reset_all()        # RST every open connection (a load balancer's idle reaper)
        proxy.cut_after(4096)    # close each new connection after 4 KiB from the server
        proxy.delay = 2.0        # pause before every chunk from the server
        proxy.throttle = 10_000  # bytes per second from the server

Works on Trio and asyncio. For tests of anyop itself and of operators built on it.
"""

from __future__ import annotations

import functools
import socket
import struct

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

__all__ = ["FaultyProxy"]

_CHUNK = 65536


class FaultyProxy:
    """A TCP proxy to ``host:port`` whose faults can be switched at any moment.

    Attributes:
        delay: Seconds to wait before forwarding each chunk from the server.
        throttle: At most this many bytes per second from the server (``None``: no limit).
        connections: How many connections were accepted so far.
    """

    def __init__(self, host: str, port: int) -> None:
        """Proxy to the server at ``host:port``."""
        self.host, self.port = host, port
        self.delay = 0.0
        self.throttle: float | None = None
        self.connections = 0
        self._flowing = anyio.Event()
        self._flowing.set()
        self._cut_after: int | None = None
        self._open: set[anyio.abc.SocketStream] = set()
        self._scopes: set[anyio.CancelScope] = set()

    def blackhole(self) -> None:
        """Stop moving bytes in both directions; sockets stay open (a silent partition)."""
        if self._flowing.is_set():
            self._flowing = anyio.Event()

    def restore(self) -> None:
        """Move bytes again, and stop cutting new connections."""
        self._flowing.set()
        self._cut_after = None

    def cut_after(self, size: int) -> None:
        """Close each new connection after ``size`` bytes have come from the server."""
        self._cut_after = size

    def reset_all(self) -> None:
        """Reset (RST) every open connection to the client; new ones are accepted as usual."""
        for client in list(self._open):
            raw = client.extra(SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        for scope in list(self._scopes):
            scope.cancel()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Accept connections until cancelled; reports the listening port once bound."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        async with listener:
            task_status.started(listener.extra(SocketAttribute.local_port))
            await listener.serve(self._relay)

    async def _relay(self, client: anyio.abc.SocketStream) -> None:
        self.connections += 1
        self._open.add(client)
        try:
            with anyio.CancelScope() as scope:
                self._scopes.add(scope)
                server = await anyio.connect_tcp(self.host, self.port)
                async with server, anyio.create_task_group() as tg:
                    done = tg.cancel_scope
                    tg.start_soon(functools.partial(self._pump, client, server, False, done=done))
                    tg.start_soon(functools.partial(self._pump, server, client, True, done=done))
        except (OSError, anyio.BrokenResourceError):
            pass
        finally:
            self._scopes.discard(scope)
            self._open.discard(client)
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def _pump(
        self,
        source: anyio.abc.SocketStream,
        target: anyio.abc.SocketStream,
        from_server: bool,
        *,
        done: anyio.CancelScope,
    ) -> None:
        sent = 0
        limit = self._cut_after if from_server else None
        try:
            while True:
                chunk = await source.receive(_CHUNK)
                await self._flowing.wait()
                if from_server:
                    await self._slow_down(len(chunk))
                if limit is not None and sent + len(chunk) >= limit:
                    await target.send(chunk[: limit - sent])
                    break
                await target.send(chunk)
                sent += len(chunk)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        done.cancel()

    async def _slow_down(self, size: int) -> None:
        if self.delay:
            await anyio.sleep(self.delay)
        if self.throttle:
            await anyio.sleep(size / self.throttle)
