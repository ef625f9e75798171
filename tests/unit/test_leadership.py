"""The pure rules of leader election: what a replica does with the Lease it reads."""

from __future__ import annotations

import datetime

import pytest

from anyop.errors import ConfigError
from anyop.leadership import (
    Action,
    LeaseRecord,
    Observation,
    decide,
    lease_body,
    micro_time,
    observe,
    release_body,
)
from anyop.settings import LeadershipSettings

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)


def lease(holder: str | None, version: str = "10", duration: int = 15) -> LeaseRecord:
    return LeaseRecord("op", "ns", holder, duration, "t0", "t0", 2, version)


def test_no_lease_is_created() -> None:
    seen = observe(None, None, 100.0)
    assert decide(None, identity="me", observation=seen, now=100.0) is Action.CREATE


def test_our_own_lease_is_renewed() -> None:
    record = lease("me")
    seen = observe(None, record, 100.0)
    assert decide(record, identity="me", observation=seen, now=100.0) is Action.RENEW


def test_a_released_lease_is_taken_at_once() -> None:
    record = lease(None)
    seen = observe(None, record, 100.0)
    assert decide(record, identity="me", observation=seen, now=100.0) is Action.TAKE


def test_another_holders_lease_is_waited_for_until_unchanged_for_its_duration() -> None:
    record = lease("other", duration=15)
    seen = observe(None, record, 100.0)
    assert decide(record, identity="me", observation=seen, now=114.9) is Action.WAIT
    seen = observe(seen, record, 114.9)  # the same version: the clock does not restart
    assert decide(record, identity="me", observation=seen, now=115.0) is Action.TAKE


def test_a_renewal_by_the_holder_restarts_the_standbys_clock() -> None:
    seen = observe(None, lease("other", version="10"), 100.0)
    renewed = lease("other", version="11")
    seen = observe(seen, renewed, 110.0)
    assert seen == Observation("11", 110.0)
    assert decide(renewed, identity="me", observation=seen, now=115.0) is Action.WAIT


def test_a_zero_duration_counts_as_one_second() -> None:
    record = lease("other", duration=0)
    seen = observe(None, record, 100.0)
    assert decide(record, identity="me", observation=seen, now=100.5) is Action.WAIT


def test_taking_a_lease_counts_a_transition_and_is_conditional() -> None:
    body = lease_body(Action.TAKE, lease("other"), identity="me", duration=15, now=NOW)
    assert body["metadata"] == {"name": "op", "namespace": "ns", "resourceVersion": "10"}
    assert body["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-02T03:04:05.678901Z",
        "renewTime": "2026-01-02T03:04:05.678901Z",
        "leaseTransitions": 3,
    }


def test_renewing_keeps_the_acquire_time_and_the_transitions() -> None:
    body = lease_body(Action.RENEW, lease("me"), identity="me", duration=15, now=NOW)
    assert body["spec"]["acquireTime"] == "t0"
    assert body["spec"]["leaseTransitions"] == 2


def test_creating_sends_no_resource_version() -> None:
    body = lease_body(Action.CREATE, lease(None, version=""), identity="me", duration=5, now=NOW)
    assert "resourceVersion" not in body["metadata"]
    assert body["spec"]["holderIdentity"] == "me"


def test_releasing_clears_the_holder_and_shortens_the_duration() -> None:
    body = release_body(lease("me"), now=NOW)
    assert body["spec"]["holderIdentity"] is None
    assert body["spec"]["leaseDurationSeconds"] == 1
    assert body["metadata"]["resourceVersion"] == "10"


def test_lease_records_are_read_from_api_bodies() -> None:
    body = {
        "metadata": {"name": "op", "namespace": "ns", "resourceVersion": "7"},
        "spec": {"holderIdentity": "x", "leaseDurationSeconds": 3, "leaseTransitions": 4},
    }
    assert LeaseRecord.from_body(body) == LeaseRecord("op", "ns", "x", 3, None, None, 4, "7")


def test_micro_time_is_utc_with_microseconds() -> None:
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert micro_time(NOW.astimezone(east)) == "2026-01-02T03:04:05.678901Z"


@pytest.mark.parametrize(
    ("values", "culprit"),
    [
        ({"lease_duration": 3, "renew_deadline": 3, "retry_period": 1}, "renew_deadline"),
        ({"lease_duration": 3, "renew_deadline": 2, "retry_period": 2}, "retry_period"),
    ],
)
def test_durations_that_do_not_fit_are_a_clear_error(
    values: dict[str, float], culprit: str
) -> None:
    settings = LeadershipSettings.model_validate(values)
    with pytest.raises(ConfigError, match=f"settings.leadership.{culprit}"):
        settings.check()


def test_default_durations_fit() -> None:
    settings = LeadershipSettings()
    settings.check()  # raises if they did not
    assert settings.retry_period < settings.renew_deadline < settings.lease_duration
