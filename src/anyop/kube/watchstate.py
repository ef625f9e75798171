"""The states of a list-then-watch loop, and what each outcome leads to. Pure.

A watcher is always in one :class:`Phase`::

    LISTING --Listed--> WATCHING --Ended/Stalled--> WATCHING (from the last resourceVersion)
                           |  \\--Expired (410, too-large RV)--> RELISTING --Listed--> WATCHING
                           \\--Failed (refused, 5xx, 429, ERROR)--> BACKING_OFF --Waited--> WATCHING

A failed (re)listing backs off and lists again. :func:`advance` computes the next
:class:`WatchState` from the current one and an outcome; ``kube/watch.py`` performs the I/O and
sleeps ``state.delay`` before acting on the new phase.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from anyop.errors import AnyopError, ApiError
from anyop.kube.retries import Backoff, retry_after_of

__all__ = [
    "Ended",
    "Expired",
    "Failed",
    "Listed",
    "Outcome",
    "Phase",
    "Stalled",
    "WatchPolicy",
    "WatchState",
    "Waited",
    "advance",
    "quick_end",
    "outcome_of_error",
    "outcome_of_status",
    "went_back",
]


class Phase(enum.Enum):
    """What a watcher is doing."""

    LISTING = "listing"
    """The initial listing: every object is dispatched as a listed ``ADDED``."""
    WATCHING = "watching"
    """Streaming changes from the last known resourceVersion."""
    RELISTING = "relisting"
    """Listing again after the resourceVersion expired; vanished objects get a ``DELETED``."""
    BACKING_OFF = "backing-off"
    """Waiting after a failure before trying again."""


@dataclasses.dataclass(frozen=True, slots=True)
class WatchState:
    """A snapshot of a watcher, for its loop and for probes and metrics.

    Attributes:
        phase: What it is doing (or, with ``delay``, about to do).
        resource_version: Where the next watch starts; advanced by every event and bookmark.
        delay: Seconds to wait before acting on ``phase``.
        next_phase: Where ``BACKING_OFF`` leads.
        failures: Consecutive failures; reset by any event or bookmark.
        restarts: How often the watch-stream was reopened, for any reason.
        relists: How often the objects were listed again after an expired resourceVersion.
        synced: The initial listing has been dispatched (it stays true afterwards).
        last_event_time: When the last event, bookmark or list page arrived (AnyIO's clock).
        last_error: What went wrong most recently, if anything ever did.
        streaming: A watch response is open right now (the server answered the request).
    """

    phase: Phase = Phase.LISTING
    resource_version: str | None = None
    delay: float = 0.0
    next_phase: Phase = Phase.LISTING
    failures: int = 0
    restarts: int = 0
    relists: int = 0
    synced: bool = False
    last_event_time: float | None = None
    last_error: str | None = None
    streaming: bool = False

    def listed(self, now: float) -> WatchState:
        """The state after a list page: alive, but no proof yet that watching works."""
        return dataclasses.replace(self, last_event_time=now)

    def seen(self, resource_version: str | None, now: float) -> WatchState:
        """The state after an event, a bookmark or a list page: progress, so no failures."""
        # Every event comes through here: a constructor call costs half of replace()'s.
        return WatchState(
            phase=self.phase,
            resource_version=resource_version or self.resource_version,
            delay=self.delay,
            next_phase=self.next_phase,
            failures=0,
            restarts=self.restarts,
            relists=self.relists,
            synced=self.synced,
            last_event_time=now,
            last_error=self.last_error,
            streaming=self.streaming,
        )

    def relisting(self) -> WatchState:
        """The state when the engine asks for a new listing (not a failure: nothing waits)."""
        phase = Phase.RELISTING if self.synced else Phase.LISTING
        relists = self.relists + 1 if self.synced else self.relists
        return dataclasses.replace(
            self, phase=phase, delay=0.0, restarts=self.restarts + 1, relists=relists
        )

    def with_stream(self, *, open: bool) -> WatchState:
        """The state as a watch response opens or ends."""
        return dataclasses.replace(self, streaming=open)


@dataclasses.dataclass(frozen=True, slots=True)
class Listed:
    """A (re)listing completed at this resourceVersion."""

    resource_version: str


@dataclasses.dataclass(frozen=True, slots=True)
class Ended:
    """The watch-stream ended normally (server timeout, client limit) after so many events."""

    events: int
    seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class Stalled:
    """Nothing arrived on the stream for this long: a silent connection."""

    seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class Expired:
    """The resourceVersion is gone (410) or too new for this server: relist."""

    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Failed:
    """Anything else went wrong; retry the same phase after a backoff."""

    error: str
    retry_after: float | None = None
    status: int | None = None  # the HTTP status of an API error


@dataclasses.dataclass(frozen=True, slots=True)
class Waited:
    """The backoff is over."""


Outcome = Listed | Ended | Stalled | Expired | Failed | Waited


@dataclasses.dataclass(frozen=True, slots=True)
class WatchPolicy:
    """The timing rules of a watcher.

    Attributes:
        backoff: The waits after consecutive failures.
        reconnect_pause: The pause before re-watching after a normal end of a stream.
        quick_close: A stream that ends sooner than this with no events counts as a failure,
            so that a server that closes at once is not hammered in a loop.
    """

    backoff: Backoff = dataclasses.field(default_factory=Backoff)
    reconnect_pause: float = 0.1
    quick_close: float = 1.0


def went_back(ours: str | None, theirs: str) -> bool:
    """Whether the server's current resourceVersion is behind the one we watch from: its store
    went back in time (etcd restored from an older copy), and a watch from ours would wait
    silently for the store to catch up, never telling what the restore undid.

    Only numeric versions are compared (etcd's revisions); others are opaque.
    """
    if not ours or not ours.isdigit() or not theirs.isdigit():
        return False
    return int(theirs) < int(ours)


def quick_end(outcome: Outcome, policy: WatchPolicy) -> Failed | None:
    """A watch-stream that ended sooner than ``policy.quick_close`` with no events, as the
    failure it counts as (backed off, and said, like one); ``None`` for any other outcome. Pure."""
    if isinstance(outcome, Ended) and outcome.events == 0 and outcome.seconds < policy.quick_close:
        return Failed(f"The watch-stream closed after {outcome.seconds:.2f}s with no events.")
    return None


def advance(state: WatchState, outcome: Outcome, *, policy: WatchPolicy, rand: float) -> WatchState:
    """Compute the state that follows an outcome of the current phase.

    Args:
        state: The current state.
        outcome: What the current phase came to.
        policy: The timing rules.
        rand: A random number in [0, 1), for the jitter of backoffs.
    """
    replace = dataclasses.replace
    match outcome:
        case Listed(version):
            return replace(
                state, phase=Phase.WATCHING, resource_version=version, synced=True, delay=0.0
            )
        case Ended() if (failure := quick_end(outcome, policy)) is not None:
            return _backing_off(state, failure, policy=policy, rand=rand)
        case Ended():
            pause = policy.reconnect_pause
            return replace(state, phase=Phase.WATCHING, delay=pause, restarts=state.restarts + 1)
        case Stalled(seconds):
            error = f"Nothing arrived for {seconds:.1f}s."
            restarts = state.restarts + 1
            return replace(
                state, phase=Phase.WATCHING, delay=0.0, restarts=restarts, last_error=error
            )
        case Expired(reason):
            return _relisting(state, reason, policy=policy, rand=rand)
        case Failed():
            return _backing_off(state, outcome, policy=policy, rand=rand)
        case Waited():
            return replace(state, phase=state.next_phase, delay=0.0)


def _relisting(state: WatchState, reason: str, *, policy: WatchPolicy, rand: float) -> WatchState:
    """Relist at once; but if relisting keeps expiring without progress, back off in between."""
    failures = state.failures + 1
    delay = 0.0 if failures == 1 else policy.backoff.delay(failures - 1, rand)
    return dataclasses.replace(
        state,
        phase=Phase.RELISTING,
        delay=delay,
        failures=failures,
        restarts=state.restarts + 1,
        relists=state.relists + 1,
        last_error=reason,
    )


def _backing_off(
    state: WatchState, failed: Failed, *, policy: WatchPolicy, rand: float
) -> WatchState:
    failures = state.failures + 1
    delay = max(policy.backoff.delay(failures, rand), failed.retry_after or 0.0)
    resumed = state.phase if state.phase is not Phase.BACKING_OFF else state.next_phase
    watching = resumed is Phase.WATCHING
    return dataclasses.replace(
        state,
        phase=Phase.BACKING_OFF,
        next_phase=resumed,
        delay=delay,
        failures=failures,
        restarts=state.restarts + (1 if watching else 0),
        last_error=failed.error,
    )


def outcome_of_error(exc: AnyopError) -> Expired | Failed:
    """Classify an error raised while listing or opening a watch."""
    if isinstance(exc, ApiError):
        if _expired(exc.status, exc.reason, message=exc.message, details=exc.details):
            return Expired(str(exc))
        return Failed(f"{type(exc).__name__}: {exc}", exc.retry_after, exc.status)
    return Failed(f"{type(exc).__name__}: {exc}")


def outcome_of_status(status: Mapping[str, Any]) -> Expired | Failed:
    """Classify the ``Status`` object of an ``ERROR`` event inside a watch-stream."""
    raw_code, raw_details = status.get("code"), status.get("details")
    code = raw_code if isinstance(raw_code, int) else 0
    details: Mapping[str, Any] = raw_details if isinstance(raw_details, Mapping) else {}
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    head = " ".join(str(part) for part in (code, reason) if part)
    text = f"({head}) {message}".strip() if head else message
    if _expired(code, reason, message=message, details=details):
        return Expired(text)
    return Failed(f"An ERROR event in the watch-stream: {text}", retry_after_of(None, details))


def _expired(code: int, reason: str, *, message: str, details: Mapping[str, Any]) -> bool:
    """410 Gone/Expired, or a 504 "too large resource version": both need a fresh list."""
    if code == 410 or reason in ("Expired", "Gone"):
        return True
    if code != 504:
        return False
    causes = details.get("causes") or []
    too_large = any(
        isinstance(cause, Mapping) and cause.get("reason") == "ResourceVersionTooLarge"
        for cause in causes
    )
    return too_large or "too large resource version" in message.lower()
