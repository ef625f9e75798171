"""Connecting a TCP socket that no library owns: resolution, then happy eyeballs (RFC 8305).

:mod:`anyop.kube.http11` drives the socket itself (sends straight to the kernel, only waits
through AnyIO), so the socket is AnyIO-free from the start: closing it never half-closes a
shared connection (AnyIO's asyncio streams before 4.16 send a FIN as they close, even on a
``dup()``, which is why anyop no longer takes sockets over from ``anyio.connect_tcp``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import socket
from collections.abc import Sequence
from typing import Any

import anyio

__all__ = ["HAPPY_EYEBALLS_DELAY", "Address", "SocketOption", "connect_order", "connect_socket"]

SocketOption = tuple[int, int, int]
"""``setsockopt`` arguments: level, name, value."""

Address = tuple[int, tuple[Any, ...]]
"""A socket family and a socket address for it, as :func:`socket.getaddrinfo` gives them."""

HAPPY_EYEBALLS_DELAY = 0.25
"""Seconds an attempt has before the next address is tried beside it (RFC 8305)."""


async def _resolve(host: str, port: int) -> list[Address]:
    try:  # an IP address needs no resolver (and no thread for one)
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return [(family, address) for family, _, _, _, address in infos]
    if ip.version == 6:
        return [(socket.AF_INET6, (str(ip), port, 0, 0))]
    return [(socket.AF_INET, (str(ip), port))]


def connect_order(addresses: Sequence[Address]) -> list[Address]:
    """The addresses to try, in turn: families alternating, the first family first, no repeats.

    Raises:
        OSError: There are none.
    """
    unique = list(dict.fromkeys(addresses))
    if not unique:
        raise OSError("The name resolved to no address")
    first = [a for a in unique if a[0] == unique[0][0]]
    other = [a for a in unique if a[0] != unique[0][0]]
    return [a for pair in itertools.zip_longest(first, other) for a in pair if a is not None]


async def _first_connected(
    addresses: Sequence[Address], options: Sequence[SocketOption]
) -> socket.socket:
    """Connect to the first of ``addresses`` that answers; the next is tried beside the ones
    still connecting after :data:`HAPPY_EYEBALLS_DELAY`, or at once when one fails.

    Raises:
        OSError: Every address failed (the last one's error, with the others in the message).
    """
    if len(addresses) == 1:
        return await _attempt(addresses[0], options)
    connected: list[socket.socket] = []
    errors: list[tuple[Address, OSError]] = []

    async def attempt(address: Address, failed: anyio.Event, race: anyio.CancelScope) -> None:
        try:
            sock = await _attempt(address, options)
        except OSError as exc:
            errors.append((address, exc))
            failed.set()
            return
        connected.append(sock)
        race.cancel()

    try:
        async with anyio.create_task_group() as group:
            for address in addresses:
                failed = anyio.Event()
                group.start_soon(attempt, address, failed, group.cancel_scope)
                with anyio.move_on_after(HAPPY_EYEBALLS_DELAY):
                    await failed.wait()
    except BaseException:
        for sock in connected:
            sock.close()
        raise
    if not connected:
        detail = "; ".join(f"{address[1][0]}: {exc}" for address, exc in errors)
        last = errors[-1][1]
        raise OSError(last.errno, f"Every address failed ({detail})") from last
    for extra in connected[1:]:  # two that answered at once: keep the first
        extra.close()
    return connected[0]


async def _attempt(address: Address, options: Sequence[SocketOption]) -> socket.socket:
    """A non-blocking socket connected to ``address`` (closed again if that fails)."""
    family, sockaddr = address
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        for level, name, value in options:
            # An option that this platform or socket does not support: go without it.
            with contextlib.suppress(OSError):
                sock.setsockopt(level, name, value)
        try:
            sock.connect(sockaddr)
        except BlockingIOError:
            await anyio.wait_writable(sock)
            if code := sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                raise OSError(code, os.strerror(code)) from None
    except BaseException:
        sock.close()
        raise
    return sock


async def connect_socket(host: str, port: int, options: Sequence[SocketOption]) -> socket.socket:
    """A non-blocking socket connected to ``host:port``, with ``options`` set where supported.

    Raises:
        OSError: The name did not resolve, or no address answered.
    """
    return await _first_connected(connect_order(await _resolve(host, port)), options)
