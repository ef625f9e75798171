"""Progress records and storage warnings: the data that progress storages read and write.

A record is one handler's progress for one cause. At the storage boundary it is Kopf's shape, a
plain dict (:class:`ProgressRecord`):
``{"started":"2020-02-14T16:58:25.396364","purpose":"create","retries":1,"success":false,...}``
with timestamps in ISO-8601 UTC without a zone suffix, so that a storage written for Kopf
(``json.dumps(record)``, ``record["retries"]``) works unchanged. The engine reads it into a
:class:`ParsedRecord` (datetimes, checked types) and writes it back from one.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Any, TypedDict

from anyop._jsons import compact

__all__ = [
    "CorruptRecordError",
    "ParsedRecord",
    "ProgressRecord",
    "StorageWarning",
    "WarningsKeeper",
    "clamp_to_clock",
    "format_timestamp",
    "parse_timestamp",
]


class CorruptRecordError(ValueError):
    """A stored record is not valid JSON or has fields of the wrong types."""


def format_timestamp(value: datetime.datetime) -> str:
    """Format as ISO-8601 UTC with microseconds and no zone suffix (naive values are UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds")


def parse_timestamp(text: str) -> datetime.datetime:
    """Parse an ISO-8601 timestamp into an aware UTC datetime (no zone means UTC)."""
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is None:
        return value.replace(tzinfo=datetime.UTC)
    return value.astimezone(datetime.UTC)


_TIMESTAMPS = ("started", "stopped", "delayed")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "purpose": str,
    "retries": int,
    "success": bool,
    "failure": bool,
    "message": str,
}


class ProgressRecord(TypedDict, total=False):
    """One handler's stored progress, as storages get and give it: Kopf's dict of JSON values.

    ``store()`` gets every key, ``None`` where unset (a storage may leave those out, as the
    annotations storage does unless ``verbose``); ``fetch()`` may return any subset of them.

    Attributes:
        started: When the handler was first attempted for this cause (ISO-8601 UTC).
        stopped: When it finally succeeded or failed (ISO-8601 UTC).
        delayed: Until when its retry is postponed (ISO-8601 UTC).
        purpose: The reason it runs for (``create``, ``update``...).
        retries: How many attempts were made.
        success: It finally succeeded.
        failure: It finally failed.
        message: The last error.
        subrefs: The ids of its sub-handlers, of all levels.
    """

    started: str | None
    stopped: str | None
    delayed: str | None
    purpose: str | None
    retries: int | None
    success: bool | None
    failure: bool | None
    message: str | None
    subrefs: list[str] | None


@dataclasses.dataclass(frozen=True)
class ParsedRecord:
    """The stored progress of one handler, read: datetimes, checked types (``None``: unset).

    Attributes:
        started: When the handler was first attempted for this cause.
        stopped: When it finally succeeded or failed.
        delayed: Until when its retry is postponed.
        purpose: The reason it runs for (``create``, ``update``...).
        retries: How many attempts were made.
        success: It finally succeeded.
        failure: It finally failed.
        message: The last error.
        subrefs: The ids of its sub-handlers, of all levels.
    """

    started: datetime.datetime | None = None
    stopped: datetime.datetime | None = None
    delayed: datetime.datetime | None = None
    purpose: str | None = None
    retries: int | None = None
    success: bool | None = None
    failure: bool | None = None
    message: str | None = None
    subrefs: tuple[str, ...] | None = None

    def to_record(self) -> ProgressRecord:
        """Kopf's form for a storage's ``store()``: every key, ``None`` where unset."""
        return ProgressRecord(
            started=_stamp(self.started),
            stopped=_stamp(self.stopped),
            delayed=_stamp(self.delayed),
            purpose=self.purpose,
            retries=self.retries,
            success=self.success,
            failure=self.failure,
            message=self.message,
            subrefs=sorted(self.subrefs) if self.subrefs else None,
        )

    def to_dict(self, *, verbose: bool = False) -> dict[str, Any]:
        """The JSON form, in Kopf's key order; ``None`` fields only if ``verbose``."""
        return {k: v for k, v in self.to_record().items() if v is not None or verbose}

    def to_json(self, *, verbose: bool = False) -> str:
        """The compact JSON text as stored in an annotation."""
        return compact(self.to_dict(verbose=verbose))

    @classmethod
    def from_dict(cls, data: object) -> ParsedRecord:
        """Read the JSON form; unknown keys are ignored.

        Raises:
            CorruptRecordError: If it is not a mapping or a known field has a wrong type.
        """
        if not isinstance(data, Mapping):
            raise CorruptRecordError(f"A progress record must be a mapping, not {data!r:.200}.")
        fields: dict[str, Any] = {}
        for name in _TIMESTAMPS:
            fields[name] = _read_timestamp(data, name)
        for name, kind in _TYPES.items():
            value = data.get(name)
            is_int_bool = kind is int and isinstance(value, bool)
            if value is not None and (not isinstance(value, kind) or is_int_bool):
                raise CorruptRecordError(
                    f"The progress field {name!r} is malformed: {value!r:.200}."
                )
            fields[name] = value
        fields["subrefs"] = _read_subrefs(data.get("subrefs"))
        return cls(**fields)

    @classmethod
    def from_json(cls, text: object) -> ParsedRecord:
        """Read the JSON text of an annotation.

        Raises:
            CorruptRecordError: If it is not JSON, or not a valid record.
        """
        if not isinstance(text, str):
            raise CorruptRecordError(f"A progress record must be a JSON string, not {text!r:.200}.")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:  # anyone may write it: 5 000-deep JSON too
            raise CorruptRecordError(f"A progress record is not valid JSON: {e}") from None
        return cls.from_dict(data)


def clamp_to_clock(
    record: ParsedRecord, *, now: datetime.datetime, horizon: float | None = None
) -> ParsedRecord:
    """The record with no timestamp beyond what the clock ``now`` allows (RELIABILITY.md row 41).

    The timestamps are wall-clock times of the writer: of another replica whose clock was ahead,
    or of this process before its clock was set back. ``started`` and ``stopped`` were "now"
    when written, so any lead they have over ``now`` is such a skew: they are set to ``now``, and
    ``delayed`` (the retry time) is moved back by the same lead -- a retry written an hour ahead
    is not postponed by an hour. With a ``horizon`` (seconds: the longest delay that handlers
    ask for), ``delayed`` is also at most ``now + horizon``. Pure.

    Returns:
        The record itself if nothing is clamped, else a clamped copy.
    """
    lead = max(
        (stamp - now for stamp in (record.started, record.stopped) if stamp and stamp > now),
        default=datetime.timedelta(0),
    )
    delayed = record.delayed - lead if record.delayed is not None else None
    if delayed is not None and horizon is not None:
        delayed = min(delayed, now + datetime.timedelta(seconds=horizon))
    if not lead and delayed == record.delayed:
        return record
    return dataclasses.replace(
        record,
        started=min(record.started, now) if record.started else None,
        stopped=min(record.stopped, now) if record.stopped else None,
        delayed=delayed,
    )


def _stamp(value: datetime.datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def _read_timestamp(data: Mapping[str, Any], name: str) -> datetime.datetime | None:
    value = data.get(name)
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except (TypeError, ValueError):
        raise CorruptRecordError(
            f"The progress field {name!r} is malformed: {value!r:.200}."
        ) from None


def _read_subrefs(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CorruptRecordError(f"The progress field 'subrefs' is malformed: {value!r:.200}.")
    return tuple(value)


@dataclasses.dataclass(frozen=True)
class StorageWarning:
    """Something wrong with stored state, for the engine to log; the state is treated as absent.

    Attributes:
        where: The annotation key or the field that holds the bad value.
        problem: What is wrong with it.
    """

    where: str
    problem: str

    def __str__(self) -> str:
        return f"Ignoring the unreadable stored state in {self.where}: {self.problem}"


class WarningsKeeper:
    """Keeps the most recent storage warnings until the engine drains them.

    A subclass need not call ``__init__`` (storages written for Kopf have their own): the
    warnings are kept from the first one on.
    """

    _warnings: collections.deque[StorageWarning]

    def __init__(self) -> None:
        self._warnings = collections.deque(maxlen=64)

    def _kept(self) -> collections.deque[StorageWarning]:
        if "_warnings" not in vars(self):
            self._warnings = collections.deque(maxlen=64)
        return self._warnings

    def warn(self, where: str, problem: object) -> None:
        """Remember a problem with the stored state at ``where``."""
        self._kept().append(StorageWarning(where, str(problem)))

    def drain_warnings(self) -> list[StorageWarning]:
        """Return and forget the warnings collected since the last call."""
        kept = self._kept()
        drained = list(kept)
        kept.clear()
        return drained
