"""How kube-apiserver keeps Events: ``v1`` and ``events.k8s.io/v1`` Events are one resource
(one storage, the internal ``core.Event``), converted between the two APIs as Kubernetes' Go
conversion functions do (``pkg/apis/events/v1/conversion.go``).

Pure. The fake stores them as ``v1`` Events under the core group's resource; an
``events.k8s.io/v1`` Event is the same object with its fields renamed (``regarding`` for
``involvedObject``, ``note`` for ``message``, ``deprecated*`` for the legacy fields,
``reportingController`` for ``reportingComponent``), serialised as Go serialises each
version's type (its non-``omitempty`` fields and structs always there, its zero times
``null``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EVENTS_API", "event_converted", "storage_resource"]

Body = dict[str, Any]
EVENTS_API = "events.k8s.io/v1"
_SHARED = {("events.k8s.io", "events"): ("", "events")}
"""Resources stored as another one (``(group, plural)``): the same objects."""
_RENAMED = {"involvedObject": "regarding", "message": "note", "source": "deprecatedSource",
            "firstTimestamp": "deprecatedFirstTimestamp",
            "lastTimestamp": "deprecatedLastTimestamp", "count": "deprecatedCount",
            "reportingComponent": "reportingController"}  # fmt: skip
"""The ``v1`` fields and their ``events.k8s.io/v1`` names."""
_BACK = {new: old for old, new in _RENAMED.items()}
_CORE_ORDER = ("metadata", "involvedObject", "reason", "message", "source", "firstTimestamp",
               "lastTimestamp", "count", "type", "eventTime", "series", "action", "related",
               "reportingComponent", "reportingInstance")  # fmt: skip
_EVENTS_ORDER = ("metadata", "eventTime", "series", "reportingController", "reportingInstance",
                 "action", "reason", "regarding", "related", "note", "type",
                 "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
                 "deprecatedCount")  # fmt: skip
_CORE_ALWAYS: dict[str, Any] = {"involvedObject": {}, "source": {}, "firstTimestamp": None,
                "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
                "reportingInstance": ""}  # fmt: skip
"""What Go writes of a ``v1`` Event even when zero (structs; times, ``null``; strings
without ``omitempty``)."""
_EVENTS_ALWAYS: dict[str, Any] = {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                  "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}  # fmt: skip
_OMITTED_EMPTY = ("reason", "message", "note", "type", "action", "count", "deprecatedCount",
                  "reportingController", "reportingInstance", "series", "related")  # fmt: skip
"""Fields Go leaves out when zero (in whichever version has them with ``omitempty``)."""


def storage_resource(resource: tuple[str, str]) -> tuple[str, str]:
    """Where a resource's (``(group, plural)``) objects are stored: ``events.k8s.io``'s
    Events with the core group's."""
    return _SHARED.get(resource, resource)


def _series(series: Any, *, to_events: bool) -> Any:
    """An ``EventSeries``: ``events.k8s.io/v1`` writes its count and time always, ``v1``
    leaves out a zero count."""
    if not isinstance(series, Mapping):
        return series
    result = {"count": series.get("count") or 0, "lastObservedTime": series.get("lastObservedTime")}
    if not to_events and not result["count"]:
        del result["count"]
    return result


def _ordered(fields: Mapping[str, Any], order: tuple[str, ...], api_version: str) -> Body:
    result: Body = {"kind": "Event", "apiVersion": api_version}
    result |= {key: fields[key] for key in order if key in fields}
    result |= {key: value for key, value in fields.items() if key not in result}
    return result


def event_converted(obj: Mapping[str, Any], api_version: str) -> Body:
    """An Event (of the version its ``apiVersion`` names: ``v1`` or ``events.k8s.io/v1``) as
    of ``api_version``; ``obj`` itself where it is already of it."""
    given = obj.get("apiVersion")
    if given == api_version and isinstance(obj, dict):
        return obj
    to_events = api_version == EVENTS_API
    names = _RENAMED if to_events else _BACK
    fields: Body = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if given in ("v1", EVENTS_API) and given != api_version:
            key = names.get(key, key)
        fields[key] = _series(value, to_events=to_events) if key == "series" else value
    for key in _OMITTED_EMPTY:
        if key in fields and fields[key] in ("", 0, None):
            del fields[key]
    for key, zero in (_EVENTS_ALWAYS if to_events else _CORE_ALWAYS).items():
        if fields.get(key) is None:
            fields[key] = zero if zero is None else type(zero)()
    return _ordered(fields, _EVENTS_ORDER if to_events else _CORE_ORDER, api_version)


def own_group_entries(group: str, entries: list[Body]) -> list[Body]:
    """The ``managedFields`` entries an update keeps before counting its changes: not those
    of another API group (an Event's through the other API), which kube-apiserver's field
    manager cannot convert its objects to (structured merge drops a manager of a missing
    version)."""
    return [entry for entry in entries
            if str(entry.get("apiVersion") or "").rpartition("/")[0] == group
            or not entry.get("apiVersion")]  # fmt: skip


def zero_times(group: str, kind: str) -> Body:
    """An Event's times as Go writes its zero value (``null``: no field changed from the zero
    object a create's ownership is counted from); none of another kind."""
    if (group, kind) == ("", "Event"):
        return {"firstTimestamp": None, "lastTimestamp": None, "eventTime": None}
    if (group, kind) == ("events.k8s.io", "Event"):
        return {"deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None,
                "eventTime": None}  # fmt: skip
    return {}
