"""Rows 38 and 40 of RELIABILITY.md §5: thousands of objects, a whole operator, FakeCluster.

Row 38: thousands of objects exist before the operator starts. It lists them in pages of 500,
starts their cycles only as fast as the API server takes its requests (backpressure,
``queueing.max_requests_in_flight``), handles each once; a later relist (a 410 on its watch)
handles none again and leaves the engine holding as many objects as before.

Row 40: thousands of objects all change while the operator's watch is down, and the history is
compacted meanwhile: the watch's return is answered 410 and the relist finds every object
changed. The herd that follows stays within the operator's limits: the API requests in flight,
and the client's requests per second (``networking.qps``, ``networking.burst``); a fake "API
Priority and Fairness" that answers 429 above the operator's own concurrency limit refuses none
of them.

Every request of the operator takes :data:`LATENCY` (virtual) seconds at the fake, so that its
requests overlap and the fake can count how many run at once. Time is virtual (Trio's
``MockClock``, or an asyncio loop with a fake clock); the counts and figures are the same on
every run.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from tests.e2e.test_fake_faults_e2e import CRD, anyio_backend, errors, served  # noqa: F401 (a fixture)

import anyop
from anyop.engine.operator.health import Health, current_health
from anyop.engine.resource.serve_resource import Watched
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.watchstate import Phase
from anyop.testing import FakeCluster, Fault
from anyop.testing.fake.api import ApiRequest, ApiResponse, is_watch
from anyop.testing.fake.fault_answers import answer_of_fault
from anyop.testing.fake.faults import Rule

pytestmark = pytest.mark.anyio

NAMESPACE = "scale"
PATH = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfexamples"
MERGE = "application/merge-patch+json"
LATENCY = 0.02  # virtual seconds that each of the operator's requests takes at the fake
PAGE = 500  # the client's page size
WAIT = 3600.0  # virtual seconds; only reached when something is broken
STARTUP = 10_000  # objects that exist before the operator starts (row 38)
HERD = 5_000  # objects that all change while the watch is down (row 40)
THROTTLE = Fault.throttle(retry_after=1)


@dataclasses.dataclass(frozen=True)
class Sent:
    """One request of the operator: when (virtual seconds), what, and the answer's status."""

    time: float
    method: str
    path: str
    query: dict[str, str]
    status: int
    watch: bool

    @property
    def lists(self) -> bool:
        """A LIST of the objects (not a watch, not a GET of one object)."""
        return self.method == "GET" and self.path == PATH and not self.watch


class MeteredCluster(FakeCluster):
    """A FakeCluster that notes each of the operator's requests and how many of them run at once.

    Args:
        apf: A request that would make more than this many of the operator's requests (watches
            aside) run at once is answered 429 with ``Retry-After: 1`` at once, as API Priority
            and Fairness rejects what its queues cannot take; ``None``: never.

    Attributes:
        blind: While set, the operator's watches of the objects are answered 503.
    """

    def __init__(self, *, apf: int | None = None) -> None:
        super().__init__(seed=38)
        self.apf = apf
        self.blind = False
        self.sent: list[Sent] = []
        self.running = 0
        self.most_running = 0

    async def respond(
        self, request: ApiRequest, *, faults: bool = True
    ) -> ApiResponse | AsyncIterator[bytes]:
        if not faults:  # the test's own
            return await super().respond(request, faults=False)
        watch = is_watch(request)
        if watch and self.blind and request.path == PATH:
            answer = await answer_of_fault(Fault.server_error(503), request)
        elif not watch and self.apf is not None and self.running >= self.apf:
            answer = await answer_of_fault(THROTTLE, request)
        else:
            answer = await self._admitted(request, watch=watch)
        assert answer is not None
        status = answer.status if isinstance(answer, ApiResponse) else 200
        now, query = anyio.current_time(), dict(request.query)
        self.sent.append(Sent(now, request.method, request.path, query, status, watch))
        return answer

    async def _admitted(
        self, request: ApiRequest, *, watch: bool
    ) -> ApiResponse | AsyncIterator[bytes]:
        if watch:
            return await super().respond(request)
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            return await super().respond(request)
        finally:
            self.running -= 1

    def since(self, moment: float) -> list[Sent]:
        """The operator's requests from ``moment`` on."""
        return [sent for sent in self.sent if sent.time >= moment]


def objects_in(fake: FakeCluster, count: int) -> list[str]:
    """Create ``count`` objects in the fake directly (no request, no watch event yet)."""
    names = [f"kex-{index:05d}" for index in range(count)]
    for name in names:
        body = {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"field": "one"}}
        fake.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", **body})
    return names


def metered(count: int, *, apf: int | None = None) -> MeteredCluster:
    """A fake with ``count`` objects, whose every request by the operator takes LATENCY."""
    fake = MeteredCluster(apf=apf)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    objects_in(fake, count)
    fake.faults.add(Rule(Fault.latency(LATENCY), watch=False, times=None))
    return fake


class Ledger:
    """Every handler call, and the operator's :class:`Health` (caught in a handler)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.health: Health | None = None

    def note(self, handler: str, name: str) -> None:
        self.calls[handler, name] += 1
        self.health = self.health or current_health.get()

    def watched(self) -> Watched:
        """The served objects: their watch and their workers."""
        assert self.health is not None
        return next(w for w in self.health.watchers.values() if w.resource.plural == "kopfexamples")

    def handled(self, handler: str) -> int:
        return sum(1 for called, _ in self.calls if called == handler)

    def settled(self, handler: str, count: int) -> bool:
        """Whether ``count`` objects were handled by it and no worker is left."""
        return self.handled(handler) >= count and self.watched().workers.busy == 0


def ledgered() -> tuple[OperatorRegistry, Ledger]:
    registry, ledger = OperatorRegistry(), Ledger()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> None:
        ledger.note("create_fn", name)

    @anyop.on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(name: str, **_: Any) -> None:
        ledger.note("update_fn", name)

    return registry, ledger


async def until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT):
        while not condition():
            await anyio.sleep(0.5)


def quiet() -> None:
    """No DEBUG records from now on: the test keeps every record, and ten thousand objects'
    would be most of the memory it measures (``open_operator`` restores the level at its end)."""
    logging.getLogger("anyop").setLevel(logging.INFO)


def short_watches() -> anyop.OperatorSettings:
    """The defaults (64 requests in flight), with watches that end every 30 s."""
    settings = anyop.OperatorSettings()
    settings.watching.server_timeout = 30
    return settings


def most_per_second(sent: list[Sent]) -> int:
    """The most requests (watches aside) that began within any one second."""
    times = sorted(s.time for s in sent if not s.watch)
    first, most = 0, 0
    for last, time in enumerate(times):
        while time - times[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def relisted(watched: Watched) -> bool:
    """Whether the watch has listed anew once (all dispatched) and watches again."""
    return watched.state.relists == 1 and watched.state.phase is Phase.WATCHING


def traced() -> tuple[float, float]:
    """The memory that tracemalloc traces now and at its peak, in MiB."""
    now, peak = tracemalloc.get_traced_memory()
    return now / 2**20, peak / 2**20


def engine_holds(watched: Watched) -> tuple[int, int]:
    """How many objects the engine keeps: worker slots, and the watch's known objects."""
    return len(watched.workers), len(watched.watcher._known)


@pytest.mark.parametrize(
    ("anyio_backend", "count", "memory"),
    [("asyncio", STARTUP, False), ("trio", STARTUP // 5, True)],
    ids=["asyncio-count", "trio-memory"],
    indirect=["anyio_backend"],
)
async def test_row38_ten_thousand_objects_at_startup_are_listed_in_pages_and_handled_once(
    count: int, memory: bool
) -> None:
    """Thousands of existing objects: the listing comes in pages of 500; no more requests run
    at once than the backpressure allows; each object's creation is handled once; a relist
    (410 on the watch) handles none again and the engine holds as many objects as before,
    with no more memory than before (``memory``: traced, at a fifth of the count)."""
    # The whole count once, on asyncio: 13 s on 2 cores; tracing the memory makes it 43 s, so
    # the memory is traced on Trio, at 2,000 objects (the engine's code is the same).
    fake, (registry, ledger) = metered(count), ledgered()
    settings = short_watches()
    level = settings.queueing.max_requests_in_flight
    assert level is not None
    if memory:
        tracemalloc.start()
    try:
        async with served(fake, registry, settings, namespace=NAMESPACE) as operator:
            quiet()
            await until(lambda: ledger.settled("create_fn", count))
            listed, started = [s for s in fake.sent if s.lists], fake.sent[0].time
            took, most = anyio.current_time() - started, fake.most_running
            held, (before, first_peak) = engine_holds(ledger.watched()), traced()
            tracemalloc.reset_peak()
            fake.most_running = 0
            fake.faults.script(Fault.expire(), path=PATH, watch=True)
            relist_at = anyio.current_time()
            await until(lambda: relisted(ledger.watched()))
            await until(lambda: ledger.settled("create_fn", count))
            after, peak = traced()
            held_after, most_after = engine_holds(ledger.watched()), fake.most_running
            assert errors(operator) == []
    finally:
        tracemalloc.stop()
    relisting = [s for s in fake.since(relist_at) if s.lists]
    pages = math.ceil(count / PAGE)
    print(f"\nrow 38, {count} objects: {len(listed)} LIST pages; handled in {took:.1f} s virtual;")
    print(f"  at most {most} requests at once (limit {level}); engine holds {held}")
    print(f"  traced {before:.1f} MiB, peak {first_peak:.1f} MiB; relist: {len(relisting)} pages;")
    print(f"  holds {held_after}; traced {after:.1f} MiB after it, peak {peak:.1f} MiB;")
    print(f"  at most {most_after} requests at once during the relist")
    assert [s.query.get("limit") for s in listed] == [str(PAGE)] * pages
    assert set(ledger.calls.values()) == {1}  # each handled once, the relist added none
    assert ledger.handled("create_fn") == count
    # Each worker started off the queue holds a place until its first request is sent: the
    # feed never finds the same room twice (it did on Trio, letting 128 through).
    assert most <= level
    assert held == held_after == (count, count)  # the relist doubles nothing the engine keeps
    assert [s.query.get("limit") for s in relisting] == [str(PAGE)] * pages
    if not memory:
        return
    assert after < before * 1.1  # nothing kept from the relist
    # Nor much more while it lists: an unchanged object's cycle writes nothing and its worker
    # exits at once, so the relist never holds a worker and a body per object (it did, for
    # `idle_timeout`, peaking at over twice the settled memory). How many pages' bodies are in
    # flight at once depends on the machine's speed (Trio at 2,000 objects: 1.23-1.28x seen), so
    # the bound sits between that and the defect's 2x.
    assert peak < before * 1.5


async def change_all_while_blind(fake: MeteredCluster, count: int) -> None:
    """Take the operator's watch down, change every object, compact the history: the watch's
    return is answered 410 and the relist finds every object changed."""
    fake.blind = True
    await until(lambda: any(s.status == 503 for s in fake.sent))  # the watch is down
    for index in range(count):
        change = json.dumps({"spec": {"field": "two"}}).encode()
        where = f"{PATH}/kex-{index:05d}"
        await fake.respond(ApiRequest("PATCH", where, {}, MERGE, change), faults=False)
    fake.compact()
    fake.blind = False


@pytest.mark.parametrize(
    ("anyio_backend", "qps", "burst"),
    [("asyncio", None, 100), ("trio", None, 100), ("asyncio", 500, 100)],
    ids=["asyncio-in-flight", "trio-in-flight", "asyncio-qps"],
    indirect=["anyio_backend"],
)
async def test_row40_a_herd_after_a_relist_stays_within_the_limits_and_is_refused_nothing(
    qps: float | None, burst: int
) -> None:
    """Every object changed while the watch was down (and the history compacted): the relist
    finds them all changed at once. Each change is handled once; the requests at the fake
    stay within ``max_requests_in_flight``, and a fake APF at that very
    level refuses none; the requests per second stay within ``qps`` and ``burst``. (The
    concurrency limit binds without ``qps``, on both backends; the rate limiter is the same
    code on both, and runs on one.)"""
    settings = short_watches()
    settings.networking.qps, settings.networking.burst = qps, burst
    level = settings.queueing.max_requests_in_flight
    assert level is not None
    fake, (registry, ledger) = metered(HERD, apf=level), ledgered()
    async with served(fake, registry, settings, namespace=NAMESPACE) as operator:
        quiet()
        await until(lambda: ledger.settled("create_fn", HERD))
        started_most, fake.most_running = fake.most_running, 0
        await change_all_while_blind(fake, HERD)
        herd = anyio.current_time()
        await until(lambda: relisted(ledger.watched()))
        await until(lambda: ledger.settled("update_fn", HERD))
        done = anyio.current_time()
        assert errors(operator) == []
    after, most = fake.since(herd), fake.most_running
    refused, rate = sum(s.status == 429 for s in fake.sent), most_per_second(after)
    print(f"\nrow 40, {HERD} objects changed: handled in {done - herd:.1f} s virtual;")
    print(f"  {len(after)} requests; at most {most} at once (limit {level}; {started_most} at")
    print(f"  the start); at most {rate} per second (qps {qps}, burst {burst}); {refused} 429s")
    assert set(ledger.calls.values()) == {1}
    assert ledger.handled("update_fn") == ledger.handled("create_fn") == HERD
    assert max(most, started_most) <= level
    assert refused == 0
    assert qps is None or rate <= qps + burst
