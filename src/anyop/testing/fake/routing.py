"""Route anyop's own API clients to fake clusters in the same process, by their URL.

The engine opens its client with :func:`anyop.kube.sessions.default_transport`; while
:func:`routed` is in force, a credential whose server is a fake cluster's in-process URL gets
that cluster's transport instead, and every other credential the usual one. So ``serve()`` and
``anyop.testing``'s operator fixtures talk to a FakeCluster through a kubeconfig or a vault that
names its URL, without a socket (and so on a fake clock too).

The TLS context of such a credential is made in the caller's task rather than in a thread: a
fake clock jumps to its next deadline while a thread works, which would time out the start-up.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx

from anyop.kube import sessions
from anyop.kube.connection import ConnectionInfo

__all__ = ["routed"]

T = TypeVar("T")
TransportMaker = Callable[[], httpx.AsyncBaseTransport]
_PATCHED = ("default_transport", "run_in_thread")  # the names SessionPool looks up at run time
_routes: dict[str, TransportMaker] = {}
_originals: dict[str, Any] = {}


def _routing_transport(
    info: ConnectionInfo, ssl_context: ssl.SSLContext
) -> httpx.AsyncBaseTransport:
    maker = _routes.get(info.server.rstrip("/"))
    if maker is not None:
        return maker()
    factory: sessions.TransportFactory = _originals["default_transport"]
    return factory(info, ssl_context)


async def _thread_unless_fake(fn: Callable[[], T]) -> T:
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, ConnectionInfo) and owner.server.rstrip("/") in _routes:
        return fn()
    result: T = await _originals["run_in_thread"](fn)
    return result


@contextmanager
def routed(url: str, make_transport: TransportMaker) -> Iterator[None]:
    """Within the block, anyop's clients of ``url`` use ``make_transport()``'s transports.

    Raises:
        ValueError: Another fake cluster is routed at the same URL already.
    """
    key = url.rstrip("/")
    if key in _routes:
        raise ValueError(f"A fake cluster is routed at {url} already: give this one another url.")
    if not _routes:
        replacements = {
            "default_transport": _routing_transport,
            "run_in_thread": _thread_unless_fake,
        }
        for name in _PATCHED:
            _originals[name] = getattr(sessions, name)
            setattr(sessions, name, replacements[name])
    _routes[key] = make_transport
    try:
        yield
    finally:
        del _routes[key]
        if not _routes:
            for name in _PATCHED:
                setattr(sessions, name, _originals.pop(name))
