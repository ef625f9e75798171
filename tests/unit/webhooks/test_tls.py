"""Certificates of webhook servers: SANs, startup checks, change detection."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization

from anyop.errors import ConfigError
from anyop.webhooks.certs import CertificateAuthority, generate_private_key
from anyop.webhooks.server import WebhookK3dServer, WebhookServer
from anyop.webhooks.tls import CertificateFiles, certificate_names, check_certificate, san_hosts


def test_self_made_sans_skip_wildcard_addresses_and_duplicates() -> None:
    hosts = ["example.com", "0.0.0.0", "::", None, "10.0.0.1", "example.com"]
    assert san_hosts(hosts) == ["example.com", "10.0.0.1"]


def test_the_generated_certificate_names_host_addr_and_extra_sans() -> None:
    server = WebhookServer(addr="0.0.0.0", host="op.example.com", extra_sans=["::1", "x.svc"])
    pair, ca_pem = server.generate_certificate()
    assert certificate_names(pair.cert_pem) == ({"op.example.com", "x.svc"}, {"::1"})
    check_certificate(pair.cert_pem, "op.example.com", ca_pem=ca_pem)
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    assert cert.subject.rfc4514_string() == "CN=op.example.com"


def test_cadump_writes_the_ca_bundle(tmp_path: Path) -> None:
    server = WebhookServer(addr="127.0.0.1", cadump=tmp_path / "ca.pem")
    context, ca_pem = server._tls()
    assert context is not None
    assert (tmp_path / "ca.pem").read_bytes() == ca_pem


def test_cluster_specific_servers_advertise_their_magic_host() -> None:
    server = WebhookK3dServer(port=0)
    assert server.advertised_host == "host.k3d.internal"
    assert server.listen_addr == "0.0.0.0"
    assert WebhookServer(addr="10.1.2.3").advertised_host == "10.1.2.3"


def test_certificate_names_are_split_into_dns_and_ips() -> None:
    pair = CertificateAuthority().issue("x", sans=["a.example", "127.0.0.1", "::1"], server=True)
    assert certificate_names(pair.cert_pem) == ({"a.example"}, {"127.0.0.1", "::1"})


def test_a_certificate_without_the_advertised_host_fails_at_startup() -> None:
    ca = CertificateAuthority()
    pair = ca.issue("x", sans=["a.example"], server=True)
    check_certificate(pair.cert_pem, "a.example", ca_pem=ca.cert_pem)
    with pytest.raises(ConfigError, match=r"no SAN for '127\.0\.0\.1'"):
        check_certificate(pair.cert_pem, "127.0.0.1")


def test_a_cn_only_certificate_fails_at_startup() -> None:
    pair = CertificateAuthority().issue("a.example", server=True)
    with pytest.raises(ConfigError, match=r"no SAN for 'a\.example'"):
        check_certificate(pair.cert_pem, "a.example")


def test_a_wildcard_san_covers_one_level() -> None:
    pair = CertificateAuthority().issue("x", sans=["*.example.com"], server=True)
    check_certificate(pair.cert_pem, "op.example.com")
    with pytest.raises(ConfigError):
        check_certificate(pair.cert_pem, "a.b.example.com")


def test_a_wrong_ca_bundle_fails_at_startup() -> None:
    pair = CertificateAuthority().issue("x", sans=["a.example"], server=True)
    with pytest.raises(ConfigError, match="did not issue"):
        check_certificate(pair.cert_pem, "a.example", ca_pem=CertificateAuthority().cert_pem)


def test_an_expired_certificate_fails_at_startup() -> None:
    key = generate_private_key()
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "old")])
    long_ago = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(long_ago)
        .not_valid_after(long_ago + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("old")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    with pytest.raises(ConfigError, match="valid only from"):
        check_certificate(cert.public_bytes(serialization.Encoding.PEM), "old")


def test_given_files_without_the_host_fail_the_server_at_startup(tmp_path: Path) -> None:
    CertificateAuthority().issue("x", sans=["a.example"], server=True).write(
        tmp_path / "c.pem", tmp_path / "k.pem"
    )
    server = WebhookServer(
        addr="127.0.0.1", certfile=tmp_path / "c.pem", pkeyfile=tmp_path / "k.pem"
    )
    with pytest.raises(ConfigError, match=r"no SAN for '127\.0\.0\.1'"):
        server._tls()


def test_a_certificate_without_its_key_is_refused() -> None:
    with pytest.raises(ValueError, match="both certfile= and pkeyfile="):
        WebhookServer(certfile="c.pem")


def test_changed_files_are_noticed_once_and_only_by_content(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("one")
    key.write_text("key")
    files = CertificateFiles(cert, key)
    assert not files.changed()
    cert.touch()
    assert not files.changed()
    cert.write_text("two")
    assert files.changed()
    assert not files.changed()
    key.unlink()
    assert not files.changed()  # mid-swap: not yet
