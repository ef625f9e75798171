"""Retry decisions, backoffs and typed errors: pure, no event loop."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from anyop.errors import (
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
)
from anyop.kube.retries import (
    Backoff,
    Failure,
    RetryPolicy,
    error_of_response,
    failure_of_status,
    is_idempotent,
    may_retry,
    retry_after_of,
)
from anyop.kube.sessions import is_transient
from anyop.settings import NetworkingSettings

# Which requests may be repeated


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE", "get"])
def test_reads_replacements_and_deletions_are_idempotent(method: str) -> None:
    assert is_idempotent(method)


def test_creation_is_not_idempotent() -> None:
    assert not is_idempotent("POST", "application/json", {"metadata": {"name": "x"}})


@pytest.mark.parametrize(
    "content_type",
    [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ],
)
def test_absolute_patches_are_idempotent(content_type: str) -> None:
    assert is_idempotent("PATCH", content_type, {"spec": {"x": 1}})


def test_a_json_patch_guarded_by_a_test_op_is_idempotent() -> None:
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "f"},
    ]
    assert is_idempotent("PATCH", "application/json-patch+json", ops)


def test_a_json_patch_of_replacements_only_is_idempotent() -> None:
    ops = [{"op": "replace", "path": "/spec/x", "value": 1}]
    assert is_idempotent("PATCH", "application/json-patch+json", ops)


@pytest.mark.parametrize("op", ["add", "remove", "move", "copy"])
def test_an_unguarded_json_patch_that_shifts_things_is_not_idempotent(op: str) -> None:
    ops = [{"op": op, "path": "/metadata/finalizers/0", "from": "/x", "value": "f"}]
    assert not is_idempotent("PATCH", "application/json-patch+json", ops)


def test_a_patch_of_an_unknown_type_is_not_idempotent() -> None:
    assert not is_idempotent("PATCH", "application/x-unknown", {"a": 1})


@pytest.mark.parametrize(
    ("failure", "idempotent", "expected"),
    [
        (Failure.UNSENT, False, True),
        (Failure.THROTTLED, False, True),
        (Failure.UNANSWERED, True, True),
        (Failure.UNANSWERED, False, False),
        (Failure.SERVER, True, True),
        (Failure.SERVER, False, False),
        (Failure.FINAL, True, False),
    ],
)
def test_retry_classification(failure: Failure, idempotent: bool, expected: bool) -> None:
    assert may_retry(failure, idempotent=idempotent) is expected


@pytest.mark.parametrize(
    ("status", "failure"),
    [(429, Failure.THROTTLED), (500, Failure.SERVER), (504, Failure.SERVER), (404, Failure.FINAL)],
)
def test_statuses_are_classified(status: int, failure: Failure) -> None:
    assert failure_of_status(status) is failure


@pytest.mark.parametrize(
    ("status", "transient"),
    [(429, True), (503, True), (400, False), (403, False), (404, False), (409, False)],
)
def test_throttling_and_server_errors_are_transient_and_the_rest_final(
    status: int, transient: bool
) -> None:
    assert is_transient(error_of_response(status, {}, b"")) is transient


# How long to wait


def test_retry_after_in_seconds_from_the_header() -> None:
    assert retry_after_of("7", None) == 7


def test_retry_after_as_an_http_date() -> None:
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_of("Tue, 01 Jan 2030 12:00:30 GMT", None, now) == 30


def test_retry_after_from_the_status_details() -> None:
    assert retry_after_of(None, {"retryAfterSeconds": 3}) == 3


def test_retry_after_takes_the_longer_of_header_and_details() -> None:
    assert retry_after_of("2", {"retryAfterSeconds": 5}) == 5


@pytest.mark.parametrize(
    ("header", "details"), [(None, None), ("soon", {"retryAfterSeconds": "x"}), ("", {})]
)
def test_retry_after_is_none_when_absent_or_garbled(
    header: str | None, details: dict[str, object] | None
) -> None:
    assert retry_after_of(header, details) is None


def test_the_policy_follows_the_backoffs_and_then_gives_up() -> None:
    policy = RetryPolicy(backoffs=(1, 2, 4))
    assert [policy.delay(n, None, 0.0) for n in (1, 2, 3, 4)] == [1, 2, 4, None]
    assert policy.attempts == 4


def test_the_policy_waits_the_longer_of_the_backoff_and_retry_after() -> None:
    policy = RetryPolicy(backoffs=(1, 10))
    assert policy.delay(1, 5, 0.0) == 5
    assert policy.delay(2, 5, 0.0) == 10


def test_retry_after_is_capped() -> None:
    policy = RetryPolicy(backoffs=(1,), max_retry_after=3)
    assert policy.delay(1, 3600, 0.0) == 3


def test_an_enforced_retry_after_is_waited_exactly() -> None:
    policy = RetryPolicy(backoffs=(10,), enforce_retry_after=True)
    assert policy.delay(1, 2, 0.0) == 2


def test_jitter_stretches_waits_by_at_most_a_tenth() -> None:
    policy = RetryPolicy(backoffs=(10,))
    assert policy.delay(1, None, 0.999) == pytest.approx(10.999, abs=0.01)


def test_the_policy_comes_from_the_networking_settings() -> None:
    settings = NetworkingSettings(
        error_backoffs=(1, 2), max_retry_after=9, enforce_retry_after=True
    )
    assert RetryPolicy.from_settings(settings) == RetryPolicy((1, 2), 9, True)


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    backoff = Backoff(initial=1, factor=2, cap=5, jitter=0)
    assert [backoff.delay(n, 0.5) for n in (1, 2, 3, 4, 100)] == [1, 2, 4, 5, 5]


def test_backoff_jitter_spreads_around_the_nominal_wait() -> None:
    backoff = Backoff(initial=10, jitter=0.2)
    assert backoff.delay(1, 0.0) == pytest.approx(8)
    assert backoff.delay(1, 0.999) == pytest.approx(12, abs=0.01)


# Typed errors


def status_body(code: int, reason: str, message: str, **details: object) -> bytes:
    document = {"kind": "Status", "code": code, "reason": reason, "message": message}
    return json.dumps({**document, "details": details}).encode()


def test_a_status_body_gives_the_type_reason_message_and_details() -> None:
    body = status_body(404, "NotFound", 'configmaps "x" not found', name="x", kind="configmaps")
    error = error_of_response(404, {}, body)
    assert isinstance(error, NotFoundError)
    assert (error.status, error.reason, error.message) == (
        404,
        "NotFound",
        'configmaps "x" not found',
    )
    assert error.details == {"name": "x", "kind": "configmaps"}


def test_an_invalid_object_carries_its_causes() -> None:
    causes = [{"reason": "FieldValueInvalid", "field": "metadata.name"}]
    error = error_of_response(422, {}, status_body(422, "Invalid", "bad", causes=causes))
    assert isinstance(error, InvalidError)
    assert error.details["causes"] == causes


def test_a_conflict_is_typed() -> None:
    assert isinstance(error_of_response(409, {}, status_body(409, "Conflict", "x")), ConflictError)


def test_too_many_requests_carries_retry_after_from_the_header_or_details() -> None:
    by_header = error_of_response(429, {"Retry-After": "4"}, b"")
    by_details = error_of_response(
        429, {}, status_body(429, "TooManyRequests", "x", retryAfterSeconds=2)
    )
    assert isinstance(by_header, TooManyRequestsError)
    assert (by_header.retry_after, by_details.retry_after) == (4, 2)


def test_a_non_json_error_body_becomes_the_message() -> None:
    error = error_of_response(502, {}, b"<html>Bad Gateway from the proxy</html>" + b"x" * 5000)
    assert isinstance(error, ServerError)
    assert error.message.startswith("<html>Bad Gateway from the proxy</html>")
    assert len(error.message) <= 500


@pytest.mark.parametrize("body", [b"", b"\xff\xfe\x00garbage", b"[1, 2]", b"[" * 5000])
def test_odd_error_bodies_never_crash(body: bytes) -> None:
    error = error_of_response(418, {}, body)
    assert type(error) is ApiError
    assert error.status == 418
    assert error.message
