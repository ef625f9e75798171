"""Logging in with the configuration of other Kubernetes client libraries (Kopf's piggybacking).

An operator that already uses pykube-ng, the official ``kubernetes`` client or
``kubernetes_asyncio`` can log in exactly as those do (their in-cluster and kubeconfig loading,
their auth providers) by returning one of these from a login handler::

    @anyop.on.login()
    def login(**kwargs):
        return anyop.login_via_client(**kwargs)

Each returns ``None`` when its library is not installed, so that other login handlers decide.
anyop's own login (the kubeconfig with its exec plugins, or the pod's service account) needs none
of them.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

from anyop.errors import ConfigError, LoginError
from anyop.kube.connection import ConnectionInfo

__all__ = ["AiohttpSession", "login_via_async_client", "login_via_client", "login_via_pykube"]

PIGGYBACKING_PRIORITY = 10
"""The priority of these credentials, as high as anyop's own kubeconfig login's."""

BEARER_KEY = "BearerToken"
"""Where the client libraries keep the ``Authorization`` header (``authorization`` until 2023)."""

Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def login_via_pykube(*, logger: Logger, **_: Any) -> ConnectionInfo | None:
    """Credentials as pykube-ng finds them: in the cluster, or in the kubeconfig.

    Returns:
        The credentials, or ``None`` if pykube-ng is not installed.

    Raises:
        LoginError: pykube-ng finds no configuration.
    """
    pykube = _optional("pykube")
    if pykube is None:
        return None
    try:
        config = pykube.KubeConfig.from_env()
    except Exception as error:  # pykube raises whatever its loaders raise
        raise LoginError(f"pykube-ng found no configuration to log in with: {error}") from error
    logger.debug("Logging in with pykube-ng's configuration.")
    cluster, user = config.cluster, config.user or {}
    token = user.get("token")
    return ConnectionInfo(
        str(cluster["server"]),
        ca_path=_filename(cluster.get("certificate-authority")),
        insecure=bool(cluster.get("insecure-skip-tls-verify")) or None,
        username=user.get("username"),
        password=user.get("password"),
        token=str(token) if token else None,
        certificate_path=_filename(user.get("client-certificate")),
        private_key_path=_filename(user.get("client-key")),
        default_namespace=config.namespace,
        priority=PIGGYBACKING_PRIORITY,
    )


def _filename(value: Any) -> str | None:
    """pykube-ng's file-or-data value as a file (it writes inline data to a file)."""
    return None if value is None else str(value.filename())


def login_via_client(*, logger: Logger, **_: Any) -> ConnectionInfo | None:
    """Credentials as the official ``kubernetes`` client loads them: in the cluster, else the
    kubeconfig.

    Returns:
        The credentials, or ``None`` if the ``kubernetes`` library is not installed.

    Raises:
        LoginError: It finds neither an in-cluster configuration nor a kubeconfig.
    """
    config = _optional("kubernetes.config")
    client = _optional("kubernetes.client")
    if config is None or client is None:
        return None
    try:
        config.load_incluster_config()
        logger.debug("Logging in with the kubernetes client's in-cluster configuration.")
    except config.ConfigException:
        try:
            config.load_kube_config(config_file=_kubeconfig_now())
            logger.debug("Logging in with the kubernetes client's kubeconfig.")
        except config.ConfigException as error:
            message = "The kubernetes client found neither an in-cluster config nor a kubeconfig"
            raise LoginError(f"{message}: {error}") from error
    configuration = client.Configuration.get_default_copy()
    header = configuration.get_api_key_with_prefix(BEARER_KEY, alias="authorization")
    return _from_configuration(configuration, header)


async def login_via_async_client(*, logger: Logger, **_: Any) -> ConnectionInfo | None:
    """Credentials as ``kubernetes_asyncio`` loads them: in the cluster, else the kubeconfig.

    Returns:
        The credentials, or ``None`` if ``kubernetes_asyncio`` is not installed.

    Raises:
        LoginError: It finds neither an in-cluster configuration nor a kubeconfig.
    """
    config = _optional("kubernetes_asyncio.config")
    client = _optional("kubernetes_asyncio.client")
    if config is None or client is None:
        return None
    try:
        config.load_incluster_config()
        logger.debug("Logging in with kubernetes_asyncio's in-cluster configuration.")
    except config.ConfigException:
        try:
            await config.load_kube_config(config_file=_kubeconfig_now())
            logger.debug("Logging in with kubernetes_asyncio's kubeconfig.")
        except config.ConfigException as error:
            message = "kubernetes_asyncio found neither an in-cluster config nor a kubeconfig"
            raise LoginError(f"{message}: {error}") from error
    configuration = client.Configuration.get_default_copy()
    header = await configuration.get_api_key_with_prefix(BEARER_KEY, alias="authorization")
    return _from_configuration(configuration, header)


def _kubeconfig_now() -> str | None:
    """``KUBECONFIG`` as it is now: the client libraries read it once, when first imported.

    ``None`` lets them fall back to ``~/.kube/config``.
    """
    return os.environ.get("KUBECONFIG") or None


def _from_configuration(configuration: Any, header: str | None) -> ConnectionInfo:
    """The credentials in a ``kubernetes`` (or ``kubernetes_asyncio``) client configuration,
    with its ``Authorization`` header's value."""
    scheme, _, token = str(header or "").rpartition(" ")
    return ConnectionInfo(
        str(configuration.host),
        ca_path=configuration.ssl_ca_cert or None,
        insecure=not configuration.verify_ssl or None,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme or None,
        token=token or None,
        certificate_path=configuration.cert_file or None,
        private_key_path=configuration.key_file or None,
        priority=PIGGYBACKING_PRIORITY,
    )


class AiohttpSession:
    """Kopf's login result that brings its own aiohttp session: refused here, with what to use.

    anyop's API client is its own, on httpx: an aiohttp session can carry nothing it could use.
    A login handler returns a :class:`ConnectionInfo` instead (the server, and a token, client
    certificate or basic credentials), or one of the ``login_via_*`` functions' results.

    Raises:
        ConfigError: Always, naming the alternative.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            "anyop.AiohttpSession cannot be used: anyop's API client is built on httpx, not "
            "aiohttp. Return anyop.ConnectionInfo(server=..., token=... or "
            "certificate_path=.../private_key_path=..., ca_path=...) from the login handler."
        )
