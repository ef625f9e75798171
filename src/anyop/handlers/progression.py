"""The progress of a cause's handlers across handling cycles, and the cycle's summary lines.

:class:`HandlerState` is one handler's progress in memory (from a stored
:class:`~anyop.storage.progress.ParsedRecord`, or from scratch); :class:`Progress` is all the
handlers of one object, with their purposes, from which the engine learns what is done, what is
delayed and for how long, and what to log: ``Creation is processed: 1 succeeded; 0 failed.``

Time is always given (``now``, an aware UTC datetime): nothing here reads the clock.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

from anyop.clock import seconds_until
from anyop.handlers.causes import TITLES, Reason
from anyop.kube.patches import Patch
from anyop.logs import redacted
from anyop.storage.progress import ParsedRecord, ProgressStorage

__all__ = [
    "FREE_MESSAGE",
    "GONE_MESSAGE",
    "NOOP_MESSAGE",
    "Counters",
    "HandlerState",
    "Outcome",
    "Progress",
    "diff_message",
    "in_progress_message",
    "processed_message",
    "superseded_message",
    "title",
]

NOOP_MESSAGE = "Something has changed, but we are not interested (the essence is the same)."
GONE_MESSAGE = "Deleted, really deleted, and we are notified."
FREE_MESSAGE = "Deletion, but we are done with it, and we do not care."


class Identified(Protocol):
    """Anything with a handler id."""

    @property
    def id(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one invocation of one handler came to.

    Attributes:
        final: The handler is done for this cause (succeeded, or failed for good).
        delay: Seconds until the next attempt, if not final (``None``: at once).
        result: The handler's return value (delivered to ``status.<id>`` if not ``None``).
        exception: The error, for failures and retries.
        subrefs: The ids of the sub-handlers it ran.
    """

    final: bool
    delay: float | None = None
    result: object = None
    exception: BaseException | None = None
    subrefs: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class HandlerState:
    """One handler's progress for the current cause.

    Attributes:
        active: Whether the handler takes part in the current cause (inactive states are only
            counted and purged).
        started: When it was first attempted.
        stopped: When it finished.
        delayed: Until when it sleeps before the next attempt.
        purpose: The reason it runs for.
        retries: How many attempts were made.
        success: It finally succeeded.
        failure: It finally failed.
        message: The last error.
        subrefs: Its sub-handlers' ids.
        origin: The record it was read from, to skip rewriting unchanged records.
    """

    active: bool = True
    started: datetime.datetime | None = None
    stopped: datetime.datetime | None = None
    delayed: datetime.datetime | None = None
    purpose: str | None = None
    retries: int = 0
    success: bool = False
    failure: bool = False
    message: str | None = None
    subrefs: tuple[str, ...] = ()
    origin: ParsedRecord | None = None

    @classmethod
    def from_scratch(cls, *, now: datetime.datetime, purpose: str | None = None) -> HandlerState:
        """A handler that was never attempted for this cause."""
        return cls(active=True, started=now, purpose=purpose)

    @classmethod
    def from_record(cls, record: ParsedRecord, *, now: datetime.datetime) -> HandlerState:
        """A handler as stored (inactive until the current cause selects it)."""
        return cls(
            active=False,
            started=record.started or now,
            stopped=record.stopped,
            delayed=record.delayed,
            purpose=record.purpose or None,
            retries=record.retries or 0,
            success=bool(record.success),
            failure=bool(record.failure),
            message=record.message,
            subrefs=tuple(record.subrefs or ()),
            origin=record,
        )

    def to_record(self) -> ParsedRecord:
        """The record to store (``retries``, ``success``, ``failure`` always present, as Kopf)."""
        return ParsedRecord(
            started=self.started,
            stopped=self.stopped,
            delayed=self.delayed,
            purpose=self.purpose,
            retries=self.retries,
            success=self.success,
            failure=self.failure,
            message=self.message,
            subrefs=tuple(sorted(self.subrefs)) or None,
        )

    @property
    def finished(self) -> bool:
        """Whether it finally succeeded or failed."""
        return self.success or self.failure

    def sleeping(self, now: datetime.datetime) -> bool:
        """Whether it waits for a delayed retry."""
        return not self.finished and self.delayed is not None and self.delayed > now

    def awakened(self, now: datetime.datetime) -> bool:
        """Whether it is due to be attempted now."""
        return not self.finished and not self.sleeping(now)

    def runtime(self, now: datetime.datetime) -> datetime.timedelta:
        """How long since the first attempt (the ``runtime`` kwarg)."""
        return now - (self.started or now)

    def with_outcome(self, outcome: Outcome, *, now: datetime.datetime) -> HandlerState:
        """The state after an attempt with this outcome."""
        error = outcome.exception
        delay = outcome.delay
        final = outcome.final
        subrefs = self.subrefs
        if subrefs or outcome.subrefs:
            subrefs = tuple(sorted(set(subrefs) | set(outcome.subrefs)))
        # Constructed, not dataclasses.replace(): this runs for every handler call.
        return HandlerState(
            active=self.active,
            started=self.started or now,
            stopped=self.stopped or (now if final else None),
            delayed=now + datetime.timedelta(seconds=delay) if delay is not None else None,
            purpose=self.purpose,
            retries=self.retries + 1,
            success=final and error is None,
            failure=final and error is not None,
            message=None if error is None else str(error),
            subrefs=subrefs,
            origin=self.origin,
        )


class Counters(NamedTuple):
    """How many handlers succeeded, failed, or are still running."""

    success: int
    failure: int
    running: int


def _count(states: Iterable[HandlerState]) -> Counters:
    states = list(states)
    return Counters(
        success=sum(1 for state in states if state.success),
        failure=sum(1 for state in states if state.failure),
        running=sum(1 for state in states if not state.finished),
    )


class Progress(Mapping[str, HandlerState]):
    """The states of an object's handlers for one cause (immutable; methods return new ones).

    Args:
        states: The handlers' states by id.
        purpose: The current cause's reason.
    """

    def __init__(
        self, states: Mapping[str, HandlerState] | None = None, *, purpose: str | None = None
    ) -> None:
        self._states = dict(states or {})
        self.purpose = purpose

    def __getitem__(self, key: str) -> HandlerState:
        return self._states[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    @classmethod
    def from_storage(
        cls,
        *,
        body: Mapping[str, Any],
        storage: ProgressStorage,
        handlers: Iterable[Identified],
        now: datetime.datetime,
    ) -> Progress:
        """Read the stored states of these handlers (those that have any)."""
        states: dict[str, HandlerState] = {}
        for handler_id in dict.fromkeys(handler.id for handler in handlers):
            record = storage.read(key=handler_id, body=body)
            if record is not None:
                states[handler_id] = HandlerState.from_record(record, now=now)
        return cls(states)

    def with_purpose(self, purpose: str | None, handlers: Iterable[Identified] = ()) -> Progress:
        """Set the current purpose, and re-purpose these handlers' states to it."""
        states = dict(self._states)
        for handler in handlers:
            if handler.id in states:
                states[handler.id] = dataclasses.replace(states[handler.id], purpose=purpose)
        return Progress(states, purpose=purpose)

    def superseded(self) -> list[str]:
        """The ids of the states left from other purposes (those that :attr:`extras` counts)."""
        return [
            handler_id
            for handler_id, state in self._states.items()
            if state.purpose is not None and state.purpose != self.purpose
        ]

    def without(self, handler_ids: Collection[str]) -> Progress:
        """The progress without these handlers' states."""
        states = {key: state for key, state in self._states.items() if key not in handler_ids}
        return Progress(states, purpose=self.purpose)

    def with_handlers(self, handlers: Iterable[Identified], *, now: datetime.datetime) -> Progress:
        """Activate these handlers for the current cause (new ones start from scratch)."""
        states = dict(self._states)
        for handler in handlers:
            known = states.get(handler.id)
            if known is None:
                states[handler.id] = HandlerState.from_scratch(now=now, purpose=self.purpose)
            else:
                states[handler.id] = dataclasses.replace(known, active=True)
        return Progress(states, purpose=self.purpose)

    def with_outcomes(self, outcomes: Mapping[str, Outcome], *, now: datetime.datetime) -> Progress:
        """Apply the outcomes of this cycle's attempts.

        Raises:
            KeyError: For an outcome of a handler without a state (a programming error).
        """
        unknown = [handler_id for handler_id in outcomes if handler_id not in self._states]
        if unknown:
            raise KeyError(f"Outcomes for handlers without a state: {unknown!r}")
        states = {
            handler_id: state.with_outcome(outcomes[handler_id], now=now)
            if handler_id in outcomes
            else state
            for handler_id, state in self._states.items()
        }
        return Progress(states, purpose=self.purpose)

    def awakened(self, handlers: Iterable[Identified], *, now: datetime.datetime) -> list[Any]:
        """The handlers (of these) that are due now: not finished, not sleeping."""
        return [h for h in handlers if h.id in self._states and self._states[h.id].awakened(now)]

    @property
    def done(self) -> bool:
        """Whether all active handlers are finished (true when there are none)."""
        return all(state.finished for state in self._states.values() if state.active)

    @property
    def counts(self) -> Counters:
        """The counters of the current purpose's handlers (and of those without one)."""
        return _count(
            state
            for state in self._states.values()
            if self.purpose is None or state.purpose is None or state.purpose == self.purpose
        )

    @property
    def extras(self) -> dict[str, Counters]:
        """The counters of the handlers left from other (superseded) purposes, by purpose."""
        purposes = {state.purpose for state in self._states.values()}
        purposes -= {None, self.purpose}
        return {
            str(purpose): _count(s for s in self._states.values() if s.purpose == purpose)
            for purpose in sorted(p for p in purposes if p is not None)
        }

    def delays(self, now: datetime.datetime) -> list[float]:
        """Seconds to wait for each unfinished active handler so as not to wake before it is due
        (0 for the due ones; see :func:`anyop.clock.seconds_until`)."""
        return [
            seconds_until(state.delayed, now) if state.delayed else 0.0
            for state in self._states.values()
            if state.active and not state.finished
        ]

    def delay(self, now: datetime.datetime) -> float | None:
        """The shortest of :meth:`delays`, or ``None`` if nothing is pending."""
        delays = self.delays(now)
        return min(delays) if delays else None

    def store(self, *, body: Mapping[str, Any], patch: Patch, storage: ProgressStorage) -> None:
        """Put the changed states' records into the patch."""
        for handler_id, state in self._states.items():
            record = state.to_record()
            if record != state.origin:
                storage.write(key=handler_id, record=record, body=body, patch=patch)
        storage.flush()

    def purge(
        self,
        *,
        body: Mapping[str, Any],
        patch: Patch,
        storage: ProgressStorage,
        handlers: Collection[Identified],
    ) -> None:
        """Remove the records of these handlers, of all known states, and of their sub-handlers.

        Records of other operators' handlers (ids not known here) stay untouched.
        """
        handler_ids = dict.fromkeys(handler.id for handler in handlers)
        for handler_id, state in self._states.items():
            handler_ids.update(dict.fromkeys((handler_id, *state.subrefs)))
        for handler_id in handler_ids:
            storage.purge(key=handler_id, body=body, patch=patch)
        storage.flush()


def title(purpose: str) -> str:
    """The noun of a reason for the log lines: ``creation``, ``updating``..."""
    try:
        return TITLES[Reason(purpose)]
    except (ValueError, KeyError):
        return repr(str(purpose))


def in_progress_message(reason: str, body: Mapping[str, Any]) -> str:
    """``Creation is in progress: {...}`` (logged at debug level on every cycle; no secrets)."""
    return f"{title(reason).capitalize()} is in progress: {redacted(body)!r}"


def diff_message(reason: str, diff: object) -> str:
    """``Updating diff: ((...),)`` (logged at debug level when there is a diff)."""
    return f"{title(reason).capitalize()} diff: {diff!r}"


def processed_message(reason: str, counts: Counters) -> str:
    """``Creation is processed: 1 succeeded; 0 failed.`` (logged when all handlers are done)."""
    return (
        f"{title(reason).capitalize()} is processed: "
        f"{counts.success} succeeded; {counts.failure} failed."
    )


def superseded_message(extra: str, reason: str, counts: Counters) -> str:
    """``Creation is superseded by updating: 0 succeeded; 0 failed; 1 left to the moment.``"""
    return (
        f"{title(extra).capitalize()} is superseded by {title(reason).lower()}: "
        f"{counts.success} succeeded; {counts.failure} failed; {counts.running} left to the moment."
    )
