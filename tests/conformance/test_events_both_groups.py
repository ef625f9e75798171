"""Conformance: core/v1 and events.k8s.io/v1 Events are one storage: written through either
API, read, listed, watched, changed and deleted through the other."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target, status_shown

pytestmark = pytest.mark.anyio

_EVENTS = "events.k8s.io/v1"
_APPLY = "application/apply-patch+yaml"


def shown(document: Any) -> Any:
    """The body, or the Status's parts that matter."""
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return document


def _core(t: Target, name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": t.namespace},
            "reason": "Made", "message": "hello", "type": "Normal", **extra}  # fmt: skip


def _new(t: Target, name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": _EVENTS, "kind": "Event", "metadata": {"name": name},
            "regarding": {"kind": "ConfigMap", "name": "a", "namespace": t.namespace},
            "reason": "Made", "note": "hello", "type": "Normal",
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/op",
            "reportingInstance": "op-1", "action": "Create", **extra}  # fmt: skip


def _owners(document: Any) -> Any:
    """The managers and the API versions they wrote in, or the Status."""
    if not isinstance(document, dict) or document.get("kind") == "Status":
        return shown(document)
    entries = document["metadata"].get("managedFields") or []
    return {"apiVersion": document.get("apiVersion"),
            "managers": [(e["manager"], e["operation"], e["apiVersion"], e.get("fieldsV1"))
                         for e in entries]}  # fmt: skip


async def test_an_event_is_changed_and_deleted_through_either_group(conform: Conform) -> None:
    """An events.k8s.io Event replaced and patched through core/v1, patched through
    events.k8s.io (its facts immutable there), its managers' versions kept; deleted through
    core/v1, gone from both."""

    async def scenario(t: Target) -> None:
        new, core = t.apis(_EVENTS, "events", "e1"), t.core("events", "e1")
        await t.post(t.core("events"), _core(t, "c1", eventTime="2024-01-01T00:00:00.000000Z",
                                             reportingComponent="op", reportingInstance="op-1",
                                             action="Made"), record=_owners)  # fmt: skip
        await t.patch(t.apis(_EVENTS, "events", "c1"), {"metadata": {"labels": {"a": "b"}}},
                      record=_owners)  # fmt: skip
        await t.post(t.apis(_EVENTS, "events"), _new(t, "e1"), record=_owners)
        got = await t.get(core, params={"fieldManager": "x"}, record=shown)
        got["message"], got["count"] = "changed", 3
        await t.put(f"{core}?fieldManager=core-put", got, record=_owners)
        await t.get(new, record=shown)
        await t.patch(f"{new}?fieldManager=new-patch", {"note": "again"}, record=shown)
        await t.patch(f"{new}?fieldManager=new-patch",
                      {"metadata": {"labels": {"a": "b"}}}, record=_owners)  # fmt: skip
        await t.patch(f"{core}?fieldManager=core-patch",
                      {"series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"}},
                      record=shown)  # fmt: skip
        await t.get(new, record=_owners)
        await t.delete(core, record=lambda d: d.get("kind"))
        await t.get(new, record=shown)
        await t.get(core, record=shown)

    await conform(scenario)


async def test_an_event_is_applied_through_either_group(conform: Conform) -> None:
    """Server-side apply of a core Event through both APIs: each manager's entry keeps its
    API version."""

    async def scenario(t: Target) -> None:
        core = t.core("events", "e1") + "?fieldManager=core-apply"
        await t.patch(core, _core(t, "e1", count=1), ct=_APPLY, record=_owners)
        new = t.apis(_EVENTS, "events", "e1") + "?fieldManager=new-apply"
        applied = {"apiVersion": _EVENTS, "kind": "Event", "metadata": {"name": "e1",
                   "labels": {"x": "y"}}}  # fmt: skip
        await t.patch(new, applied, ct=_APPLY, record=_owners)
        await t.get(t.core("events", "e1"), record=_owners)

    await conform(scenario)


async def test_a_body_of_the_other_group_is_refused(conform: Conform) -> None:
    """A core Event posted to events.k8s.io, and the other way round."""

    async def scenario(t: Target) -> None:
        await t.post(t.apis(_EVENTS, "events"), _core(t, "e1"), record=shown)
        await t.post(t.core("events"), _new(t, "e2"), record=shown)

    await conform(scenario)


async def test_a_watch_of_either_group_sees_the_writes_through_the_other(
    conform: Conform,
) -> None:
    """A watch of events.k8s.io Events (selected by a field) while Events are written through
    core/v1; and a list of core Events in pages across both APIs' Events."""

    async def scenario(t: Target) -> None:
        listed = await t.call("GET", t.core("events"), record=lambda d: None)
        rv = str(listed["metadata"]["resourceVersion"])

        async def changes() -> None:
            await t.post(t.core("events"), _core(t, "a1"))
            await t.post(t.core("events"), _core(t, "a2", reason="Other"))
            await t.patch(t.core("events", "a1"), {"message": "changed"})
            await t.delete(t.apis(_EVENTS, "events", "a1"))

        params = {"resourceVersion": rv, "fieldSelector": "reason=Made"}
        await t.watch(t.apis(_EVENTS, "events"), params, actions=changes,
                      until=lambda events: len(events) >= 3)  # fmt: skip
        await t.post(t.apis(_EVENTS, "events"), _new(t, "b1"), record=lambda d: d.get("kind"))
        page = await t.get(
            t.core("events"),
            params={"limit": "1"},
            record=lambda d: [i["metadata"]["name"] for i in d["items"]],
        )
        token = page["metadata"]["continue"]
        await t.get(t.apis(_EVENTS, "events"), params={"limit": "1", "continue": token},
                    record=lambda d: shown(d) if d.get("kind") == "Status" else [
                        i["metadata"]["name"] for i in d["items"]])  # fmt: skip

    await conform(scenario)
