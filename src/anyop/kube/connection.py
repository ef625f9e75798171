"""One API endpoint and the credentials to use there: :class:`ConnectionInfo`.

A :class:`ConnectionInfo` is plain data, as login handlers return it. It turns itself into HTTP
headers and an :class:`ssl.SSLContext`; it never turns itself into log lines that show a secret.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import math
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

from anyop.errors import ConfigError

__all__ = ["ConnectionInfo", "proxy_for"]

_HIDDEN_FIELDS = frozenset({"password", "token", "private_key_data"})
_BULKY_FIELDS = frozenset({"ca_data", "certificate_data"})
_URL_FIELDS = frozenset({"server", "proxy_url"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, repr=False)
class ConnectionInfo:
    """A single API endpoint with the credentials and TLS settings to talk to it.

    The field names are Kopf's, so login handlers written for Kopf keep working.

    Attributes:
        server: The API server's base URL, such as ``https://10.0.0.1:6443``.
        ca_path: A PEM file with the certificate authorities to trust.
        ca_data: PEM (or DER) bytes of the certificate authorities to trust.
        insecure: Skip verification of the server's certificate.
        username: The user for HTTP basic authentication.
        password: The password for HTTP basic authentication.
        scheme: The ``Authorization`` scheme for ``token``; ``Bearer`` when unset.
        token: The token to send in the ``Authorization`` header.
        certificate_path: A PEM file with the client certificate.
        certificate_data: PEM bytes of the client certificate.
        private_key_path: A PEM file with the client certificate's private key.
        private_key_data: PEM bytes of the client certificate's private key.
        default_namespace: The namespace that namespaced calls use when given none.
        proxy_url: The proxy to connect through; it wins over the environment.
        trust_env: Take the proxy from ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``.
        priority: Among valid credentials, the highest priority is used.
        expiration: When the credentials stop working; a naive datetime is in UTC.
        tls_server_name: The name to expect in (and send via SNI for) the server's certificate,
            when it differs from the host in ``server``.
        source: Where the credentials come from, for messages (``the kubeconfig ~/.kube/config,
            context 'kind'``); not compared (anyop only).
    """

    server: str
    _: KW_ONLY
    ca_path: str | None = None
    ca_data: bytes | None = None
    insecure: bool | None = None
    username: str | None = None
    password: str | None = None
    scheme: str | None = None
    token: str | None = None
    certificate_path: str | None = None
    certificate_data: bytes | None = None
    private_key_path: str | None = None
    private_key_data: bytes | None = None
    default_namespace: str | None = None
    proxy_url: str | None = None
    trust_env: bool = False
    priority: int = 0
    expiration: datetime | None = None
    tls_server_name: str | None = None
    source: str | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        """Show the fields that are set, with every secret replaced by ``<hidden>``."""
        shown = [
            f"{item.name}={_masked(item.name, getattr(self, item.name))}"
            for item in fields(self)
            if getattr(self, item.name) is not None
        ]
        return f"ConnectionInfo({', '.join(shown)})"

    def as_http_headers(self) -> dict[str, str]:
        """Return the ``Authorization`` header for the token or the basic-auth pair, if any.

        Returns:
            ``{"Authorization": "<scheme> <token>"}``, or a ``Basic`` header when only a username
            or password is set, or an empty dict for certificate-only or anonymous access.
        """
        if self.token is not None:
            return {"Authorization": f"{self.scheme or 'Bearer'} {self.token}"}
        if self.username is not None or self.password is not None:
            pair = f"{self.username or ''}:{self.password or ''}".encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}
        return {}

    def as_ssl_context(self) -> ssl.SSLContext:
        """Build the TLS settings: the trusted CAs, the client certificate, the verification mode.

        Pass the result to httpx as ``verify=context``: httpx ignores ``cert=`` when ``verify``
        is a path, so a client certificate only works through an SSL context. Key data never
        touches the disk except in a private (0700) temporary folder for the duration of loading.
        This reads files, so call it from a worker thread in async code.

        Raises:
            ConfigError: A CA or certificate cannot be loaded; the message names the field.
        """
        context = self._trusting_context()
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._load_client_certificate(context)
        return context

    def is_expired(self, now: datetime | None = None) -> bool:
        """Tell whether ``expiration`` has passed at ``now`` (default: the current UTC time).

        Naive datetimes, in ``expiration`` or in ``now``, are taken as UTC.
        """
        return self.seconds_to_expiry(now) <= 0

    def seconds_to_expiry(self, now: datetime | None = None) -> float:
        """Return how long the credentials stay valid after ``now``: infinite without expiration.

        Naive datetimes, in ``expiration`` or in ``now``, are taken as UTC.
        """
        if self.expiration is None:
            return math.inf
        current = datetime.now(UTC) if now is None else _as_aware(now)
        return (_as_aware(self.expiration) - current).total_seconds()

    def effective_proxy_url(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Return the proxy to use: ``proxy_url``, else the environment's if ``trust_env``.

        Args:
            environ: The environment variables to consult; ``os.environ`` by default.
        """
        if self.proxy_url:
            return self.proxy_url
        if not self.trust_env:
            return None
        return proxy_for(self.server, os.environ if environ is None else environ)

    def _trusting_context(self) -> ssl.SSLContext:
        cadata = _cadata(self.ca_data)
        try:
            return ssl.create_default_context(cafile=self.ca_path, cadata=cadata)
        except (OSError, ValueError) as exc:
            culprit = "ca_path" if self.ca_path is not None else "ca_data"
            raise ConfigError(f"ConnectionInfo.{culprit}: cannot load the CA: {exc}") from exc

    def _load_client_certificate(self, context: ssl.SSLContext) -> None:
        has_cert = self.certificate_path is not None or self.certificate_data is not None
        has_key = self.private_key_path is not None or self.private_key_data is not None
        if not has_cert:
            if has_key:
                raise ConfigError("ConnectionInfo: a private key is set without a certificate")
            return
        with self._pem_files() as (certfile, keyfile):
            try:
                context.load_cert_chain(certfile, keyfile)
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    f"ConnectionInfo.certificate_*/private_key_*: cannot load the client "
                    f"certificate and key ({exc.__class__.__name__}: {exc})"
                ) from exc

    @contextlib.contextmanager
    def _pem_files(self) -> Iterator[tuple[str, str | None]]:
        if self.certificate_data is None and self.private_key_data is None:
            yield str(self.certificate_path), self.private_key_path
            return
        with tempfile.TemporaryDirectory(prefix="anyop-tls-") as folder:
            certfile = _private_file(folder, "tls.crt", self.certificate_data)
            keyfile = _private_file(folder, "tls.key", self.private_key_data)
            yield certfile or str(self.certificate_path), keyfile or self.private_key_path


def proxy_for(server: str, environ: Mapping[str, str]) -> str | None:
    """Return the proxy that the environment names for ``server``, or ``None`` for a direct link.

    ``HTTPS_PROXY`` (or ``HTTP_PROXY`` for ``http://`` servers), then ``ALL_PROXY``, in upper or
    lower case. ``NO_PROXY`` is a comma-separated list of exceptions: ``*`` for everything, IP
    addresses and CIDR ranges, ``example.com`` for that domain and its subdomains,
    ``.example.com`` or ``*.example.com`` for the subdomains only; any entry may end in ``:port``.
    A proxy given without a scheme is taken as ``http://``.

    Raises:
        ConfigError: ``server`` is not a valid URL.
    """
    url = _split_url(server)
    host = (url.hostname or "").lower()
    if _bypassed(host, url.port or _DEFAULT_PORTS.get(url.scheme), _env(environ, "NO_PROXY")):
        return None
    proxy = _env(environ, f"{url.scheme.upper()}_PROXY") or _env(environ, "ALL_PROXY")
    if not proxy:
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _split_url(server: str) -> SplitResult:
    url = urlsplit(server)
    try:
        url.port  # noqa: B018 -- urllib validates the port only when it is read.
    except ValueError as exc:
        raise ConfigError(f"server {server!r} is not a valid URL: {exc}") from exc
    return url


def _env(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or environ.get(name.lower()) or None


def _bypassed(host: str, port: int | None, no_proxy: str | None) -> bool:
    entries = (entry.strip().lower() for entry in (no_proxy or "").split(","))
    return any(_excepts(entry, host, port) for entry in entries if entry)


def _excepts(entry: str, host: str, port: int | None) -> bool:
    if entry == "*":
        return True
    pattern, pattern_port = _split_port(entry)
    if pattern_port is not None and pattern_port != port:
        return False
    address = _ip_address(host)
    if address is not None:
        network = _ip_network(pattern)
        return network is not None and address in network
    if pattern.startswith(("*.", ".")):
        return host.endswith("." + pattern.lstrip("*."))
    return host == pattern or host.endswith("." + pattern)


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:
        return entry, None
    return host, int(port) if port.isdigit() else None


def _ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _ip_network(pattern: str) -> IPNetwork | None:
    try:
        return ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return None


def _masked(name: str, value: object) -> str:
    if name in _HIDDEN_FIELDS:
        return "<hidden>"
    if name in _BULKY_FIELDS and isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if name in _URL_FIELDS and isinstance(value, str):
        return repr(_without_password(value))
    return repr(value)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return parts._replace(netloc=f"{user}:<hidden>@{hostport}").geturl()


def _as_aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _cadata(data: bytes | None) -> str | bytes | None:
    """PEM goes to ``ssl`` as text, DER as bytes: that is how ``cadata`` tells them apart."""
    if data is not None and b"-----BEGIN" in data:
        return data.decode("ascii", errors="replace")
    return data


def _private_file(folder: str, name: str, data: bytes | None) -> str | None:
    """Write ``data`` to a new file that only we can read; ``None`` if there is no data."""
    if data is None:
        return None
    target = Path(folder) / name
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)
    return str(target)
