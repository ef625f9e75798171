"""Who may read the metrics: bearer tokens checked and authorised by the API server, cached.

Every request to the secure metrics endpoint (:mod:`.metrics_server`) carries a bearer token
(``Authorization: Bearer ...``). The API server says who it belongs to (a TokenReview) and
whether that user may ``get`` the metrics path, a non-resource URL (a SubjectAccessReview; RBAC
grants it with ``nonResourceURLs: ["/metrics"]``), as controller-runtime's metrics server does.

A verdict is kept for a while, by the SHA-256 of the token (the token itself is never stored nor
logged): a scraper that comes every few seconds with the same token costs the API server two
requests per ``metrics_allow_ttl`` seconds. Refusals are kept for a shorter
``metrics_deny_ttl``, so a permission granted later works soon, and a flood of one bad token
costs little. Failed reviews are not kept.

The decisions (the token of a request, the cache, the answer to each verdict) are pure; the
:class:`MetricsAccess` shell sends the reviews.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import hashlib
import logging
from collections.abc import Iterable, Iterator

import anyio

from anyop.errors import AnyopError
from anyop.kube.client import KubeClient
from anyop.kube.reviews import review_access, review_token

__all__ = [
    "CACHE_SIZE",
    "MAX_TOKEN_LENGTH",
    "REVIEW_TIMEOUT",
    "MetricsAccess",
    "ReviewCache",
    "Verdict",
    "bearer_token",
    "token_key",
]

logger = logging.getLogger("anyop.engine")

CACHE_SIZE = 1024
"""Verdicts kept at most; the least recently used go first."""
MAX_TOKEN_LENGTH = 16384
"""Longer bearer tokens are refused without asking the API server."""
REVIEW_TIMEOUT = 10.0
"""Seconds that the reviews of one request may take together; then the request fails (500)."""
_CONCURRENT_REVIEWS = 4  # a flood of new tokens cannot take the operator's API budget


class Verdict(enum.Enum):
    """What a request to the metrics gets; the value is the HTTP status."""

    ALLOWED = 200
    UNAUTHENTICATED = 401
    """No token, a malformed one, or one that the API server does not accept."""
    FORBIDDEN = 403
    """A valid token of a user who may not ``get`` the metrics path."""
    FAILED = 500
    """A review failed (the API server refused or did not answer)."""
    UNAVAILABLE = 503
    """The operator has not logged in to the API server yet."""

    @property
    def reason(self) -> str:
        """The short text of the answer (nothing about why)."""
        return _REASONS[self]


_REASONS = {
    Verdict.ALLOWED: "OK",
    Verdict.UNAUTHENTICATED: "Unauthorized",
    Verdict.FORBIDDEN: "Forbidden",
    Verdict.FAILED: "Internal Server Error",
    Verdict.UNAVAILABLE: "Service Unavailable",
}


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The bearer token of a request's headers, or ``None`` without exactly one good one. Pure.

    The scheme is case-insensitive; the token is one word of printable ASCII, at most
    :data:`MAX_TOKEN_LENGTH` characters.
    """
    values = [value for name, value in headers if name.lower() == b"authorization"]
    if len(values) != 1:
        return None
    scheme, _, token = values[0].strip().partition(b" ")
    token = token.strip()
    if scheme.lower() != b"bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    if not all(0x21 <= byte <= 0x7E for byte in token):
        return None
    return token.decode("ascii")


def token_key(token: str) -> str:
    """The cache key of a token: its SHA-256, so the token itself is never kept. Pure."""
    return hashlib.sha256(token.encode()).hexdigest()


class ReviewCache:
    """Verdicts by token key, each for its time to live; pure (the caller says what time it is).

    Args:
        allow_ttl: Seconds an :attr:`Verdict.ALLOWED` is kept.
        deny_ttl: Seconds an :attr:`Verdict.UNAUTHENTICATED` or :attr:`Verdict.FORBIDDEN` is
            kept. Other verdicts are never kept.
        size: Verdicts kept at most (the least recently used are dropped).
    """

    def __init__(self, *, allow_ttl: float, deny_ttl: float, size: int = CACHE_SIZE) -> None:
        self._ttls = {
            Verdict.ALLOWED: allow_ttl,
            Verdict.UNAUTHENTICATED: deny_ttl,
            Verdict.FORBIDDEN: deny_ttl,
        }
        self._size = size
        self._kept: collections.OrderedDict[str, tuple[float, Verdict]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: str, *, now: float) -> Verdict | None:
        """The kept verdict of ``key``, if it has not expired."""
        kept = self._kept.get(key)
        if kept is None:
            return None
        until, verdict = kept
        if now >= until:
            del self._kept[key]
            return None
        self._kept.move_to_end(key)
        return verdict

    def put(self, key: str, verdict: Verdict, *, now: float) -> None:
        """Keep ``verdict`` for its time to live (if it is one to keep)."""
        ttl = self._ttls.get(verdict)
        if ttl is None or ttl <= 0:
            return
        self._kept[key] = (now + ttl, verdict)
        self._kept.move_to_end(key)
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)


class MetricsAccess:
    """Decides, with the API server's reviews, whether a request may read the metrics.

    Args:
        path: The metrics path, authorised as a non-resource URL with the verb ``get``.
        allow_ttl: See :class:`ReviewCache`.
        deny_ttl: See :class:`ReviewCache`.

    Guarantees:
        No token is logged or kept. A failing review is logged once (at ERROR) until the
        reviews work again (logged at INFO); the requests meanwhile get
        :attr:`Verdict.FAILED`. Nothing here raises for any request.
    """

    def __init__(self, *, path: str, allow_ttl: float, deny_ttl: float) -> None:
        self.path = path
        self.cache = ReviewCache(allow_ttl=allow_ttl, deny_ttl=deny_ttl)
        self._client: KubeClient | None = None
        self._failing = False
        self._limiter = anyio.CapacityLimiter(_CONCURRENT_REVIEWS)

    @contextlib.contextmanager
    def using(self, client: KubeClient) -> Iterator[None]:
        """Review with ``client`` while the block runs (the operator's, once logged in)."""
        self._client = client
        try:
            yield
        finally:
            self._client = None

    async def verdict(self, token: str | None) -> Verdict:
        """What a request with this bearer token (``None``: none or a malformed one) gets."""
        if token is None:
            return Verdict.UNAUTHENTICATED
        key = token_key(token)
        if (kept := self.cache.get(key, now=anyio.current_time())) is not None:
            return kept
        client = self._client
        if client is None:
            return Verdict.UNAVAILABLE
        verdict = await self._reviewed(client, token)
        self.cache.put(key, verdict, now=anyio.current_time())
        return verdict

    async def _reviewed(self, client: KubeClient, token: str) -> Verdict:
        verdict = Verdict.FAILED
        try:
            with anyio.move_on_after(REVIEW_TIMEOUT):
                async with self._limiter:
                    verdict = await self._review(client, token)
        except AnyopError as error:
            self._failed(str(error))
            return Verdict.FAILED
        if verdict is Verdict.FAILED:
            self._failed(f"no answer within {REVIEW_TIMEOUT:g} s")
        elif self._failing:
            self._failing = False
            logger.info("The reviews of the metrics' readers work again.")
        return verdict

    async def _review(self, client: KubeClient, token: str) -> Verdict:
        user = await review_token(client, token)
        if user is None:
            return Verdict.UNAUTHENTICATED
        if not await review_access(client, user, path=self.path, verb="get"):
            return Verdict.FORBIDDEN
        return Verdict.ALLOWED

    def _failed(self, why: str) -> None:
        if not self._failing:
            self._failing = True
            logger.error(
                "The metrics' readers cannot be reviewed (their scrapes get 500 until the "
                "reviews work): %s",
                why,
            )
