"""The metrics endpoint: HTTPS for authorised readers only, or plain HTTP when asked for.

By default (an ``https://`` URL, or one without a scheme), the metrics are served over HTTPS,
with the certificate from ``settings.server.metrics_certfile``/``metrics_keyfile`` (reloaded when
the files change, as the webhook server's) or a self-signed one, and every request must carry a
bearer token that the API server accepts and authorises for ``get`` on the metrics path
(:mod:`.metrics_access`). Plain HTTP, open to anyone who reaches the port, needs
``settings.server.metrics_insecure`` (``--metrics-insecure``) and an ``http://`` URL, and is
warned about at start-up.
"""

from __future__ import annotations

import functools
import logging
import ssl
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from anyop.engine.operator.health import respond, respond_bytes
from anyop.engine.operator.metrics_access import MetricsAccess, Verdict, bearer_token
from anyop.errors import ConfigError
from anyop.metrics import Metrics, content_type
from anyop.servers import BoundAddress, Receive, Scope, Send, lifespan_ready, serve_asgi
from anyop.settings import ServerSettings
from anyop.webhooks.tls import (
    CertificateFiles,
    ClientVerification,
    follow_files,
    self_signed_context,
    server_context,
)

__all__ = [
    "MetricsAddress",
    "metrics_address",
    "metrics_app",
    "metrics_context",
    "secure_metrics_app",
    "serve_metrics",
]

logger = logging.getLogger("anyop.engine")


@dataclass(frozen=True)
class MetricsAddress:
    """Where and how the metrics are served."""

    host: str
    port: int
    path: str
    secure: bool

    @property
    def url(self) -> str:
        """The endpoint as a URL (the port as configured)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.secure else 'http'}://{host}:{self.port}{self.path}"


def metrics_address(endpoint: str, *, insecure: bool) -> MetricsAddress:
    """Where and how to serve the metrics, from ``--metrics`` and ``--metrics-insecure``. Pure.

    An ``https://`` URL (or one without a scheme) is served securely; an ``http://`` URL only
    with ``insecure``; without a scheme, ``insecure`` means plain HTTP.

    Raises:
        ConfigError: The URL is not ``[https|http://]HOST:PORT[/path]``, is plain HTTP without
            ``insecure``, or is ``https://`` with it.
    """
    given = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
    scheme = given.scheme or ("http" if insecure else "https")
    try:
        port = given.port
    except ValueError:
        port = None
    if scheme not in ("http", "https") or port is None or given.query or given.fragment:
        raise ConfigError(
            f"The metrics endpoint must be https://HOST:PORT[/path] (or http:// with "
            f"--metrics-insecure): {endpoint!r}"
        )
    if scheme == "http" and not insecure:
        raise ConfigError(
            f"The metrics endpoint {endpoint!r} is plain HTTP, which would show the metrics to "
            "anyone who reaches it. Use https:// (authorised readers only), or allow plain HTTP "
            "with --metrics-insecure (settings.server.metrics_insecure = True)."
        )
    if scheme == "https" and insecure:
        raise ConfigError(
            f"The metrics endpoint {endpoint!r} is https://, but --metrics-insecure "
            "(settings.server.metrics_insecure) asks for plain HTTP: choose one."
        )
    path = given.path or "/metrics"
    return MetricsAddress(given.hostname or "0.0.0.0", port, path, secure=scheme == "https")


def metrics_app(metrics: Metrics, *, path: str = "/metrics") -> Any:
    """The ASGI app of a plain metrics endpoint: no TLS, no questions asked."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan_ready(receive, send)
        elif scope["type"] != "http":
            return  # a WebSocket: closed without an answer
        elif scope.get("path", "") == path:
            await respond_bytes(send, 200, body=metrics.render(), content_type=content_type())
        else:
            await respond(send, 404, {"error": "not found"})

    return app


def secure_metrics_app(metrics: Metrics, access: MetricsAccess) -> Any:
    """The ASGI app of the secure metrics endpoint (at ``access.path``).

    Every request is reviewed first (see :class:`MetricsAccess`); only an authorised reader
    learns more than the status: 404 for another path, 405 for a method other than GET or HEAD.
    """

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan_ready(receive, send)
            return
        if scope["type"] != "http":
            return  # a WebSocket: closed without an answer
        verdict = await access.verdict(bearer_token(scope.get("headers") or ()))
        if verdict is not Verdict.ALLOWED:
            await _refuse(send, verdict)
        elif scope.get("path", "") != access.path:
            await _plain(send, 404, "Not Found")
        elif scope.get("method") not in ("GET", "HEAD"):
            await _plain(send, 405, "Method Not Allowed", allow="GET, HEAD")
        else:
            await respond_bytes(send, 200, body=metrics.render(), content_type=content_type())

    return app


async def _refuse(send: Send, verdict: Verdict) -> None:
    if verdict is Verdict.UNAUTHENTICATED:
        await _plain(send, verdict.value, verdict.reason, www_authenticate="Bearer")
    elif verdict is Verdict.UNAVAILABLE:
        await _plain(send, verdict.value, verdict.reason, retry_after="5")
    else:
        await _plain(send, verdict.value, verdict.reason)


async def _plain(send: Send, code: int, text: str, **headers: str) -> None:
    extra = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    await respond_bytes(
        send, code, body=f"{text}\n".encode(), content_type="text/plain", headers=extra
    )


def metrics_context(
    address: MetricsAddress, server: ServerSettings
) -> tuple[ssl.SSLContext, CertificateFiles | None]:
    """The serving context: the certificate files if given (and them, to follow), else a
    self-signed certificate for the host (and ``localhost``, ``127.0.0.1``).

    Raises:
        ConfigError: Only one of the files is given, or they cannot be loaded.
    """
    certfile, keyfile = server.metrics_certfile, server.metrics_keyfile
    if (certfile is None) != (keyfile is None):
        raise ConfigError("The metrics server needs both metrics_certfile and metrics_keyfile.")
    if certfile is None or keyfile is None:
        hosts = [address.host, "localhost", "127.0.0.1"]
        context, _, _ = self_signed_context(
            hosts, ca_name="anyop-metrics-ca", verification=ClientVerification()
        )
        return context, None
    files = CertificateFiles(Path(certfile), Path(keyfile))
    try:
        context = server_context(
            files.certfile, files.keyfile, password=None, verification=ClientVerification()
        )
    except (ssl.SSLError, OSError) as error:
        raise ConfigError(f"The metrics certificate cannot be loaded: {error}") from error
    return context, files


async def serve_metrics(
    metrics: Metrics,
    address: MetricsAddress,
    server: ServerSettings,
    access: MetricsAccess | None,
    *,
    task_status: anyio.abc.TaskStatus[BoundAddress] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the metrics at ``address`` until cancelled: securely with ``access``, else plain.

    Raises:
        ConfigError: See :func:`metrics_context`; or a secure address without ``access``.
        OSError: The address cannot be bound.
    """
    if not address.secure:
        logger.warning(
            "The metrics are served over plain HTTP at %s, to anyone who reaches it "
            "(--metrics-insecure).",
            address.url,
        )
        app = metrics_app(metrics, path=address.path)
        await serve_asgi(app, host=address.host, port=address.port, task_status=task_status)
        return
    if access is None:
        raise ConfigError("Secure metrics need the API server's reviews (an access).")
    context, files = metrics_context(address, server)
    serve = functools.partial(
        serve_asgi, secure_metrics_app(metrics, access), host=address.host, port=address.port
    )
    async with anyio.create_task_group() as tg:
        bound: BoundAddress = await tg.start(functools.partial(serve, context=context))
        if files is not None:
            interval = server.metrics_cert_check_interval
            follow = functools.partial(follow_files, interval=interval, password=None)
            tg.start_soon(functools.partial(follow, context, files, what="metrics"))
        logger.info("The metrics are served at %s to authorised readers.", bound.url(access.path))
        task_status.started(bound)
