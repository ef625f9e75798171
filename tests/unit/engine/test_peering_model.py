"""Peering on seeded schedules: operators of different priorities start, stop and start again in
one peering, on a FakeCluster with virtual time and API faults, while objects are created; never
do two of them run handlers at the same moment, and every object is handled in the end.

Each operator is a whole one (``open_operator``), with its own identity and priority. Their
create handlers record when they run; a handler that begins while another operator's handler
runs is a violation. Before peers said whether they serve, a newcomer of a higher
priority served at once, and a lower-priority operator handling a backlog went on until it saw
the newcomer's record: both ran handlers at once.

``ANYOP_PEERING_SCHEDULES`` sets how many schedules a backend plays (a few in the normal run);
a failing seed is printed with its schedule and replays alone with ``ANYOP_PEERING_SEED``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
import sniffio
from tests.shard_model import seeded_scheduler
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, Fault
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[3]
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
NAMESPACE = "ns"
SCHEDULES = int(os.environ.get("ANYOP_PEERING_SCHEDULES", "4"))
SEED = os.environ.get("ANYOP_PEERING_SEED")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.005)


@dataclasses.dataclass(frozen=True)
class Step:
    """At ``at`` seconds: ``start`` or ``stop`` operator ``who``, or ``create`` ``count``."""

    at: float
    kind: str
    who: str = ""
    count: int = 0


@dataclasses.dataclass(frozen=True)
class Plan:
    seed: int
    priorities: dict[str, int]
    steps: tuple[Step, ...]
    fault_rate: float

    def describe(self) -> str:
        lines = [f"seed {self.seed}: priorities {self.priorities}, faults {self.fault_rate}"]
        lines += [f"  {s.at:7.2f} {s.kind:6} {s.who} {s.count or ''}" for s in self.steps]
        return "\n".join(lines)


def plan(seed: int, *, span: float = 60.0) -> Plan:
    """Operators that start together or one after another, stop and come back; objects created
    before and throughout. At the end, one of those of the top priority serves what is left."""
    rng = random.Random(seed)
    names = [f"op{index}" for index in range(rng.randint(2, 4))]
    priorities = {name: rng.choice([0, 10, 20, 30]) for name in names}
    steps = [Step(0.0, "create", count=rng.randint(5, 30))]
    together = rng.random() < 0.5
    alive: set[str] = set()
    for index, name in enumerate(names):
        steps.append(Step(0.0 if together else rng.uniform(0, 4) * index, "start", name))
        alive.add(name)
    t = max(step.at for step in steps) + rng.uniform(1, 5)  # all started: then stops, restarts
    while t < span:
        choice = rng.random()
        if choice < 0.4:
            steps.append(Step(t, "create", count=rng.randint(1, 10)))
        elif choice < 0.7 and len(alive) > 1:
            name = rng.choice(sorted(alive))
            steps.append(Step(t, "stop", name))
            alive.discard(name)
        elif set(names) - alive:
            name = rng.choice(sorted(set(names) - alive))
            steps.append(Step(t, "start", name))
            alive.add(name)
        t += rng.expovariate(1 / 4)
    return Plan(seed, priorities, tuple(sorted(steps, key=lambda s: s.at)),
                rng.choice([0.0, 0.02, 0.1]))  # fmt: skip


class World:
    """What the handlers did, and when."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed * 7919 + 1)
        self.running: dict[str, int] = {}  # operator -> its handlers running now
        self.done: dict[str, list[str]] = {}  # object -> the operators that completed it
        self.trace: list[str] = []
        self.violations: list[str] = []  # kept here: raised in a handler, it would be retried

    def note(self, what: str) -> None:
        self.trace.append(f"{anyio.current_time():9.3f} {what}")

    def begin(self, who: str, name: str) -> None:
        others = {op: n for op, n in self.running.items() if n and op != who}
        self.note(f"{who} begins {name}")
        if others:
            self.violations.append(f"{who} begins {name} while {others} run handlers")
        self.running[who] = self.running.get(who, 0) + 1

    def end(self, who: str, name: str, *, completed: bool) -> None:
        self.running[who] -= 1
        self.note(f"{who} {'completes' if completed else 'abandons'} {name}")
        if completed:
            self.done.setdefault(name, []).append(who)

    def registry(self, who: str) -> OperatorRegistry:
        registry = OperatorRegistry()

        @anyop.on.create("kopfexamples", registry=registry)
        async def create_fn(name: str, **_: Any) -> None:
            self.begin(who, name)
            completed = False
            try:
                await anyio.sleep(self.rng.uniform(0.05, 2.0))
                completed = True
            finally:
                self.end(who, name, completed=completed)

        return registry


def cluster(plan: Plan) -> FakeCluster:
    fake = FakeCluster(seed=plan.seed)
    fake.apply(ROOT / "examples" / "crd.yaml")
    fake.apply(ROOT / "manifests" / "peering.yaml")
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    fake.create({"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering",
                 "metadata": {"name": "default", "namespace": NAMESPACE}})  # fmt: skip
    if plan.fault_rate:
        faults = [Fault.latency(0.5), Fault.server_error(500), Fault.throttle(retry_after=1)]
        fake.faults.inject(seed=plan.seed, rate=plan.fault_rate, faults=faults)
    return fake


async def play(plan: Plan) -> World:
    world, fake = World(plan.seed), cluster(plan)
    stops: dict[str, anyio.Event] = {}
    created = 0

    runs: dict[str, int] = {}

    async def operator(who: str, stop: anyio.Event) -> None:
        settings = anyop.OperatorSettings()
        settings.peering.name = "default"
        # Each run is a process of its own, with an identity of its own (as anyop's default,
        # which has its start time in it): one that starts again while its previous run still
        # finishes its handlers is another peer, not the same one. Two live operators that
        # claim one identity are one peer to the others: when either leaves, its record goes.
        runs[who] = runs.get(who, 0) + 1
        settings.peering.identity = f"{who}/{runs[who]}"
        settings.peering.priority = plan.priorities[who]
        settings.peering.lifetime = 20
        settings.networking.error_backoffs = (0.5, 1, 2)
        settings.execution.loop_lag_threshold = None
        world.note(f"{who} starts")
        async with (
            fake.client(faults=False, timeout=30) as api,
            open_operator(world.registry(who), namespace=NAMESPACE, api=api, settings=settings,
                          vault=await fake.vault(), stop_timeout=120),
        ):  # fmt: skip
            await stop.wait()
        world.note(f"{who} stopped")

    with fake.routed(), anyio.fail_after(900):
        async with fake.client(faults=False, timeout=30) as api, anyio.create_task_group() as tg:
            started = anyio.current_time()
            for step in plan.steps:
                await anyio.sleep(max(0.0, started + step.at - anyio.current_time()))
                world.note(f"{step.kind} {step.who} {step.count or ''}")
                if step.kind == "create":
                    for _ in range(step.count):
                        body = {"metadata": {"name": f"kex-{created}"}}
                        await api_create(api, body)
                        created += 1
                elif step.kind == "start":
                    stops[step.who] = anyio.Event()
                    tg.start_soon(operator, step.who, stops[step.who])
                else:
                    stops.pop(step.who).set()
            # Peers of the same priority pause each other for good: one of the top ones stays.
            top = max(plan.priorities[who] for who in stops)
            keep = min(who for who in stops if plan.priorities[who] == top)
            for who in [who for who in stops if who != keep]:
                world.note(f"stop {who} (the end)")
                stops.pop(who).set()
            while len(world.done) < created:
                await anyio.sleep(1)
            for stop in stops.values():
                stop.set()
    return world


async def api_create(api: Any, body: dict[str, Any]) -> None:
    url = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfexamples"
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", **body}
    response = await api.post(url, json=body)
    response.raise_for_status()


REGRESSIONS = [
    49233,  # a discovery that failed at the start was never tried again: handlers never ran
    213856,  # /api failed beyond the retries at the start: the operator died (both backends)
    213814,  # the same, on Trio
    281298,  # a keep-alive failed, the record expired, a lower peer served beside the writer
    281365,  # the CRDs' first listing failed beyond the retries at the start: the operator died
]
"""Seeds that once failed: played by every run."""


def seeds() -> list[int]:
    if SEED is not None:
        return [int(SEED)]
    start = random.randrange(1_000_000)
    return [*REGRESSIONS, *range(start, start + SCHEDULES)]


@pytest.mark.parametrize("seed", seeds())
async def test_operators_in_one_peering_never_run_handlers_at_once(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = plan(seed)
    on_trio = sniffio.current_async_library() == "trio"
    with seeded_scheduler(seed, monkeypatch) if on_trio else contextlib.nullcontext():
        world = await play(schedule)
    story = "\n".join([schedule.describe(), *world.trace[-60:]])
    assert world.violations == [], story
    assert all(world.done.values()), story


async def test_an_operator_whose_peering_object_is_deleted_serves_on_as_if_standalone() -> None:
    schedule = Plan(seed=1, priorities={"op0": 10}, steps=(), fault_rate=0.0)
    world, fake = World(1), cluster(schedule)
    settings = anyop.OperatorSettings()
    settings.peering.name, settings.peering.identity = "default", "op0"
    with fake.routed(), anyio.fail_after(300):
        async with (
            fake.client(faults=False, timeout=30) as api,
            open_operator(world.registry("op0"), namespace=NAMESPACE, api=api,
                          settings=settings, vault=await fake.vault()) as operator,
        ):  # fmt: skip
            await api_create(api, {"metadata": {"name": "before"}})
            while "before" not in world.done:
                await anyio.sleep(0.5)
            peering = f"/apis/anyop.dev/v1/namespaces/{NAMESPACE}/anyoppeerings/default"
            (await api.delete(peering)).raise_for_status()
            await anyio.sleep(120)  # virtual: its keep-alives meet a 404 meanwhile
            await api_create(api, {"metadata": {"name": "after"}})
            while "after" not in world.done:
                await anyio.sleep(0.5)
            assert not any("Pausing" in message for message in operator.messages)
