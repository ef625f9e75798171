"""Stored retry times ahead of this clock are clamped (RELIABILITY.md §5 row 41): fake "now"s."""

from __future__ import annotations

import datetime
import logging

import pytest

from anyop.kube.patches import Patch
from anyop.storage.progress import AnnotationsProgressStorage, StatusProgressStorage
from anyop.storage.progress_records import ParsedRecord, clamp_to_clock

NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)
HOUR = datetime.timedelta(hours=1)
MINUTE = datetime.timedelta(minutes=1)


def test_a_record_of_a_writer_an_hour_ahead_is_taken_back_by_its_lead() -> None:
    written = ParsedRecord(started=NOW + HOUR, delayed=NOW + HOUR + MINUTE, retries=1)
    clamped = clamp_to_clock(written, now=NOW)
    assert clamped.started == NOW
    assert clamped.delayed == NOW + MINUTE  # its own delay, not an hour more
    assert clamped.retries == 1


def test_a_stopped_time_ahead_is_a_lead_too() -> None:
    written = ParsedRecord(started=NOW - HOUR, stopped=NOW + HOUR, delayed=NOW + 2 * HOUR)
    clamped = clamp_to_clock(written, now=NOW)
    assert (clamped.started, clamped.stopped, clamped.delayed) == (NOW - HOUR, NOW, NOW + HOUR)


def test_a_horizon_caps_the_retry_time_whatever_the_record_says() -> None:
    written = ParsedRecord(started=NOW - MINUTE, delayed=NOW + HOUR)
    assert clamp_to_clock(written, now=NOW, horizon=60).delayed == NOW + MINUTE
    assert clamp_to_clock(written, now=NOW, horizon=7200) is written


@pytest.mark.parametrize(
    "record",
    [
        ParsedRecord(),
        ParsedRecord(started=NOW, delayed=NOW + HOUR),  # a long delay asked for: kept
        ParsedRecord(started=NOW - HOUR, stopped=NOW - MINUTE),
        ParsedRecord(started=NOW - HOUR, delayed=NOW - MINUTE),  # due already
    ],
)
def test_records_within_the_clock_are_returned_as_they_are(record: ParsedRecord) -> None:
    assert clamp_to_clock(record, now=NOW) is record


@pytest.mark.parametrize("kind", ["annotations", "status"])
def test_storages_clamp_what_they_read_and_warn(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    storage = (
        AnnotationsProgressStorage(v1=False) if kind == "annotations" else StatusProgressStorage()
    )
    now = datetime.datetime.now(datetime.UTC)
    written = ParsedRecord(started=now + HOUR, delayed=now + HOUR + MINUTE, retries=1)
    patch = Patch()
    storage.write(key="fn", record=written, body={}, patch=patch)
    meta = {"name": "x", "namespace": "ns", **patch.get("metadata", {})}
    body = {**dict(patch), "metadata": meta}
    with caplog.at_level(logging.WARNING, logger="anyop"):
        read = storage.read(key="fn", body=body)
    assert read is not None
    assert read.delayed is not None
    assert read.started is not None
    assert read.delayed - read.started == MINUTE
    assert read.delayed < now + 2 * MINUTE
    assert any("ahead of this clock" in message for message in caplog.messages)
    storage.max_delay = 10
    assert (storage.read(key="fn", body=body) or ParsedRecord()).delayed < now + MINUTE
