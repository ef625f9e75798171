"""Sending requests: one HTTP client per credential, retries, typed errors, re-login on 401.

The :class:`SessionPool` sits between the :class:`~anyop.kube.auth.Vault` and httpx. It hands
out the ``httpx.AsyncClient`` of the vault's current credential (with its TLS context, its
``Authorization`` header and anyop's ``User-Agent``), counts who uses it, and closes it when the
credential is rejected (401) or pushed out by newer ones and nobody uses it any more, so that a
watch on an old credential is not cut off mid-stream by a re-login elsewhere. Its
:meth:`~SessionPool.send` repeats failed requests when :mod:`anyop.kube.retries` calls it safe.

Nothing here logs a header or a body, secrets travel in both; but the API server's ``Warning``
headers are logged (:mod:`anyop.kube.server_warnings`): their texts name fields, not values.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import socket
import ssl
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import httpx

from anyop._jsons import compact
from anyop._version import __version__
from anyop.errors import AnyopError, ApiError, TransportError, UnauthorizedError
from anyop.kube.auth import Vault
from anyop.kube.connection import ConnectionInfo
from anyop.kube.http11 import encode_fields
from anyop.kube.inflight import InFlight
from anyop.kube.pool import DEFAULT_PORTS, Origin
from anyop.kube.ratelimit import RateLimiter
from anyop.kube.retries import (
    Failure,
    RetryPolicy,
    error_of_response,
    failure_of_status,
    is_idempotent,
    may_retry,
)
from anyop.kube.server_warnings import ServerWarnings
from anyop.kube.transport import KubeTransport, RawResponse
from anyop.settings import NetworkingSettings
from anyop.threads import run_in_thread

__all__ = [
    "RequestObserver",
    "USER_AGENT",
    "Request",
    "Route",
    "Session",
    "SessionPool",
    "TransportFactory",
    "default_transport",
    "failure_of",
    "is_transient",
    "strip_managed_fields",
    "transport_error",
]

logger = logging.getLogger("anyop.kube")

USER_AGENT = f"anyop/{__version__}"
TransportFactory = Callable[[ConnectionInfo, ssl.SSLContext], httpx.AsyncBaseTransport]
RequestObserver = Callable[[str, "int | None", float], None]
"""Told each request attempt's method, status code (``None``: no answer) and seconds."""
"""Builds the HTTP transport of one credential, e.g. ``httpx.AsyncHTTPTransport(verify=ctx)``."""

MAX_CONNECTIONS = 64
"""Connections for requests (not watches) per API server, as KubeTransport's pool limits them."""
_MAX_SESSIONS = 4  # credentials kept open at once; older ones are closed once idle
_MAX_RELOGINS = 3  # 401s tolerated per request, each after the vault's next credential
_CLOSE_TIMEOUT = 5.0
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"  # a path's own characters (RFC 3986), and escapes as they are
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """One API request, as sent (and maybe repeated).

    Attributes:
        method: The HTTP method.
        path: The URL path relative to the server, e.g. ``/api/v1/namespaces``.
        params: Query parameters.
        body: The decoded body; it is sent as JSON.
        content_type: The body's content type.
    """

    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: Any = None
    content_type: str = "application/json"

    @property
    def idempotent(self) -> bool:
        """Whether sending it twice does what sending it once does (see ``retries``)."""
        return is_idempotent(self.method, self.content_type, self.body)


def default_transport(
    info: ConnectionInfo, ssl_context: ssl.SSLContext
) -> httpx.AsyncBaseTransport:
    """anyop's :class:`~anyop.kube.transport.KubeTransport`, or httpx's own behind a proxy.

    KubeTransport costs less CPU per request than httpx's default transport (measured by
    ``bench/http_transport.py``, docs/benchmarks.md) but speaks no proxy protocol. KubeTransport
    limits requests to :data:`MAX_CONNECTIONS` connections (watches have their own pool without
    a limit): a burst of thousands of objects reuses them instead of opening (and
    TLS-handshaking) thousands. The
    proxied pool has no limit, as every watch holds one of its connections for minutes.
    """
    proxy = info.effective_proxy_url()
    if proxy is None:
        return KubeTransport(ssl_context, max_connections_per_origin=MAX_CONNECTIONS)
    return httpx.AsyncHTTPTransport(
        verify=ssl_context,
        proxy=proxy,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
        socket_options=_keepalive_options(),
    )


def _keepalive_options() -> list[tuple[int, int, int]]:
    """Let the kernel find dead peers of quiet connections too."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


def _warnings_of(fields: list[tuple[bytes, bytes]]) -> list[str]:
    """The values of an answer's ``Warning`` headers (UTF-8, as kube-apiserver writes them)."""
    return [value.decode(errors="replace") for name, value in fields if name.lower() == b"warning"]


def _decoded(fields: list[tuple[bytes, bytes]], content: bytes) -> bytes:
    """Undo the content coding of an answer, if any (as httpx does)."""
    for name, value in fields:
        if name.lower() == b"content-encoding" and value.lower() != b"identity":
            try:
                return httpx.Response(200, headers=fields, content=content).content
            except httpx.DecodingError as exc:
                raise transport_error(exc, "The API server's answer cannot be decoded") from exc
    return content


def transport_error(exc: BaseException, what: str = "The request failed") -> TransportError:
    """Wrap a transport exception (httpx's, or a timeout) into a :class:`TransportError`."""
    error = TransportError(f"{what}: {type(exc).__name__}: {exc}".rstrip(": "))
    error.__cause__ = exc
    return error


def origin_of(info: ConnectionInfo) -> str:
    """Which API server, and where its address and credentials come from, for messages."""
    whence = f" of {info.source}" if info.source else ""
    return f"the API server {info.server}{whence}"


def _from(session: Session, error: TransportError) -> TransportError:
    error.origin = origin_of(session.info)
    return error


def failure_of(exc: AnyopError) -> Failure:
    """Classify an error of one attempt, for :func:`~anyop.kube.retries.may_retry`."""
    if isinstance(exc, ApiError):
        return failure_of_status(exc.status)
    if isinstance(exc, TransportError):
        return Failure.UNSENT if isinstance(exc.__cause__, _UNSENT) else Failure.UNANSWERED
    return Failure.FINAL


def is_transient(exc: AnyopError) -> bool:
    """Tell whether the same request may succeed later: throttled, a server error, or no
    answer (whatever the client's own retries already did)."""
    return failure_of(exc) is not Failure.FINAL


def strip_managed_fields(document: Any) -> Any:
    """Drop ``metadata.managedFields`` from an object, or from a list's items, in place."""
    if isinstance(document, dict):
        metadata = document.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
        for item in document.get("items") or ():
            strip_managed_fields(item)
    return document


@dataclasses.dataclass(eq=False, slots=True)
class Session:
    """The HTTP client of one credential.

    Attributes:
        key: The vault's key of the credential.
        info: The credential.
        http: The HTTP client: base URL, TLS, ``Authorization`` and ``User-Agent`` headers.
        users: How many requests and streams use it right now.
        retired: It is not handed out any more, and closes when ``users`` drops to 0.
    """

    key: str
    info: ConnectionInfo
    http: httpx.AsyncClient
    users: int = 0
    retired: bool = False
    base: str = ""
    """The server's URL without a trailing slash."""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    """The headers every request of this session carries (auth, User-Agent, Accept)."""
    route: Route | None = None
    """Where and how plain requests go straight to a :class:`KubeTransport` (the fast path)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Route:
    """The fast path of a session's plain requests: a :class:`KubeTransport` and what to send.

    Attributes:
        transport: The session's transport.
        origin: The API server's pool key.
        prefix: The base URL's path (without a trailing slash), put before every request path.
        headers: The session's header lines (``Host``, ``Authorization``, ``User-Agent``,
            ``Accept``), each ending in CRLF, checked for line breaks once.
    """

    transport: KubeTransport
    origin: Origin
    prefix: str
    headers: bytes

    @classmethod
    def of(cls, http: httpx.AsyncClient, tls_server_name: str | None) -> Route | None:
        """The route of an HTTP client with a :class:`KubeTransport`; ``None`` for any other.

        Its requests carry the client's headers, ``Accept-Encoding`` included: the API server
        compresses large answers (lists), and :func:`_decoded` undoes that.
        """
        transport = http._transport
        if not isinstance(transport, KubeTransport):
            return None
        url = http.base_url
        scheme, port = url.scheme, url.port or DEFAULT_PORTS.get(url.scheme, 0)
        origin = Origin(scheme, url.host, port, tls_server_name)
        fields = [(b"Host", url.netloc), *http.headers.raw]  # Host as httpx sends it
        prefix = url.raw_path.decode("ascii").rstrip("/")
        return cls(transport, origin, prefix, encode_fields(fields))

    def head(
        self, method: str, path: str, *, params: Mapping[str, str] | None, extra: bytes
    ) -> bytes:
        """The request line and headers of a request to ``path`` with ``params``."""
        target = self.prefix + quote(path, safe=_PATH_SAFE)
        if params:
            target += "?" + urlencode(params)
        line = b"%s %s HTTP/1.1\r\n" % (method.encode(), target.encode())
        return line + self.headers + extra + b"\r\n"


class SessionPool:
    """The HTTP clients of the vault's credentials, and requests sent through them.

    Args:
        vault: Where credentials come from; requests wait while it is empty.
        networking: Timeouts, retries, rate limits, proxies (``settings.networking``).
        transport_factory: Builds the HTTP transport of a credential.
        keep_managed_fields: Keep ``metadata.managedFields`` in decoded answers.
        observer: Told the method, status code (``None``: no answer) and seconds of every
            attempt (the operator's metrics).

    Guarantees:
        * A rejected credential (401) is dropped from the vault once, and its HTTP client is
          closed as soon as no request or stream uses it.
        * At most a few idle HTTP clients stay open, however often credentials rotate.
        * Every attempt takes a token of the one rate limiter.
    """

    def __init__(
        self,
        vault: Vault,
        networking: NetworkingSettings,
        *,
        transport_factory: TransportFactory | None = None,
        keep_managed_fields: bool = False,
        observer: RequestObserver | None = None,
    ) -> None:
        self.observer = observer
        self.vault = vault
        self.networking = networking
        self.limiter = RateLimiter.from_settings(networking)
        self.policy = RetryPolicy.from_settings(networking)
        self.keep_managed_fields = keep_managed_fields
        self._factory = transport_factory or default_transport
        self._sessions: OrderedDict[ConnectionInfo, Session] = OrderedDict()
        self._latest: Session | None = None
        """The session of the latest checkout: found again by identity, not by hashing."""
        self._opening = anyio.Lock()
        self.in_flight = InFlight()
        """The requests being sent now (retries and waits for a connection included)."""
        self.warnings = ServerWarnings()
        """The API server's warnings, each text logged once (:mod:`anyop.kube.server_warnings`)."""

    # -- requests -------------------------------------------------------------------------------

    async def send(self, request: Request) -> Any:
        """Send a request, repeating it when that is safe; return the decoded JSON answer.

        Raises:
            ApiError: The server answered with an error status (the last one, after retries).
            TransportError: The server could not be reached, or the answer broke off.
            LoginError: The vault is closed.
        """
        with self.in_flight:
            return await self._send(request)

    async def _send(self, request: Request) -> Any:
        attempt, relogins = 1, 0
        while True:
            try:
                return await self._attempt(request)
            except UnauthorizedError:
                relogins += 1
                if relogins > _MAX_RELOGINS:
                    raise
                logger.info("The API server rejected the credentials (401); using the next ones.")
            except (ApiError, TransportError) as exc:
                delay = self._retry_delay(request, exc, attempt)
                if delay is None:
                    if isinstance(exc, TransportError) and exc.origin:
                        exc.args = (f"{exc} ({exc.origin})",)  # the last word: where it went
                    raise
                logger.warning(
                    "Request attempt #%d/%d failed; will retry: %s %s: %s",
                    attempt,
                    self.policy.attempts,
                    request.method,
                    request.path,
                    exc,
                )
                await anyio.sleep(delay)
                attempt += 1

    def _retry_delay(
        self, request: Request, exc: ApiError | TransportError, attempt: int
    ) -> float | None:
        if not may_retry(failure_of(exc), idempotent=request.idempotent):
            return None
        retry_after = exc.retry_after if isinstance(exc, ApiError) else None
        return self.policy.delay(attempt, retry_after, random.random())

    async def _attempt(self, request: Request) -> Any:
        total = self.networking.request_timeout
        session = await self.checkout()
        try:
            route = session.route if self.direct else None
            started = time.monotonic()
            deadline = math.inf if total is None else anyio.current_time() + total
            try:
                with anyio.CancelScope(deadline=deadline) as scope:
                    if route is None:
                        response = await session.http.send(
                            self.build(session, request, self.timeout(total))
                        )
                        status, content = response.status_code, response.content
                    else:
                        status, fields, content = await self._fetch(route, request)
            except httpx.HTTPError as exc:
                self._observe(request, None, started)
                raise _from(session, transport_error(exc)) from exc
            if scope.cancelled_caught:
                self._observe(request, None, started)
                error = transport_error(TimeoutError(), f"No answer within {total}s")
                raise _from(session, error)
            self._observe(request, status, started)
            warned = (
                _warnings_of(fields) if route is not None else response.headers.get_list("warning")
            )
            if warned:
                self.warnings.observe(request.method, request.path, warned)
            if route is not None:
                content = _decoded(fields, content)
            if status >= 400:
                headers = response.headers if route is None else httpx.Headers(fields)
                raise await self.reject(session, status, headers=headers, content=content)
            return self._decode(content)
        finally:
            await self.checkin(session)

    def _observe(self, request: Request, code: int | None, started: float) -> None:
        if self.observer is not None:
            self.observer(request.method, code, time.monotonic() - started)

    direct: bool = True
    """Send plain requests straight to a :class:`KubeTransport`, skipping httpx's objects.

    httpx's client layer (auth flows, cookies, redirects, event hooks), its request building
    (URL parsing, header merging) and its response object do nothing for the Kubernetes API
    but cost about as much CPU as the whole exchange does otherwise; see
    ``bench/client_requests.py``. Streams (watches) still go through httpx's client.
    """

    async def _fetch(self, route: Route, request: Request) -> RawResponse:
        extra = b""
        body = b""
        if request.body is not None:
            body = compact(request.body).encode()
            extra = b"Content-Type: %s\r\nContent-Length: %d\r\n" % (
                request.content_type.encode(),
                len(body),
            )
        method = request.method.encode()
        head = route.head(request.method, request.path, params=request.params, extra=extra)
        connect = self.networking.connect_timeout
        return await route.transport.fetch(
            route.origin, method, head=head, body=body, connect_timeout=connect
        )

    def build(self, session: Session, request: Request, timeout: httpx.Timeout) -> httpx.Request:
        """Build the HTTP request for a session's client (JSON body, timeouts, SNI name)."""
        content, headers = None, {}
        if request.body is not None:
            content = compact(request.body).encode()
            headers["Content-Type"] = request.content_type
        extensions: dict[str, Any] = {"timeout": timeout.as_dict()}
        if session.info.tls_server_name:
            extensions["sni_hostname"] = session.info.tls_server_name
        return httpx.Request(
            request.method,
            session.base + request.path,
            params=request.params,
            content=content,
            headers={**session.headers, **headers},
            extensions=extensions,
        )

    def timeout(self, total: float | None) -> httpx.Timeout:
        """httpx's timeouts: ``total`` for every phase, or the configured connect timeout."""
        return httpx.Timeout(total, connect=self.networking.connect_timeout or total)

    def _decode(self, content: bytes) -> Any:
        try:
            document = json.loads(content) if content else {}
        except (ValueError, RecursionError) as exc:
            raise transport_error(exc, "The API server's answer is not JSON") from exc
        return document if self.keep_managed_fields else strip_managed_fields(document)

    async def reject(
        self, session: Session, status: int, *, headers: Mapping[str, str], content: bytes
    ) -> ApiError:
        """Build the typed error of an error answer; after a 401, drop the credential."""
        error = error_of_response(status, headers, content)
        if status == 401:
            await self.vault.invalidate(session.key, session.info, error)
            await self._retire(session)
        return error

    # -- sessions -------------------------------------------------------------------------------

    async def checkout(self) -> Session:
        """Take a rate-limiter token and the HTTP client of the vault's current credential.

        WARNING: every checkout must be followed by exactly one :meth:`checkin`.

        Raises:
            LoginError: The vault is closed.
            ConfigError: The credential's TLS files cannot be loaded.
        """
        await self.limiter.acquire()
        key, info = await self.vault.current()
        session = self._latest
        if session is None or session.info is not info or session.retired:
            # The credential changed (or its client was retired): look it up by value.
            session = self._sessions.get(info) or await self._open(key, info)
            self._sessions.move_to_end(info)
            self._latest = session
        session.users += 1
        return session

    async def checkin(self, session: Session) -> None:
        """Give the HTTP client back; it closes if it was retired and nobody else uses it."""
        session.users -= 1
        if session.retired and session.users == 0:
            await _close(session)

    async def aclose(self) -> None:
        """Close every HTTP client now, in use or not (sessions opened later work as usual)."""
        sessions, self._sessions = list(self._sessions.values()), OrderedDict()
        for session in sessions:
            session.retired = True
            await _close(session)

    async def _open(self, key: str, info: ConnectionInfo) -> Session:
        async with self._opening:
            if (session := self._sessions.get(info)) is not None:
                return session
            context = await run_in_thread(info.as_ssl_context)
            http = self._http_client(info, context)
            session = Session(
                key,
                info,
                http,
                base=str(http.base_url).rstrip("/"),
                headers=dict(http.headers),
                route=Route.of(http, info.tls_server_name),
            )
            self._sessions[info] = session
            while len(self._sessions) > _MAX_SESSIONS:
                await self._retire(next(iter(self._sessions.values())))
            return session

    def _http_client(self, info: ConnectionInfo, context: ssl.SSLContext) -> httpx.AsyncClient:
        if self.networking.trust_env and not info.trust_env:
            info = dataclasses.replace(info, trust_env=True)
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **info.as_http_headers()}
        return httpx.AsyncClient(
            base_url=info.server,
            headers=headers,
            transport=self._factory(info, context),
            trust_env=False,
            follow_redirects=False,
        )

    async def _retire(self, session: Session) -> None:
        if self._sessions.get(session.info) is session:
            del self._sessions[session.info]
        session.retired = True
        if session.users == 0:
            await _close(session)


async def _close(session: Session) -> None:
    with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
        await session.http.aclose()
