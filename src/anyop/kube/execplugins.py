"""Client-go credential plugins: run the kubeconfig's ``exec`` command and read its ExecCredential.

The protocol is ``client.authentication.k8s.io/v1`` (or ``v1beta1``): the plugin gets an
``ExecCredential`` request in ``KUBERNETES_EXEC_INFO`` and prints one with a ``status`` that holds a
token or a client certificate, and optionally when they expire. Plugins never get a terminal here.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc

from anyop._jsons import compact
from anyop.errors import ConfigError

__all__ = [
    "EXEC_API_VERSIONS",
    "EXEC_TIME_LIMIT",
    "ExecCredential",
    "ExecSpec",
    "cluster_info_for",
    "describe_failure",
    "exec_info",
    "parse_exec_credential",
    "run_exec_plugin",
]

EXEC_API_VERSIONS = frozenset(
    {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}
)
EXEC_TIME_LIMIT = 60.0
"""Seconds a credential plugin may run before it is killed."""
_STDERR_TAIL = 2000


@dataclass(frozen=True)
class ExecSpec:
    """The ``users[].user.exec`` stanza of a kubeconfig, already validated.

    Attributes:
        command: The program to run: a name looked up in ``PATH``, or a path.
        where: The file and field it came from, for error messages.
        api_version: The ExecCredential version to request and to expect back.
        args: The command-line arguments.
        env: Extra environment variables, as (name, value) pairs; the values may be secret.
        install_hint: Shown to the user when the command cannot run.
        provide_cluster_info: Pass the cluster's details in ``KUBERNETES_EXEC_INFO``.
        interactive_mode: ``Never`` or ``IfAvailable``; the plugin never gets a terminal.
    """

    command: str
    where: str
    api_version: str = "client.authentication.k8s.io/v1"
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    install_hint: str | None = None
    provide_cluster_info: bool = False
    interactive_mode: str | None = None


@dataclass(frozen=True)
class ExecCredential:
    """What a credential plugin returned in its ``status``.

    Attributes:
        token: A bearer token.
        certificate_data: A PEM client certificate.
        private_key_data: The PEM private key of the client certificate.
        expiration: When these credentials stop working (timezone-aware), if the plugin said so.
    """

    token: str | None = field(default=None, repr=False)
    certificate_data: bytes | None = None
    private_key_data: bytes | None = field(default=None, repr=False)
    expiration: datetime | None = None


def cluster_info_for(
    server: str,
    *,
    ca_data: bytes | None = None,
    tls_server_name: str | None = None,
    insecure: bool = False,
    proxy_url: str | None = None,
) -> dict[str, Any]:
    """Describe a cluster in the shape of the ExecCredential ``spec.cluster`` field.

    Args:
        server: The API server URL.
        ca_data: The CA certificates, passed base64-encoded as the protocol wants.
        tls_server_name: The name expected in the server's certificate.
        insecure: Whether the server's certificate is not verified.
        proxy_url: The proxy to the API server.

    Returns:
        The JSON-ready mapping, with unset fields left out.
    """
    info: dict[str, Any] = {"server": server}
    if ca_data:
        info["certificate-authority-data"] = base64.b64encode(ca_data).decode("ascii")
    if tls_server_name:
        info["tls-server-name"] = tls_server_name
    if insecure:
        info["insecure-skip-tls-verify"] = True
    if proxy_url:
        info["proxy-url"] = proxy_url
    return info


def exec_info(spec: ExecSpec, cluster_info: Mapping[str, Any] | None) -> str:
    """Return the ``KUBERNETES_EXEC_INFO`` JSON for a plugin: never interactive.

    ``cluster_info`` is included only if the spec asks for it with ``provideClusterInfo``.
    """
    request_spec: dict[str, Any] = {"interactive": False}
    if spec.provide_cluster_info and cluster_info is not None:
        request_spec["cluster"] = dict(cluster_info)
    request = {"apiVersion": spec.api_version, "kind": "ExecCredential", "spec": request_spec}
    return compact(request)


def parse_exec_credential(spec: ExecSpec, stdout: bytes) -> ExecCredential:
    """Read the ExecCredential that a plugin printed.

    Raises:
        ConfigError: The output is not JSON, has the wrong apiVersion or kind, or holds neither a
            token nor a complete client certificate. The output itself is never quoted: it may
            hold a secret.
    """
    culprit = f"{spec.where}: the output of {spec.command!r}"
    try:
        document = json.loads(stdout)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{culprit} is not JSON") from exc
    if not isinstance(document, dict):
        raise ConfigError(f"{culprit} is not a JSON object")
    _check_kind(spec, document, culprit)
    status = document.get("status")
    if not isinstance(status, dict):
        raise ConfigError(f"{culprit} has no status")
    return _credential_from(status, culprit)


def _check_kind(spec: ExecSpec, document: Mapping[str, Any], culprit: str) -> None:
    found = (document.get("apiVersion"), document.get("kind"))
    if found != (spec.api_version, "ExecCredential"):
        raise ConfigError(
            f"{culprit} has apiVersion {found[0]!r} and kind {found[1]!r}; "
            f"expected {spec.api_version!r} and 'ExecCredential'"
        )


def _credential_from(status: Mapping[str, Any], culprit: str) -> ExecCredential:
    token = _status_text(status, "token", culprit)
    certificate = _status_text(status, "clientCertificateData", culprit)
    key = _status_text(status, "clientKeyData", culprit)
    if (certificate is None) != (key is None):
        raise ConfigError(f"{culprit} has only one of clientCertificateData and clientKeyData")
    if token is None and certificate is None:
        raise ConfigError(f"{culprit} has neither a token nor a client certificate")
    return ExecCredential(
        token=token,
        certificate_data=certificate.encode() if certificate else None,
        private_key_data=key.encode() if key else None,
        expiration=_timestamp(status.get("expirationTimestamp"), culprit),
    )


def _status_text(status: Mapping[str, Any], key: str, culprit: str) -> str | None:
    value = status.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{culprit}: status.{key} is not a string")
    return value or None


def _timestamp(value: object, culprit: str) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise ConfigError(f"{culprit}: status.expirationTimestamp is not RFC 3339") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def describe_failure(spec: ExecSpec, returncode: int, stderr: bytes) -> str:
    """Explain a plugin that exited with an error: the status, the end of stderr, the hint."""
    tail = stderr.decode(errors="replace").strip()[-_STDERR_TAIL:]
    message = f"{spec.where}: {spec.command!r} exited with status {returncode}"
    if tail:
        message += f": {tail}"
    if spec.install_hint:
        message += f"\n{spec.install_hint.strip()}"
    return message


async def run_exec_plugin(
    spec: ExecSpec,
    cluster_info: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> ExecCredential:
    """Run a credential plugin and return the credentials it printed.

    Args:
        spec: The validated ``exec`` stanza.
        cluster_info: The cluster's details (see :func:`cluster_info_for`); sent only when the
            spec has ``provideClusterInfo``.
        environ: The environment to start from; ``os.environ`` by default. The spec's ``env``
            and ``KUBERNETES_EXEC_INFO`` are added on top.

    Raises:
        ConfigError: The plugin cannot start, runs over :data:`EXEC_TIME_LIMIT`, fails, or
            prints a bad credential.
    """
    env = {**(os.environ if environ is None else environ), **dict(spec.env)}
    env["KUBERNETES_EXEC_INFO"] = exec_info(spec, cluster_info)
    try:
        # The spawn itself is never cancelled halfway: a child started but not yet handed over
        # would be left running and unreaped.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                [spec.command, *spec.args], env=env, stdin=subprocess.DEVNULL
            )
    except OSError as exc:
        hint = f"\n{spec.install_hint.strip()}" if spec.install_hint else ""
        raise ConfigError(f"{spec.where}: cannot run {spec.command!r}: {exc}{hint}") from exc
    async with process:  # on leaving early (the time limit, a stop): killed and reaped
        try:
            with anyio.fail_after(EXEC_TIME_LIMIT):
                stdout, stderr = await _communicate(process)
                returncode = await process.wait()
        except TimeoutError as exc:
            process.kill()
            message = f"{spec.where}: {spec.command!r} ran over {EXEC_TIME_LIMIT:g} s"
            raise ConfigError(message) from exc
    if returncode != 0:
        raise ConfigError(describe_failure(spec, returncode, stderr))
    return parse_exec_credential(spec, stdout)


async def _communicate(process: anyio.abc.Process) -> tuple[bytes, bytes]:
    """Everything the process writes to its stdout and stderr, until it closes them."""
    chunks: tuple[list[bytes], list[bytes]] = ([], [])

    async def drain(stream: anyio.abc.ByteReceiveStream | None, into: list[bytes]) -> None:
        if stream is not None:
            async for chunk in stream:
                into.append(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain, process.stdout, chunks[0])
        tg.start_soon(drain, process.stderr, chunks[1])
    return b"".join(chunks[0]), b"".join(chunks[1])
