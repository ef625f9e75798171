"""Conformance: watch streams, their events in order, resourceVersions, bookmarks, selectors."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"n": name}}  # fmt: skip


def _count(n: int) -> Any:
    return lambda events: len(events) >= n


async def _rv(t: Target) -> str:
    listed = await t.call("GET", t.cm(), record=lambda d: None)
    return str(listed["metadata"]["resourceVersion"])


async def test_watch_from_a_resource_version_sends_later_changes_in_order(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        rv = await _rv(t)

        async def changes() -> None:
            await t.post(t.cm(), _cm("a"))
            await t.patch(t.cm("a"), {"data": {"x": "1"}})
            await t.delete(t.cm("a"))

        await t.watch(t.cm(), {"resourceVersion": rv}, actions=changes, until=_count(3))

    await conform(scenario)


async def test_watch_without_a_resource_version_starts_with_the_current_objects(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("b"))
        await t.post(t.cm(), _cm("a"))
        await t.watch(t.cm(), {}, until=_count(2))

    await conform(scenario)


async def test_watch_replays_the_history_after_an_older_resource_version(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        rv = await _rv(t)
        await t.post(t.cm(), _cm("a"))
        await t.patch(t.cm("a"), {"data": {"x": "1"}})
        await t.watch(t.cm(), {"resourceVersion": rv}, until=_count(2))

    await conform(scenario)


async def test_watch_with_a_label_selector_sees_objects_enter_and_leave(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        rv = await _rv(t)

        async def changes() -> None:
            await t.post(t.cm(), _cm("a", k="v"))
            await t.patch(t.cm("a"), {"metadata": {"labels": {"k": "other"}}})
            await t.patch(t.cm("a"), {"metadata": {"labels": {"k": "v"}}})
            await t.post(t.cm(), _cm("b", k="no"))
            await t.delete(t.cm("a"))

        params = {"resourceVersion": rv, "labelSelector": "k=v"}
        await t.watch(t.cm(), params, actions=changes, until=_count(4))

    await conform(scenario)


async def test_watch_of_one_object_by_field_selector(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        rv = await _rv(t)

        async def changes() -> None:
            await t.post(t.cm(), _cm("a"))
            await t.post(t.cm(), _cm("b"))
            await t.patch(t.cm("b"), {"data": {"x": "1"}})

        params = {"resourceVersion": rv, "fieldSelector": "metadata.name=b"}
        await t.watch(t.cm(), params, actions=changes, until=_count(2))

    await conform(scenario)


async def test_watch_sees_the_deletion_timestamp_then_the_deletion(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        rv = await _rv(t)

        async def changes() -> None:
            body = _cm("a")
            body["metadata"]["finalizers"] = ["x.dev/f"]
            await t.post(t.cm(), body)
            await t.delete(t.cm("a"))
            await t.patch(t.cm("a"), {"metadata": {"finalizers": None}})

        # ADDED, MODIFIED (deletionTimestamp), DELETED: the final removal is not a MODIFIED.
        await t.watch(t.cm(), {"resourceVersion": rv}, actions=changes, until=_count(3))

    await conform(scenario)


async def test_watch_ends_at_its_timeout_with_a_bookmark(conform: Conform) -> None:
    """The bookmark before the end comes as the resource changed after the watch's last event
    (``b``, which the selector leaves out)."""

    async def scenario(t: Target) -> None:
        rv = await _rv(t)

        async def changes() -> None:
            await t.post(t.cm(), _cm("a"))
            await t.post(t.cm(), _cm("b"))

        params = {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "5",
                  "fieldSelector": "metadata.name=a"}  # fmt: skip
        await t.watch(t.cm(), params, actions=changes)

    await conform(scenario)


async def test_watch_of_custom_resources_with_status_updates(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        listed = await t.call("GET", t.widgets(), record=lambda d: None)
        rv = listed["metadata"]["resourceVersion"]

        async def changes() -> None:
            body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
                    "metadata": {"name": "w"}, "spec": {"size": 1}}  # fmt: skip
            await t.post(t.widgets(), body)
            await t.patch(t.widgets("w", sub="status"), {"status": {"ready": True}})
            await t.patch(t.widgets("w"), {"spec": {"size": 2}})

        await t.watch(t.widgets(), {"resourceVersion": rv}, actions=changes, until=_count(3))

    await conform(scenario)


async def test_streaming_list_ends_its_initial_events_with_a_bookmark(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("b"))
        await t.post(t.cm(), _cm("a"))
        params = {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                  "allowWatchBookmarks": "true"}  # fmt: skip
        await t.watch(t.cm(), params, until=_count(3))

    await conform(scenario)
