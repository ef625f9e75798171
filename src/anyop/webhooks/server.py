"""Webhook servers: HTTPS endpoints on Hypercorn that hand admission reviews to the framework.

A server is what ``settings.admission.server`` holds (Kopf's protocol): called with the
framework's :class:`~anyop.webhooks.review.WebhookFn`, it serves requests and yields one or more
:class:`~anyop.webhooks.managed.WebhookClientConfig` (how API servers reach it), then holds
control until cancelled. :class:`WebhookServer` listens locally; the K3d, Minikube and Docker
Desktop variants only advertise the host name those clusters use to reach their host machine.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import logging
import ssl
from collections.abc import AsyncGenerator, Collection
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio

from anyop.metrics import current_metrics
from anyop.servers import BoundAddress, serve_asgi
from anyop.webhooks.app import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_CONCURRENCY,
    AdmissionApp,
)
from anyop.webhooks.certs import KeyPair
from anyop.webhooks.handshakes import HandshakeFailures, current_handshake_failures
from anyop.webhooks.managed import WebhookClientConfig
from anyop.webhooks.review import WebhookFn
from anyop.webhooks.tls import (
    CertificateFiles,
    ClientVerification,
    check_certificate,
    follow_files,
    self_signed_context,
    server_context,
)

__all__ = [
    "WebhookDockerDesktopServer",
    "WebhookK3dServer",
    "WebhookMinikubeServer",
    "WebhookServer",
]

logger = logging.getLogger("anyop.webhooks")


class WebhookServer:
    """A local HTTPS endpoint for admission webhooks (Kopf's ``WebhookServer``), on Hypercorn.

    Args:
        addr: The address to listen on (default ``localhost``).
        port: The port (default 9443); ``0`` picks a free one.
        path: The root path; handler ids are appended as the last path component.
        host: The host name in the advertised URL (default: ``addr``).
        cadata: The CA bundle (PEM) that API servers verify the server with.
        cafile: The same, from a file.
        cadump: Write the CA bundle there (e.g. for ``curl --cacert``).
        context: A ready serving SSL context (then no certificate is loaded or generated; its
            failed handshakes are counted only if its ``sslobject_class`` is
            :class:`~anyop.webhooks.tls.PeerRecordingSSLObject`).
        insecure: Serve plain HTTP (API servers refuse it; for tunnels and debugging).
        certfile: The serving certificate (PEM); without it, a CA and a certificate for
            ``host``, ``addr`` and ``extra_sans`` are generated.
        pkeyfile: The certificate's private key (PEM).
        password: The private key's password.
        extra_sans: More DNS names or IPs for the generated certificate.
        verify_mode: :attr:`ssl.SSLContext.verify_mode` for client certificates.
        verify_cafile: The CA of client certificates, from a file.
        verify_capath: The same, from a directory.
        verify_cadata: The same, as PEM data.
        file_check_interval: Seconds between checks whether ``certfile``/``pkeyfile`` changed;
            changed files are loaded for new connections without a restart.
        max_body_size: The largest accepted request body, in bytes (413 beyond).
        body_timeout: Seconds a client may take to send a request body (408 beyond).
        max_concurrency: Requests read and reviewed at once (503 beyond).
        read_timeout: Seconds an idle client connection is kept open.

    Attributes:
        handshake_failures: The TLS handshakes that clients broke off, by reason (e.g. an API
            server that does not trust the certificate); also counted in the operator's
            ``anyop_webhook_tls_errors_total`` and warned about (see
            :mod:`anyop.webhooks.handshakes`).
    """

    DEFAULT_ADDR: str = "localhost"
    DEFAULT_HOST: str | None = None
    DEFAULT_PORT: int = 9443

    def __init__(
        self,
        addr: str | None = None,
        port: int | None = None,
        path: str | None = None,
        host: str | None = None,
        cadata: bytes | None = None,
        cafile: str | Path | None = None,
        cadump: str | Path | None = None,
        context: ssl.SSLContext | None = None,
        insecure: bool = False,
        certfile: str | Path | None = None,
        pkeyfile: str | Path | None = None,
        password: str | None = None,
        extra_sans: Collection[str] = (),
        verify_mode: ssl.VerifyMode | None = None,
        *,  # Kopf's arguments above may be positional, in Kopf's order; anyop's are keywords
        verify_cafile: str | Path | None = None,
        verify_capath: str | Path | None = None,
        verify_cadata: bytes | str | None = None,
        file_check_interval: float = 10.0,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        read_timeout: int = 30,
    ) -> None:
        """See the class. The parameters before ``*`` are Kopf's, positional in Kopf's order, as
        code written for Kopf may pass them."""
        if (certfile is None) != (pkeyfile is None):
            raise ValueError("WebhookServer needs both certfile= and pkeyfile=, or neither.")
        self.addr = addr
        self.port = port
        self.path = path
        self.host = host
        self.cadata = cadata
        self.cafile = cafile
        self.cadump = cadump
        self.context = context
        self.insecure = insecure
        self.certfile = certfile
        self.pkeyfile = pkeyfile
        self.password = password
        self.extra_sans = tuple(extra_sans)
        self.verification = ClientVerification(
            verify_mode,
            str(verify_cafile) if verify_cafile else None,
            str(verify_capath) if verify_capath else None,
            verify_cadata,
        )
        self.file_check_interval = file_check_interval
        self.max_body_size = max_body_size
        self.body_timeout = body_timeout
        self.max_concurrency = max_concurrency
        self.read_timeout = read_timeout
        self.handshake_failures = HandshakeFailures()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    @property
    def listen_addr(self) -> str:
        """Where the server listens."""
        return self.addr or self.DEFAULT_ADDR

    @property
    def advertised_host(self) -> str:
        """The host name that API servers are given."""
        return self.host or self.DEFAULT_HOST or self.listen_addr

    async def __call__(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        """Serve until cancelled; yield how to reach this server once it listens.

        Raises:
            ConfigError: The certificate does not cover the advertised host, is expired, or was
                not issued by the given CA bundle.
            OSError: The address cannot be bound.
        """
        context, ca_pem = self._tls()
        app = AdmissionApp(
            fn,
            path=self.path or "",
            max_body_size=self.max_body_size,
            body_timeout=self.body_timeout,
            max_concurrency=self.max_concurrency,
        )
        port = self.DEFAULT_PORT if self.port is None else self.port
        self.handshake_failures.metrics = current_metrics.get()
        serve = functools.partial(
            _serve_reporting,
            self.handshake_failures,
            app,
            host=self.listen_addr,
            port=port,
            context=context,
            read_timeout=self.read_timeout,
        )
        async with anyio.create_task_group() as tg:
            bound: BoundAddress = await tg.start(serve)
            if context is not None and self.certfile and self.pkeyfile and not self.context:
                files = CertificateFiles(Path(self.certfile), Path(self.pkeyfile))
                follow = functools.partial(
                    follow_files,
                    interval=self.file_check_interval,
                    password=self.password,
                    what="webhook",
                )
                tg.start_soon(follow, context, files)
            logger.info("Webhook server listens at %s.", bound.url(app.path))
            yield self._client_config(bound, app.path, ca_pem)
            await anyio.sleep_forever()

    def _tls(self) -> tuple[ssl.SSLContext | None, bytes | None]:
        """The serving context and the CA bundle for clients (``None``: the system's trust)."""
        if self.insecure:
            return None, None
        ca_pem = self._given_ca()
        if self.context is not None:
            return self.context, ca_pem
        if self.certfile is not None and self.pkeyfile is not None:
            certfile, keyfile = Path(self.certfile), Path(self.pkeyfile)
            check_certificate(certfile.read_bytes(), self.advertised_host, ca_pem=ca_pem)
            context = server_context(
                certfile, keyfile, password=self.password, verification=self.verification
            )
        else:
            context, ca_pem = self._self_signed()
        if self.cadump is not None and ca_pem is not None:
            Path(self.cadump).write_bytes(ca_pem)
        return context, ca_pem

    def _given_ca(self) -> bytes | None:
        if self.cadata is not None:
            return self.cadata
        return Path(self.cafile).read_bytes() if self.cafile is not None else None

    def generate_certificate(self) -> tuple[KeyPair, bytes]:
        """A new CA and a serving certificate it issued, for the advertised host, the listening
        address and the extra SANs (the wildcard addresses excluded).

        Returns:
            The certificate with its key, and the CA certificate (the ``caBundle``), all PEM.
        """
        _, pair, ca_pem = self._generated()
        return pair, ca_pem

    def _generated(self) -> tuple[ssl.SSLContext, KeyPair, bytes]:
        hosts = [self.advertised_host, self.listen_addr, *self.extra_sans]
        return self_signed_context(
            hosts, ca_name="anyop-webhook-ca", verification=self.verification
        )

    def _self_signed(self) -> tuple[ssl.SSLContext, bytes]:
        context, pair, ca_pem = self._generated()
        check_certificate(pair.cert_pem, self.advertised_host, ca_pem=ca_pem)
        return context, ca_pem

    def _client_config(
        self, bound: BoundAddress, path: str, ca_pem: bytes | None
    ) -> WebhookClientConfig:
        advertised = dataclasses.replace(bound, host=self.advertised_host)
        config = WebhookClientConfig(url=advertised.url(path))
        if ca_pem is not None:
            config["caBundle"] = base64.b64encode(ca_pem).decode("ascii")
        return config


async def _serve_reporting(
    failures: HandshakeFailures,
    app: AdmissionApp,
    **options: Any,
) -> None:
    """:func:`~anyop.servers.serve_asgi`, whose failed TLS handshakes are reported to
    ``failures`` (its connections' handshakes run in contexts copied from this task's)."""
    current_handshake_failures.set(failures)
    await serve_asgi(app, **options)


class WebhookK3dServer(WebhookServer):
    """A local server for K3d/K3s clusters, which reach their host as ``host.k3d.internal``.

    Listens on all interfaces. Untested in anyop's own suite (no K3d cluster there).
    """

    DEFAULT_ADDR = "0.0.0.0"
    DEFAULT_HOST = "host.k3d.internal"


class WebhookMinikubeServer(WebhookServer):
    """A local server for Minikube, which reaches its host as ``host.minikube.internal``.

    Listens on all interfaces. Untested in anyop's own suite (no Minikube there).
    """

    DEFAULT_ADDR = "0.0.0.0"
    DEFAULT_HOST = "host.minikube.internal"


class WebhookDockerDesktopServer(WebhookServer):
    """A local server for Docker Desktop's cluster, which reaches its host as
    ``host.docker.internal``.

    Listens on all interfaces. Untested in anyop's own suite (no Docker Desktop there).
    """

    DEFAULT_ADDR = "0.0.0.0"
    DEFAULT_HOST = "host.docker.internal"
