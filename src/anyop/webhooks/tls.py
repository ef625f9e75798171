"""TLS for webhook servers: serving contexts, client certificates, SANs, and reloading.

- :func:`server_context` builds the serving :class:`ssl.SSLContext`; client certificates are
  verified when a CA for them is given (``verify_*``).
- :class:`PeerRecordingSSLObject` reports failed handshakes (a client that does not trust the
  certificate) to :mod:`anyop.webhooks.handshakes`, which counts them and warns.
- :data:`current_sslpeer`: the verified client certificate of the connection a request came on.
  The context's SSL objects record it when the server asks for the negotiated protocol right
  after the handshake, in the connection's task; Hypercorn starts every request's task from
  there, so each request sees its own connection's peer (on Trio and asyncio alike).
- :func:`certificate_names` and :func:`check_certificate` check that a certificate covers the
  host that the API servers are told to call, so a bad setup fails at startup, not per request.
- :class:`CertificateFiles` notices changed certificate files; :func:`reload` loads them into the
  running context: new handshakes use the new certificate, open connections keep the old one;
  :func:`follow_files` does both for as long as a server runs.
- :func:`self_signed_context` makes a CA and a serving certificate it issued, in memory.

The metrics server (:mod:`anyop.engine.operator.metrics_server`) serves with the same contexts.
"""

from __future__ import annotations

import contextvars
import datetime
import hashlib
import ipaddress
import logging
import ssl
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from anyop.errors import ConfigError
from anyop.webhooks.certs import CertificateAuthority, KeyPair
from anyop.webhooks.handshakes import current_handshake_failures, peer_of

__all__ = [
    "CertificateFiles",
    "ClientVerification",
    "PeerRecordingSSLObject",
    "certificate_names",
    "check_certificate",
    "current_sslpeer",
    "follow_files",
    "pair_context",
    "reload",
    "san_hosts",
    "self_signed_context",
    "server_context",
]

logger = logging.getLogger("anyop.webhooks")

current_sslpeer: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "anyop_sslpeer", default=None
)
"""The verified client certificate of the current connection (``None`` if none was verified)."""


class PeerRecordingSSLObject(ssl.SSLObject):
    """An SSL object that makes its verified peer certificate ambient after the handshake, and
    reports a failed handshake to :data:`~anyop.webhooks.handshakes.current_handshake_failures`.
    """

    _peer: str | None = None
    _peer_read = False

    def do_handshake(self) -> None:
        """A handshake step; a failure is also reported, with the client's address.

        The address is read at the first step, from the caller (asyncio's or Trio's TLS layer:
        see :func:`~anyop.webhooks.handshakes.peer_of`): after a failure, the socket may be
        reset already.
        """
        if not self._peer_read:
            self._peer, self._peer_read = peer_of(sys._getframe(1).f_locals.get("self")), True
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise  # not a failure: the handshake waits for data
        except ssl.SSLError as error:
            failures = current_handshake_failures.get()
            if failures is not None:
                failures.failed(error, self._peer)
            raise

    def selected_alpn_protocol(self) -> str | None:
        """The negotiated protocol; also records the peer certificate (see the module doc)."""
        current_sslpeer.set(self.getpeercert() or None)
        return super().selected_alpn_protocol()


@dataclass(frozen=True)
class ClientVerification:
    """How client certificates are checked (Kopf's ``verify_*`` options)."""

    mode: ssl.VerifyMode | None = None
    cafile: str | None = None
    capath: str | None = None
    cadata: bytes | str | None = None

    @property
    def configured(self) -> bool:
        """Whether any CA for client certificates is given."""
        return any(v is not None for v in (self.cafile, self.capath, self.cadata))


def server_context(
    certfile: Path, keyfile: Path, *, password: str | None, verification: ClientVerification
) -> ssl.SSLContext:
    """A serving context with the certificate, and client verification if configured.

    With a CA for clients but no ``mode``, a client certificate is optional, but verified if
    presented (a wrong one fails the handshake).
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["h2", "http/1.1"])
    context.sslobject_class = PeerRecordingSSLObject
    reload(context, certfile, keyfile=keyfile, password=password)
    if verification.configured:
        cadata = verification.cadata
        context.load_verify_locations(
            cafile=verification.cafile,
            capath=verification.capath,
            cadata=cadata.decode() if isinstance(cadata, bytes) else cadata,
        )
        context.verify_mode = verification.mode or ssl.CERT_OPTIONAL
    elif verification.mode is not None:
        context.verify_mode = verification.mode
    return context


def reload(context: ssl.SSLContext, certfile: Path, *, keyfile: Path, password: str | None) -> None:
    """Load new certificate files into a serving context (used by new handshakes).

    Raises:
        ssl.SSLError: The files do not form a valid certificate and key (the old ones stay).
    """
    context.load_cert_chain(str(certfile), str(keyfile), password=password)


def pair_context(pair: KeyPair, *, verification: ClientVerification) -> ssl.SSLContext:
    """A serving context with a certificate held in memory (written to a private temporary
    folder only while it is loaded: :mod:`ssl` loads certificates from files)."""
    with tempfile.TemporaryDirectory(prefix="anyop-tls-") as folder:
        certfile, keyfile = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        pair.write(certfile, keyfile)
        return server_context(certfile, keyfile, password=None, verification=verification)


def self_signed_context(
    hosts: Iterable[str | None], *, ca_name: str, verification: ClientVerification
) -> tuple[ssl.SSLContext, KeyPair, bytes]:
    """A new CA, a serving certificate it issued for ``hosts`` (see :func:`san_hosts`), and a
    serving context with that certificate.

    Returns:
        The context, the certificate with its key, and the CA certificate (PEM).
    """
    sans = san_hosts(hosts)
    ca = CertificateAuthority(ca_name)
    pair = ca.issue(sans[0] if sans else "localhost", sans=sans, server=True)
    return pair_context(pair, verification=verification), pair, ca.cert_pem


async def follow_files(
    context: ssl.SSLContext,
    files: CertificateFiles,
    *,
    interval: float,
    password: str | None,
    what: str,
) -> None:
    """Load the certificate files into the serving context whenever they change; forever.

    A change that cannot be loaded is logged and the previous certificate stays in use.

    Args:
        context: The running server's context.
        files: The certificate files to look at every ``interval`` seconds.
        interval: Seconds between looks.
        password: The private key's password.
        what: The server's name in the log lines, e.g. ``"webhook"``.
    """
    while True:
        await anyio.sleep(interval)
        if files.changed():
            try:
                reload(context, files.certfile, keyfile=files.keyfile, password=password)
            except (ssl.SSLError, OSError) as e:
                logger.error("The changed %s certificate cannot be loaded: %s", what, e)
            else:
                logger.info("The %s certificate changed on disk and is reloaded.", what)


def san_hosts(hosts: Iterable[str | None]) -> list[str]:
    """The SANs for a self-made certificate: unique, in order, without ``0.0.0.0`` and ``::``."""
    unique: list[str] = []
    for host in hosts:
        if host and host not in unique and host not in {"0.0.0.0", "::"}:
            unique.append(host)
    return unique


def certificate_names(cert_pem: bytes) -> tuple[set[str], set[str]]:
    """The DNS names and the IP addresses (normalised) among a certificate's SANs."""
    return _names(x509.load_pem_x509_certificate(cert_pem))


def _names(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    dns = {name.lower() for name in sans.get_values_for_type(x509.DNSName)}
    ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    return dns, ips


def check_certificate(cert_pem: bytes, host: str, *, ca_pem: bytes | None = None) -> None:
    """Check that the serving certificate is current and names ``host`` in its SANs, and (if a
    CA bundle is given) that the bundle can verify it.

    Raises:
        ConfigError: What is wrong, naming the host or the dates.
    """
    cert = x509.load_pem_x509_certificate(cert_pem)
    now = datetime.datetime.now(datetime.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise ConfigError(
            f"The webhook certificate is valid only from {cert.not_valid_before_utc} to "
            f"{cert.not_valid_after_utc}."
        )
    dns, ips = _names(cert)
    if not _covers(host, dns, ips):
        raise ConfigError(
            f"The webhook certificate has no SAN for {host!r} (it has {sorted(dns | ips)}); "
            "API servers would refuse it. Add the host to the certificate (extra_sans=...)."
        )
    if ca_pem is not None and not _issued_by_bundle(cert, ca_pem):
        raise ConfigError("The webhook CA bundle did not issue the serving certificate.")


def _covers(host: str, dns: set[str], ips: set[str]) -> bool:
    try:
        return str(ipaddress.ip_address(host.strip("[]"))) in ips
    except ValueError:
        pass
    host = host.lower()
    wildcard = "*." + host.split(".", 1)[1] if "." in host else None
    return host in dns or wildcard in dns


def _issued_by_bundle(cert: x509.Certificate, ca_pem: bytes) -> bool:
    for ca in x509.load_pem_x509_certificates(ca_pem):
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except (ValueError, TypeError, InvalidSignature):
            continue  # not this one: try the next
    return False


class CertificateFiles:
    """A certificate and key on disk, and whether they changed since the last look.

    Changes are noticed by content (a hash), so an atomic swap of a symlinked directory (as
    Kubernetes does for mounted Secrets) counts, and a mere ``touch`` does not.
    """

    def __init__(self, certfile: Path, keyfile: Path) -> None:
        self.certfile, self.keyfile = certfile, keyfile
        self._digest = self._read_digest()

    def _read_digest(self) -> bytes | None:
        try:
            content = self.certfile.read_bytes() + b"\0" + self.keyfile.read_bytes()
        except OSError:
            return None  # mid-swap: look again next time
        return hashlib.sha256(content).digest()

    def changed(self) -> bool:
        """Whether both files are readable and differ from the last time this returned true."""
        digest = self._read_digest()
        if digest is None or digest == self._digest:
            return False
        self._digest = digest
        return True
