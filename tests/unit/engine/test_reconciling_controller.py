"""A reconciler's controller against an in-memory API: echoes of its own writes call nothing,
children's changes call their parent, the previous call's writes are awaited, the finalizer."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest

import anyop
from anyop.engine.cycle.object_slots import CycleFn, CycleResult, ObjectSlot
from anyop.engine.reconciling.controller import Controller, ControllerScope
from anyop.engine.resource.workers import ObjectWorkers
from anyop.handlers.records import ReconcilingHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.patches import merge
from anyop.kube.resources import Resource
from anyop.kube.watch import WatchEvent
from anyop.settings import OperatorSettings

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

RESOURCE = Resource(
    "kopf.dev",
    "v1",
    "kopfexamples",
    kind="KopfExample",
    subresources=frozenset({"status"}),
    namespaced=True,
)
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)


def parent(version: str = "1", **extra: Any) -> dict[str, Any]:
    metadata = {"name": "kex", "namespace": "ns", "uid": "p1", "resourceVersion": version}
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": metadata,
        "spec": {"replicas": 1},
        **extra,
    }


class Server:
    """Answers writes as the API server would, with a new resourceVersion each time, applied to
    :attr:`current` (the parent as the test last made it)."""

    def __init__(self) -> None:
        self.version = 10
        self.current = parent()
        self.patches: list[tuple[Any, str | None]] = []
        self.created: list[dict[str, Any]] = []

    def _next(self) -> str:
        self.version += 1
        return str(self.version)

    async def patch(self, resource: Resource, payload: Any, **options: Any) -> dict[str, Any]:
        self.patches.append((payload, options.get("subresource")))
        answer: dict[str, Any] = merge(copy.deepcopy(self.current), payload)
        answer["metadata"]["resourceVersion"] = self._next()
        self.current = answer
        return copy.deepcopy(answer)

    async def create(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        child = copy.deepcopy(body)
        child["metadata"] |= {"uid": f"c{len(self.created)}", "resourceVersion": self._next()}
        self.created.append(child)
        return child


class Recorded:
    """The workers: a real ObjectWorkers whose cycles are recorded."""

    def __init__(self, controller: Controller, group: Any) -> None:
        self.results: list[CycleResult] = []
        cycle: CycleFn = self._cycle
        self._inner = controller.cycle
        self.workers = ObjectWorkers(cycle, group, idle_timeout=1)
        controller.workers = self.workers

    async def _cycle(self, slot: ObjectSlot, body: Any) -> CycleResult:
        result = await self._inner(slot, body)
        self.results.append(result)
        return result


def controller_for(handler: ReconcilingHandler, server: Server, **settings: Any) -> Controller:
    options = OperatorSettings()
    for key, value in settings.items():
        setattr(options.reconciling, key, value)
    client: Any = server
    owned = dict.fromkeys(handler.owned_names, CONFIGMAPS)
    scope = ControllerScope(client, RESOURCE, "ns", owned, options)
    return Controller(scope, handler)


def reconciler(then: Any = None, **options: Any) -> tuple[ReconcilingHandler, list[Any]]:
    registry, calls, step = OperatorRegistry(), [], then or _status

    async def fn(body: Any, children: Any, api: Any, patch: Any, **_: Any) -> Any:
        calls.append({"version": body["metadata"]["resourceVersion"], "children": children})
        return await step(api=api, patch=patch, children=children)

    anyop.reconcile("kopfexamples", registry=registry, id="r", **options)(fn)
    return registry.reconciling.handlers[0], calls


async def _status(patch: Any, **_: Any) -> None:
    patch.status["seen"] = True


async def test_the_echo_of_its_own_status_write_calls_nothing_but_a_newer_change_does() -> None:
    handler, calls = reconciler()
    server = Server()
    controller = controller_for(handler, server)
    async with anyio.create_task_group() as tg:
        Recorded(controller, tg)
        await tg.start(controller.run)  # nothing owned: ready at once
        controller.observe(parent("1"), deleted=False)
        await anyio.wait_all_tasks_blocked()
        assert [c["version"] for c in calls] == ["1"]
        assert server.patches == [({"status": {"seen": True}}, "status")]
        controller.observe(parent("11", status={"seen": True}), deleted=False)  # our echo
        await anyio.wait_all_tasks_blocked()
        assert len(calls) == 1
        controller.observe(parent("12", status={"seen": False}), deleted=False)  # not a change
        await anyio.wait_all_tasks_blocked()
        assert len(calls) == 1  # another client's change of the status alone
        changed = parent("13", status={"seen": True}, spec={"replicas": 2})
        server.current = changed
        controller.observe(changed, deleted=False)  # someone else
        await anyio.wait_all_tasks_blocked()
        assert [c["version"] for c in calls] == ["1", "13"]
        tg.cancel_scope.cancel()


async def test_objects_seen_before_the_children_are_listed_are_called_once_they_are() -> None:
    handler, calls = reconciler()
    controller = controller_for(handler, Server())
    async with anyio.create_task_group() as tg:
        Recorded(controller, tg)
        controller.observe(parent("1"), deleted=False)
        await anyio.wait_all_tasks_blocked()
        assert calls == []
        await tg.start(controller.run)
        await anyio.wait_all_tasks_blocked()
        assert len(calls) == 1
        tg.cancel_scope.cancel()


async def test_a_childs_change_calls_its_parent_after_the_previous_writes_are_seen() -> None:
    async def create_one(api: Any, children: Any, **_: Any) -> None:
        if not children["configmaps"]:
            await api.create("configmaps", {"metadata": {"name": "c"}})

    handler, calls = reconciler(owns=["configmaps"], then=create_one)
    server = Server()
    controller = controller_for(handler, server, writes_timeout=30)
    async with anyio.create_task_group() as tg:
        Recorded(controller, tg)
        controller._ready = True  # as if the children's watch had listed them
        controller.observe(parent("1"), deleted=False)
        await anyio.wait_all_tasks_blocked()
        assert len(server.created) == 1
        controller.observe(parent("2", spec={"replicas": 2}), deleted=False)  # before the child
        await anyio.wait_all_tasks_blocked()
        assert len(calls) == 1  # the second call waits for the child
        child = server.created[0]
        await controller._child_event("configmaps", WatchEvent("ADDED", child))
        await anyio.wait_all_tasks_blocked()
        assert len(calls) == 2
        assert [c["metadata"]["uid"] for c in calls[1]["children"]["configmaps"]] == ["c0"]
        assert len(server.created) == 1
        tg.cancel_scope.cancel()


async def test_a_finalizer_is_added_first_and_released_after_a_call_while_deleting() -> None:
    async def nothing(**_: Any) -> None:
        return None

    handler, calls = reconciler(finalizer=True, then=nothing)
    server = Server()
    controller = controller_for(handler, server)
    final = "reconcile.anyop.dev/finalizer"
    async with anyio.create_task_group() as tg:
        Recorded(controller, tg)
        await tg.start(controller.run)
        controller.observe(parent("1"), deleted=False)
        await anyio.wait_all_tasks_blocked()
        added = {"metadata": {"finalizers": [final], "resourceVersion": "1"}}
        assert server.patches == [(added, None)]
        deleting = parent("20")
        deleting["metadata"] |= {"deletionTimestamp": "now", "finalizers": [final]}
        server.current = deleting
        controller.observe(deleting, deleted=False)
        await anyio.wait_all_tasks_blocked()
        assert len(calls) == 2
        released = {"metadata": {"finalizers": [], "resourceVersion": "20"}}
        assert server.patches[-1] == (released, None)
        tg.cancel_scope.cancel()
