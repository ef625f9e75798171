"""Served resources grow as CRDs appear; each scope starts exactly its own resources."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import pytest

import anyop.on as on
from anyop.engine import served as served_module
from anyop.engine.resources import ResourceScope
from anyop.engine.served import ServedResources, needs_following, serve_group
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
NODES = Resource("", "v1", "nodes", kind="Node", namespaced=False)
LATE = Resource("late.dev", "v1", "lates", kind="Late", namespaced=True)


def test_adding_reports_only_new_resources_and_wakes_waiters() -> None:
    served = ServedResources([KEX])
    changed = served.changed
    assert served.add([KEX]) == []
    assert not changed.is_set()
    assert served.add([KEX, LATE]) == [LATE]
    assert changed.is_set()
    assert not served.changed.is_set()
    assert served.resources == sorted([KEX, LATE], key=str)


def test_following_is_needed_only_for_unresolved_or_unspecific_selectors() -> None:
    registry = OperatorRegistry()
    on.event("kopfexamples", registry=registry)(lambda **_: None)
    assert not needs_following(registry, [KEX])
    assert needs_following(registry, [NODES])
    on.event(category="all", registry=registry)(lambda **_: None)
    assert needs_following(registry, [KEX])


@pytest.mark.anyio
async def test_a_group_starts_its_resources_then_new_ones_and_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[str, str | None]] = []

    async def fake_serve_resource(
        scope: ResourceScope,
        stopping: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started.append((scope.resource.plural, scope.namespace))
        task_status.started()
        await stopping.wait()

    monkeypatch.setattr(served_module, "serve_resource", fake_serve_resource)
    template: Any = ResourceScope(
        None,
        KEX,
        None,
        OperatorRegistry(),
        OperatorSettings(),  # type: ignore[arg-type]
    )
    served, stopping = ServedResources([KEX, NODES]), anyio.Event()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(
                lambda task_status: serve_group(
                    template, served, "ns1", stopping, namespaced=True, task_status=task_status
                )
            )
            assert started == [("kopfexamples", "ns1")]
            served.add([LATE])
            while len(started) < 2:
                await anyio.sleep(0.01)
            assert started[1] == ("lates", "ns1")
            stopping.set()
            served.wake()
