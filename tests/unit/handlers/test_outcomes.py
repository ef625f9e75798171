"""Outcome decisions after a handler's attempt, with Kopf's log lines."""

from __future__ import annotations

import datetime
import logging
import types
from typing import Any

import pytest

from anyop.errors import (
    AdmissionError,
    HandlerRetriesError,
    HandlerTimeoutError,
    PermanentError,
    TemporaryError,
)
from anyop.handlers.outcomes import (
    ChildrenPending,
    ErrorsMode,
    Failed,
    Succeeded,
    cancelled_message,
    decide,
    deliver_results,
    precheck,
)
from anyop.handlers.progression import HandlerState, Outcome
from anyop.handlers.records import ResourceChangingHandler
from anyop.kube.patches import Patch

NOW = datetime.datetime(2024, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def handler(**fields: Any) -> ResourceChangingHandler:
    return ResourceChangingHandler(id="create_fn", fn=lambda **_: None, **fields)


def state(*, retries: int = 0, age: float = 0) -> HandlerState:
    started = NOW - datetime.timedelta(seconds=age)
    return HandlerState(started=started, retries=retries, purpose="create")


def test_success_is_final_and_logged_at_info() -> None:
    decision = decide(handler(), state(), Succeeded({"message": "hello"}), now=NOW)
    assert decision.message == "Handler 'create_fn' succeeded."
    assert decision.level == logging.INFO
    assert not decision.exc_info
    assert decision.outcome == Outcome(final=True, result={"message": "hello"})
    assert decision.state.success
    assert not decision.state.failure
    assert decision.state.retries == 1
    assert decision.state.stopped == NOW
    assert decision.delay is None


def test_temporary_errors_retry_after_their_delay() -> None:
    error = TemporaryError("not ready", delay=10)
    decision = decide(handler(), state(retries=2), Failed(error), now=NOW)
    assert decision.message == "Handler 'create_fn' failed temporarily: not ready"
    assert decision.level == logging.ERROR
    assert decision.outcome == Outcome(final=False, delay=10, exception=error)
    assert decision.state.delayed == NOW + datetime.timedelta(seconds=10)
    assert decision.state.retries == 3
    assert decision.state.message == "not ready"
    assert not decision.state.finished


def test_temporary_errors_without_delay_retry_at_once() -> None:
    decision = decide(handler(), state(), Failed(TemporaryError("again", delay=None)), now=NOW)
    assert decision.delay is None
    assert decision.state.delayed is None
    assert decision.state.awakened(NOW)


def test_temporary_errors_without_a_message_are_shown_by_repr() -> None:
    decision = decide(handler(), state(), Failed(TemporaryError()), now=NOW)
    assert decision.message == "Handler 'create_fn' failed temporarily: TemporaryError('')"


def test_temporary_errors_that_would_exceed_retries_fail_now() -> None:
    decision = decide(handler(retries=3), state(retries=2), Failed(TemporaryError("x")), now=NOW)
    assert decision.message == (
        "Handler 'create_fn' failed temporarily but will exceed 3 retries: x"
    )
    assert isinstance(decision.outcome.exception, HandlerRetriesError)
    assert decision.outcome.final
    assert decision.state.failure


def test_temporary_errors_that_would_time_out_fail_now() -> None:
    error = TemporaryError("x", delay=30)
    decision = decide(handler(timeout=60), state(age=40), Failed(error), now=NOW)
    assert decision.message == (
        "Handler 'create_fn' failed temporarily but will time out after 60 seconds: x"
    )
    assert isinstance(decision.outcome.exception, HandlerTimeoutError)
    assert decision.state.failure


def test_permanent_errors_fail_at_once() -> None:
    decision = decide(handler(), state(), Failed(PermanentError("broken")), now=NOW)
    assert decision.message == "Handler 'create_fn' failed permanently: broken"
    assert decision.outcome.final
    assert decision.state.failure
    assert decision.state.message == "broken"
    assert not decision.exc_info


def test_admission_errors_are_permanent() -> None:
    decision = decide(handler(), state(), Failed(AdmissionError("denied", code=555)), now=NOW)
    assert decision.message == "Handler 'create_fn' failed permanently: denied"


def test_raised_timeout_and_retries_errors_are_logged_as_they_are() -> None:
    decision = decide(handler(), state(), Failed(HandlerTimeoutError("took too long")), now=NOW)
    assert decision.message == "took too long"
    assert decision.state.failure


def test_arbitrary_errors_are_retried_after_the_backoff_by_default() -> None:
    error = ValueError("boom")
    decision = decide(handler(backoff=5), state(), Failed(error), now=NOW)
    assert decision.message == (
        "Handler 'create_fn' failed with an exception and will try again in 5 seconds: boom"
    )
    assert decision.exc_info
    assert decision.level == logging.ERROR
    assert decision.outcome == Outcome(final=False, delay=5, exception=error)


def test_arbitrary_errors_use_the_60_seconds_default_backoff() -> None:
    decision = decide(handler(), state(), Failed(ValueError("boom")), now=NOW)
    assert decision.delay == 60
    assert "will try again in 60 seconds:" in decision.message


def test_arbitrary_errors_in_permanent_mode_stop_now() -> None:
    decision = decide(handler(errors=ErrorsMode.PERMANENT), state(), Failed(KeyError("k")), now=NOW)
    assert decision.message == (
        "Handler 'create_fn' failed with an exception and will stop now: 'k'"
    )
    assert decision.state.failure
    assert decision.exc_info


def test_arbitrary_errors_in_ignored_mode_count_as_success() -> None:
    decision = decide(handler(errors=ErrorsMode.IGNORED), state(), Failed(ValueError("x")), now=NOW)
    assert decision.message == (
        "Handler 'create_fn' failed with an exception and will ignore it: x"
    )
    assert decision.state.success
    assert decision.outcome.exception is None


def test_the_default_errors_mode_comes_from_the_handler_kind() -> None:
    decision = decide(
        handler(), state(), Failed(ValueError("x")), now=NOW, default_errors=ErrorsMode.IGNORED
    )
    assert decision.state.success


@pytest.mark.parametrize(
    ("fields", "prior", "expected"),
    [
        ({"retries": 3}, {"retries": 2}, "(it would exceed 3 retries on the next attempt): boom"),
        (
            {"timeout": 60, "backoff": 30},
            {"age": 40},
            "(it would time out in 60 seconds on the next attempt): boom",
        ),
    ],
)
def test_arbitrary_errors_that_would_exceed_limits_stop_now(
    fields: dict[str, Any], prior: dict[str, Any], expected: str
) -> None:
    decision = decide(handler(**fields), state(**prior), Failed(ValueError("boom")), now=NOW)
    assert (
        decision.message
        == f"Handler 'create_fn' failed with an exception and will stop now {expected}"
    )
    assert decision.state.failure


def test_unfinished_children_retry_quietly() -> None:
    decision = decide(
        handler(), state(), ChildrenPending(delay=None, subrefs=("create_fn/a",)), now=NOW
    )
    assert decision.message == "Handler 'create_fn' has unfinished sub-handlers. Will retry soon."
    assert decision.level == logging.DEBUG
    assert not decision.outcome.final
    assert decision.state.subrefs == ("create_fn/a",)


def test_subrefs_accumulate_across_attempts() -> None:
    prior = HandlerState(started=NOW, subrefs=("p/b",))
    decision = decide(handler(), prior, Succeeded(None, subrefs=("p/a", "p/b")), now=NOW)
    assert decision.state.subrefs == ("p/a", "p/b")


def test_precheck_fails_handlers_past_their_timeout_or_retries() -> None:
    timed_out = precheck(handler(timeout=60), state(age=61), now=NOW)
    assert timed_out is not None
    assert timed_out.message == "Handler 'create_fn' has timed out after 0:01:01."
    assert isinstance(timed_out.outcome.exception, HandlerTimeoutError)
    exhausted = precheck(handler(retries=2), state(retries=2), now=NOW)
    assert exhausted is not None
    assert exhausted.message == "Handler 'create_fn' has exceeded 2 retries."
    assert exhausted.state.failure


def test_precheck_lets_handlers_within_limits_run() -> None:
    assert precheck(handler(timeout=60, retries=3), state(age=10, retries=2), now=NOW) is None
    assert precheck(handler(), state(age=10**6, retries=10**6), now=NOW) is None


def test_cancellation_message() -> None:
    assert cancelled_message(handler()) == "Handler 'create_fn' is cancelled. Will escalate."


def test_results_are_delivered_to_the_status_under_handler_ids() -> None:
    patch = Patch({"status": {"merged": {"old": 1}}})
    deliver_results(
        {
            "merged": Outcome(final=True, result={"new": 2}),
            "scalar": Outcome(final=True, result=100),
            "nothing": Outcome(final=True, result=None),
            "failed": Outcome(final=True, result={"x": 1}, exception=ValueError()),
        },
        patch,
    )
    assert patch == {"status": {"merged": {"old": 1, "new": 2}, "scalar": 100}}


@pytest.mark.parametrize("status", [None, "text", types.MappingProxyType({"fn": {"old": 1}})])
def test_results_replace_a_status_that_cannot_take_them_keeping_what_it_read(status: Any) -> None:
    patch = Patch({"status": status})
    deliver_results({"fn": Outcome(final=True, result={"new": 2})}, patch)
    kept = {"old": 1} if isinstance(status, types.MappingProxyType) else {}
    assert patch == {"status": {"fn": {**kept, "new": 2}}}


def test_delivered_results_are_copies() -> None:
    result = {"items": [1]}
    patch = Patch()
    deliver_results({"fn": Outcome(final=True, result=result)}, patch)
    result["items"].append(2)
    assert patch.status["fn"] == {"items": [1]}


@pytest.mark.parametrize("errors", [ErrorsMode.TEMPORARY, ErrorsMode.PERMANENT, ErrorsMode.IGNORED])
def test_arbitrary_errors_log_their_own_traceback_outside_the_except_block(
    errors: ErrorsMode, caplog: pytest.LogCaptureFixture
) -> None:
    try:
        raise ValueError("boom")
    except ValueError as e:
        error = e
    decision = decide(handler(errors=errors, retries=1), state(), Failed(error), now=NOW)
    assert decision.exc_info is error
    logging.getLogger("test").error(decision.message, exc_info=decision.exc_info)
    assert 'raise ValueError("boom")' in caplog.text
    assert "NoneType: None" not in caplog.text
