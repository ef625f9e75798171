"""No change of a reconciled object is taken for the echo of the reconciler's own write: a write
that changes nothing, an answer that carries someone else's change, several changes that come
while a write is in flight, and a child deleted right after its creation all get a call soon.

The object lives in :class:`Store`, a small API server in memory: it bumps the resourceVersion
only on real changes (as kube-apiserver does: a patch that changes nothing answers with the
current version) and lets a test change the object "meanwhile", while the reconciler's write
is in flight, sending the watch events when it says.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

import anyop
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
    "kopf.dev", "v1", "kopfexamples", kind="KopfExample", subresources=frozenset({"status"}),
    namespaced=True,
)  # fmt: skip
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)

Meanwhile = Callable[[], Awaitable[None]]


class Store:
    """One parent and its children, as the API server keeps them."""

    def __init__(self, controller: Controller | None = None) -> None:
        self.version = 1
        self.parent: dict[str, Any] = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "kex", "namespace": "ns", "uid": "p1", "resourceVersion": "1"},
            "spec": {"n": 1},
        }
        self.children: dict[str, dict[str, Any]] = {}
        self.controller = controller
        self.meanwhile: list[Meanwhile] = []  # run before the next parent patch lands, in turn
        self.after: list[Meanwhile] = []  # run after it lands, before it answers

    def _bump(self) -> str:
        self.version += 1
        return str(self.version)

    def change(self, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Another client's write of the parent; the body after it (no event sent yet)."""
        before = copy.deepcopy(self.parent)
        fn(self.parent)
        if self.parent != before:
            self.parent["metadata"]["resourceVersion"] = self._bump()
        return copy.deepcopy(self.parent)

    def event(self, body: dict[str, Any] | None = None) -> None:
        """The parent's watch shows a body (the current one by default)."""
        assert self.controller is not None
        self.controller.observe(copy.deepcopy(body or self.parent), deleted=False)

    async def patch(self, resource: Resource, payload: Any, **_: Any) -> dict[str, Any]:
        if self.meanwhile:
            await self.meanwhile.pop(0)()
        before = copy.deepcopy(self.parent)
        payload = {k: v for k, v in payload.items() if k != "metadata"} | {
            "metadata": {
                k: v for k, v in (payload.get("metadata") or {}).items() if k != "resourceVersion"
            }
        }
        self.parent = merge(self.parent, payload)
        if self.parent != before:  # a patch that changes nothing keeps the version
            self.parent["metadata"]["resourceVersion"] = self._bump()
        answer = copy.deepcopy(self.parent)
        if self.after:
            await self.after.pop(0)()
        return answer

    async def create(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        child = copy.deepcopy(body)
        uid = f"c{len(self.children) + 1}"
        child["metadata"] |= {"uid": uid, "name": uid, "resourceVersion": self._bump()}
        self.children[uid] = child
        return copy.deepcopy(child)

    def delete_child(self, uid: str) -> dict[str, Any]:
        """Another client deletes a child; its last body (for the DELETED event)."""
        child = self.children.pop(uid)
        child["metadata"]["resourceVersion"] = self._bump()
        return child


def reconciler(
    step: Callable[..., Awaitable[Any]], **options: Any
) -> tuple[ReconcilingHandler, list[dict[str, Any]]]:
    registry, calls = OperatorRegistry(), []

    async def fn(body: Any, **kwargs: Any) -> Any:
        calls.append(copy.deepcopy(dict(body)))
        return await step(body=body, **kwargs)

    anyop.reconcile("kopfexamples", registry=registry, id="r", **options)(fn)
    return registry.reconciling.handlers[0], calls


def controller_for(handler: ReconcilingHandler, store: Store, **settings: Any) -> Controller:
    options = OperatorSettings()
    for key, value in settings.items():
        setattr(options.reconciling, key, value)
    client: Any = store
    owned = dict.fromkeys(handler.owned_names, CONFIGMAPS)
    controller = Controller(ControllerScope(client, RESOURCE, "ns", owned, options), handler)
    store.controller = controller
    return controller


async def noop_status(patch: Any, **_: Any) -> None:
    patch.status["ok"] = True  # the same every time: from the second call on, it changes nothing


def spec_of(call: dict[str, Any]) -> Any:
    return call["spec"]["n"]


async def started(controller: Controller, tg: Any) -> None:
    controller.workers = ObjectWorkers(controller.cycle, tg, idle_timeout=1)
    if controller.scope.owned:
        controller._ready = True  # as if the children's watches had listed them (none here)
    else:
        await tg.start(controller.run)


async def settle() -> None:
    await anyio.sleep(30)  # virtual: every due call, retry and timeout has run


async def test_a_change_answered_by_a_write_that_changes_nothing_gets_a_call() -> None:
    """The status write changes nothing: its answer carries the version of another client's
    change, which the watch shows only after the answer."""
    handler, calls = reconciler(noop_status)
    store = Store()
    controller = controller_for(handler, store)
    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        store.event()
        await settle()
        store.event()  # the echo of the first status write
        await settle()
        assert [spec_of(c) for c in calls] == [1]
        store.event(store.change(lambda p: p["spec"].update(n=2)))
        changed: list[dict[str, Any]] = []

        async def another_change() -> None:
            changed.append(store.change(lambda p: p["spec"].update(n=3)))

        store.meanwhile.append(another_change)  # lands just before the no-op status write
        await settle()
        store.event(changed[0])  # the watch shows it after the write's answer
        await settle()
        tg.cancel_scope.cancel()
    assert spec_of(calls[-1]) == 3


async def test_a_change_held_during_a_write_that_changes_nothing_gets_a_call() -> None:
    """As above, but the watch shows the other client's change while the write is in flight."""
    handler, calls = reconciler(noop_status)
    store = Store()
    controller = controller_for(handler, store)
    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        store.event()
        await settle()
        store.event()
        await settle()

        async def another_change_shown() -> None:
            store.event(store.change(lambda p: p["spec"].update(n=3)))

        store.meanwhile.append(another_change_shown)
        store.event(store.change(lambda p: p["spec"].update(n=2)))
        await settle()
        tg.cancel_scope.cancel()
    assert spec_of(calls[-1]) == 3


async def test_a_change_shown_during_a_write_before_its_echo_gets_a_call() -> None:
    """Two events come while a status write (a real change) is in flight: another client's
    spec change, then the echo of the write itself, which the server applied after it."""

    async def mirror(patch: Any, spec: Any, **_: Any) -> None:
        patch.status["n"] = spec["n"]

    handler, calls = reconciler(mirror)
    store = Store()
    controller = controller_for(handler, store)
    async with anyio.create_task_group() as tg:
        await started(controller, tg)

        async def another_change_shown() -> None:
            store.event(store.change(lambda p: p["spec"].update(n=2)))

        async def echo_shown() -> None:
            store.event()

        store.meanwhile.append(another_change_shown)
        store.after.append(echo_shown)
        store.event()
        await settle()
        tg.cancel_scope.cancel()
    assert [spec_of(c) for c in calls] == [1, 2]
    assert store.parent["status"] == {"n": 2}


async def test_the_echo_of_its_own_writes_calls_nothing() -> None:
    async def mirror(patch: Any, spec: Any, **_: Any) -> None:
        patch.status["n"] = spec["n"]

    handler, calls = reconciler(mirror)
    store = Store()
    controller = controller_for(handler, store)
    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        store.event()
        await settle()
        store.event()  # the echo: after the answer
        await settle()
        store.event(store.change(lambda p: p["spec"].update(n=2)))

        async def echo_shown() -> None:
            store.event()

        store.after.append(echo_shown)  # this echo: before the answer
        await settle()
        tg.cancel_scope.cancel()
    assert [spec_of(c) for c in calls] == [1, 2]


async def test_another_clients_status_change_calls_nothing_unless_asked_for() -> None:
    for status_changes, expected in [(False, [1]), (True, [1, 1])]:
        handler, calls = reconciler(noop_status, status_changes=status_changes)
        store = Store()
        controller = controller_for(handler, store)
        async with anyio.create_task_group() as tg:
            await started(controller, tg)
            store.event()
            await settle()
            store.event()
            await settle()
            store.event(store.change(lambda p: p["status"].update(heartbeat="1")))
            await settle()
            store.event(store.change(lambda p: p["metadata"].update(managedFields=[{}])))
            await settle()
            tg.cancel_scope.cancel()
        assert [spec_of(c) for c in calls] == expected, status_changes


async def test_another_clients_label_change_calls_it() -> None:
    handler, calls = reconciler(noop_status)
    store = Store()
    controller = controller_for(handler, store)
    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        store.event()
        await settle()
        store.event()
        await settle()
        store.event(store.change(lambda p: p["metadata"].update(labels={"a": "b"})))
        await settle()
        tg.cancel_scope.cancel()
    assert len(calls) == 2


# -- a child deleted right after its creation -----------------------------------------------------


async def keep_one(api: Any, children: Any, **_: Any) -> None:
    if not children["configmaps"]:
        await api.create("configmaps", {"metadata": {"generateName": "c-"}})


@pytest.mark.parametrize("shown", ["after", "before"], ids=["shown-after", "shown-before"])
async def test_a_fresh_child_deleted_by_another_client_is_put_back_at_once(shown: str) -> None:
    """The watch shows the child's creation and its deletion, after the create's answer or
    before it: either way the call that follows does not wait for ``writes_timeout``."""
    handler, calls = reconciler(keep_one, owns=["configmaps"])
    store = Store()
    controller = controller_for(handler, store, writes_timeout=3600)

    async def shown_and_deleted() -> None:
        (uid,) = list(store.children)
        await controller._child_event("configmaps", WatchEvent("ADDED", store.children[uid]))
        gone = store.delete_child(uid)
        await controller._child_event("configmaps", WatchEvent("DELETED", gone))

    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        if shown == "before":
            original = store.create

            async def create(resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
                answer = await original(resource, body)
                if len(store.children) + len(calls) == 2:  # the first creation only
                    await shown_and_deleted()
                return answer

            store.create = create  # type: ignore[method-assign]
        store.event()
        await anyio.sleep(0.1)
        if shown == "after":
            await shown_and_deleted()
        with anyio.fail_after(1):
            while len(store.children) < 1:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert len(calls) == 2


# -- an object deleted and made again under its name during a write -------------------------------


async def test_a_write_that_lands_on_a_new_object_of_the_same_name_is_not_taken_for_its_own() -> (
    None
):
    seen: list[tuple[str, list[str]]] = []

    async def step(body: Any, children: Any, patch: Any, retry: int, **_: Any) -> Any:
        owners = [c["metadata"]["ownerReferences"][0]["uid"] for c in children["configmaps"]]
        seen.append((body["metadata"]["uid"], owners))
        patch.status["n"] = body["spec"]["n"]
        return anyop.Requeue(after=1) if len(seen) == 1 else None

    handler, _ = reconciler(step, owns=["configmaps"])
    store = Store()
    controller = controller_for(handler, store)
    owner = {"uid": "p1", "controller": True, "kind": "KopfExample", "name": "kex"}
    child = {"metadata": {"name": "c", "uid": "c1", "ownerReferences": [owner]}}

    async def made_again() -> None:  # deleted, and made again with another uid
        store.parent = copy.deepcopy(store.parent) | {"spec": {"n": 5}}
        store.parent["metadata"] |= {"uid": "p2", "resourceVersion": store._bump()}

    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        await controller._child_event("configmaps", WatchEvent("ADDED", child))
        store.meanwhile.append(made_again)
        store.event()
        await settle()
        tg.cancel_scope.cancel()
    assert seen == [("p1", ["p1"]), ("p1", ["p1"])]  # the old one's requeue: as the watch shows it


async def test_no_call_for_an_object_whose_deletion_came_while_its_call_waited() -> None:
    handler, calls = reconciler(keep_one, owns=["configmaps"])
    store = Store()
    controller = controller_for(handler, store, writes_timeout=3600)
    async with anyio.create_task_group() as tg:
        await started(controller, tg)
        store.event()
        await settle()
        assert len(store.children) == 1  # not shown by the watch yet
        store.event(store.change(lambda p: p["spec"].update(n=2)))
        await settle()  # the call waits for the child
        controller.observe(copy.deepcopy(store.parent), deleted=True)
        (child,) = store.children.values()
        await controller._child_event("configmaps", WatchEvent("ADDED", child))
        await settle()
        tg.cancel_scope.cancel()
    assert len(calls) == 1
