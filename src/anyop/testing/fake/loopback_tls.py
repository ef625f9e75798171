"""TLS for the loopback server: a throwaway certificate authority and a serving certificate.

For clients that insist on HTTPS. :func:`loopback_certificates` makes a certificate for
``127.0.0.1`` and ``localhost`` signed by the process's fake CA (the webhooks'
``CertificateAuthority``); the CA's PEM goes in the kubeconfig's ``certificate-authority-data``.
"""

from __future__ import annotations

import dataclasses
import functools
import ssl
import tempfile
from pathlib import Path

from anyop.webhooks.certs import CertificateAuthority

__all__ = ["LoopbackCertificates", "fake_authority", "loopback_certificates"]


@dataclasses.dataclass(frozen=True)
class LoopbackCertificates:
    """A CA and a serving certificate for loopback.

    Attributes:
        ca_pem: The CA certificate (PEM), which clients trust.
        cert_pem: The serving certificate (PEM).
        key_pem: Its private key (PEM, unencrypted).
    """

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """A serving context (TLS 1.2 or newer, HTTP/1.1)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        with tempfile.TemporaryDirectory() as folder:
            cert, key = Path(folder, "tls.crt"), Path(folder, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts the CA (and only it)."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())


@functools.cache
def fake_authority() -> CertificateAuthority:
    """The CA of the fakes of this process (a throwaway one, made once): it signs their serving
    certificates, and their namespaces' ``kube-root-ca.crt`` hold it, as a cluster's do."""
    return CertificateAuthority("anyop FakeCluster CA")


def loopback_certificates() -> LoopbackCertificates:
    """A certificate for ``127.0.0.1``, ``::1`` and ``localhost`` signed by the fakes' CA."""
    ca = fake_authority()
    served = ca.issue("127.0.0.1", sans=["localhost", "127.0.0.1", "::1"], server=True)
    return LoopbackCertificates(
        ca_pem=ca.cert_pem, cert_pem=served.cert_pem, key_pem=served.key_pem
    )
