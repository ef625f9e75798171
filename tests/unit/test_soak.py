"""A soak on virtual time: days of objects created, changed and deleted through seeded faults.

Every simulated hour, the test creates objects, changes some, and deletes the oldest, each of
them with a create, update and delete handler, a daemon and a timer; the FakeCluster meanwhile
drops, delays, throttles (429), refuses (5xx) and expires (410) a share of the operator's
requests, stalls some of its watches, and compacts its history now and then. Every four simulated
hours the operator is stopped and started again. At the end:

* every handler ran exactly once per cause (a creation, a change, a deletion), and nothing was
  lost: every object was handled, every change seen, every deleted object is gone;
* the daemons of live objects run, one per object, and the timers fired;
* the operator's tasks and threads did not grow from day to day, and the process's resident
  memory grew by no more than a bound per simulated day (its slope is printed).

The normal test run simulates eight hours (two lives of the operator); ``nox -s soak`` simulates
``ANYOP_SOAK_DAYS`` (7 by default) with ``ANYOP_SOAK_SEED`` and prints the figures per day.
"""

from __future__ import annotations

import gc
import logging
import os
import random
import resource
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import sniffio
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, Fault, RunningOperator
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[2] / "examples" / "crd.yaml"
NAMESPACE = "soak"
HOUR = 3600.0
WAIT = 900.0  # virtual seconds; reached only if something is lost
DAYS = float(os.environ.get("ANYOP_SOAK_DAYS", "0.34"))
SEED = int(os.environ.get("ANYOP_SOAK_SEED", str(random.randrange(10_000))))
RSS_SLOPE_LIMIT = 2048  # KiB per simulated day, over the days after the first
LIFE = 4  # simulated hours between two restarts of the operator
FAULTS = [
    Fault.latency(2.0),
    Fault.drop(),
    Fault.throttle(retry_after=1),
    Fault.server_error(500),
    Fault.server_error(503),
]
"""Drawn for every request of the operator. Not 409 Conflict: one on the status PATCH that
records a handler's outcome makes the handler run again (at least once, as in Kopf), and a real
API server gives no 409 to a merge-patch without a resourceVersion. The 410s are drawn for the
served resource's lists and watches only (a real API server gives none to discovery)."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends on virtual time: a simulated day costs seconds."""
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.001)


@dataclass
class Ledger:
    """What the handlers did: every call with its cause, the daemons alive, the timers' ticks."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)
    daemons: Counter[str] = field(default_factory=Counter)
    ticks: Counter[str] = field(default_factory=Counter)

    def registry(self) -> OperatorRegistry:
        registry = OperatorRegistry()

        @anyop.on.create("kopfexamples", id="create_fn", registry=registry)
        async def create_fn(name: str, spec: anyop.Spec, **_: Any) -> str:
            self.calls.append(("create", name, spec["field"]))
            return str(spec["field"])

        @anyop.on.update("kopfexamples", id="update_fn", registry=registry)
        async def update_fn(name: str, spec: anyop.Spec, **_: Any) -> str:
            self.calls.append(("update", name, spec["field"]))
            return str(spec["field"])

        @anyop.on.delete("kopfexamples", id="delete_fn", registry=registry)
        async def delete_fn(name: str, **_: Any) -> None:
            self.calls.append(("delete", name, ""))

        @anyop.daemon("kopfexamples", id="watcher", registry=registry)
        async def watcher(name: str, stopped: anyop.DaemonStopped, **_: Any) -> None:
            self.daemons[name] += 1
            try:
                while not stopped:
                    await stopped.wait(600)
            finally:
                self.daemons[name] -= 1

        @anyop.timer("kopfexamples", id="ticker", interval=1800, registry=registry)
        async def ticker(name: str, **_: Any) -> None:
            self.ticks[name] += 1

        return registry


@dataclass
class World:
    """What the test did to the cluster, hence what the handlers must have seen."""

    rng: random.Random
    live: dict[str, int] = field(default_factory=dict)  # name -> the hour it was created
    causes: list[tuple[str, str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Day:
    """The measurements at the end of an operator's life (it stopped)."""

    rss_kib: int
    threads: int
    tasks: int


def rss_kib() -> int:
    """The process's resident memory now (not its peak)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() // 1024


def tasks() -> int:
    """The tasks of the event loop now."""
    if sniffio.current_async_library() == "trio":
        import trio.lowlevel

        def count(task: Any) -> int:
            return 1 + sum(count(t) for n in task.child_nurseries for t in n.child_tasks)

        return count(trio.lowlevel.current_root_task())
    import asyncio

    return len(asyncio.all_tasks())


def slope(values: list[int]) -> float:
    """The least-squares slope of the values per step."""
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    den = sum((x - mean_x) ** 2 for x in range(n))
    return num / den if den else 0.0


async def hour(operator: RunningOperator, world: World, now: int) -> None:
    """One simulated hour of the test's own work: create, change, delete; then wait for the
    operator to have done what each of these causes asks."""
    rng = world.rng
    created = [f"kex-{now}-{i}" for i in range(2)]
    for name in created:
        await operator.create(KEX, {"metadata": {"name": name}, "spec": {"field": f"c{now}"}})
        world.live[name] = now
        world.causes.append(("create", name, f"c{now}"))
    dying = [name for name, born in world.live.items() if born <= now - 6]
    older = sorted(name for name, born in world.live.items() if now - 6 < born < now)
    changed = rng.sample(older, k=min(len(older), rng.randint(1, 2)))
    for name in changed:
        await operator.patch(KEX, name, {"spec": {"field": f"u{now}"}})
        world.causes.append(("update", name, f"u{now}"))
    for name in dying:
        await operator.delete(KEX, name)
        del world.live[name]
        world.deleted.append(name)
        world.causes.append(("delete", name, ""))
    await settle(operator, created, changed, dying, now)


async def settle(
    operator: RunningOperator, created: list[str], changed: list[str], dying: list[str], now: int
) -> None:
    for name in created:
        await operator.wait_for(KEX, name, lambda o: o["status"]["create_fn"], timeout=WAIT)
    for name in changed:
        value = f"u{now}"
        done = lambda o, v=value: o["status"]["update_fn"] == v  # noqa: E731
        await operator.wait_for(KEX, name, done, timeout=WAIT)
    for name in dying:
        await operator.wait_for_deletion(KEX, name, timeout=WAIT)


async def life(fake: FakeCluster, ledger: Ledger, world: World, hours: range) -> None:
    """One life of an operator: started, worked on for these hours, stopped."""
    settings = anyop.OperatorSettings()
    settings.networking.error_backoffs = (1, 2, 5)
    settings.watching.inactivity_timeout = 300
    settings.execution.loop_lag_threshold = None  # its heartbeat would tick the virtual clock
    async with (
        fake.client(faults=False, timeout=30) as api,
        open_operator(
            ledger.registry(), namespace=NAMESPACE, api=api, vault=await fake.vault(),
            settings=settings, stop_timeout=HOUR,
        ) as operator,
    ):  # fmt: skip
        for now in hours:
            if now % 5 == 4:
                fake.compact()  # watches and lists from older versions get 410
            await hour(operator, world, now)
            await anyio.sleep(HOUR / 2)  # the daemons and the timers run meanwhile
            assert sorted(n for n, c in ledger.daemons.items() if c) == sorted(world.live)
            assert all(c <= 1 for c in ledger.daemons.values())


async def test_days_of_changes_through_faults_and_restarts_lose_and_repeat_nothing() -> None:
    print(f"\nsoak: {DAYS} simulated day(s), seed {SEED}, {sniffio.current_async_library()}")
    fake = FakeCluster(seed=SEED)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    fake.faults.inject(seed=SEED, rate=0.01, faults=FAULTS)
    fake.faults.inject(seed=SEED + 1, rate=0.05, faults=[Fault.stall()], watch=True)
    fake.faults.inject(seed=SEED + 2, rate=0.02, faults=[Fault.expire()], path="/kopfexamples")
    ledger, world, measured = Ledger(), World(random.Random(SEED)), []
    with fake.routed(), _quiet_logs():
        for start in range(0, round(DAYS * 24), LIFE):
            await life(fake, ledger, world, range(start, min(start + LIFE, round(DAYS * 24))))
            fake.trace.clear()  # the fake's own record of every request: not the operator's
            measured.append(measure())
            print(f"soak: hour {start + LIFE}: {measured[-1]}, faults {struck(fake)}")
    calls, causes = Counter(ledger.calls), Counter(world.causes)
    kinds = Counter(kind for kind, _, _ in world.causes)
    print(f"soak: causes {dict(kinds)}, timer runs {sum(ledger.ticks.values())}")
    twice = {name for _, name, _ in calls - causes}
    hits = [(h.fault.kind.value, h.method, h.path) for h in fake.faults.struck]
    assert calls - causes == Counter(), [hit for hit in hits if any(n in hit[2] for n in twice)]
    assert causes - calls == Counter(), "never handled"
    assert set(world.live) <= set(ledger.ticks)  # every live object's timer fired
    assert all(count == 0 for count in ledger.daemons.values())  # all stopped with the operator
    assert len(fake.faults.struck) > 0
    _check_growth(measured)


def struck(fake: FakeCluster) -> dict[str, int]:
    """How many faults of each kind struck so far."""
    return dict(Counter(hit.fault.kind.value for hit in fake.faults.struck))


def measure() -> Day:
    gc.collect()
    return Day(rss_kib=rss_kib(), threads=threading.active_count(), tasks=tasks())


def _check_growth(lives: list[Day]) -> None:
    """No task or thread more after any life than after the first; RSS flat from day 2 on."""
    assert max(d.threads for d in lives) <= lives[0].threads
    assert max(d.tasks for d in lives) <= lives[0].tasks
    days = lives[24 // LIFE - 1 :: 24 // LIFE]  # at the end of each simulated day
    if len(days) >= 4:
        rss = [d.rss_kib for d in days[1:]]  # the first day warms the caches up
        per_day = slope(rss)
        print(f"soak: RSS by day {rss} KiB; slope {per_day:.0f} KiB per simulated day")
        assert per_day < RSS_SLOPE_LIMIT


class _quiet_logs:
    """The INFO lines of thousands of handler runs and of the test's own polling (httpx) stay
    out of the captured log, which would grow for the whole run (``nox -s soak`` captures no
    log at all, so that the RSS is the operator's)."""

    NAMES = ("anyop", "httpx")

    def __enter__(self) -> None:
        self.levels = [logging.getLogger(name).level for name in self.NAMES]
        for name in self.NAMES:
            logging.getLogger(name).setLevel(logging.WARNING)

    def __exit__(self, *_: object) -> None:
        for name, level in zip(self.NAMES, self.levels, strict=True):
            logging.getLogger(name).setLevel(level)
