"""Failed TLS handshakes at the webhook server: counted by reason, warned about, rate-limited.

The reasons and the warnings' timing are pure. The server is real, on both backends: clients
that do not trust its certificate (another CA, another host name) break off their handshakes,
which Hypercorn drops silently; the server counts them in the operator's metrics, warns once per
reason naming the client, and goes on serving the clients that trust it.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import logging
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from prometheus_client.parser import text_string_to_metric_families
from tests.unit.webhooks.test_webhook_server import review, serving

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.metrics import Metrics, current_metrics
from anyop.webhooks.certs import (
    CertificateAuthority,
    KeyPair,
    generate_private_key,
    private_key_pem,
)
from anyop.webhooks.handshakes import (
    REASONS,
    HandshakeFailures,
    failure_reason,
    peer_of,
    warning_text,
)
from anyop.webhooks.server import WebhookServer
from anyop.webhooks.tls import ClientVerification, server_context

JSON = {"content-type": "application/json"}


def alert(reason: str | None, kind: type[ssl.SSLError] = ssl.SSLError) -> ssl.SSLError:
    error = kind(1, f"[SSL: {reason}]")
    if reason is not None:
        error.reason = reason
    return error


@pytest.mark.parametrize(
    ("openssl", "reason"),
    [
        ("TLSV1_ALERT_UNKNOWN_CA", "unknown_ca"),
        ("SSLV3_ALERT_BAD_CERTIFICATE", "bad_certificate"),
        ("SSLV3_ALERT_CERTIFICATE_EXPIRED", "certificate_expired"),
        ("SSLV3_ALERT_CERTIFICATE_UNKNOWN", "certificate_unknown"),
        ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "client_certificate"),
        ("HTTP_REQUEST", "not_tls"),
        ("NO_SHARED_CIPHER", "protocol"),
        ("SOMETHING_NEW_IN_OPENSSL_9", "other"),
        (None, "other"),
    ],
)
def test_a_failure_is_named_by_one_of_a_few_reasons(openssl: str | None, reason: str) -> None:
    assert failure_reason(alert(openssl)) == reason
    assert reason in REASONS


def test_a_client_that_closes_without_a_word_is_no_tls_error() -> None:
    assert failure_reason(alert("UNEXPECTED_EOF_WHILE_READING", ssl.SSLEOFError)) is None
    assert failure_reason(alert(None, ssl.SSLZeroReturnError)) is None


def test_each_reason_is_warned_about_at_once_then_once_per_interval_with_the_count() -> None:
    failures = HandshakeFailures(interval=60.0)
    said = [failures.note("unknown_ca", t) for t in (100.0, 101.0, 130.0, 159.9)]
    other = failures.note("bad_certificate", 102.0)  # its own reason: said at once
    later = [failures.note("unknown_ca", t) for t in (160.0, 161.0, 400.0)]
    assert said == [1, 0, 0, 0]
    assert other == 1
    assert later == [4, 0, 2]  # 101-160 (4), then 161 and 400 (a minute after 160)
    assert failures.counts == {"unknown_ca": 7, "bad_certificate": 1}


def test_the_warning_names_the_client_the_reason_and_what_it_most_likely_means() -> None:
    first = warning_text("unknown_ca", "10.0.0.1:5443", detail="TLSV1_ALERT_UNKNOWN_CA", count=1)
    later = warning_text("bad_certificate", None, detail="SSLV3_ALERT_BAD_CERTIFICATE", count=9)
    assert first.startswith("A TLS handshake with 10.0.0.1:5443 failed: unknown_ca")
    assert "check the caBundle of the webhook configuration" in first
    assert "anyop_webhook_tls_errors_total{reason='unknown_ca'}" in first
    assert "since the last warning" not in first
    assert later.startswith("A TLS handshake with a client failed (9 of this reason since the")
    assert (
        "Most likely the caBundle of the webhook configuration did not issue this certificate"
        in later
    )


def test_an_unknown_caller_names_no_peer() -> None:
    assert peer_of(None) is None
    assert peer_of(object()) is None


@contextlib.contextmanager
def operator_metrics() -> Iterator[Metrics]:
    metrics = Metrics()
    token = current_metrics.set(metrics)
    try:
        yield metrics
    finally:
        current_metrics.reset(token)


def tls_errors(metrics: Metrics) -> dict[str, float]:
    return {
        sample.labels["reason"]: sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
        if sample.name == "anyop_webhook_tls_errors_total"
    }


async def handshake(port: int, cafile: Path, *, host: str = "127.0.0.1") -> None:
    """A TLS client that verifies the server against ``cafile`` and ``host``, and tells the
    server why it refuses it, as the API server does (a TLS alert: anyio's and httpx's streams
    close without sending theirs, so this is the standard library's blocking socket)."""
    context = ssl.create_default_context(cafile=str(cafile))

    def connect() -> None:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            pass

    await anyio.to_thread.run_sync(connect)


async def counted(server: WebhookServer, **expected: int) -> None:
    """Wait until the server has seen these failures (it reads a client's alert a moment
    after the client raised)."""
    with anyio.fail_after(5):
        while dict(server.handshake_failures.counts) != expected:
            await anyio.sleep(0.01)


@pytest.fixture
def registry() -> OperatorRegistry:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="first")
    def first(**_: Any) -> None:
        pass

    return registry


@pytest.mark.anyio
async def test_distrusting_clients_are_counted_warned_about_once_and_the_others_served(
    registry: OperatorRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cadump, other_ca = tmp_path / "ca.pem", tmp_path / "other.pem"
    other_ca.write_bytes(CertificateAuthority("another-ca").cert_pem)
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks", cadump=cadump)
    caplog.set_level(logging.DEBUG, "anyop.webhooks")
    with operator_metrics() as metrics:
        async with serving(server, registry) as config:
            port = httpx.URL(config["url"]).port or 0
            for _ in range(3):
                with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local"):
                    await handshake(port, other_ca)
            await counted(server, unknown_ca=3)
            with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
                await handshake(port, cadump, host="elsewhere.example")
            await counted(server, unknown_ca=3, bad_certificate=1)
            async with httpx.AsyncClient(
                verify=ssl.create_default_context(cafile=cadump)
            ) as client:
                answer = await client.post(config["url"] + "/first", json=review(), headers=JSON)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert answer.status_code == 200
    assert answer.json()["response"]["allowed"] is True
    assert tls_errors(metrics) == {"unknown_ca": 3.0, "bad_certificate": 1.0}
    assert [r.name for r in warnings] == ["anyop.webhooks", "anyop.webhooks"]
    assert warnings[0].getMessage().startswith("A TLS handshake with 127.0.0.1:")
    assert "failed: unknown_ca (TLSV1_ALERT_UNKNOWN_CA)" in warnings[0].getMessage()
    assert "check the caBundle of the webhook configuration" in warnings[0].getMessage()
    assert "failed: bad_certificate (SSLV3_ALERT_BAD_CERTIFICATE)" in warnings[1].getMessage()
    assert warnings[1].getMessage().startswith("A TLS handshake with 127.0.0.1:")


@pytest.mark.anyio
async def test_a_tcp_probe_is_not_counted_and_plain_http_is(
    registry: OperatorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    caplog.set_level(logging.WARNING, "anyop.webhooks")
    async with serving(server, registry) as config:
        port = httpx.URL(config["url"]).port or 0
        async with await anyio.connect_tcp("127.0.0.1", port):
            pass  # connected and closed, as a TCP probe does
        async with httpx.AsyncClient() as client:
            with pytest.raises(httpx.HTTPError):
                await client.post(f"http://127.0.0.1:{port}/hooks/first", json=review())
        await counted(server, not_tls=1)
        await anyio.sleep(0.1)  # time enough for a late count of the probe
    assert server.handshake_failures.counts == {"not_tls": 1}
    assert len(caplog.records) == 1
    assert "failed: not_tls (HTTP_REQUEST)" in caplog.records[0].getMessage()
    assert "the webhook URL must be https://" in caplog.records[0].getMessage()


def expired_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 that expired in 2000, and its key."""
    key = generate_private_key()
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "127.0.0.1")])
    long_ago = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(long_ago)
        .not_valid_after(long_ago + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    pair = KeyPair(cert.public_bytes(serialization.Encoding.PEM), private_key_pem(key))
    pair.write(folder / "tls.crt", folder / "tls.key")
    return folder / "tls.crt", folder / "tls.key"


@pytest.mark.anyio
async def test_a_certificate_that_expired_while_serving_is_told_as_such(
    registry: OperatorRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    certfile, keyfile = expired_certificate(tmp_path)  # a ready context skips the startup check
    context = server_context(certfile, keyfile, password=None, verification=ClientVerification())
    server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks", context=context)
    caplog.set_level(logging.WARNING, "anyop.webhooks")
    with operator_metrics() as metrics:
        async with serving(server, registry) as config:
            port = httpx.URL(config["url"]).port or 0
            with pytest.raises(ssl.SSLCertVerificationError, match="certificate has expired"):
                await handshake(port, certfile)
            await counted(server, certificate_expired=1)
    assert tls_errors(metrics) == {"certificate_expired": 1.0}
    assert len(caplog.records) == 1
    assert "failed: certificate_expired (SSLV3_ALERT_CERTIFICATE_EXPIRED)" in caplog.text
    assert "the certificate expired or is not yet valid by the client's clock" in caplog.text
