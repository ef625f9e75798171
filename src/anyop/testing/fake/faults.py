"""Faults of the fake API, scripted or drawn from a seed, and decided per request.

Pure. A :class:`Rule` says which requests a :class:`Fault` may hit (method, path, watches or not)
and how often: the ``after`` first matching requests pass, then ``times`` of them fail (or each
fails with a ``rate`` of chance). The chance is not a shared random stream: each draw hashes the
seed, the rule and the request's method and path with how many such requests came before, so a
request gets the same fault whatever other requests interleave with it.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections import Counter
from collections.abc import Iterable

__all__ = ["ConnectionDropped", "Fault", "FaultKind", "FaultPlan", "Rule", "Struck"]


class ConnectionDropped(Exception):
    """Raised by the fake API's responder: cut the connection without an answer."""


class FaultKind(enum.Enum):
    """What goes wrong with a request."""

    LATENCY = "latency"
    """The answer comes ``delay`` seconds late (virtual seconds on a fake clock)."""
    DROP = "drop"
    """The connection is cut before any answer."""
    STALL = "stall"
    """A watch is opened but sends nothing until it times out; other requests hang."""
    THROTTLE = "throttle"
    """429 TooManyRequests with ``Retry-After`` (in the header, the ``Status`` details, or both)."""
    SERVER_ERROR = "server-error"
    """A 5xx answer (500 InternalError by default), or ``in_stream`` a watch's ``ERROR`` event."""
    EXPIRE = "expire"
    """410 Expired: a watch gets one ``ERROR`` event (or, not ``in_stream``, a 410 answer), a
    list a 410 answer."""
    TOO_LARGE = "too-large"
    """504 "Too large resource version" (cause ``ResourceVersionTooLarge``): a watch gets one
    ``ERROR`` event (or, not ``in_stream``, a 504 answer), a list a 504 answer."""
    EMPTY_WATCH = "empty-watch"
    """A watch answered 200 that ends at once, without a line."""
    CONFLICT = "conflict"
    """409 Conflict for a write, which is not applied."""
    FORBIDDEN = "forbidden"
    """403 Forbidden, worded as kube-apiserver's authorizer refuses a verb (RBAC without it)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Fault:
    """One fault; make it with the class methods (``Fault.throttle(retry_after=2)``)."""

    kind: FaultKind
    delay: float = 0.0
    code: int = 0
    retry_after: int = 0
    retry_after_header: bool = True
    retry_after_details: bool = True
    in_stream: bool = False
    user: str = ""

    @classmethod
    def latency(cls, seconds: float) -> Fault:
        """Answer ``seconds`` late."""
        if seconds < 0:
            raise ValueError(f"A latency cannot be negative: {seconds!r}.")
        return cls(FaultKind.LATENCY, delay=seconds)

    @classmethod
    def drop(cls) -> Fault:
        """Cut the connection without an answer."""
        return cls(FaultKind.DROP)

    @classmethod
    def stall(cls) -> Fault:
        """Stall a watch (or hang any other request until the client gives up)."""
        return cls(FaultKind.STALL)

    @classmethod
    def throttle(cls, *, retry_after: int = 1, header: bool = True, details: bool = True) -> Fault:
        """Answer 429 asking to retry after ``retry_after`` seconds: in the ``Retry-After``
        header (as API Priority and Fairness does) and in the ``Status``'s
        ``details.retryAfterSeconds`` (as older API servers' max-in-flight limit did), or only
        in one of them (``header=False`` or ``details=False``)."""
        if retry_after < 0:
            raise ValueError(f"Retry-After cannot be negative: {retry_after!r}.")
        return cls(
            FaultKind.THROTTLE,
            code=429,
            retry_after=retry_after,
            retry_after_header=header,
            retry_after_details=details,
        )

    @classmethod
    def server_error(cls, code: int = 500, *, in_stream: bool = False) -> Fault:
        """Answer with a 5xx status; ``in_stream``: a watch is answered 200 and its only line is
        an ``ERROR`` event with that ``Status`` (500: reason ``InternalError``, message "Internal
        error occurred: ...", as kube-apiserver reports a failure of its storage to a watch that
        has begun); other requests get the 5xx answer either way."""
        if not 500 <= code <= 599:
            raise ValueError(f"A server error's code is 5xx, not {code!r}.")
        return cls(FaultKind.SERVER_ERROR, code=code, in_stream=in_stream)

    @classmethod
    def expire(cls, *, in_stream: bool = True) -> Fault:
        """Answer 410 Expired: a watch as its only ``ERROR`` event (kube-apiserver's way), or,
        with ``in_stream=False``, as the answer to the watch request itself (which a client must
        take the same way); a list as its answer."""
        return cls(FaultKind.EXPIRE, code=410, in_stream=in_stream)

    @classmethod
    def too_large(cls, *, in_stream: bool = True) -> Fault:
        """Answer 504 Timeout "Too large resource version: N, current: M" (``details.causes``:
        ``ResourceVersionTooLarge``; ``retryAfterSeconds``: 1), as a watch cache that lags
        behind the version asked for: a watch as its only ``ERROR`` event (kube-apiserver's way),
        or, with ``in_stream=False``, as the answer to the watch request; a list as its answer.
        Only GETs are struck."""
        return cls(FaultKind.TOO_LARGE, code=504, in_stream=in_stream)

    @classmethod
    def empty_watch(cls) -> Fault:
        """Answer a watch 200 and end it at once, without a line (as a proxy that closes long
        requests may). Only watches are struck."""
        return cls(FaultKind.EMPTY_WATCH)

    @classmethod
    def forbidden(cls, *, user: str = "system:serviceaccount:default:default") -> Fault:
        """Answer 403 Forbidden, as the API server refuses ``user`` a verb that its RBAC does not
        grant: "kopfexamples.kopf.dev is forbidden: User "..." cannot list resource ..." (the
        verb from the request: get, list, watch, create, update, patch, delete)."""
        return cls(FaultKind.FORBIDDEN, code=403, user=user)

    @classmethod
    def conflict(cls) -> Fault:
        """Answer a write with 409 Conflict and leave the object as it is."""
        return cls(FaultKind.CONFLICT, code=409)


_WRITES = ("POST", "PUT", "PATCH", "DELETE")
_READS_ONLY = (FaultKind.EXPIRE, FaultKind.TOO_LARGE)
SEEDED_FAULTS = (
    Fault.latency(0.5),
    Fault.drop(),
    Fault.stall(),
    Fault.throttle(retry_after=1),
    Fault.server_error(500),
    Fault.expire(),
    Fault.conflict(),
)
"""What :meth:`FaultPlan.inject` draws from when not told."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    """When a fault strikes.

    Attributes:
        fault: What happens.
        method: Only requests of this HTTP method (``None``: any; a conflict only hits writes,
            an expiry or a too-large version only GETs, an empty watch only watches).
        path: Only requests whose path contains this text (``None``: any).
        watch: Only watches (``True``), only other requests (``False``), or both (``None``).
        after: Let this many matching requests pass first.
        times: Strike at most this many times (``None``: no limit).
        rate: The chance of each matching request to be struck (1.0: every one).
        seed: Seeds the draws when ``rate`` is below 1.
    """

    fault: Fault
    method: str | None = None
    path: str | None = None
    watch: bool | None = None
    after: int = 0
    times: int | None = 1
    rate: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"A fault's rate is between 0 and 1, not {self.rate!r}.")
        if self.after < 0 or (self.times is not None and self.times < 0):
            raise ValueError("A fault's 'after' and 'times' cannot be negative.")

    def matches(self, method: str, path: str, *, watch: bool) -> bool:
        """Whether the rule is about this request at all."""
        if self.method is not None and self.method.upper() != method:
            return False
        if self.fault.kind is FaultKind.CONFLICT and method not in _WRITES:
            return False
        if self.fault.kind in _READS_ONLY and method != "GET":
            return False
        if self.fault.kind is FaultKind.EMPTY_WATCH and not watch:
            return False
        if self.path is not None and self.path not in path:
            return False
        return self.watch is None or self.watch == watch


@dataclasses.dataclass(frozen=True, slots=True)
class Struck:
    """A fault that hit a request: which, and the request's method and path (for the trace),
    and whether it was a watch."""

    fault: Fault
    method: str
    path: str
    watch: bool = False


def _draw(rule_seed: int, *parts: object) -> float:
    digest = hashlib.blake2b(repr((rule_seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


class FaultPlan:
    """The rules in force, and what each has done so far.

    Attributes:
        struck: Every fault that hit, in order.
    """

    def __init__(self) -> None:
        self._rules: list[Rule] = []
        self._seen: Counter[tuple[int, str, str]] = Counter()
        self._matched: Counter[int] = Counter()
        self._hits: Counter[int] = Counter()
        self.struck: list[Struck] = []

    def add(self, rule: Rule) -> Rule:
        """Put a rule in force (after those already there: the first one that strikes wins)."""
        self._rules.append(rule)
        return rule

    def script(
        self,
        fault: Fault,
        *,
        method: str | None = None,
        path: str | None = None,
        watch: bool | None = None,
        after: int = 0,
        times: int | None = 1,
    ) -> Rule:
        """Strike the matching requests after the first ``after`` of them, ``times`` times."""
        rule = Rule(fault, method=method, path=path, watch=watch, after=after, times=times)
        return self.add(rule)

    def inject(
        self,
        *,
        seed: int,
        rate: float,
        faults: Iterable[Fault] = SEEDED_FAULTS,
        method: str | None = None,
        path: str | None = None,
        watch: bool | None = None,
    ) -> list[Rule]:
        """Strike each matching request with ``rate`` of chance per fault, drawn from ``seed``
        (``method``, ``path`` and ``watch`` select the requests, as :meth:`script`'s do)."""
        rules = [
            Rule(fault, method, path, watch, times=None, rate=rate, seed=seed * 1000 + index)
            for index, fault in enumerate(faults)
        ]
        for rule in rules:
            self.add(rule)
        return rules

    def clear(self) -> None:
        """Remove every rule (what struck stays in :attr:`struck`); rules added later count
        their requests from zero."""
        self._rules.clear()
        self._seen.clear()
        self._matched.clear()
        self._hits.clear()

    def decide(self, method: str, path: str, *, watch: bool) -> Fault | None:
        """The fault for this request, if one strikes (and count it)."""
        for index, rule in enumerate(self._rules):
            if not rule.matches(method, path, watch=watch):
                continue
            key = (index, method, path)
            seen = self._seen[key]
            self._seen[key] += 1
            self._matched[index] += 1
            if self._matched[index] <= rule.after:
                continue
            if rule.times is not None and self._hits[index] >= rule.times:
                continue
            if rule.rate < 1.0 and _draw(rule.seed, method, path, seen) >= rule.rate:
                continue
            self._hits[index] += 1
            self.struck.append(Struck(rule.fault, method, path, watch))
            return rule.fault
        return None
