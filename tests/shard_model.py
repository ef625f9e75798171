"""A model of sharded replicas for seeded schedules: the real shard keeper (``hold_shard``)
on in-memory Leases with faults, and a model of the served objects that records every handler
run, so that two runs of one object at once, or an object handled twice or never, is seen.

:func:`schedule` turns a seed into a :class:`Schedule`: replicas that start (at once or one
after another, from an empty group or into a running one), leave gracefully, are killed, stall
(their event loop stands still, then thaws), and start again (under a new identity or their old
one), with objects created before and throughout, API calls that are slow, that fail (before or
after they land) and Leases that something else writes meanwhile (write conflicts).
:func:`run_model` plays one on the running event loop (virtual time: see ``tests/virtual.py``);
the same schedule can be played with real processes (``tests/e2e/test_sharding_model_e2e.py``).

Every decision is drawn from the seed: on asyncio, or on Trio with its scheduler's coin seeded
(:func:`seeded_scheduler`), a seed replays exactly.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import random
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
import pytest

from anyop.engine.coordination.pause_gate import Gate
from anyop.engine.coordination.shard_keeper import hold_shard
from anyop.engine.coordination.shards import Shard
from anyop.errors import ConflictError, NotFoundError, TransportError
from anyop.settings import ShardingSettings
from anyop.sharding import ShardState

__all__ = ["SETTINGS", "Event", "Schedule", "run_model", "schedule", "seeded_scheduler", "seeds"]

SETTINGS = ShardingSettings(enabled=True, lease_duration=4, renew_deadline=3, retry_period=1)
"""Short durations: a schedule covers several Lease durations in little virtual time."""

KINDS = ("start", "leave", "kill", "stall", "create")


@dataclasses.dataclass(frozen=True)
class Event:
    """One thing that happens at a moment of a schedule.

    Attributes:
        at: Seconds since the schedule began.
        kind: One of :data:`KINDS`.
        who: The replica (for ``create``: empty).
        value: Seconds of a stall; objects created.
    """

    at: float
    kind: str
    who: str = ""
    value: float = 0.0


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What happens, when, and how unreliable the API server is.

    Attributes:
        seed: Where it came from.
        events: Sorted by time.
        latency: The most seconds one API call takes.
        fault_rate: The share of API calls that fail (half of them after they land).
        conflict_rate: The share of Lease writes that something else overwrites first.
    """

    seed: int
    events: tuple[Event, ...]
    latency: float
    fault_rate: float
    conflict_rate: float

    @property
    def objects(self) -> int:
        """How many objects the schedule creates in all."""
        return int(sum(e.value for e in self.events if e.kind == "create"))

    def describe(self) -> str:
        """One line per event, to read a failing seed."""
        lines = [f"seed {self.seed}: latency {self.latency:.2f} s, faults {self.fault_rate:.2f}, "
                 f"conflicts {self.conflict_rate:.2f}"]  # fmt: skip
        lines += [f"  {e.at:7.2f} {e.kind:6} {e.who} {e.value:g}" for e in self.events]
        return "\n".join(lines)


def schedule(seed: int, *, span: float = 30.0, replicas: int = 4) -> Schedule:
    """A random schedule of joins, leaves, kills, stalls and creations over ``span`` seconds."""
    rng = random.Random(seed)
    events: list[Event] = [Event(0.0, "create", value=rng.randint(5, 40))]  # the backlog
    names = [f"r{index}" for index in range(1, replicas + 1)]
    starting = rng.randint(1, replicas)
    together = rng.random() < 0.5  # all at the same moment, or one after another
    alive: dict[str, float] = {}
    for index, name in enumerate(names[:starting]):
        at = 0.0 if together else rng.uniform(0, 3) * index
        events.append(Event(at, "start", name))
        alive[name] = at
    spares = names[starting:]
    generation = 0
    t = rng.uniform(0, 4)
    while t < span:
        choice = rng.random()
        running = sorted(name for name, since in alive.items() if since <= t)
        if choice < 0.3:
            events.append(Event(t, "create", value=rng.randint(1, 8)))
        elif choice < 0.5 and (spares or running):
            if spares:
                name = spares.pop(0)
            else:
                generation += 1
                name = f"r{len(names) + generation}"
            events.append(Event(t, "start", name))
            alive[name] = t
        elif running:
            name = rng.choice(running)
            kind = rng.choice(["leave", "kill", "stall", "stall"])
            if kind == "stall":
                events.append(
                    Event(t, "stall", name, rng.uniform(0.5, 4 * SETTINGS.lease_duration))
                )
            else:
                events.append(Event(t, kind, name))
                del alive[name]
                if rng.random() < 0.5:  # it comes back: the same identity (a restarted pod)
                    back = t + rng.uniform(0.1, 2 * SETTINGS.lease_duration)
                    events.append(Event(back, "start", name))
                    alive[name] = back
        t += rng.expovariate(1 / 2.5)
    if not alive:
        events.append(Event(span, "start", names[0]))
    return Schedule(
        seed=seed,
        events=tuple(sorted(events, key=lambda e: e.at)),
        latency=rng.choice([0.0, 0.05, 0.3]),
        fault_rate=rng.choice([0.0, 0.02, 0.1]),
        conflict_rate=rng.choice([0.0, 0.02, 0.1]),
    )


def seeds(count: int, *, rotation: int) -> range:
    """``count`` seeds starting at a place that moves with ``rotation`` (each run tries others)."""
    start = (rotation % 1000) * count
    return range(start, start + count)


@contextlib.contextmanager
def seeded_scheduler(seed: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Trio picks the order of each batch of ready tasks with a coin of its own: seed it, so
    that a seed replays exactly on Trio too (asyncio runs ready tasks in order anyway)."""
    import trio._core._run

    with monkeypatch.context() as patch:
        patch.setattr(trio._core._run, "_r", random.Random(seed))
        yield


class Violation(AssertionError):
    """Two replicas ran one object's handler at once, or one object was handled twice."""


class World:
    """The API server's Leases and objects, and what the handlers did.

    Args:
        plan: The schedule (its rates; its seed seeds every random draw).
    """

    def __init__(self, plan: Schedule) -> None:
        self.plan = plan
        self.rng = random.Random(plan.seed * 7919 + 1)
        self.leases: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.objects: list[str] = []
        self.done: dict[str, list[str]] = {}  # uid -> the replicas that completed its handler
        self.running: dict[str, str] = {}  # uid -> the replica running its handler now
        self.trace: list[str] = []
        self.replicas: dict[str, Replica] = {}

    def note(self, what: str) -> None:
        """Remember what happened when (a failing seed prints it; a replay compares it)."""
        self.trace.append(f"{anyio.current_time():9.3f} {what}")

    def stamp(self, body: dict[str, Any]) -> dict[str, Any]:
        """Store a Lease with a new resourceVersion."""
        self.version += 1
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.version)
        self.leases[body["metadata"]["name"]] = body
        return copy.deepcopy(body)

    def create(self, count: int) -> None:
        """New objects, for whichever replica owns them."""
        for _ in range(count):
            drawn = random.Random(f"{self.plan.seed}/{len(self.objects)}").getrandbits(128)
            uid = str(uuid.UUID(int=drawn, version=4))  # as random as the API server's
            self.objects.append(uid)
            self.done[uid] = []
        self.note(f"created {count}")
        for replica in self.replicas.values():
            replica.wake()

    def begin(self, uid: str, who: str) -> None:
        """A handler run starts: nobody else may be running it, nor have completed it."""
        if uid in self.running:
            raise Violation(f"{uid} runs in {self.running[uid]} and {who} at once")
        if self.done[uid]:
            raise Violation(f"{uid} was handled by {self.done[uid]}, and {who} starts it again")
        self.running[uid] = who
        self.note(f"{who} begins {uid}")

    def end(self, uid: str, who: str, *, completed: bool) -> None:
        """A handler run ends: completed (its outcome written to the object), or cancelled."""
        if self.running.get(uid) == who:
            del self.running[uid]
        if completed:
            self.done[uid].append(who)
        self.note(f"{who} {'completes' if completed else 'abandons'} {uid}")


class Client:
    """The calls the shard keeper makes, on the world's Leases, with latency, faults, conflicts
    (one client per incarnation of a replica; a killed one fails every call)."""

    def __init__(self, world: World, replica: Replica) -> None:
        self.world, self.replica = world, replica

    async def _travel(self) -> None:
        await self.replica.pause_point()
        if self.world.plan.latency:
            await anyio.sleep(self.world.rng.uniform(0, self.world.plan.latency / 2))
        await self.replica.pause_point()
        if self.replica.dead:
            raise TransportError("the replica is dead")

    def _fail(self, when: str) -> None:
        if self.world.rng.random() < self.world.plan.fault_rate / 2:
            raise TransportError(f"the API call failed {when} it landed")

    async def _call(self, land: Any) -> Any:
        await self._travel()  # the request on its way
        self._fail("before")
        result = land()
        await self._travel()  # the response on its way (it may find the replica stalled)
        self._fail("after")
        return result

    async def list(self, resource: Any, **_: Any) -> Any:
        def land() -> Any:
            items = [copy.deepcopy(body) for body in self.world.leases.values()]
            return type("Listed", (), {"items": items})()

        return await self._call(land)

    async def create(self, resource: Any, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        def land() -> dict[str, Any]:
            if body["metadata"]["name"] in self.world.leases:
                raise ConflictError("exists", status=409)
            return self.world.stamp(body)

        result: dict[str, Any] = await self._call(land)
        return result

    async def replace(self, resource: Any, body: dict[str, Any]) -> dict[str, Any]:
        def land() -> dict[str, Any]:
            name = body["metadata"]["name"]
            current = self.world.leases.get(name)
            if current is None:
                raise NotFoundError("gone", status=404)
            if self.world.rng.random() < self.world.plan.conflict_rate:
                self.world.stamp(current)  # something else wrote it first
                raise ConflictError("changed meanwhile", status=409)
            if current["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
                raise ConflictError("stale", status=409)
            return self.world.stamp(body)

        result: dict[str, Any] = await self._call(land)
        return result

    async def get(self, resource: Any, *, name: str, **_: Any) -> dict[str, Any]:
        def land() -> dict[str, Any]:
            if name not in self.world.leases:
                raise NotFoundError("none", status=404)
            return copy.deepcopy(self.world.leases[name])

        result: dict[str, Any] = await self._call(land)
        return result

    async def delete(
        self, resource: Any, *, name: str, resource_version: str | None = None, **_: Any
    ) -> dict[str, Any]:
        def land() -> dict[str, Any]:
            current = self.world.leases.get(name)
            if current is None:
                raise NotFoundError("none", status=404)
            if resource_version and current["metadata"]["resourceVersion"] != resource_version:
                raise ConflictError("changed meanwhile", status=409)
            del self.world.leases[name]
            return {}

        result: dict[str, Any] = await self._call(land)
        return result


class Replica:
    """One incarnation of a replica: its keeper, its handler runs, its stalls."""

    def __init__(self, world: World, name: str) -> None:
        self.world, self.name = world, name
        self.dead = False
        self.frozen: anyio.Event | None = None
        self.gate = Gate()
        self.shard = Shard(ShardState.alone(name))
        self.running: set[str] = set()
        self.keeping = anyio.CancelScope()
        self.serving = anyio.CancelScope()
        self._changed = anyio.Event()

    async def pause_point(self) -> None:
        """Wait while the replica stalls (its event loop stands still)."""
        while self.frozen is not None:
            await self.frozen.wait()

    def wake(self) -> None:
        """Something changed: look for objects to handle."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    # The ShardPart protocol: the replica's served objects.
    @property
    def size(self) -> int:
        """How many objects it handles now."""
        return sum(1 for uid in self.world.objects if self.shard.handles(uid))

    def retarget(self, *, gaining: bool) -> None:
        """The target view changed: new runs follow it (running ones finish)."""
        self.world.note(f"{self.name} targets {','.join(self.shard.state.target.members)}")
        self.wake()

    def sweep(self) -> bool:
        """Whether no run of an object outside our share is left."""
        return all(self.shard.handles(uid) for uid in self.running)

    def activate(self, *, gaining: bool) -> None:
        """The view is active: handle the gained objects."""
        self.world.note(f"{self.name} activates {','.join(self.shard.state.target.members)}")
        self.wake()

    async def live(self) -> None:
        """Keep the shard and serve, until killed, or until the serving stops (a leave): then
        leave the group."""
        client: Any = Client(self.world, self)  # the calls of a KubeClient that the keeper makes
        keep = functools.partial(
            hold_shard, client, SETTINGS, "ns", gate=self.gate, shard=self.shard
        )
        with self.keeping:
            async with anyio.create_task_group() as tg:
                await tg.start(keep)
                await self._serve()
                tg.cancel_scope.cancel()  # the keeper deletes our Lease on its way out

    async def _serve(self) -> None:
        with self.serving, self.shard.joined(self):
            while True:
                await self.gate.wait_open()
                with self.gate.fenced():
                    async with anyio.create_task_group() as runs:
                        while True:
                            self._start_runs(runs)
                            changed = self._changed
                            with anyio.move_on_after(1.0):
                                await changed.wait()
                            await self.pause_point()

    def _start_runs(self, runs: anyio.abc.TaskGroup) -> None:
        if self.frozen is not None or not self.gate.leading():
            return
        for uid in self.world.objects:
            if uid in self.running or self.world.done[uid] or not self.shard.handles(uid):
                continue
            self.world.begin(uid, self.name)
            self.running.add(uid)
            runs.start_soon(self._run, uid)

    async def _run(self, uid: str) -> None:
        completed = False
        try:
            await anyio.sleep(self.world.rng.uniform(0.01, 1.5))
            await self.pause_point()
            completed = True
        finally:
            self.running.discard(uid)
            self.world.end(uid, self.name, completed=completed)
            self.wake()

    def leave(self) -> None:
        """A graceful exit: stop the work, then leave the group (the keeper deletes its Lease)."""
        self.serving.cancel()

    def kill(self) -> None:
        """SIGKILL: everything stops at once; the Lease stays until it expires."""
        self.dead = True
        self.keeping.cancel()
        self.serving.cancel()

    async def stall(self, seconds: float) -> None:
        """The event loop stands still for a while, then thaws."""
        if self.frozen is not None:
            return
        self.frozen = thawed = anyio.Event()
        await anyio.sleep(seconds)
        self.frozen = None
        thawed.set()


async def run_model(plan: Schedule, *, deadline: float = 400.0) -> World:
    """Play the schedule on the running (virtual-time) event loop; raise :class:`Violation`
    if two replicas ran an object's handler at once, or an object was handled twice or never."""
    world = World(plan)
    started = anyio.current_time()
    try:
        with anyio.fail_after(deadline):
            async with anyio.create_task_group() as tg:
                for event in plan.events:
                    await anyio.sleep(max(0.0, started + event.at - anyio.current_time()))
                    await _play(world, event, tg)
                while not all(world.done.values()):
                    await anyio.sleep(0.5)
                for replica in world.replicas.values():
                    replica.kill()
    except BaseExceptionGroup as group:
        raise _first_violation(group) from group
    counts = {uid: len(who) for uid, who in world.done.items()}
    twice = {uid: world.done[uid] for uid, count in counts.items() if count > 1}
    if twice:
        raise Violation(f"handled twice: {twice}")
    return world


async def _play(world: World, event: Event, tg: anyio.abc.TaskGroup) -> None:
    world.note(f"{event.kind} {event.who} {event.value:g}")
    if event.kind == "create":
        world.create(int(event.value))
        return
    replica = world.replicas.get(event.who)
    if event.kind == "start":
        if replica is not None:
            replica.kill()  # a leftover of a leave that is still on its way
        replica = world.replicas[event.who] = Replica(world, event.who)
        tg.start_soon(replica.live)
    elif replica is None:
        return
    elif event.kind == "leave":
        replica.leave()
    elif event.kind == "kill":
        replica.kill()
    elif event.kind == "stall":
        tg.start_soon(replica.stall, event.value)


def _first_violation(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first :class:`Violation` in a task group's errors (or the group itself)."""
    found: BaseException | None = group.subgroup(Violation)
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found if found is not None else group
