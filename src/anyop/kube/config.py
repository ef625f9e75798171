"""Where the credentials come from: kubeconfig files and the in-cluster service account.

:func:`load_kubeconfig` merges kubeconfig files by kubectl's rules and picks one context;
:func:`load_incluster` finds the pod's service account. Both return a small frozen object
whose ``connection_info()`` gives a fresh :class:`ConnectionInfo` on every call: token files are
read again when they change on disk, and credential plugins run again.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from anyop.errors import ConfigError
from anyop.kube import kubeconfig
from anyop.kube.connection import ConnectionInfo, proxy_for
from anyop.kube.execplugins import ExecCredential, ExecSpec, cluster_info_for, run_exec_plugin
from anyop.kube.kubeconfig import ClusterConfig, TokenFile, UserConfig
from anyop.threads import run_in_thread

__all__ = [
    "SERVICEACCOUNT_ROOT",
    "pod_namespace",
    "ClientCertificate",
    "ClusterConfig",
    "ConnectionInfo",
    "KubeConfig",
    "ServiceAccount",
    "TokenFile",
    "UserConfig",
    "incluster_server",
    "kubeconfig_paths",
    "load_incluster",
    "load_kubeconfig",
    "proxy_for",
]

SERVICEACCOUNT_ROOT = "/var/run/secrets/kubernetes.io/serviceaccount"


class ClientCertificate(NamedTuple):
    """Where the client certificate and its key come from: a path or the data, per part."""

    certificate_path: str | None
    certificate_data: bytes | None
    private_key_path: str | None
    private_key_data: bytes | None


@dataclass(frozen=True)
class KubeConfig:
    """One context of the merged kubeconfig files: a cluster, a user, a namespace.

    Attributes:
        context: The name of the chosen context.
        cluster: The context's cluster.
        user: The context's user (all fields empty for anonymous access).
        namespace: The context's namespace, else the pod's, else ``default``.
        sources: The kubeconfig files that were merged, in order.
    """

    context: str
    cluster: ClusterConfig
    user: UserConfig
    namespace: str
    sources: tuple[str, ...] = ()

    def resolve(self, credential: ExecCredential | None = None) -> ConnectionInfo:
        """Build the :class:`ConnectionInfo`, reading the token file again if it has changed.

        Args:
            credential: What the user's credential plugin returned; it overrides the token and
                client certificate of the kubeconfig and sets the expiration.

        Raises:
            ConfigError: The user has a credential plugin but no ``credential`` was given, or
                the token file cannot be read.
        """
        if self.user.exec is not None and credential is None:
            raise ConfigError(f"{self.user.exec.where}: run the credential plugin first")
        found = credential or ExecCredential()
        token = found.token or self.user.current_token()
        cluster, user = self.cluster, self.user
        certificate = _client_certificate(user, found)
        return ConnectionInfo(
            server=cluster.server,
            ca_path=cluster.ca_path if cluster.ca_data is None else None,
            ca_data=cluster.ca_data,
            insecure=cluster.insecure,
            proxy_url=cluster.proxy_url,
            tls_server_name=cluster.tls_server_name,
            username=user.username,
            password=user.password,
            scheme="Bearer" if token else None,
            token=token,
            certificate_path=certificate.certificate_path,
            certificate_data=certificate.certificate_data,
            private_key_path=certificate.private_key_path,
            private_key_data=certificate.private_key_data,
            default_namespace=self.namespace,
            expiration=found.expiration,
        )

    async def connection_info(self) -> ConnectionInfo:
        """Run the credential plugin, if any, and build a fresh :class:`ConnectionInfo`.

        Raises:
            ConfigError: The plugin fails, or a file cannot be read.
        """
        credential = None
        if self.user.exec is not None:
            cluster_info = await run_in_thread(
                functools.partial(self._cluster_info, self.user.exec)
            )
            credential = await run_exec_plugin(self.user.exec, cluster_info)
        return await run_in_thread(functools.partial(self.resolve, credential))

    def _cluster_info(self, spec: ExecSpec) -> dict[str, object] | None:
        if not spec.provide_cluster_info:
            return None
        cluster = self.cluster
        ca_data = cluster.ca_data
        if ca_data is None and cluster.ca_path is not None:
            ca_data = _read_bytes(cluster.ca_path, f"{spec.where}: the cluster's CA")
        return cluster_info_for(
            cluster.server,
            ca_data=ca_data,
            tls_server_name=cluster.tls_server_name,
            insecure=cluster.insecure,
            proxy_url=cluster.proxy_url,
        )


@dataclass(frozen=True)
class ServiceAccount:
    """The pod's own service account, as Kubernetes mounts it into every container.

    Attributes:
        server: The API server URL from ``KUBERNETES_SERVICE_HOST``/``_PORT``.
        ca_path: The cluster's CA file, if mounted.
        namespace: The pod's namespace, else ``default``.
        token_file: The projected token, which the kubelet rotates; read again on change.
    """

    server: str
    ca_path: str | None
    namespace: str
    token_file: TokenFile = field(repr=False, compare=False)

    def resolve(self) -> ConnectionInfo:
        """Build the :class:`ConnectionInfo` with the current token.

        Raises:
            ConfigError: The token file cannot be read or is empty.
        """
        return ConnectionInfo(
            server=self.server,
            ca_path=self.ca_path,
            scheme="Bearer",
            token=self.token_file.read(),
            default_namespace=self.namespace,
        )

    async def connection_info(self) -> ConnectionInfo:
        """Build the :class:`ConnectionInfo` in a worker thread (it may read the token file)."""
        return await run_in_thread(self.resolve)


def incluster_server(environ: Mapping[str, str]) -> str | None:
    """Return the API server URL that the pod's environment names, or ``None`` outside a pod.

    IPv6 addresses in ``KUBERNETES_SERVICE_HOST`` are put in brackets.
    """
    host = environ.get("KUBERNETES_SERVICE_HOST", "").strip()
    port = environ.get("KUBERNETES_SERVICE_PORT", "").strip()
    if not host or not port:
        return None
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"https://{host}:{port}"


def load_incluster(
    root: str | Path = SERVICEACCOUNT_ROOT, *, environ: Mapping[str, str] | None = None
) -> ServiceAccount | None:
    """Find the pod's service account.

    Args:
        root: The folder with ``token``, ``ca.crt`` and ``namespace``.
        environ: The environment variables; ``os.environ`` by default.

    Returns:
        The service account, or ``None`` when not in a cluster: the ``KUBERNETES_SERVICE_*``
        variables are unset, or no token is mounted.
    """
    server = incluster_server(os.environ if environ is None else environ)
    folder = Path(root)
    if server is None or not (folder / "token").is_file():
        return None
    ca_path = folder / "ca.crt"
    return ServiceAccount(
        server=server,
        ca_path=str(ca_path) if ca_path.is_file() else None,
        namespace=pod_namespace(folder) or "default",
        token_file=TokenFile(str(folder / "token"), "the service account"),
    )


def kubeconfig_paths(environ: Mapping[str, str]) -> tuple[list[Path], bool]:
    """List the kubeconfig files to merge, as kubectl does, before checking they exist.

    Returns:
        The paths from ``KUBECONFIG`` (split by ``os.pathsep``, empty parts and repeats dropped)
        and ``True``; or ``~/.kube/config`` (``$HOME`` first) and ``False``.
    """
    listed = [part for part in environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    if listed:
        return [Path(part) for part in dict.fromkeys(listed)], True
    home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return [home / ".kube" / "config"], False


def load_kubeconfig(
    paths: Sequence[str | Path] | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    serviceaccount_root: str | Path = SERVICEACCOUNT_ROOT,
) -> KubeConfig:
    """Read and merge kubeconfig files, and pick a context.

    Merging follows kubectl: the first file to name a cluster, user or context wins, and
    ``current-context`` comes from the first file that sets it. Relative file paths in a file are
    relative to that file's folder.

    Args:
        paths: The files to merge; by default those of ``KUBECONFIG`` (skipping missing ones),
            else ``~/.kube/config``. Explicitly given files must all exist.
        context: The context to use instead of ``current-context``.
        environ: The environment variables; ``os.environ`` by default.
        serviceaccount_root: Where to find the pod's namespace when the context names none.

    Raises:
        ConfigError: A file is missing or malformed, the context does not exist, or it refers
            to a cluster or user that does not exist; the message names the file and field.
    """
    files = _existing_files(paths, os.environ if environ is None else environ)
    merged = kubeconfig.merge([(path, kubeconfig.read_document(path)) for path in files])
    chosen = kubeconfig.choose_context(merged, context)
    fallback = pod_namespace(Path(serviceaccount_root)) or "default"
    return KubeConfig(
        context=chosen.name,
        cluster=chosen.cluster,
        user=chosen.user,
        namespace=chosen.namespace or fallback,
        sources=tuple(str(path) for path in files),
    )


def _existing_files(paths: Sequence[str | Path] | None, environ: Mapping[str, str]) -> list[Path]:
    if paths is not None:
        files = [Path(path) for path in paths]
        for path in files:
            if not path.is_file():
                raise ConfigError(f"{path}: the kubeconfig file does not exist")
        return files
    candidates, from_variable = kubeconfig_paths(environ)
    files = [path for path in candidates if path.is_file()]
    if not files:
        where = "KUBECONFIG" if from_variable else "the default kubeconfig"
        names = os.pathsep.join(str(path) for path in candidates)
        raise ConfigError(f"{names}: no kubeconfig file exists ({where})")
    return files


def _client_certificate(user: UserConfig, found: ExecCredential) -> ClientCertificate:
    """A plugin's certificate replaces the kubeconfig's; data wins over a path, as in client-go."""
    if found.certificate_data is not None:
        return ClientCertificate(None, found.certificate_data, None, found.private_key_data)
    return ClientCertificate(
        user.certificate_path if user.certificate_data is None else None,
        user.certificate_data,
        user.private_key_path if user.private_key_data is None else None,
        user.private_key_data,
    )


def pod_namespace(root: Path = Path(SERVICEACCOUNT_ROOT)) -> str | None:
    """The namespace of the pod's service account, if running in one (an empty file: ``None``)."""
    try:
        return (root / "namespace").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _read_bytes(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror}") from exc
