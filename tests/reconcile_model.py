"""A model-based stress of ``@anyop.reconcile``: seeded random schedules, and what must hold.

:func:`schedule` draws a schedule from a seed (pure: one seed, one schedule): parents created,
changed and deleted; changes of a parent's spec made while the reconciler writes its status
(which often changes nothing); children deleted and edited, right after their creation too;
other clients' status writes; requeues; restarts of the operator; pauses. :class:`Model` runs it
against a cluster with a ReplicaSet-like reconciler (``spec.replicas`` ConfigMaps made with
``generateName``) and checks, at every creation, that it is no duplicate, and at quiescence:
every live parent's last call saw its latest spec and generation, its children match exactly,
no call came for a deleted parent once its deletion was shown, and nothing calls while idle.

The watches' events may come late (:class:`DelayedWatcher`, delays drawn from the seed, order
kept). The same seed gives the same schedule and delays; on FakeCluster with virtual time the
whole run follows from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import httpx

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.watch import Watcher, WatchEvent

__all__ = ["DelayedWatcher", "Model", "Step", "schedule"]

LABEL = "stress.anyop.dev/child"
MAX_DELAY = 2.0
"""The longest delay of a watch event (seconds)."""
KINDS = (
    "create", "spec", "spec-in-write", "delete-child", "edit-child", "delete-fresh",
    "heartbeat", "requeue", "pause", "restart", "delete",
)  # fmt: skip
WEIGHTS = (2, 5, 4, 3, 3, 2, 2, 1, 4, 1, 1)


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a schedule.

    Attributes:
        kind: What happens (one of :data:`KINDS`).
        parent: The parent it is about (``""`` for a pause or a restart).
        value: The new ``spec.replicas``, the child's position, or the requeues.
        seconds: How long to wait after it (virtual or real).
    """

    kind: str
    parent: str = ""
    value: int = 0
    seconds: float = 0.0


def schedule(seed: int, *, steps: int = 24, parents: int = 3) -> list[Step]:
    """The schedule of a seed: ``steps`` steps over ``parents`` parents (pure)."""
    rng = random.Random(seed)
    names = [f"p{index}" for index in range(parents)]
    result = [Step("create", name, rng.randint(0, 3)) for name in names]
    for _ in range(steps):
        kind = rng.choices(KINDS, WEIGHTS)[0]
        pause = rng.choice([0.0, 0.0, 0.05, 0.3, 1.0, MAX_DELAY + 0.5])
        result.append(Step(kind, rng.choice(names), rng.randint(0, 4), pause))
    return result


class DelayedWatcher(Watcher):
    """A watch whose events come late, in order; the delays from ``rng``. A listing's events
    come once every earlier event has come, with no delay of their own."""

    rng: random.Random = random.Random(0)

    async def run(  # type: ignore[override]
        self, handle: Any, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        send, receive = anyio.create_memory_object_stream[tuple[float, WatchEvent]](math.inf)
        last, pending, drained = 0.0, 0, anyio.Event()

        async def pump() -> None:
            nonlocal pending, drained
            async for due, event in receive:
                await anyio.sleep_until(due)
                await handle(event)
                pending -= 1
                if not pending:
                    drained.set()
                    drained = anyio.Event()

        async def delayed(event: WatchEvent) -> None:
            nonlocal last, pending
            if event.listed:
                while pending:
                    await drained.wait()
                await handle(event)
                return
            pending += 1
            lag = 0.0 if self.rng.random() < 0.6 else self.rng.uniform(0, MAX_DELAY)
            last = max(last, anyio.current_time() + lag)
            send.send_nowait((last, event))

        with send, receive:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                await super().run(delayed, task_status=task_status)


@dataclasses.dataclass
class Call:
    """One call of the reconciler, as it saw its parent."""

    uid: str
    name: str
    at: float
    generation: Any
    spec: Any


Operate = Callable[[OperatorRegistry], contextlib.AbstractAsyncContextManager[Any]]
"""Runs the operator for the block (the harness's own: FakeCluster's or the real one)."""


class Model:
    """Runs schedules against a cluster and checks the invariants.

    Args:
        api: The test's own client (another client of the cluster than the operator).
        namespace: Where the parents live.
        operate: Runs the operator with a registry for the duration of a block.
        seed: Draws the watch delays and the reconciler's own choices.
        settle: Seconds for every due call, requeue and late event to happen at the end; as
            long again, nothing may call.
    """

    def __init__(
        self,
        api: httpx.AsyncClient,
        namespace: str,
        operate: Operate,
        seed: int,
        *,
        settle: float = 30.0,
    ) -> None:
        self.api = api
        self.settle = settle
        self.namespace = namespace
        self.operate = operate
        self.rng = random.Random(seed)
        DelayedWatcher.rng = random.Random(seed + 1)
        self.calls: list[Call] = []
        self.violations: list[str] = []
        self.live: dict[str, set[str]] = {}  # parent uid -> its children's names, as written
        self.removed: set[str] = set()  # children whose deletion was sent (by anyone here)
        self.deleted: dict[str, float] = {}  # parent uid -> when its deletion was made
        self.uids: dict[str, str] = {}  # parent name -> uid
        self.in_write: dict[str, int] = {}  # spec changes to make as the call ends
        self.fresh: set[str] = set()  # parents whose next created child is deleted at once
        self.requeues: dict[str, int] = {}
        self.registry = self._registry()

    # -- the API ----------------------------------------------------------------------------------

    def _url(self, plural: str, name: str = "") -> str:
        group = "/api/v1" if plural == "configmaps" else "/apis/kopf.dev/v1"
        return f"{group}/namespaces/{self.namespace}/{plural}" + (f"/{name}" if name else "")

    async def _patch(self, plural: str, name: str, patch: Any, status: bool = False) -> None:
        url = self._url(plural, name) + ("/status" if status else "")
        headers = {"Content-Type": "application/merge-patch+json"}
        answer = await self.api.patch(url, json=patch, headers=headers)
        if answer.status_code != 404:
            answer.raise_for_status()

    def _count_out(self, parent_uid: str, child: str) -> None:
        """A child whose deletion is about to be sent: no longer live, and never again."""
        self.live.get(parent_uid, set()).discard(child)
        self.removed.add(child)

    async def _delete(self, plural: str, name: str) -> None:
        answer = await self.api.delete(self._url(plural, name))
        if answer.status_code != 404:
            answer.raise_for_status()

    async def _children(self, uid: str) -> list[dict[str, Any]]:
        answer = await self.api.get(self._url("configmaps"), params={"labelSelector": LABEL})
        answer.raise_for_status()
        items = answer.json()["items"]
        return [c for c in items if any(r["uid"] == uid for r in c["metadata"]["ownerReferences"])]

    # -- the reconciler ---------------------------------------------------------------------------

    def _registry(self) -> OperatorRegistry:
        registry = OperatorRegistry()
        labels = {LABEL: "yes"}

        @anyop.reconcile("kopfexamples", owns=["configmaps"], labels=labels, registry=registry)
        async def keep(body: Any, children: Any, api: Any, patch: Any, **_: Any) -> Any:
            return await self._keep(body, children["configmaps"], api, patch)

        return registry

    async def _keep(self, body: Any, children: list[Any], api: Any, patch: Any) -> Any:
        meta, spec = body["metadata"], body.get("spec") or {}
        uid, name, desired = meta["uid"], meta["name"], int(spec.get("replicas", 0))
        now = anyio.current_time()
        self.calls.append(Call(uid, name, now, meta.get("generation"), dict(spec)))
        if uid in self.deleted and now > self.deleted[uid] + MAX_DELAY + 1:
            self.violations.append(
                f"a call for {name} {now - self.deleted[uid]:.2f}s after deletion"
            )
        mine = sorted(children, key=lambda c: c["metadata"]["name"])
        for child in mine:
            if child.get("data") != {"parent": name}:
                put_back = {"data": {"parent": name, "edited": None}}
                await api.patch("configmaps", child["metadata"]["name"], put_back)
        for child in mine[desired:]:  # counted out first: the operator may stop during it
            self._count_out(uid, child["metadata"]["name"])
            await api.delete("configmaps", child["metadata"]["name"])
        for _ in range(desired - len(mine)):
            live = self.live.setdefault(uid, set())
            if len(live) >= desired and uid not in self.deleted:  # (the GC takes those)
                self.violations.append(f"a duplicate child of {name}: {sorted(live)} for {desired}")
            child = {"metadata": {"generateName": f"{name}-"}, "data": {"parent": name}}
            created = await api.create("configmaps", child)
            if created["metadata"]["name"] not in self.removed:  # a step may have deleted it
                live.add(created["metadata"]["name"])  # (between its creation and our answer)
            if name in self.fresh:  # deleted by another client right after its creation
                self.fresh.discard(name)
                self._count_out(uid, created["metadata"]["name"])
                await self._delete("configmaps", created["metadata"]["name"])
        patch.status["replicas"] = desired  # the same as before unless the spec changed
        if name in self.in_write:  # lands before the status write: its answer carries it
            await self._patch("kopfexamples", name, {"spec": {"replicas": self.in_write.pop(name)}})
        if self.requeues.get(name):
            self.requeues[name] -= 1
            return anyop.Requeue(after=self.rng.choice([0.1, 0.5, 1.5]))
        return None

    # -- the schedule -----------------------------------------------------------------------------

    async def run(self, steps: list[Step]) -> None:
        """Run the schedule with the operator (restarted where it says); then the checks."""
        index = 0
        while index < len(steps):
            async with self.operate(self.registry):
                while index < len(steps):
                    step, index = steps[index], index + 1
                    if step.kind == "restart":
                        break
                    await self._step(step)
                    await anyio.sleep(step.seconds)
        async with self.operate(self.registry):
            await self._quiesce()
        await self.check()

    async def _step(self, step: Step) -> None:
        name, value = step.parent, step.value
        if step.kind == "create" or (step.kind != "delete" and name not in self.uids):
            await self._create(name, value)
        elif step.kind == "spec":
            await self._patch("kopfexamples", name, {"spec": {"replicas": value}})
        elif step.kind == "spec-in-write":
            self.in_write[name] = value
            await self._patch("kopfexamples", name, {"spec": {"nudge": self.rng.random()}})
        elif step.kind == "delete-child":
            children = await self._children(self.uids[name])
            if children:
                gone = self.rng.choice(children)["metadata"]["name"]
                # Counted out first: the deletion's event may reach the reconciler (which then
                # puts a child back) before this request's answer reaches us.
                self._count_out(self.uids[name], gone)
                await self._delete("configmaps", gone)
        elif step.kind == "edit-child":
            children = await self._children(self.uids[name])
            if children:
                edit = {"data": {"parent": "someone", "edited": "yes"}}
                await self._patch("configmaps", self.rng.choice(children)["metadata"]["name"], edit)
        elif step.kind == "delete-fresh":
            self.fresh.add(name)
            await self._patch("kopfexamples", name, {"spec": {"replicas": value or 1}})
        elif step.kind == "heartbeat":
            beat = {"status": {"heartbeat": self.rng.random()}}
            await self._patch("kopfexamples", name, beat, status=True)
        elif step.kind == "requeue":
            self.requeues[name] = value
            await self._patch("kopfexamples", name, {"spec": {"nudge": self.rng.random()}})
        elif step.kind == "delete" and name in self.uids:
            self.deleted[self.uids.pop(name)] = anyio.current_time()
            self.in_write.pop(name, None)
            self.fresh.discard(name)
            await self._delete("kopfexamples", name)

    async def _create(self, name: str, replicas: int) -> None:
        if name in self.uids:
            await self._patch("kopfexamples", name, {"spec": {"replicas": replicas}})
            return
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}}
        answer = await self.api.post(
            self._url("kopfexamples"), json=body | {"spec": {"replicas": replicas}}
        )
        answer.raise_for_status()
        self.uids[name] = answer.json()["metadata"]["uid"]

    async def _quiesce(self) -> None:
        """Let every due call, requeue and late event happen; then nothing must call."""
        self.in_write.clear()
        self.fresh.clear()
        self.requeues.clear()
        await anyio.sleep(self.settle)
        before = len(self.calls)
        await anyio.sleep(self.settle)
        if len(self.calls) != before:
            extra = [(c.name, round(c.at, 2)) for c in self.calls[before:]]
            self.violations.append(f"calls while idle: {extra}")

    async def check(self) -> None:
        """The invariants at quiescence (and the violations seen on the way)."""
        for name, uid in sorted(self.uids.items()):
            answer = await self.api.get(self._url("kopfexamples", name))
            answer.raise_for_status()
            parent: Mapping[str, Any] = answer.json()
            spec, meta = parent.get("spec") or {}, parent["metadata"]
            last = [c for c in self.calls if c.uid == uid][-1:]
            if not last or (last[0].spec, last[0].generation) != (spec, meta.get("generation")):
                seen = (last[0].spec, last[0].generation) if last else None
                self.violations.append(f"{name}: last call saw {seen}, latest {spec}")
            children = await self._children(uid)
            wrong = [c["metadata"]["name"] for c in children if c.get("data") != {"parent": name}]
            if len(children) != int(spec.get("replicas", 0)) or wrong:
                self.violations.append(f"{name}: {len(children)} children for {spec}, {wrong=}")
