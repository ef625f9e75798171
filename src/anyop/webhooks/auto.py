"""Kopf's automatic webhook servers: the local cluster's kind, guessed from its API server.

:class:`WebhookAutoServer` looks at the names in the API server's certificate: K3s/K3d,
Minikube and Docker Desktop each have their own, and each reaches the host under a name of its
own (``host.k3d.internal``, ``host.minikube.internal``, ``host.docker.internal``). Elsewhere it
is a plain :class:`~anyop.webhooks.server.WebhookServer`. It never tunnels.

Tunnels (Kopf's ``WebhookNgrokTunnel``, and ``WebhookAutoTunnel`` where no local cluster is
recognised) need an external tunnelling service; anyop has none, and says so when one is served
(making one is allowed, as in Kopf, where servers are built passively).
"""

from __future__ import annotations

import contextvars
import logging
import ssl
import urllib.parse
from collections.abc import AsyncGenerator, Iterable
from typing import NoReturn

from cryptography import x509

from anyop.errors import ConfigError
from anyop.threads import run_in_thread
from anyop.webhooks.managed import WebhookClientConfig
from anyop.webhooks.review import WebhookFn
from anyop.webhooks.server import (
    WebhookDockerDesktopServer,
    WebhookK3dServer,
    WebhookMinikubeServer,
    WebhookServer,
)

__all__ = [
    "WebhookAutoServer",
    "WebhookAutoTunnel",
    "WebhookNgrokTunnel",
    "cluster_host",
    "current_api_server",
]

logger = logging.getLogger("anyop.webhooks")

current_api_server: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "anyop_current_api_server", default=None
)
"""The URL of the API server that the operator serves webhooks for (set by the engine)."""

DETECTION_TIMEOUT = 5.0
"""Seconds to fetch the API server's certificate before giving up on guessing."""


def cluster_host(names: Iterable[str]) -> str | None:
    """The name under which a local cluster reaches its host, from its API server's names. Pure.

    Returns:
        ``host.k3d.internal`` (K3s/K3d), ``host.minikube.internal`` (Minikube),
        ``host.docker.internal`` (Docker Desktop), or ``None`` for any other cluster.
    """
    lowered = [name.lower() for name in names]
    if any(name.startswith("k3s") for name in lowered):
        return WebhookK3dServer.DEFAULT_HOST
    if any(name == "minikube" or name.startswith("minikube.") for name in lowered):
        return WebhookMinikubeServer.DEFAULT_HOST
    docker = ("docker-for-desktop", "docker-desktop", "kubernetes.docker.internal")
    if any(name in docker for name in lowered):
        return WebhookDockerDesktopServer.DEFAULT_HOST
    return None


def certificate_names(pem: bytes) -> list[str]:
    """The DNS names and the common name of a PEM certificate. Pure."""
    certificate = x509.load_pem_x509_certificate(pem)
    names: list[str] = []
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        names.extend(extension.value.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        pass
    for attribute in certificate.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME):
        names.append(str(attribute.value))
    return names


async def guess_cluster_host(server: str) -> str | None:
    """The host name of the local cluster whose API server is at ``server``, if it is one."""
    parsed = urllib.parse.urlsplit(server)
    if parsed.scheme != "https" or not parsed.hostname:
        return None
    where = (parsed.hostname, parsed.port or 443)
    try:
        pem = await run_in_thread(
            lambda: ssl.get_server_certificate(where, timeout=DETECTION_TIMEOUT).encode()
        )
        return cluster_host(certificate_names(pem))
    except (OSError, ValueError) as error:
        logger.warning(f"Cannot read the API server's certificate to guess the cluster: {error}")
        return None


class WebhookAutoServer(WebhookServer):
    """A local webhook server that guesses the cluster's name for its host (Kopf's).

    Takes :class:`WebhookServer`'s arguments. Where it recognises K3s/K3d, Minikube or Docker
    Desktop, it listens on all interfaces and advertises that cluster's name for the host,
    as :class:`WebhookK3dServer` and its siblings do; elsewhere it is a plain server. ``addr``
    and ``host``, when given, win.
    """

    guessed: str | None = None
    """The host name guessed for the current cluster (after the server has started)."""

    @property
    def listen_addr(self) -> str:
        """All interfaces where a local cluster was recognised, else as a plain server."""
        return self.addr or ("0.0.0.0" if self.guessed else self.DEFAULT_ADDR)

    @property
    def advertised_host(self) -> str:
        """The given host, else the guessed cluster's name for its host, else the address."""
        return self.host or self.guessed or self.listen_addr

    async def __call__(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        server = current_api_server.get()
        if self.host is None and server is not None:
            self.guessed = await guess_cluster_host(server)
            kind = f"the host is {self.guessed!r}" if self.guessed else "no local cluster"
            logger.debug(f"Guessed the cluster from its API server's certificate: {kind}.")
        async for config in super().__call__(fn):
            yield config


def _no_tunnels(name: str) -> NoReturn:
    raise ConfigError(
        f"{name}: anyop has no webhook tunnels (they need an external tunnelling service such "
        f"as ngrok). Serve the webhooks where the cluster reaches them: anyop.WebhookServer "
        f"(or WebhookK3dServer, WebhookMinikubeServer, WebhookDockerDesktopServer, or "
        f"WebhookAutoServer for local clusters), or a tunnel of your own that yields the "
        f"client configs (see anyop.WebhookServerProtocol)."
    )


def _refused(name: str) -> Iterable[WebhookClientConfig]:
    """No client config ever: the tunnel named ``name`` is refused when served."""
    _no_tunnels(name)


class WebhookNgrokTunnel:
    """Kopf's ngrok tunnel: it can be made (with Kopf's arguments), but not served.

    Making one only keeps its arguments, so code that builds every kind of server and then
    picks one still runs. Served (set as ``settings.admission.server``), it raises a
    :class:`~anyop.errors.ConfigError` that says why and what to use instead.
    """

    def __init__(
        self,
        *,
        addr: str | None = None,
        port: int | None = None,
        path: str | None = None,
        token: str | None = None,
        region: str | None = None,
        binary: str | None = None,
    ) -> None:
        self.addr = addr
        self.port = port
        self.path = path
        self.token = token
        self.region = region
        self.binary = binary

    async def __call__(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        """Refuse to serve: anyop has no tunnels.

        Raises:
            ConfigError: always, naming the servers that anyop can run.
        """
        for config in _refused("WebhookNgrokTunnel"):
            yield config


class WebhookAutoTunnel(WebhookAutoServer):
    """Kopf's auto-tunnel: the auto-server where it recognises a local cluster.

    Where it recognises none, a tunnel would be needed: that is a ConfigError (see
    :class:`WebhookNgrokTunnel`).
    """

    def __init__(
        self, *, addr: str | None = None, port: int | None = None, path: str | None = None
    ) -> None:
        super().__init__(addr=addr, port=port, path=path)

    async def __call__(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        server = current_api_server.get()
        self.guessed = await guess_cluster_host(server) if server is not None else None
        if self.guessed is None:
            _no_tunnels("WebhookAutoTunnel (no local cluster recognised)")
        async for config in WebhookServer.__call__(self, fn):
            yield config
