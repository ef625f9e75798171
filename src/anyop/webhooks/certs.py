"""Self-made certificate authorities and certificates (the ``cryptography`` package).

Used by the webhook server (a self-signed CA and a serving certificate with the right SANs) and
by the local control plane (its CA, the API server's serving certificate, client certificates).
EC P-256 keys: generated in microseconds, accepted by Go's and Python's TLS stacks alike.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CertificateAuthority",
    "KeyPair",
    "generate_private_key",
    "private_key_pem",
    "public_key_pem",
]

_VALIDITY = datetime.timedelta(days=365)


def generate_private_key() -> ec.EllipticCurvePrivateKey:
    """A new EC P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The unencrypted PKCS#8 PEM of a private key."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The PEM of the public half of a private key."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: Path, key_path: Path) -> None:
        """Write both files; the key is readable by its owner only."""
        cert_path.write_bytes(self.cert_pem)
        key_path.touch(mode=0o600, exist_ok=True)
        key_path.chmod(0o600)
        key_path.write_bytes(self.key_pem)


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _name(common_name: str, organizations: Iterable[str] = ()) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    parts.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(parts)


class CertificateAuthority:
    """A self-signed CA that issues server and client certificates.

    Args:
        common_name: The CA's subject CN.
    """

    def __init__(self, common_name: str = "anyop-ca") -> None:
        self._key = generate_private_key()
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(common_name)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate, PEM-encoded (what goes into a ``caBundle``)."""
        return self._cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        """The CA's private key, PEM-encoded (keep it private)."""
        return private_key_pem(self._key)

    def issue(
        self,
        common_name: str,
        *,
        sans: Iterable[str] = (),
        organizations: Iterable[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> KeyPair:
        """Issue a leaf certificate.

        Args:
            common_name: The subject CN (the user name, for Kubernetes client certificates).
            sans: DNS names and IP addresses for a serving certificate.
            organizations: Subject O values (the groups, for Kubernetes client certificates).
            server: Allow TLS server authentication.
            client: Allow TLS client authentication.
        """
        key = generate_private_key()
        now = datetime.datetime.now(datetime.UTC)
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [
            ExtendedKeyUsageOID.CLIENT_AUTH
        ] * client
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if names := [_san(name) for name in sans]:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), private_key_pem(key))
