"""The checks kube-apiserver makes of an Event, of either API (``v1`` and ``events.k8s.io/v1``),
with its messages.

Pure. Kubernetes validates both APIs' Events as its internal ``core.Event``
(``pkg/apis/core/validation/events.go``): every Event passes the legacy checks (the involved
object's namespace; what an Event with an ``eventTime`` must have, and how long its strings may
be); one created through ``events.k8s.io/v1`` also the strict ones (an ``eventTime``, a type of
``Normal`` or ``Warning``, a well-formed series, no deprecated fields), and an update through it
may change none of its facts. The errors name the internal fields (``involvedObject``,
``message``), as Kubernetes reports them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import label_key_errors
from anyop.testing.fake.pod_rules import dns_subdomain_causes, invalid, required

__all__ = ["event_causes"]

Cause = dict[str, str]

_LIMITS = {"reportingInstance": 128, "action": 128, "reason": 128, "message": 1024}
_REFERENCE = (("Kind", "kind"), ("Namespace", "namespace"), ("Name", "name"), ("UID", "uid"),
              ("APIVersion", "apiVersion"), ("ResourceVersion", "resourceVersion"),
              ("FieldPath", "fieldPath"))  # fmt: skip


def _internal(obj: Mapping[str, Any], *, new_api: bool) -> dict[str, Any]:
    """An Event of either API under the internal type's field names."""
    if not new_api:
        return dict(obj)
    renamed = {"regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
               "deprecatedFirstTimestamp": "firstTimestamp",
               "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count",
               "reportingController": "reportingComponent"}  # fmt: skip
    return {renamed.get(key, key): value for key, value in obj.items()}


def _legacy(event: Mapping[str, Any], *, new_api: bool) -> Iterator[tuple[str, Cause]]:
    """``legacyValidateEvent``: what every Event must be."""
    involved = event.get("involvedObject") or {}
    theirs = str(involved.get("namespace") or "")
    ours = str((event.get("metadata") or {}).get("namespace") or "")
    where = "involvedObject.namespace"
    if not event.get("eventTime"):
        if (not theirs and ours not in ("", "default")) or (theirs and theirs != ours):
            yield invalid(where, go_quoted(theirs), "does not match event.namespace")
    else:
        if not theirs and ours not in ("default", "kube-system"):
            yield invalid(where, go_quoted(theirs), "does not match event.namespace")
        controller_field = "reportingController" if new_api else "reportingComponent"
        controller = str(event.get("reportingComponent") or "")
        if not controller:
            yield required(controller_field)
        for error in label_key_errors(controller):
            yield invalid(controller_field, go_quoted(controller), error)
        for field in ("reportingInstance", "action", "reason", "message"):
            value = str(event.get(field) or "")
            if not value and field != "message":
                yield required(field)
            if len(value) > _LIMITS[field]:
                yield invalid(field, '""', f"can have at most {_LIMITS[field]} characters")
    if ours:
        yield from dns_subdomain_causes(ours, "namespace")


def _series(event: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    series = event.get("series")
    if not isinstance(series, Mapping):
        return
    if int(series.get("count") or 0) < 2:
        yield invalid("series.count", '""', "should be at least 2")
    if not series.get("lastObservedTime"):
        yield required("series.lastObservedTime")


def _strict(event: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """What an Event created through ``events.k8s.io/v1`` must be besides."""
    yield from _series(event)
    if not event.get("eventTime"):
        yield required("eventTime")
    kind = str(event.get("type") or "")
    if kind not in ("Normal", "Warning"):
        yield invalid("type", '""', f"has invalid value: {kind}")
    for field in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(field):
            yield invalid(field, '""', "needs to be unset")
    source = event.get("source") or {}
    if source.get("component") or source.get("host"):
        yield invalid("source", '""', "needs to be unset")


def _go_value(field: str, value: Any) -> str:
    """A field's value as ``field.Invalid`` shows the internal type's: strings quoted, numbers
    as they are, structs as JSON without tags, times as they marshal (``null`` when zero)."""
    if field in ("involvedObject", "related"):
        if not isinstance(value, Mapping):
            return "null" if field == "related" else _go_value(field, {})
        shown = {go: str(value.get(name) or "") for go, name in _REFERENCE}
        return json.dumps(shown, separators=(",", ":"))
    if field == "source":
        value = value if isinstance(value, Mapping) else {}
        shown = {"Component": str(value.get("component") or ""),
                 "Host": str(value.get("host") or "")}  # fmt: skip
        return json.dumps(shown, separators=(",", ":"))
    if field in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return json.dumps(value) if value else "null"
    if field == "count":
        return str(int(value or 0))
    return go_quoted(str(value or ""))


_FACTS = ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp",
          "count", "reason", "type", "eventTime", "action", "related", "reportingComponent",
          "reportingInstance")  # fmt: skip
"""What an update through ``events.k8s.io/v1`` may not change, in Kubernetes' order (it checks
the reason twice)."""


def _immutable(event: Mapping[str, Any], old: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    if event.get("series") != old.get("series"):
        yield from _series(event)
    for field in _FACTS:
        if _go_value(field, event.get(field)) != _go_value(field, old.get(field)):
            name = "reportingController" if field == "reportingComponent" else field
            yield invalid(name, _go_value(field, event.get(field)), "field is immutable")


def new_event_parts(obj: Mapping[str, Any]) -> tuple[list[tuple[str, Cause]], ...]:
    """An ``events.k8s.io`` Event's errors on a create: the legacy checks' (which come before
    its metadata's), and the strict ones' (after)."""
    event = _internal(obj, new_api=True)
    return list(_legacy(event, new_api=True)), list(_strict(event))


def event_causes(
    group: str, obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> list[tuple[str, Cause]]:
    """The errors of an Event of the ``v1`` (``group`` ``""``) or ``events.k8s.io`` API,
    created, or updated from ``old``."""
    new_api = group == "events.k8s.io"
    event = _internal(obj, new_api=new_api)
    causes = list(_legacy(event, new_api=new_api))
    if new_api and old is None:
        causes += _strict(event)
    elif new_api and old is not None:
        causes += _immutable(event, _internal(old, new_api=True))
    return causes
