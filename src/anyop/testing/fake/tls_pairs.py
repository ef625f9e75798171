"""Whether a TLS Secret's certificate and key make a pair, as Go's ``tls.X509KeyPair`` decides
(kube-apiserver warns of a ``kubernetes.io/tls`` Secret whose pair it refuses, with its error).

Pure. PEM blocks are found as ``encoding/pem`` finds them (simplified: a block whose base64 does
not decode is skipped); certificates and keys are read with ``cryptography``.
"""

from __future__ import annotations

import base64
import binascii
import re

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

__all__ = ["key_pair_error"]

_BLOCK = re.compile(rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def _blocks(data: bytes) -> list[tuple[str, bytes]]:
    """The PEM blocks of ``data`` in order: their types and contents (headers skipped)."""
    found = []
    for match in _BLOCK.finditer(data):
        body = match.group(2)
        if b":" in body.split(b"\n\n", 1)[0] and b"\n\n" in body:
            body = body.split(b"\n\n", 1)[1]  # RFC 1421 headers, then a blank line
        try:
            content = base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            continue
        found.append((match.group(1).decode("latin-1"), content))
    return found


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"


def _certificate(blocks: list[tuple[str, bytes]]) -> bytes | str:
    """The first certificate's DER, or the error of finding none."""
    certificates = [content for kind, content in blocks if kind == "CERTIFICATE"]
    if certificates:
        return certificates[0]
    skipped = [kind for kind, _ in blocks]
    if not skipped:
        return "tls: failed to find any PEM data in certificate input"
    if len(skipped) == 1 and skipped[0].endswith("PRIVATE KEY"):
        return (
            "tls: failed to find certificate PEM data in certificate input, but did find a "
            "private key; PEM inputs may have been switched"
        )
    return (
        'tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM '
        f"blocks of the following types: {_go_list(skipped)}"
    )


def _key(blocks: list[tuple[str, bytes]]) -> bytes | str:
    """The first private key's DER, or the error of finding none."""
    skipped = []
    for kind, content in blocks:
        if kind == "PRIVATE KEY" or kind.endswith(" PRIVATE KEY"):
            return content
        skipped.append(kind)
    if not skipped:
        return "tls: failed to find any PEM data in key input"
    if skipped == ["CERTIFICATE"]:
        return "tls: found a certificate rather than a key in the PEM for the private key"
    return (
        'tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input after '
        f"skipping PEM blocks of the following types: {_go_list(skipped)}"
    )


def key_pair_error(certificate: bytes, key: bytes) -> str | None:
    """``tls.X509KeyPair``'s error for this certificate and key, or ``None`` if they pair.
    (Go's own message for a certificate that does not parse is not matched: the fake says
    ``x509: malformed certificate``.)"""
    der = _certificate(_blocks(certificate))
    if isinstance(der, str):
        return der
    key_der = _key(_blocks(key))
    if isinstance(key_der, str):
        return key_der
    try:
        public = x509.load_der_x509_certificate(der).public_key()
    except ValueError:
        return "x509: malformed certificate"
    try:
        private = serialization.load_der_private_key(key_der, password=None)
    except (ValueError, TypeError):
        return "tls: failed to parse private key"
    pairs = (
        (rsa.RSAPublicKey, rsa.RSAPrivateKey),
        (ec.EllipticCurvePublicKey, ec.EllipticCurvePrivateKey),
        (ed25519.Ed25519PublicKey, ed25519.Ed25519PrivateKey),
    )
    for public_type, private_type in pairs:
        if isinstance(public, public_type):
            if not isinstance(private, private_type):
                return "tls: private key type does not match public key type"
            if private.public_key() != public:
                return "tls: private key does not match public key"
            return None
    return "tls: unknown public key algorithm"
