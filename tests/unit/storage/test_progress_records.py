"""Progress records: Kopf's JSON format, and resistance to corrupt input."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from anyop.storage.progress_records import (
    CorruptRecordError,
    ParsedRecord,
    StorageWarning,
    WarningsKeeper,
    format_timestamp,
    parse_timestamp,
)

NOW = datetime.datetime(2020, 2, 14, 16, 58, 25, 396364, tzinfo=datetime.UTC)


def test_timestamps_are_iso8601_utc_without_a_zone_suffix() -> None:
    assert format_timestamp(NOW) == "2020-02-14T16:58:25.396364"
    berlin = datetime.timezone(datetime.timedelta(hours=1))
    assert format_timestamp(NOW.astimezone(berlin)) == "2020-02-14T16:58:25.396364"
    assert format_timestamp(datetime.datetime(2020, 1, 1)) == "2020-01-01T00:00:00.000000"


@pytest.mark.parametrize(
    "text",
    [
        "2020-02-14T16:58:25.396364",
        "2020-02-14T16:58:25.396364+00:00",
        "2020-02-14T16:58:25.396364Z",
        "2020-02-14T17:58:25.396364+01:00",
    ],
)
def test_timestamps_with_or_without_zones_parse_to_aware_utc(text: str) -> None:
    assert parse_timestamp(text) == NOW
    assert parse_timestamp(text).tzinfo is datetime.UTC


def test_records_serialise_compactly_in_kopf_key_order_without_nones() -> None:
    record = ParsedRecord(
        started=NOW, delayed=NOW, purpose="update", retries=1, success=False, failure=False,
        message="Not ready.", subrefs=("fn/b", "fn/a"),
    )  # fmt: skip
    assert record.to_json() == (
        '{"started":"2020-02-14T16:58:25.396364","delayed":"2020-02-14T16:58:25.396364",'
        '"purpose":"update","retries":1,"success":false,"failure":false,'
        '"message":"Not ready.","subrefs":["fn/a","fn/b"]}'
    )


def test_verbose_records_keep_none_fields() -> None:
    assert ParsedRecord(retries=0).to_dict(verbose=True) == {
        "started": None, "stopped": None, "delayed": None, "purpose": None, "retries": 0,
        "success": None, "failure": None, "message": None, "subrefs": None,
    }  # fmt: skip


def test_records_round_trip_through_json() -> None:
    record = ParsedRecord(started=NOW, stopped=NOW, retries=3, success=True, subrefs=("a",))
    assert ParsedRecord.from_json(record.to_json()) == record


def test_kopf_records_and_unknown_fields_are_read() -> None:
    text = '{"started":"2020-02-14T16:58:25.396364","retries":0,"future":"field"}'
    assert ParsedRecord.from_json(text) == ParsedRecord(started=NOW, retries=0)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '"a string"',
        "[1, 2]",
        '{"started": "yesterday"}',
        '{"started": 12345}',
        '{"retries": "3"}',
        '{"retries": true}',
        '{"success": "yes"}',
        '{"message": 404}',
        '{"subrefs": "a"}',
        '{"subrefs": [1]}',
    ],
)
def test_corrupt_records_raise_a_dedicated_error(text: str) -> None:
    with pytest.raises(CorruptRecordError):
        ParsedRecord.from_json(text)


@pytest.mark.parametrize("value", [None, 5, {"a": 1}])
def test_records_must_be_json_strings(value: Any) -> None:
    with pytest.raises(CorruptRecordError, match="JSON string"):
        ParsedRecord.from_json(value)


def test_warnings_are_kept_until_drained_and_bounded() -> None:
    keeper = WarningsKeeper()
    for index in range(100):
        keeper.warn("annotation 'x'", f"problem {index}")
    drained = keeper.drain_warnings()
    assert len(drained) == 64
    assert drained[-1].problem == "problem 99"
    assert keeper.drain_warnings() == []
    assert str(StorageWarning("annotation 'x'", "bad")) == (
        "Ignoring the unreadable stored state in annotation 'x': bad"
    )
