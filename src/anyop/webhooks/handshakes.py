"""The webhook server's failed TLS handshakes: counted by reason and warned about, rate-limited.

When an API server cannot verify the webhook server's certificate (the ``caBundle`` of the
webhook configuration did not issue it, it expired, the URL's host is not among its SANs), the
API server fails the request with an x509 error, and all the webhook server sees is a handshake
that the client broke off with a TLS alert. Hypercorn drops those silently on both backends
(asyncio's SSL transport logs them only in debug mode; Hypercorn's Trio server returns on the
``BrokenResourceError``). So the serving SSL objects
(:class:`~anyop.webhooks.tls.PeerRecordingSSLObject`) report every failed handshake to
:data:`current_handshake_failures`, which the webhook server sets for its serving task:

- :func:`failure_reason` (pure) names the failure for ``anyop_webhook_tls_errors_total{reason}``,
  one of :data:`REASONS`; a client that closes the connection before the handshake (a TCP probe)
  is no TLS error and is not counted.
- :class:`HandshakeFailures` counts them (and in the operator's metrics, if it serves them) and
  logs a WARNING per reason: at its first failure, then at most once per ``interval`` with the
  number since, naming the client and what the reason most likely means.
"""

from __future__ import annotations

import collections
import contextvars
import logging
import ssl
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anyop.metrics import Metrics

__all__ = [
    "REASONS",
    "HandshakeFailures",
    "current_handshake_failures",
    "failure_reason",
    "peer_of",
    "warning_text",
]

logger = logging.getLogger("anyop.webhooks")

_OPENSSL_REASONS = {
    "TLSV1_ALERT_UNKNOWN_CA": "unknown_ca",
    "SSLV3_ALERT_BAD_CERTIFICATE": "bad_certificate",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": "bad_certificate",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "certificate_expired",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "certificate_unknown",
    "SSLV3_ALERT_CERTIFICATE_REVOKED": "certificate_unknown",
    "PEER_DID_NOT_RETURN_A_CERTIFICATE": "client_certificate",
    "CERTIFICATE_VERIFY_FAILED": "client_certificate",  # on a server: the client's certificate
    "HTTP_REQUEST": "not_tls",
    "HTTPS_PROXY_REQUEST": "not_tls",
    "WRONG_VERSION_NUMBER": "not_tls",
    "UNSUPPORTED_PROTOCOL": "protocol",
    "TLSV1_ALERT_PROTOCOL_VERSION": "protocol",
    "NO_SHARED_CIPHER": "protocol",
    "SSLV3_ALERT_HANDSHAKE_FAILURE": "protocol",
    "NO_APPLICATION_PROTOCOL": "protocol",
}

_MEANINGS = {
    "unknown_ca": (
        "the client does not trust the CA that issued this certificate: check the caBundle of "
        "the webhook configuration (or of the CRD's conversion webhook) against this server's CA"
    ),
    "bad_certificate": (
        "the caBundle of the webhook configuration did not issue this certificate (the API "
        "server refuses with this alert for any x509 error: check then that the webhook URL's "
        "host is among the certificate's SANs and that it is valid now)"
    ),
    "certificate_expired": (
        "the certificate expired or is not yet valid by the client's clock: renew it (or check "
        "the clocks)"
    ),
    "certificate_unknown": "the client refused this certificate for a reason of its own",
    "client_certificate": (
        "the client sent no client certificate, or one that the verify CA (verify_cafile, "
        "verify_capath, verify_cadata) did not issue"
    ),
    "not_tls": "the client does not speak TLS: the webhook URL must be https://",
    "protocol": "the client and this server share no TLS version, cipher or ALPN protocol",
    "other": "the client broke off the handshake",
}

REASONS: tuple[str, ...] = tuple(_MEANINGS)
"""Every value of the ``reason`` label of ``anyop_webhook_tls_errors_total``."""

current_handshake_failures: contextvars.ContextVar[HandshakeFailures | None] = (
    contextvars.ContextVar("anyop_handshake_failures", default=None)
)
"""Where the serving SSL objects report failed handshakes (set by the webhook server)."""


def failure_reason(error: ssl.SSLError) -> str | None:
    """The reason label for a failed handshake (one of :data:`REASONS`), or ``None`` if the
    client closed the connection without a word (not a TLS error: e.g. a TCP probe). Pure."""
    if isinstance(error, ssl.SSLEOFError | ssl.SSLZeroReturnError):
        return None
    return _OPENSSL_REASONS.get(getattr(error, "reason", None) or "", "other")


def warning_text(reason: str, peer: str | None, *, detail: str, count: int) -> str:
    """The WARNING for ``count`` failures of one reason (the last one from ``peer``). Pure."""
    source = f"with {peer}" if peer else "with a client"
    more = f" ({count} of this reason since the last warning)" if count > 1 else ""
    return (
        f"A TLS handshake {source} failed{more}: {reason} ({detail}). Most likely "
        f"{_MEANINGS[reason]}. Counted in anyop_webhook_tls_errors_total{{reason={reason!r}}}."
    )


def peer_of(owner: object) -> str | None:
    """``host:port`` of the client, from the TLS layer that runs a handshake (the caller of
    :meth:`ssl.SSLObject.do_handshake`); ``None`` where it is not known.

    WARNING: this reads the internals of the callers, as neither :class:`ssl.SSLObject` (it only
    has memory buffers) nor asyncio, Trio or Hypercorn tell who failed: asyncio's
    ``SSLProtocol._do_handshake`` has its socket transport in ``_transport``; Trio's
    ``SSLStream._retry`` has ``transport_stream.socket``. If either changes, the peer is not
    named and the counting goes on; tests/unit/webhooks/test_handshake_failures.py checks the
    peer on both backends and fails then.
    """
    address: object = None
    transport = getattr(owner, "_transport", None)
    if transport is not None and hasattr(transport, "get_extra_info"):
        address = transport.get_extra_info("peername")
    sock = getattr(getattr(owner, "transport_stream", None), "socket", None)
    if sock is not None:
        try:
            address = sock.getpeername()
        except OSError:
            return None  # already gone
    if not isinstance(address, tuple) or len(address) < 2:
        return None
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


class HandshakeFailures:
    """The failed handshakes of one server: counts by reason, and when to warn about them.

    Args:
        metrics: The operator's metrics to count in as well (``None``: only here).
        interval: Seconds between two warnings of the same reason; the failures in between are
            counted and said in the next warning.

    Attributes:
        counts: Failures by reason, since the start.
    """

    def __init__(self, metrics: Metrics | None = None, *, interval: float = 60.0) -> None:
        """See the class."""
        self.metrics = metrics
        self.interval = interval
        self.counts: collections.Counter[str] = collections.Counter()
        self._unsaid: collections.Counter[str] = collections.Counter()
        self._last_said: dict[str, float] = {}

    def note(self, reason: str, now: float) -> int:
        """Count a failure; return how many of its reason to warn about now (0: not yet). No
        I/O: ``now`` is any monotonic time."""
        self.counts[reason] += 1
        self._unsaid[reason] += 1
        last = self._last_said.get(reason)
        if last is not None and now - last < self.interval:
            return 0
        self._last_said[reason] = now
        return self._unsaid.pop(reason)

    def failed(self, error: ssl.SSLError, peer: str | None) -> None:
        """Count a failed handshake and warn about it if due (a TCP probe's close is only
        logged at DEBUG level)."""
        reason = failure_reason(error)
        if reason is None:
            logger.debug("A client (%s) closed its connection during the TLS handshake.", peer)
            return
        if self.metrics is not None:
            self.metrics.webhook_tls_error(reason)
        count = self.note(reason, time.monotonic())
        if count:
            detail = str(getattr(error, "reason", None) or error)
            logger.warning(warning_text(reason, peer, detail=detail, count=count))
