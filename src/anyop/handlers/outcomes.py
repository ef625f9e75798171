"""What to make of a handler's attempt: the outcome, the delay, and Kopf's log line for it.

The engine runs a handler and reports what happened (:class:`Succeeded`, :class:`Failed`,
:class:`ChildrenPending`); :func:`decide` turns that into a :class:`Decision`: the outcome, the
handler's new state (to be stored), and the message with its log level, worded as Kopf words it
(``Handler 'create_fn' succeeded.``, ``Handler 'x' failed temporarily: ...``). Limits are checked
with look-ahead, as in Kopf: a retry that would exceed ``retries=`` or ``timeout=`` is not made.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import logging
import math
from collections.abc import Mapping, MutableMapping
from typing import Protocol

from anyop.errors import (
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)
from anyop.handlers.diffs import json_copy
from anyop.handlers.progression import HandlerState, Outcome
from anyop.kube.patches import Patch

__all__ = [
    "DEFAULT_BACKOFF",
    "ChildrenPending",
    "Decision",
    "ErrorsMode",
    "Failed",
    "Happening",
    "Requeue",
    "RetryPolicy",
    "Succeeded",
    "cancelled_message",
    "decide",
    "deliver_results",
    "precheck",
    "returned",
    "unstorable",
]

DEFAULT_BACKOFF: float = 60  # an int, so that logs say "60 seconds" as in Kopf
"""Seconds before retrying a handler after an arbitrary exception (``backoff=``)."""


class ErrorsMode(enum.Enum):
    """How arbitrary exceptions (neither temporary nor permanent errors) are treated."""

    IGNORED = enum.auto()
    TEMPORARY = enum.auto()
    PERMANENT = enum.auto()


@dataclasses.dataclass(frozen=True)
class Requeue:
    """What a reconciler returns to be called again after ``after`` seconds, changes or not.

    Args:
        after: Seconds until the next call (a change of the object or of its children calls it
            sooner). Zero or more.

    Raises:
        ValueError: ``after`` is negative or not a number.
    """

    after: float = 0.0

    def __post_init__(self) -> None:
        after = self.after
        if isinstance(after, bool) or not isinstance(after, int | float) or not after >= 0:
            raise ValueError(f"Requeue(after=...) must be zero or more seconds: {after!r}.")


class RetryPolicy(Protocol):
    """What the decisions need from a handler record (its ``str()`` is ``Handler 'id'``)."""

    @property
    def id(self) -> str: ...
    @property
    def errors(self) -> ErrorsMode | None: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def retries(self) -> int | None: ...
    @property
    def backoff(self) -> float | None: ...


@dataclasses.dataclass(frozen=True)
class Succeeded:
    """The handler returned (``result`` is its return value)."""

    result: object = None
    subrefs: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Failed:
    """The handler raised ``error``."""

    error: Exception
    subrefs: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ChildrenPending:
    """The handler's sub-handlers are not all finished yet; retry it after ``delay``."""

    delay: float | None = None
    message: str = "Sub-handlers are not finished yet."
    subrefs: tuple[str, ...] = ()


Happening = Succeeded | Failed | ChildrenPending


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the engine does after an attempt.

    Attributes:
        outcome: The attempt's outcome.
        state: The handler's new state, to be stored.
        message: The log line.
        level: The log level (``logging.INFO``, ``logging.ERROR``...).
        exc_info: The exception whose traceback is logged with the message, if any (the
            engine logs after the handler's ``except`` block, so ``True`` would find none).
    """

    outcome: Outcome
    state: HandlerState
    message: str
    level: int
    exc_info: BaseException | None = None

    @property
    def delay(self) -> float | None:
        """Seconds until the next attempt, if any is due."""
        return self.outcome.delay


def _reason(error: BaseException) -> str:
    return str(error) or repr(error)


def _decision(
    state: HandlerState,
    outcome: Outcome,
    *,
    now: datetime.datetime,
    message: str,
    level: int = logging.ERROR,
    exc_info: BaseException | None = None,
) -> Decision:
    new_state = state.with_outcome(outcome, now=now)
    return Decision(outcome, new_state, message=message, level=level, exc_info=exc_info)


def precheck(
    handler: RetryPolicy, state: HandlerState, *, now: datetime.datetime
) -> Decision | None:
    """Fail the handler before invoking it if its limits are already exceeded.

    This strict check catches what look-ahead cannot foresee, e.g. an operator's downtime.

    Returns:
        The final failure, or ``None`` if the handler may run.
    """
    runtime = state.runtime(now)
    if handler.timeout is not None and runtime.total_seconds() >= handler.timeout:
        error: PermanentError = HandlerTimeoutError(f"{handler} has timed out after {runtime}.")
    elif handler.retries is not None and state.retries >= handler.retries:
        error = HandlerRetriesError(f"{handler} has exceeded {state.retries} retries.")
    else:
        return None
    outcome = Outcome(final=True, exception=error)
    return _decision(state, outcome, now=now, message=str(error))


def decide(
    handler: RetryPolicy,
    state: HandlerState,
    happening: Happening,
    *,
    now: datetime.datetime,
    default_errors: ErrorsMode = ErrorsMode.TEMPORARY,
    default_backoff: float = DEFAULT_BACKOFF,
) -> Decision:
    """Decide the outcome of an attempt.

    Args:
        handler: The handler record (its ``errors``, ``timeout``, ``retries``, ``backoff``).
        state: The handler's state before the attempt.
        happening: What the attempt came to.
        now: The current time (aware UTC).
        default_errors: The errors mode when the handler has none (``IGNORED`` for event
            handlers, ``PERMANENT`` for webhooks).
        default_backoff: The delay before retrying after an arbitrary error when the handler
            has no ``backoff`` (``settings.execution.default_backoff``).

    Returns:
        The decision, with Kopf's log line.
    """
    subrefs = happening.subrefs
    if isinstance(happening, Succeeded):
        outcome = Outcome(final=True, result=happening.result, subrefs=subrefs)
        message = f"{handler} succeeded."
        return _decision(state, outcome, now=now, message=message, level=logging.INFO)
    if isinstance(happening, ChildrenPending):
        pending = TemporaryError(happening.message, delay=happening.delay)
        outcome = Outcome(final=False, delay=happening.delay, exception=pending, subrefs=subrefs)
        message = f"{handler} has unfinished sub-handlers. Will retry soon."
        return _decision(state, outcome, now=now, message=message, level=logging.DEBUG)
    error = happening.error
    if isinstance(error, TemporaryError):
        return _temporary(handler, state, error, now=now, subrefs=subrefs)
    if isinstance(error, HandlerTimeoutError | HandlerRetriesError):
        outcome = Outcome(final=True, exception=error, subrefs=subrefs)
        return _decision(state, outcome, now=now, message=_reason(error))
    if isinstance(error, PermanentError):
        outcome = Outcome(final=True, exception=error, subrefs=subrefs)
        message = f"{handler} failed permanently: {_reason(error)}"
        return _decision(state, outcome, now=now, message=message)
    mode = handler.errors if handler.errors is not None else default_errors
    return _arbitrary(
        handler, state, error, now=now, mode=mode, subrefs=subrefs, default_backoff=default_backoff
    )


def _exceeds(
    handler: RetryPolicy, state: HandlerState, delay: float, *, now: datetime.datetime
) -> tuple[bool, bool]:
    """Look ahead: would the next attempt be past the timeout, or past the retries?"""
    runtime = state.runtime(now).total_seconds() + delay
    timeout = handler.timeout is not None and runtime >= handler.timeout
    retries = handler.retries is not None and state.retries + 1 >= handler.retries
    return timeout, retries


def _temporary(
    handler: RetryPolicy,
    state: HandlerState,
    error: TemporaryError,
    *,
    now: datetime.datetime,
    subrefs: tuple[str, ...],
) -> Decision:
    timeout, retries = _exceeds(handler, state, error.delay or 0, now=now)
    final_error: PermanentError
    if timeout:
        message = (
            f"{handler} failed temporarily but will time out after {handler.timeout} seconds: "
        )
        final_error = HandlerTimeoutError(message + _reason(error))
    elif retries:
        message = f"{handler} failed temporarily but will exceed {handler.retries} retries: "
        final_error = HandlerRetriesError(message + _reason(error))
    else:
        outcome = Outcome(final=False, delay=error.delay, exception=error, subrefs=subrefs)
        message = f"{handler} failed temporarily: {_reason(error)}"
        return _decision(state, outcome, now=now, message=message)
    outcome = Outcome(final=True, exception=final_error, subrefs=subrefs)
    return _decision(state, outcome, now=now, message=str(final_error))


def _backoff(handler: RetryPolicy, default_backoff: float) -> float:
    backoff = handler.backoff if handler.backoff is not None else default_backoff
    if isinstance(backoff, float) and backoff.is_integer():
        return int(backoff)  # "60 seconds" in the log, as Kopf says it
    return backoff


def _arbitrary(
    handler: RetryPolicy,
    state: HandlerState,
    error: Exception,
    *,
    now: datetime.datetime,
    mode: ErrorsMode,
    subrefs: tuple[str, ...],
    default_backoff: float = DEFAULT_BACKOFF,
) -> Decision:
    backoff = _backoff(handler, default_backoff)
    timeout, retries = _exceeds(handler, state, backoff, now=now)
    prefix = f"{handler} failed with an exception and will"
    if mode is ErrorsMode.IGNORED:
        outcome = Outcome(final=True, subrefs=subrefs)
        message = f"{prefix} ignore it: {_reason(error)}"
        return _decision(state, outcome, now=now, message=message, exc_info=error)
    if mode is ErrorsMode.PERMANENT:
        outcome = Outcome(final=True, exception=error, subrefs=subrefs)
        message = f"{prefix} stop now: {_reason(error)}"
        return _decision(state, outcome, now=now, message=message, exc_info=error)
    final_error: PermanentError
    if timeout:
        why = f"it would time out in {handler.timeout} seconds on the next attempt"
        final_error = HandlerTimeoutError(f"{prefix} stop now ({why}): {_reason(error)}")
    elif retries:
        why = f"it would exceed {handler.retries} retries on the next attempt"
        final_error = HandlerRetriesError(f"{prefix} stop now ({why}): {_reason(error)}")
    else:
        outcome = Outcome(final=False, delay=backoff, exception=error, subrefs=subrefs)
        message = f"{prefix} try again in {backoff} seconds: {_reason(error)}"
        return _decision(state, outcome, now=now, message=message, exc_info=error)
    outcome = Outcome(final=True, exception=final_error, subrefs=subrefs)
    return _decision(state, outcome, now=now, message=str(final_error), exc_info=error)


def insist(
    handler: RetryPolicy,
    state: HandlerState,
    decision: Decision,
    *,
    now: datetime.datetime,
    default_backoff: float = DEFAULT_BACKOFF,
) -> Decision:
    """A deletion that waits for this handler (``on_failure="keep"``): a handler that failed for
    good is retried after its backoff instead, and the finalizer stays meanwhile. Pure."""
    outcome = decision.outcome
    if not outcome.final or outcome.exception is None:
        return decision
    backoff = _backoff(handler, default_backoff)
    retried = Outcome(
        final=False, delay=backoff, exception=outcome.exception, subrefs=outcome.subrefs
    )
    message = (
        f"{handler} failed, and the deletion waits for it to succeed (on_failure='keep'); "
        f"retrying in {backoff} seconds: {_reason(outcome.exception)}"
    )
    return _decision(state, retried, now=now, message=message, exc_info=decision.exc_info)


def cancelled_message(handler: RetryPolicy) -> str:
    """``Handler 'x' is cancelled. Will escalate.`` (logged as a warning)."""
    return f"{handler} is cancelled. Will escalate."


def deliver_results(outcomes: Mapping[str, Outcome], patch: Patch) -> None:
    """Put the handlers' return values into ``status.<handler id>``.

    Mappings are merged into what the patch already has there; other values replace it.
    Failures and ``None`` results deliver nothing.
    """
    for handler_id, outcome in outcomes.items():
        if outcome.exception is not None or outcome.result is None:
            continue
        status = patch.get("status")
        existing = status.get(handler_id) if isinstance(status, Mapping) else None
        if not isinstance(status, MutableMapping):  # as writing to patch.status would
            status = patch["status"] = {}
        if isinstance(outcome.result, Mapping):
            merged = dict(existing) if isinstance(existing, Mapping) else {}
            status[handler_id] = {**merged, **json_copy(dict(outcome.result))}
        else:
            status[handler_id] = json_copy(outcome.result)


def returned(result: object, subrefs: tuple[str, ...] = ()) -> Succeeded | Failed:
    """What a handler's return means: success, or a permanent failure if it cannot be stored."""
    if (problem := unstorable(result)) is not None:
        error = PermanentError(f"Its result cannot be stored in the status: {problem}")
        return Failed(error, subrefs=subrefs)
    return Succeeded(result, subrefs=subrefs)


def _plain_json(value: object, depth: int = 0) -> bool:
    """Whether a value is made of dicts with string keys, lists, strings, integers of up to 64
    bits, booleans, finite floats and ``None`` only, shallowly enough to be checked without the
    encoder. Pure.

    ``False`` does not mean unstorable: :func:`unstorable` then asks the JSON encoder (e.g. for
    tuples, which it stores as lists, or deeper nesting).
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:  # a huge one exceeds the digits that int-to-text allows: the encoder says
        return value.bit_length() <= 64  # type: ignore[attr-defined,no-any-return]
    if kind is float:
        return math.isfinite(value)  # type: ignore[arg-type]
    if depth >= _PLAIN_DEPTH:
        return False
    if kind is dict:
        items = value.items()  # type: ignore[attr-defined]
        return all(type(key) is str and _plain_json(item, depth + 1) for key, item in items)
    if kind is list:
        return all(_plain_json(item, depth + 1) for item in value)  # type: ignore[attr-defined]
    return False


_PLAIN_DEPTH = 8
"""How deep :func:`_plain_json` looks before it leaves the rest to the encoder."""


def unstorable(result: object) -> str | None:
    """Why a handler's result cannot be stored in the status as JSON, or ``None`` if it can."""
    if result is None or _plain_json(result):
        return None
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as error:
        return f"{error} (a {type(result).__name__} was returned)."
    return None
