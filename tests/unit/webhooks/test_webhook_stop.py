"""`anyop run` stops quietly with webhook clients in every state: exit 0, no error, no traceback.

The operator runs in a child process against a FakeCluster served on loopback; its webhook
server serves HTTPS. Clients hold connections idle after an answer, with an answer they never
read, with half a request line or half a body, with a review still running, with garbage, or
without even a TLS handshake. Then SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import pytest

from anyop.testing import FakeCluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = Path(__file__).parents[3]
STOP_DEADLINE = 20.0
"""Seconds the operator may take to exit after SIGTERM (its webhook server's graceful timeout
is 2 seconds; the rest is the operator's own stop on a busy machine)."""

OPERATOR = textwrap.dedent(
    """
    import os
    from typing import Any

    import anyio
    import anyop


    @anyop.on.startup()
    def configure(settings: anyop.OperatorSettings, **_: Any) -> None:
        settings.admission.server = anyop.WebhookServer(
            addr="127.0.0.1", port=int(os.environ["WEBHOOK_PORT"]), path="/admission",
            cadump=os.environ["WEBHOOK_CA"],
        )


    @anyop.on.validate("kopfexamples")
    async def check_field(spec: anyop.Spec, **_: Any) -> None:
        if spec.get("field") == "slow":
            await anyio.sleep(3600)
        if spec.get("field") == "wrong":
            raise anyop.AdmissionError("The field must not be 'wrong'.", code=422)
    """
)


def review(field: str) -> bytes:
    """An admission review of a KopfExample with ``spec.field``."""
    obj = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
           "metadata": {"name": "kex", "namespace": "ns"}, "spec": {"field": field}}  # fmt: skip
    request = {
        "uid": "uid-1",
        "kind": {"group": "kopf.dev", "version": "v1", "kind": "KopfExample"},
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "CREATE", "namespace": "ns", "name": "kex",
        "userInfo": {"username": "someone"}, "object": obj,
    }  # fmt: skip
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body).encode()


def post(body: bytes) -> bytes:
    """A whole HTTP request to the validating webhook."""
    head = ("POST /admission/check_field HTTP/1.1\r\nHost: webhook\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
    return head.encode() + body


@dataclass(frozen=True)
class Webhook:
    """Where the operator's webhook listens and the CA that signed its certificate."""

    port: int
    ca: Path

    async def connect(self) -> anyio.abc.ByteStream:
        context = ssl.create_default_context(cafile=str(self.ca))
        return await anyio.connect_tcp(
            "127.0.0.1", self.port, tls=True, ssl_context=context, tls_standard_compatible=False
        )


async def idle_after_an_answer(webhook: Webhook) -> anyio.abc.ByteStream:
    stream = await webhook.connect()
    await stream.send(post(review("right")))
    answer = b""
    while b'"allowed": true' not in answer and b'"allowed":true' not in answer:
        answer += await stream.receive()
    return stream


async def answer_never_read(webhook: Webhook) -> anyio.abc.ByteStream:
    stream = await webhook.connect()
    await stream.send(post(review("wrong")))
    return stream


async def half_a_request_line(webhook: Webhook) -> anyio.abc.ByteStream:
    stream = await webhook.connect()
    await stream.send(post(review("right"))[:20])
    return stream


async def half_a_body(webhook: Webhook) -> anyio.abc.ByteStream:
    stream = await webhook.connect()
    whole = post(review("right"))
    await stream.send(whole[: len(whole) - 30])
    return stream


async def review_still_running(webhook: Webhook) -> anyio.abc.ByteStream:
    stream = await webhook.connect()
    await stream.send(post(review("slow")))
    return stream


async def garbage(webhook: Webhook) -> anyio.abc.ByteStream:
    stream = await webhook.connect()
    await stream.send(b"NOT HTTP AT ALL\r\n\r\n" * 3)
    return stream


async def no_tls_handshake(webhook: Webhook) -> anyio.abc.ByteStream:
    return await anyio.connect_tcp("127.0.0.1", webhook.port)


CLIENTS: dict[str, Callable[[Webhook], Awaitable[anyio.abc.ByteStream]]] = {
    "idle": idle_after_an_answer,
    "unread": answer_never_read,
    "half-line": half_a_request_line,
    "half-body": half_a_body,
    "in-review": review_still_running,
    "garbage": garbage,
    "no-tls": no_tls_handshake,
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def operator_with_a_webhook(
    tmp_path: Path, backend: str
) -> AsyncIterator[tuple[anyio.abc.Process, Webhook]]:
    """`anyop run` with a validating webhook, against a served FakeCluster, until the block ends."""
    fake = FakeCluster()
    fake.apply(ROOT / "examples" / "crd.yaml")
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    source = tmp_path / "operator.py"
    source.write_text(OPERATOR)
    webhook = Webhook(free_port(), tmp_path / "ca.pem")
    async with anyio.create_task_group() as tg:
        await tg.start(fake.serve)
        env = {**os.environ, "KUBECONFIG": str(fake.write_kubeconfig(tmp_path / "kubeconfig")),
               "WEBHOOK_PORT": str(webhook.port), "WEBHOOK_CA": str(webhook.ca)}  # fmt: skip
        command = [sys.executable, "-m", "anyop", "run", str(source), "-n", "ns", "--standalone",
                   "--backend", backend, "--log-format", "plain"]  # fmt: skip
        process = await anyio.open_process(command, env=env, stderr=subprocess.STDOUT)
        try:
            await wait_until_listening(webhook)
            yield process, webhook
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            tg.cancel_scope.cancel()


async def wait_until_listening(webhook: Webhook) -> None:
    with anyio.fail_after(60):
        while not webhook.ca.exists():
            await anyio.sleep(0.1)
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", webhook.port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.1)


async def stop(process: anyio.abc.Process) -> tuple[int, str]:
    """SIGTERM; the exit code and everything the operator printed."""
    assert process.stdout is not None
    output = b""
    process.send_signal(signal.SIGTERM)
    with anyio.fail_after(STOP_DEADLINE):
        async for chunk in process.stdout:
            output += chunk
        code = await process.wait()
    return code, output.decode()


def errors_in(output: str) -> list[str]:
    """The lines of the operator's output that report an error or a traceback."""
    words = ("ERROR", "Traceback", "Exception", "never retrieved", "CRITICAL")
    return [line for line in output.splitlines() if any(word in line for word in words)]


@pytest.mark.parametrize("state", list(CLIENTS))
async def test_the_stop_is_clean_with_a_webhook_client_holding_a_connection(
    tmp_path: Path, anyio_backend: str, state: str
) -> None:
    async with (
        operator_with_a_webhook(tmp_path, anyio_backend) as (process, webhook),
        AsyncExitStack() as streams,
    ):
        for _ in range(3):
            streams.push_async_callback((await CLIENTS[state](webhook)).aclose)
        await anyio.sleep(0.2)  # the server reads what the clients sent
        code, output = await stop(process)
    assert code == 0, output
    assert errors_in(output) == [], output
    assert "Webhook server listens at" in output


async def test_the_stop_is_clean_after_many_malformed_requests_with_all_kinds_of_clients(
    tmp_path: Path, anyio_backend: str
) -> None:
    async with operator_with_a_webhook(tmp_path, anyio_backend) as (process, webhook):
        for _ in range(100):
            stream = await webhook.connect()
            await stream.send(post(b"{bad json"))
            assert (await stream.receive()).startswith(b"HTTP/1.1 400")
            await stream.aclose()
        async with AsyncExitStack() as streams:
            for connect in CLIENTS.values():
                streams.push_async_callback((await connect(webhook)).aclose)
            await anyio.sleep(0.2)
            code, output = await stop(process)
    assert code == 0, output
    assert errors_in(output) == [], output
