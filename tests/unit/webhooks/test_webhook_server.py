"""The webhook server over TLS with the framework's reviewer: routing, bad input, mTLS, reloads.

No API server here: reviews are sent with httpx (or a raw TLS socket, for what httpx would not
send), as a hostile or broken client would. Both backends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import anyop.on as on
from anyop.engine.operator.admission_reviews import Reviewer
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings
from anyop.webhooks.certs import CertificateAuthority
from anyop.webhooks.managed import WebhookClientConfig
from anyop.webhooks.server import WebhookServer

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
JSON = {"content-type": "application/json"}


def review(uid: str = "u-1", **request: Any) -> dict[str, Any]:
    base = {
        "uid": uid,
        "kind": {"group": "kopf.dev", "version": "v1", "kind": "KopfExample"},
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "CREATE",
        "object": {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"a": 1}},
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": base | request,
    }


@contextlib.asynccontextmanager
async def serving(
    server: WebhookServer, registry: OperatorRegistry
) -> AsyncIterator[WebhookClientConfig]:
    """The server running the registry's handlers; yields its first client config."""
    reviewer = Reviewer(registry, OperatorSettings(), [KEX], new_memo=dict)
    send, receive = anyio.create_memory_object_stream[WebhookClientConfig](1)

    async def pump() -> None:
        async with send, contextlib.aclosing(server(reviewer)) as configs:
            async for config in configs:
                await send.send(config)

    async with receive, anyio.create_task_group() as tg:
        tg.start_soon(pump)
        yield await receive.receive()
        tg.cancel_scope.cancel()


@pytest.fixture
def cadump(tmp_path: Path) -> Path:
    return tmp_path / "ca.pem"


@pytest.fixture
def registry() -> OperatorRegistry:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="first")
    def first(warnings: list[str], **_: Any) -> None:
        warnings.append("first")

    @on.validate("kopfexamples", registry=registry, id="second")
    def second(warnings: list[str], **_: Any) -> None:
        warnings.append("second")

    return registry


@contextlib.asynccontextmanager
async def client_of(
    server: WebhookServer, registry: OperatorRegistry, cadump: Path
) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(server, registry) as config:
        ctx = ssl.create_default_context(cafile=str(cadump))
        origin = httpx.URL(config["url"]).copy_with(path="/")
        async with httpx.AsyncClient(base_url=origin, verify=ctx, timeout=10) as client:
            yield client


async def test_the_handler_id_in_the_path_routes_and_no_id_runs_all(
    registry: OperatorRegistry, cadump: Path
) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks", cadump=cadump)
    async with client_of(server, registry, cadump) as client:
        one = await client.post("/hooks/second", json=review("u-2"))
        both = await client.post("/hooks", json=review("u-3"))
        beta_review = {**review(), "apiVersion": "admission.k8s.io/v1beta1"}
        beta = await client.post("/hooks/first", json=beta_review)
    assert one.json() == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u-2", "allowed": True, "warnings": ["second"]},
    }
    assert both.json()["response"]["warnings"] == ["first", "second"]
    assert beta.json()["apiVersion"] == "admission.k8s.io/v1beta1"


NESTED = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("method", "path", "content", "headers", "status", "culprit"),
    [
        ("POST", "/hooks", "not json", JSON, 400, "not JSON"),
        ("POST", "/hooks", "", JSON, 400, "empty"),
        ("POST", "/hooks", NESTED, JSON, 400, "nested too deeply"),
        ("POST", "/hooks", json.dumps({"kind": "Pod", "apiVersion": "v1"}), JSON, 400, "Pod"),
        ("POST", "/hooks", json.dumps(review(uid="")), JSON, 400, "no uid"),
        ("POST", "/hooks", json.dumps(review()), {"content-type": "text/plain"}, 415, "text/plain"),
        ("GET", "/hooks", "", {}, 405, "Only POST"),
        ("POST", "/elsewhere", json.dumps(review()), JSON, 404, "/elsewhere"),
        ("POST", "/hooks/nobody", json.dumps(review()), JSON, 404, "'nobody'"),
        (
            "POST", "/hooks",
            json.dumps(review(resource={"group": "", "version": "v1", "resource": "pods"})),
            JSON, 404, "pods.v1",
        ),
    ],
)  # fmt: skip
async def test_bad_requests_get_a_clear_4xx_and_the_server_stays_up(
    registry: OperatorRegistry,
    cadump: Path,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    content: str,
    headers: dict[str, str],
    status: int,
    culprit: str,
) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks", cadump=cadump)
    async with client_of(server, registry, cadump) as client:
        bad = await client.request(method, path, content=content, headers=headers)
        good = await client.post("/hooks/first", json=review())
    assert bad.status_code == status
    assert culprit in bad.json()["error"]
    assert good.json()["response"]["allowed"] is True
    assert not [record for record in caplog.records if record.exc_info]


async def raw_request(url: str, cadump: Path, head: bytes, body: bytes = b"") -> bytes:
    """Send bytes over TLS and read the answer (or what arrives before the server closes)."""
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(cadump))
    stream = await anyio.connect_tcp(
        host, int(port), tls=True, ssl_context=ctx, tls_standard_compatible=False
    )
    async with stream:
        await stream.send(head + body)
        answer = b""
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive()
    return answer


async def test_an_oversized_body_is_refused_before_it_is_sent(
    registry: OperatorRegistry, cadump: Path
) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks", cadump=cadump)
    head = (
        b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 8388608\r\n\r\n"
    )
    async with serving(server, registry) as config:
        with anyio.fail_after(5):  # the client never sends the 8 MiB: only the headers
            answer = await raw_request(config["url"], cadump, head, b"{")
    assert answer.startswith(b"HTTP/1.1 413")


async def test_a_chunked_body_is_cut_off_at_the_limit(
    registry: OperatorRegistry, cadump: Path
) -> None:
    server = WebhookServer(
        addr="127.0.0.1", port=0, path="/hooks", cadump=cadump, max_body_size=1024
    )

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b" " * 1000

    async with client_of(server, registry, cadump) as client:
        response = await client.post("/hooks", content=chunks(), headers=JSON)
    assert response.status_code == 413


async def test_a_slow_client_gets_408_and_others_are_served_meanwhile(
    registry: OperatorRegistry, cadump: Path
) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks", cadump=cadump, body_timeout=1)
    head = (
        b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n"
    )
    async with serving(server, registry) as config, anyio.create_task_group() as tg:
        answers: list[bytes] = []
        answered = anyio.Event()

        async def slow() -> None:
            answers.append(await raw_request(config["url"], cadump, head, b'{"kind":'))
            answered.set()

        tg.start_soon(slow)
        ctx = ssl.create_default_context(cafile=str(cadump))
        async with httpx.AsyncClient(verify=ctx) as client:
            fast = await client.post(config["url"] + "/first", json=review())
        with anyio.fail_after(5):
            await answered.wait()
    assert fast.json()["response"]["allowed"] is True
    assert answers[0].startswith(b"HTTP/1.1 408")


@contextlib.contextmanager
def logged(message: str, logger: str) -> Iterator[anyio.Event]:
    """An event that is set once ``logger`` logs ``message`` (from the event loop's thread)."""
    seen = anyio.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage() == message:
                seen.set()

    handler = Seen()
    logging.getLogger(logger).addHandler(handler)
    try:
        yield seen
    finally:
        logging.getLogger(logger).removeHandler(handler)


async def refused(url: str, ctx: ssl.SSLContext) -> bool:
    """Whether the server refuses the client's TLS (no HTTP answer comes back)."""
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    body = json.dumps(review()).encode()
    head = "POST /who HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    try:
        stream = await anyio.connect_tcp(
            host, int(port), tls=True, ssl_context=ctx, tls_standard_compatible=False
        )
        async with stream:
            await stream.send(head.encode() + body)
            return not (await stream.receive()).startswith(b"HTTP/1.1")
    except (ssl.SSLError, OSError, anyio.BrokenResourceError, anyio.EndOfStream):
        return True


def client_context(cadump: Path, pair: Any | None, tmp_path: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cadump))
    if pair is not None:
        pair.write(tmp_path / "client.crt", tmp_path / "client.key")
        ctx.load_cert_chain(tmp_path / "client.crt", tmp_path / "client.key")
    return ctx


async def test_verified_client_certificates_reach_handlers_as_sslpeer(
    cadump: Path, tmp_path: Path
) -> None:
    clients, strangers = CertificateAuthority(), CertificateAuthority()
    (tmp_path / "clients.pem").write_bytes(clients.cert_pem)
    registry = OperatorRegistry()
    peers: list[Any] = []

    @on.validate("kopfexamples", registry=registry, id="who")
    def who(sslpeer: Any, **_: Any) -> None:
        peers.append(sslpeer)

    server = WebhookServer(
        addr="127.0.0.1", port=0, cadump=cadump, verify_cafile=tmp_path / "clients.pem"
    )
    known = clients.issue("kube-apiserver", client=True)
    stranger = strangers.issue("mallory", client=True)
    async with serving(server, registry) as config:
        for pair in (known, None):
            ctx = client_context(cadump, pair, tmp_path)
            async with httpx.AsyncClient(verify=ctx) as client:
                await client.post(config["url"] + "/who", json=review())
        assert await refused(config["url"], client_context(cadump, stranger, tmp_path))
    assert peers[0]["subject"] == ((("commonName", "kube-apiserver"),),)
    assert peers[1:] == [{}]  # no client certificate: an empty mapping, as in Kopf


async def test_required_client_certificates_refuse_clients_without_one(
    registry: OperatorRegistry, cadump: Path, tmp_path: Path
) -> None:
    clients = CertificateAuthority()
    server = WebhookServer(
        addr="127.0.0.1", port=0, cadump=cadump, verify_cadata=clients.cert_pem,
        verify_mode=ssl.CERT_REQUIRED,
    )  # fmt: skip
    async with serving(server, registry) as config:
        assert await refused(config["url"], client_context(cadump, None, tmp_path))
        pair = clients.issue("kube-apiserver", client=True)
        async with httpx.AsyncClient(verify=client_context(cadump, pair, tmp_path)) as client:
            response = await client.post(config["url"] + "/first", json=review())
    assert response.json()["response"]["allowed"] is True


async def test_certificate_files_changed_on_disk_are_served_without_a_restart(
    registry: OperatorRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.webhooks")
    old_ca, new_ca = CertificateAuthority(), CertificateAuthority()
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    old_ca.issue("op", sans=["127.0.0.1"], server=True).write(cert, key)
    (tmp_path / "old.pem").write_bytes(old_ca.cert_pem)
    (tmp_path / "new.pem").write_bytes(new_ca.cert_pem)
    server = WebhookServer(
        addr="127.0.0.1", port=0, certfile=cert, pkeyfile=key, cafile=tmp_path / "old.pem",
        file_check_interval=0.05,
    )  # fmt: skip
    reloaded = logged("The webhook certificate changed on disk and is reloaded.", "anyop.webhooks")
    async with serving(server, registry) as config:
        url = config["url"] + "/first"
        old = ssl.create_default_context(cafile=str(tmp_path / "old.pem"))
        new = ssl.create_default_context(cafile=str(tmp_path / "new.pem"))
        async with httpx.AsyncClient(verify=old) as client:
            before = await client.post(url, json=review())
        with reloaded as reload, anyio.fail_after(5):
            new_ca.issue("op", sans=["127.0.0.1"], server=True).write(cert, key)
            await reload.wait()
        async with httpx.AsyncClient(verify=new) as client:
            after = await client.post(url, json=review())
    assert before.json()["response"]["allowed"] is True
    assert after.json()["response"]["allowed"] is True


async def test_requests_beyond_the_concurrency_cap_get_503_at_once(cadump: Path) -> None:
    registry = OperatorRegistry()
    entered, release = anyio.Event(), anyio.Event()

    @on.validate("kopfexamples", registry=registry, id="held")
    async def held(**_: Any) -> None:
        entered.set()
        await release.wait()

    server = WebhookServer(addr="127.0.0.1", port=0, cadump=cadump, max_concurrency=1)
    answers: list[int] = []
    async with client_of(server, registry, cadump) as client, anyio.create_task_group() as tg:

        async def first() -> None:
            answers.append((await client.post("/held", json=review())).status_code)

        tg.start_soon(first)
        with anyio.fail_after(5):
            await entered.wait()
            busy = await client.post("/held", json=review())
        release.set()
    assert busy.status_code == 503
    assert answers == [200]


async def test_a_failing_filter_callback_answers_500_and_the_server_stays_up(
    cadump: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()

    def broken(**_: Any) -> bool:
        raise RuntimeError("the filter is broken")

    on.validate("kopfexamples", registry=registry, id="f", when=broken)(lambda **_: None)
    on.validate("kopfexamples", registry=registry, id="ok")(lambda **_: None)
    server = WebhookServer(addr="127.0.0.1", port=0, cadump=cadump)
    async with client_of(server, registry, cadump) as client:
        failed = await client.post("/f", json=review())
        fine = await client.post("/ok", json=review())
    assert failed.status_code == 500
    assert "the filter is broken" in failed.json()["error"]
    assert fine.json()["response"]["allowed"] is True
    assert "An admission review failed unexpectedly." in caplog.messages


async def test_an_insecure_server_speaks_plain_http_and_advertises_no_ca(
    registry: OperatorRegistry,
) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, path="hooks/", insecure=True)
    async with serving(server, registry) as config, httpx.AsyncClient() as client:
        response = await client.post(config["url"] + "/first", json=review())
    assert config["url"].startswith("http://127.0.0.1:")
    assert config["url"].endswith("/hooks")
    assert "caBundle" not in config
    assert response.json()["response"]["warnings"] == ["first"]
