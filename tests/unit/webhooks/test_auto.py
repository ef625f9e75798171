"""Kopf's auto-server guesses the local cluster from its API server's certificate."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.streams.tls
import pytest

import anyop
from anyop.errors import ConfigError
from anyop.webhooks.auto import certificate_names, cluster_host, guess_cluster_host
from anyop.webhooks.certs import CertificateAuthority

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("names", "host"),
    [
        (["k3s", "kubernetes", "localhost"], "host.k3d.internal"),
        (["kubernetes", "minikube", "minikubeCA"], "host.minikube.internal"),
        (["docker-for-desktop", "kubernetes.docker.internal"], "host.docker.internal"),
        (["kubernetes", "kubernetes.default.svc", "localhost"], None),
    ],
)
def test_the_clusters_host_name_comes_from_its_names(names: list[str], host: str | None) -> None:
    assert cluster_host(names) == host


async def test_the_names_are_read_from_the_api_servers_certificate(tmp_path: Path) -> None:
    authority = CertificateAuthority()
    pair = authority.issue("k3s", sans=["k3s", "kubernetes", "127.0.0.1"], server=True)
    assert set(certificate_names(pair.cert_pem)) >= {"k3s", "kubernetes"}
    (tmp_path / "cert.pem").write_bytes(pair.cert_pem)
    (tmp_path / "key.pem").write_bytes(pair.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def serve(stream: Any) -> None:
        async with stream:  # closed even when the test's task group is cancelled
            with contextlib.suppress(Exception):
                wrapped = await anyio.streams.tls.TLSStream.wrap(
                    stream, server_side=True, ssl_context=context
                )
                await wrapped.aclose()

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        with anyio.fail_after(10):
            host = await guess_cluster_host(f"https://127.0.0.1:{port}")
        tg.cancel_scope.cancel()
    assert host == "host.k3d.internal"


async def test_an_unreachable_api_server_guesses_nothing() -> None:
    assert await guess_cluster_host("https://127.0.0.1:1") is None
    assert await guess_cluster_host("http://127.0.0.1:8080") is None


def test_a_tunnel_is_made_passively_with_kopfs_arguments() -> None:
    tunnel = anyop.WebhookNgrokTunnel(
        addr="127.0.0.1", port=9443, path="/hooks", token="x", region="eu", binary="/bin/ngrok"
    )
    assert (tunnel.addr, tunnel.port, tunnel.path) == ("127.0.0.1", 9443, "/hooks")
    assert (tunnel.token, tunnel.region, tunnel.binary) == ("x", "eu", "/bin/ngrok")


async def test_a_served_tunnel_is_refused_with_what_to_use_instead() -> None:
    async def review(*_: Any, **__: Any) -> dict[str, Any]:
        return {}

    with pytest.raises(ConfigError, match="anyop has no webhook tunnels"):
        async for _ in anyop.WebhookNgrokTunnel(token="x")(review):
            pass


async def test_the_auto_tunnel_without_a_local_cluster_is_refused() -> None:
    from anyop.webhooks.auto import current_api_server

    current_api_server.set("https://127.0.0.1:1")
    tunnel = anyop.WebhookAutoTunnel(addr="127.0.0.1", port=0)

    async def review(*_: Any, **__: Any) -> dict[str, Any]:
        return {}

    with pytest.raises(ConfigError, match="no local cluster recognised"):
        async for _ in tunnel(review):
            pass
