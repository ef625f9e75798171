"""Hypercorn inside the caller's task group, on both backends."""

from __future__ import annotations

import logging
import socket
import ssl
from functools import partial
from pathlib import Path

import anyio
import httpx
import pytest

from anyop.servers import (
    BoundAddress,
    Receive,
    Scope,
    Send,
    TLSFiles,
    lifespan_ready,
    serve_asgi,
)
from anyop.webhooks.certs import CertificateAuthority

pytestmark = pytest.mark.anyio


async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        await lifespan_ready(receive, send)
        return
    body = f"hello {scope['path']}".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def test_the_bound_address_is_known_when_started_and_requests_are_served() -> None:
    async with anyio.create_task_group() as tg:
        bound: BoundAddress = await tg.start(serve_asgi, hello)
        assert bound.port > 0
        async with httpx.AsyncClient() as client:
            response = await client.get(bound.url("/x"))
        assert response.text == "hello /x"
        tg.cancel_scope.cancel()


async def test_cancelling_the_server_frees_its_port() -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            bound: BoundAddress = await tg.start(serve_asgi, hello)
            tg.cancel_scope.cancel()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", bound.port))  # would raise if still listening


async def test_a_port_in_use_fails_the_start_clearly() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        async with anyio.create_task_group() as tg:
            with pytest.raises(OSError, match="in use"):
                await tg.start(partial(serve_asgi, hello, port=busy.getsockname()[1]))


async def test_https_with_a_self_made_ca(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    ca.issue("localhost", sans=["127.0.0.1"], server=True).write(
        tmp_path / "c.pem", tmp_path / "k.pem"
    )
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    async with anyio.create_task_group() as tg:
        tls = TLSFiles(tmp_path / "c.pem", tmp_path / "k.pem")
        bound: BoundAddress = await tg.start(partial(serve_asgi, hello, tls=tls))
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        async with httpx.AsyncClient(verify=ctx) as client:
            response = await client.get(bound.url("/tls"))
        assert bound.url().startswith("https://")
        assert response.text == "hello /tls"
        tg.cancel_scope.cancel()


async def echo_body(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers once it has read the whole body, as the webhook server does."""
    if scope["type"] == "lifespan":
        await lifespan_ready(receive, send)
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


HALF_SENT = [
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",  # half a body
    b"POST / HTT",  # half a request line
    b"NOT HTTP\r\n\r\n",  # answered with 400 and closed; over TLS, the close is never answered
]


@pytest.mark.parametrize("secure", [False, True], ids=["http", "https"])
async def test_half_sent_requests_left_open_do_not_spoil_the_stop(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, secure: bool
) -> None:
    """Connections still open at the graceful timeout are cut, not cancelled (on asyncio,
    Python 3.11 reports each cancelled connection task as an error): the stop is clean."""
    caplog.set_level(logging.DEBUG)
    ca = CertificateAuthority()
    ca.issue("localhost", sans=["127.0.0.1"], server=True).write(
        tmp_path / "c.pem", tmp_path / "k.pem"
    )
    tls = TLSFiles(tmp_path / "c.pem", tmp_path / "k.pem") if secure else None
    client_context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    streams = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            serve = partial(serve_asgi, echo_body, tls=tls, graceful_timeout=0.2)
            bound: BoundAddress = await tg.start(serve)
            for data in HALF_SENT * 3:
                stream = await anyio.connect_tcp(
                    "127.0.0.1", bound.port, ssl_context=client_context if secure else None,
                    tls_standard_compatible=False,
                )  # fmt: skip
                await stream.send(data)
                streams.append(stream)
            async with httpx.AsyncClient(verify=client_context) as client:  # served after the rest
                assert (await client.post(bound.url("/x"), content=b"ok")).content == b"ok"
            tg.cancel_scope.cancel()
    for stream in streams:
        await stream.aclose()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
